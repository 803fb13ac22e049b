rp_unit_test(test_feed_event SOURCES unit/test_feed_event.c LIBS reaper::proto reaper::memory reaper::core)
