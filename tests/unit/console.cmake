# The browser console's decisions (core/rp_console.c): who may send what,
# HTTP Basic credentials.
rp_unit_test(test_console_rules SOURCES unit/test_console_rules.c LIBS reaper::core)
# The console's HTTP side (adapters/http/rp_http_console.c) on a loop of its
# own over a fake port.
rp_unit_test(test_http_console SOURCES unit/test_http_console.c unit/http_client.c
  LIBS reaper::http reaper::core PkgConfig::EVENT Threads::Threads)
# The console's sign-in brake (core/rp_login_limit.c): refused sign-ins per client.
rp_unit_test(test_login_limit SOURCES unit/test_login_limit.c LIBS reaper::core)
