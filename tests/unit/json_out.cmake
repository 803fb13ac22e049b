# The streaming JSON writer (support/rp_json_out.c) against jansson's dump.
rp_unit_test(test_json_out SOURCES unit/test_json_out.c LIBS reaper::support PkgConfig::JANSSON)
