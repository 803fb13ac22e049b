# Answering many gates as one job of reaperd's (issue #20 item 3: answer
# sets), against a running reaperd, on both brokers. The bulk run's size and
# rate: RP_BULK_GATES, RP_BULK_RATE (test_reaperd_answer_set.c).
set(RP_ANSWER_SET_TEST_LIBS reaper::postgres reaper::rabbitmq reaper::core reaper::support
  PkgConfig::PQ PkgConfig::JANSSON)
rp_integration_test(test_reaperd_answer_set SOURCES integration/test_reaperd_answer_set.c
  integration/pg_fixture.c integration/itest.c LIBS ${RP_ANSWER_SET_TEST_LIBS})
set_property(TEST test_reaperd_answer_set APPEND PROPERTY LABELS broker)
# The batch replay calls (lock, claim, settle many gates in one
# transaction) against the database alone.
rp_integration_test(test_pg_replay_many SOURCES integration/test_pg_replay_many.c
  integration/pg_fixture.c integration/itest.c
  LIBS reaper::postgres reaper::core reaper::support PkgConfig::PQ)
