# The pass report in words and a pass's setup from the configuration
# (core/rp_report_text.c, core/rp_pass_setup.c).
rp_unit_test(test_report_text SOURCES unit/test_report_text.c LIBS reaper::core)
