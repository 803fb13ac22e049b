# doctor's verdicts (core/rp_doctor.c; issue #18 item 6).
rp_unit_test(test_doctor SOURCES unit/test_doctor.c LIBS reaper::core)
