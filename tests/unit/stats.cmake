# stats' rows (core/rp_stats.c; issue #18 item 7).
rp_unit_test(test_stats SOURCES unit/test_stats.c LIBS reaper::core)
# The same use case over the memory store and its broker port.
rp_unit_test(test_memory_stats SOURCES unit/test_memory_stats.c LIBS reaper::memory reaper::core)
