# The dead-letter tap end to end (app/rp_tap.c), on both brokers.
rp_integration_test(test_reaperd_tap SOURCES integration/test_reaperd_tap.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap APPEND PROPERTY LABELS broker)
rp_integration_test(test_reaperd_tap_storm SOURCES integration/test_reaperd_tap_storm.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap_storm APPEND PROPERTY LABELS broker)
# A dead letter parked by the tap and replayed comes back byte for byte; the
# tap and the backfill give one message one identity.
rp_integration_test(test_reaperd_tap_replay SOURCES integration/test_reaperd_tap_replay.c
  integration/tap_common.c integration/itest.c LIBS reaper::rabbitmq PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_tap_replay APPEND PROPERTY LABELS broker)
# It stops PostgreSQL in the middle of a storm: nothing else may run then.
set_tests_properties(test_reaperd_tap_storm PROPERTIES RUN_SERIAL TRUE)
# test_own_queues_get_no_policy runs reaperd with the DEFAULT names: it
# deletes the shared vibey.reap.tap and owns every vibey.* queue, so its
# policy fights every other reaperd's. Nothing else may run then.
set_tests_properties(test_reaperd_tap_replay PROPERTIES RUN_SERIAL TRUE)
# The tap's memory is bounded in bytes: past RP_TAP_HOLD_BYTES reaperd stops
# reading from the broker (150 dead letters of 1 MiB while parking is blocked).
rp_integration_test(test_reaperd_tap_memory SOURCES integration/test_reaperd_tap_memory.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap_memory APPEND PROPERTY LABELS broker)
# The tap's memory counts headers: 3,000 dead letters with 100 KiB of headers
# (over broker.tap_header_cap_bytes: parked without them, not replayable) and
# 500 under it, while parking is blocked: RSS under the chart's 128 MiB.
rp_integration_test(test_reaperd_tap_headers SOURCES integration/test_reaperd_tap_headers.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_tap_headers APPEND PROPERTY LABELS broker)
# The tap follows the order applications declare things in: a dead-letter
# queue bound after its queue, a binding moved, the dead-letter queue first.
rp_integration_test(test_reaperd_tap_topology SOURCES integration/test_reaperd_tap_topology.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap_topology APPEND PROPERTY LABELS broker)
# Dead-letter routes the tap cannot follow (the default exchange, an
# exchange not declared yet): surfaced on the owned queue, the default
# exchange's queue backfilled, cleared once fixed (issue 14 item 1).
rp_integration_test(test_reaperd_tap_route SOURCES integration/test_reaperd_tap_route.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap_route APPEND PROPERTY LABELS broker)
# A new death is a new decision: replayed and dead again opens a second gate;
# one message_id on two origin queues is two dead letters; the same death
# seen again after its answer opens nothing.
rp_integration_test(test_reaperd_identity SOURCES integration/test_reaperd_identity.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_identity APPEND PROPERTY LABELS broker)
# Issue 19 item 1: broker.vhosts. A listed vhost's dead letters parked once
# with that vhost, an unwatched vhost's untouched, a listed vhost missing
# at start picked up once created.
rp_integration_test(test_reaperd_vhosts SOURCES integration/test_reaperd_vhosts.c
  integration/tap_common.c integration/test_mgmt_common.c integration/itest.c
  LIBS reaper::management reaper::core PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL
  PkgConfig::EVENT Threads::Threads)
set_property(TEST test_reaperd_vhosts APPEND PROPERTY LABELS broker)
# Issue 19 item 1 step 2: the sweep per watched vhost (GET /api/queues/VHOST):
# a watched vhost's backlog backfilled, its policy written, its sweep turn
# taken; an unwatched vhost not listed.
rp_integration_test(test_reaperd_vhost_sweep SOURCES integration/test_reaperd_vhost_sweep.c
  integration/tap_common.c integration/test_mgmt_common.c integration/itest.c
  LIBS reaper::management reaper::core PkgConfig::PQ PkgConfig::JANSSON PkgConfig::CURL
  PkgConfig::EVENT Threads::Threads)
set_property(TEST test_reaperd_vhost_sweep APPEND PROPERTY LABELS broker)
