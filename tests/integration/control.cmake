rp_integration_test(test_control SOURCES integration/test_control.c integration/itest.c
  LIBS reaper::proto PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_control APPEND PROPERTY LABELS broker)
