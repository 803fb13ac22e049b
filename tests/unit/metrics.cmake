# The metrics registry (core/rp_metrics.h) and its Prometheus text rendering
# (adapters/http/rp_http_prom.h).
rp_unit_test(test_metrics SOURCES unit/test_metrics.c LIBS reaper::http reaper::core)
