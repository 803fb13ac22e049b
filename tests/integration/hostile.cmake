# Hostile input on the broker-event path (issue 15 item 6): a forged event
# published straight into reaperd's event queue, and a catastrophic policy
# pattern against long owned queue names. Both brokers.
rp_integration_test(test_reaperd_hostile SOURCES integration/test_reaperd_hostile.c
  integration/test_mgmt_common.c integration/itest.c
  LIBS reaper::management PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL PkgConfig::EVENT
  Threads::Threads)
set_property(TEST test_reaperd_hostile APPEND PROPERTY LABELS broker)
# It times /healthz, and any reaperd on the broker gets its forged events.
set_tests_properties(test_reaperd_hostile PROPERTIES RUN_SERIAL TRUE)
