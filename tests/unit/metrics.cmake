# The metrics registry and its Prometheus text rendering (core/rp_metrics.h).
rp_unit_test(test_metrics SOURCES unit/test_metrics.c LIBS reaper::core)
