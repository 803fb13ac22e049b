# PostgreSQL failover mid-storm (issue #19 item 4): a streaming standby
# (scripts/services start pgstandby), reaperd on a multi-host DSN, the
# primary stopped and the standby promoted while dead letters arrive.
rp_integration_test(test_reaperd_pg_failover SOURCES integration/test_reaperd_pg_failover.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_pg_failover APPEND PROPERTY LABELS broker)
# It stops PostgreSQL and promotes its standby: nothing else may run then.
set_tests_properties(test_reaperd_pg_failover PROPERTIES RUN_SERIAL TRUE)
# The same test in crash mode with a synchronous standby that stops
# receiving, and reaperd stopped while its parks wait for it (the stop
# cancels them: the commits come back as successes, committed locally
# only): no acked dead letter may be missing on the promoted server.
add_test(NAME test_reaperd_pg_failover_sync_cancel COMMAND test_reaperd_pg_failover)
get_test_property(test_reaperd_pg_failover ENVIRONMENT rp_pgfail_env)
set_tests_properties(test_reaperd_pg_failover_sync_cancel PROPERTIES
  LABELS "integration;broker" TIMEOUT 600 RUN_SERIAL TRUE
  ENVIRONMENT "${rp_pgfail_env};RP_PGFAIL_STOP=immediate;RP_PGFAIL_SYNC=1;RP_PGFAIL_FREEZE_MS=1500;RP_PGFAIL_CANCEL=1")
# The same, with reaperd started again before the crash (the standby still
# frozen): the dead letters its stop handed back are delivered again, some
# already on the primary; their parks, which insert nothing, must still
# wait for the standby: no acked dead letter may be missing.
add_test(NAME test_reaperd_pg_failover_sync_restart COMMAND test_reaperd_pg_failover)
set_tests_properties(test_reaperd_pg_failover_sync_restart PROPERTIES
  LABELS "integration;broker" TIMEOUT 600 RUN_SERIAL TRUE
  ENVIRONMENT "${rp_pgfail_env};RP_PGFAIL_STOP=immediate;RP_PGFAIL_SYNC=1;RP_PGFAIL_FREEZE_MS=1500;RP_PGFAIL_CANCEL=1;RP_PGFAIL_RESTART_MS=3000")
