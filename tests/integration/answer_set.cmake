# Answering many gates as one job of reaperd's (issue #20 item 3: answer
# sets), against a running reaperd, on both brokers. test_reaperd_answer_set_bulk
# is the 10,000-gate run at 500 a second (label bulk as well).
set(RP_ANSWER_SET_TEST_LIBS reaper::postgres reaper::rabbitmq reaper::core reaper::support
  PkgConfig::PQ PkgConfig::JANSSON)
rp_integration_test(test_reaperd_answer_set SOURCES integration/test_reaperd_answer_set.c
  integration/pg_fixture.c integration/itest.c LIBS ${RP_ANSWER_SET_TEST_LIBS})
set_property(TEST test_reaperd_answer_set APPEND PROPERTY LABELS broker)
