# The one clock (support/rp_clock.c).
rp_unit_test(test_clock SOURCES unit/test_clock.c LIBS reaper::support)
