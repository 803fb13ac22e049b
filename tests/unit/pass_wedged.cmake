# The job table's WEDGED over consecutive checks in core's pass (issue 18
# item 4, core/rp_pass_wedged.c), on the memory ports with the store's two
# wedge calls faked.
rp_unit_test(test_pass_wedged SOURCES unit/test_pass_wedged.c
             LIBS reaper::memory reaper::core)
