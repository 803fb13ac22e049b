# reaperd's HTTP endpoints, metrics, logs and signals (issue #6). It stops
# and starts the broker under test (/readyz): nothing else may run then.
rp_integration_test(test_reaperd_http SOURCES integration/test_reaperd_http.c integration/itest.c
  LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_http APPEND PROPERTY LABELS broker)
set_tests_properties(test_reaperd_http PROPERTIES RUN_SERIAL TRUE)
