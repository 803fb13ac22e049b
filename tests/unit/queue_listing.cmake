# The sweep's queue listing kept for the policy reconcile (core/rp_queue_listing.c).
rp_unit_test(test_queue_listing SOURCES unit/test_queue_listing.c LIBS reaper::core)
# The pass hands its listing to it (rp_pass_options.keep_listing), on the memory ports.
rp_unit_test(test_pass_listing SOURCES unit/test_pass_listing.c LIBS reaper::memory reaper::core)
