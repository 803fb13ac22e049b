# Tests of the pure core (judge, dead letters, names, the pass) and of the
# in-memory ports the pass is tested against.
rp_unit_test(test_judge SOURCES unit/test_judge.c LIBS reaper::core)
rp_unit_test(test_judge_runbook SOURCES unit/test_judge_runbook.c LIBS reaper::core)
rp_unit_test(test_judge_wedged SOURCES unit/test_judge_wedged.c LIBS reaper::core)
rp_unit_test(test_judge_divergent SOURCES unit/test_judge_divergent.c LIBS reaper::core)
rp_unit_test(test_judge_stalled_broker SOURCES unit/test_judge_stalled_broker.c LIBS reaper::core)
rp_unit_test(test_pass_stalled SOURCES unit/test_pass_stalled.c LIBS reaper::memory reaper::core)

rp_unit_test(test_judge_wedged_broker SOURCES unit/test_judge_wedged_broker.c LIBS reaper::core)
rp_unit_test(test_deadletter SOURCES unit/test_deadletter.c LIBS reaper::core)
rp_unit_test(test_names SOURCES unit/test_names.c LIBS reaper::core)
rp_unit_test(test_hostlist SOURCES unit/test_hostlist.c LIBS reaper::core)
# reaperd's command line (core/rp_reaperd_args.c): one row per line.
rp_unit_test(test_reaperd_args SOURCES unit/test_reaperd_args.c LIBS reaper::core)
rp_unit_test(test_sweep_turn SOURCES unit/test_sweep_turn.c LIBS reaper::core)
# Issue 19 item 1: the sweep per watched vhost (core/rp_sweep_vhosts.c).
rp_unit_test(test_sweep_vhosts SOURCES unit/test_sweep_vhosts.c LIBS reaper::memory reaper::core)
rp_unit_test(test_pass SOURCES unit/test_pass.c LIBS reaper::memory reaper::core)
rp_unit_test(test_memory SOURCES unit/test_memory.c LIBS reaper::memory reaper::core)
rp_unit_test(test_pass_queues SOURCES unit/test_pass_queues.c LIBS reaper::memory reaper::core)
rp_unit_test(test_consumers SOURCES unit/test_consumers.c LIBS reaper::core)
