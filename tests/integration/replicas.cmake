# Two and three reaperd replicas on one broker and database (issue #19 item
# 3): the tap's deliveries split, each dead letter parked once, one replica
# killed mid-storm, each lease moved once, each sighting opened once, and
# the sweeps (management listings, policy writes, counted by a proxy in
# front of the management API) not multiplied by the replica count.
rp_integration_test(test_reaperd_replicas_fleet SOURCES integration/test_reaperd_replicas_fleet.c
  integration/tap_common.c integration/itest.c integration/test_mgmt_common.c
  LIBS reaper::core reaper::management PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL
  PkgConfig::EVENT Threads::Threads)
set_property(TEST test_reaperd_replicas_fleet APPEND PROPERTY LABELS broker)
# It clears reaper's policies on the broker and counts their writes: nothing
# else may run then.
set_tests_properties(test_reaperd_replicas_fleet PROPERTIES RUN_SERIAL TRUE)
# The sweep turn's lock itself (adapters/postgres/rp_pg_sweep_turn.c).
rp_integration_test(test_pg_sweep_turn SOURCES integration/test_pg_sweep_turn.c
  integration/pg_fixture.c integration/itest.c LIBS reaper::postgres reaper::core
  reaper::support PkgConfig::PQ)
# The storms again with the replicas on the 3-node cluster (scripts/test's
# cluster runs, broker.url listing the nodes): label cluster only.
add_test(NAME test_reaperd_replicas_cluster COMMAND test_reaperd_replicas_fleet)
set_tests_properties(test_reaperd_replicas_cluster PROPERTIES LABELS cluster RUN_SERIAL TRUE
  TIMEOUT 600
  ENVIRONMENT "RP_FLEET_TESTS=*replica*;REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR};REAPERD=$<TARGET_FILE:reaperd>;REAPERCTL=$<TARGET_FILE:reaperctl>;REAPER_HTTP_LISTEN=127.0.0.1:0")
