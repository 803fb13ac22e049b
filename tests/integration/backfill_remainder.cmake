# What the backfill of dead-letter queues could not read (issue #5): surfaced,
# kept open while it is there and cleared when it is gone, on both brokers.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_reaperd_backfill_remainder.c)
  rp_integration_test(test_reaperd_backfill_remainder
    SOURCES integration/test_reaperd_backfill_remainder.c integration/pg_fixture.c
      integration/once_common.c integration/itest.c
    LIBS reaper::postgres reaper::rabbitmq reaper::core reaper::support PkgConfig::PQ
      PkgConfig::JANSSON)
  set_property(TEST test_reaperd_backfill_remainder APPEND PROPERTY LABELS broker)
endif()
# The record of a quorum dead-letter queue's one read, with the count behind
# it, against the database alone.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_pg_backfill_record.c)
  rp_integration_test(test_pg_backfill_record
    SOURCES integration/test_pg_backfill_record.c integration/pg_fixture.c integration/itest.c
    LIBS reaper::postgres reaper::core reaper::support PkgConfig::PQ)
endif()
