# The control protocol's decisions (core/rp_control.c).
rp_unit_test(test_control_rules SOURCES unit/test_control_rules.c LIBS reaper::core)
