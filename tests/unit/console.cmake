# The browser console's decisions (core/rp_console.c): who may send what,
# HTTP Basic credentials.
rp_unit_test(test_console_rules SOURCES unit/test_console_rules.c LIBS reaper::core)
