# The header model the tap and the backfill share: AMQP headers to core's
# rp_dl_headers (adapters/rabbitmq/rp_amqp_table.c).
rp_unit_test(test_amqp_table SOURCES unit/test_amqp_table.c LIBS reaper::rabbitmq)
# The tap's decisions (core/rp_tap_batch.c) on the memory store's
# park-batch port: batching, held bytes, acks after commit, isolation.
rp_unit_test(test_tap_batch SOURCES unit/test_tap_batch.c LIBS reaper::memory reaper::core)
