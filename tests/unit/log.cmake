# One line per event, JSON or text (support/rp_log.c).
rp_unit_test(test_log SOURCES unit/test_log.c unit/stderr_capture.c LIBS reaper::support PkgConfig::JANSSON)
