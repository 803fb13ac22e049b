# The worker thread (support/worker.c).
rp_unit_test(test_worker SOURCES unit/test_worker.c LIBS reaper::support)
