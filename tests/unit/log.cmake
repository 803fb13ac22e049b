# One line per event, JSON or text (adapters/log).
rp_unit_test(test_log SOURCES unit/test_log.c LIBS reaper::log PkgConfig::JANSSON)
