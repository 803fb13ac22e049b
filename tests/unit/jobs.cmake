# Job triage's rules (core/rp_jobs.c; issue #18 item 7).
rp_unit_test(test_jobs_rules SOURCES unit/test_jobs_rules.c LIBS reaper::core)
