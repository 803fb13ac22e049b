# The sweep's queue listing kept for the policy reconcile (core/rp_queue_listing.c).
rp_unit_test(test_queue_listing SOURCES unit/test_queue_listing.c LIBS reaper::core)
