rp_integration_test(test_reaperd_broker SOURCES integration/test_reaperd_broker.c
  integration/test_mgmt_common.c integration/itest.c
  LIBS reaper::management PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL PkgConfig::EVENT
  Threads::Threads)
set_property(TEST test_reaperd_broker APPEND PROPERTY LABELS broker)
# Broker events as they happen (core/rp_consumers.c, app/rp_events.c): both brokers.
rp_integration_test(test_reaperd_events SOURCES integration/test_reaperd_events.c
  integration/test_mgmt_common.c integration/itest.c
  LIBS reaper::management PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL PkgConfig::EVENT
  Threads::Threads)
set_property(TEST test_reaperd_events APPEND PROPERTY LABELS broker)
# It deletes reaper's policy on vhost / and expects only its own reaperd to
# write it back: every other reaperd on the broker would too, with its own
# owned pattern. Nothing else may run then.
set_tests_properties(test_reaperd_events PROPERTIES RUN_SERIAL TRUE)
# Issue 18 item 3, DIVERGENT end to end (both brokers: the message_stats counters).
rp_integration_test(test_reaperd_divergent SOURCES integration/test_reaperd_divergent.c
  integration/itest.c LIBS PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_divergent APPEND PROPERTY LABELS broker)
# Issue 18 item 1, broker STALLED end to end: a heartbeating consumer holds
# a message past the ceiling (both brokers: channel statistics).
rp_integration_test(test_reaperd_stalled SOURCES integration/test_reaperd_stalled.c
  integration/itest.c LIBS PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_stalled APPEND PROPERTY LABELS broker)
