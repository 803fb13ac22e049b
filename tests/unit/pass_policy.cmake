# The policy reconcile's decisions (core/rp_pass_policy.c) on a fake policy port.
rp_unit_test(test_pass_policy SOURCES unit/test_pass_policy.c LIBS reaper::core)
