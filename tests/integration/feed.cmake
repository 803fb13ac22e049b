# The events feed (issue #4, reaps as events): reaperd --once and the daemon
# publishing every committed ledger event, read back by a subscriber bound
# to `#` on an exchange of each test's own.
rp_integration_test(test_feed SOURCES integration/test_feed.c integration/feed_common.c
  integration/itest.c LIBS reaper::proto PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_feed APPEND PROPERTY LABELS broker)
# Stops and starts the broker: nothing else may run then.
rp_integration_test(test_feed_restart SOURCES integration/test_feed_restart.c
  integration/feed_common.c integration/itest.c LIBS reaper::proto PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_feed_restart APPEND PROPERTY LABELS broker)
set_tests_properties(test_feed_restart PROPERTIES RUN_SERIAL TRUE)
# The loop's publisher on its DROPPED paths (broker away, bound overflowed).
rp_integration_test(test_feed_publisher SOURCES integration/test_feed_publisher.c
  integration/feed_common.c integration/itest.c LIBS reaper::rabbitmq reaper::proto PkgConfig::PQ
  PkgConfig::JANSSON PkgConfig::EVENT)
set_property(TEST test_feed_publisher APPEND PROPERTY LABELS broker)
