# Issue 21: the faster texts of a park give the bytes the slower ones gave.
rp_unit_test(test_text_fast SOURCES unit/test_text_fast.c LIBS reaper::core)
