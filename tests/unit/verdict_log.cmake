# A verdict's log line, with its vhost when it has one (app/report_text.c).
rp_unit_test(test_verdict_log SOURCES unit/test_verdict_log.c unit/stderr_capture.c LIBS reaper::app PkgConfig::JANSSON)
