# Issue 18 item 4, WEDGED, through reaperd and its events feed: both brokers.
rp_integration_test(test_reaperd_wedged SOURCES integration/test_reaperd_wedged.c
  integration/feed_common.c integration/itest.c LIBS reaper::proto PkgConfig::PQ
  PkgConfig::JANSSON)
set_property(TEST test_reaperd_wedged APPEND PROPERTY LABELS broker)
# Issue 18 item 4's broker half and the restart-loop breaker: a real consumer
# that wedges again after every restart, two replicas' passes side by side.
rp_integration_test(test_reaperd_wedge_restart SOURCES integration/test_reaperd_wedge_restart.c
  integration/itest.c LIBS PkgConfig::PQ PkgConfig::JANSSON Threads::Threads)
set_property(TEST test_reaperd_wedge_restart APPEND PROPERTY LABELS broker)
