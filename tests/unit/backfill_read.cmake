# The backfill's read of dead-letter queues (core/rp_backfill_read.c): whole
# passes on the memory store, peek and record ports, one test per rule.
rp_unit_test(test_backfill_read SOURCES unit/test_backfill_read.c LIBS reaper::memory reaper::core)
