# PostgreSQL failover mid-storm (issue #19 item 4): a streaming standby
# (scripts/services start pgstandby), reaperd on a multi-host DSN, the
# primary stopped and the standby promoted while dead letters arrive.
rp_integration_test(test_reaperd_pg_failover SOURCES integration/test_reaperd_pg_failover.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_pg_failover APPEND PROPERTY LABELS broker)
# It stops PostgreSQL and promotes its standby: nothing else may run then.
set_tests_properties(test_reaperd_pg_failover PROPERTIES RUN_SERIAL TRUE)
