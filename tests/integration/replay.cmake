# Answering gates over AMQP (replay, dismiss), reaperctl, and the backfill of
# dead-letter queues, against a running reaperd or reaperd --once, on both brokers.
set(RP_REPLAY_TEST_LIBS reaper::postgres reaper::rabbitmq reaper::core reaper::support PkgConfig::PQ
    PkgConfig::JANSSON)
foreach(t test_reaperd_replay test_reaperd_replay_backfill test_reaperctl)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/${t}.c)
    rp_integration_test(${t} SOURCES integration/${t}.c integration/pg_fixture.c
      integration/once_common.c integration/itest.c LIBS ${RP_REPLAY_TEST_LIBS})
    set_property(TEST ${t} APPEND PROPERTY LABELS broker)
  endif()
endforeach()

# Two reaperd replicas on one broker and database (issue #15: replicas never
# double-act on a gate).
rp_integration_test(test_reaperd_replicas SOURCES integration/test_reaperd_replicas.c
  integration/pg_fixture.c integration/itest.c LIBS ${RP_REPLAY_TEST_LIBS} Threads::Threads)
set_property(TEST test_reaperd_replicas APPEND PROPERTY LABELS broker)
