# stats' rows (core/rp_stats.c; issue #18 item 7).
rp_unit_test(test_stats SOURCES unit/test_stats.c LIBS reaper::core)
