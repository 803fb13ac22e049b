rp_integration_test(test_reaperd_broker SOURCES integration/test_reaperd_broker.c integration/itest.c
  LIBS PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_broker APPEND PROPERTY LABELS broker)
