rp_unit_test(test_status SOURCES unit/test_status.c LIBS reaper::core)
