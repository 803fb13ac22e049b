rp_integration_test(test_control SOURCES integration/test_control.c integration/control_common.c
  integration/itest.c integration/test_mgmt_common.c
  LIBS reaper::proto reaper::management PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL
  PkgConfig::EVENT Threads::Threads)
set_property(TEST test_control APPEND PROPERTY LABELS broker)
# It restarts the broker: nothing else may run then.
set_tests_properties(test_control PROPERTIES RUN_SERIAL TRUE)

# Job triage over the control queue (issue #18 item 7).
rp_integration_test(test_control_jobs
  SOURCES integration/test_control_jobs.c integration/control_common.c integration/itest.c
  LIBS reaper::proto PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_control_jobs APPEND PROPERTY LABELS broker)

# stats over the control queue (issue #18 item 7).
rp_integration_test(test_control_stats
  SOURCES integration/test_control_stats.c integration/control_common.c integration/itest.c
  LIBS reaper::proto PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_control_stats APPEND PROPERTY LABELS broker)
