# Issue 19 item 2: reaperd on a 3-node RabbitMQ cluster (scripts/services
# start cluster). Label `cluster` only: scripts/test runs it in a run of its
# own, with the cluster's host lists (scripts/services env cluster), never
# against the single brokers.
rp_integration_test(test_reaperd_cluster SOURCES integration/test_reaperd_cluster.c
  integration/tap_common.c integration/test_mgmt_common.c integration/itest.c
  LIBS reaper::management reaper::core PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL
  PkgConfig::EVENT Threads::Threads)
# It kills a node of the cluster: nothing else may use the cluster then.
set_tests_properties(test_reaperd_cluster PROPERTIES LABELS cluster RUN_SERIAL TRUE TIMEOUT 900)
# Several broker hosts in broker.url, against either single broker (a dead
# host in the list before or after the live one).
rp_integration_test(test_broker_hosts SOURCES integration/test_broker_hosts.c integration/itest.c
  LIBS reaper::rabbitmq)
set_property(TEST test_broker_hosts APPEND PROPERTY LABELS broker)
