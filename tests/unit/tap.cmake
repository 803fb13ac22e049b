# The header model the tap and the backfill share: AMQP headers to core's
# rp_dl_headers (adapters/rabbitmq/rp_amqp_table.c).
rp_unit_test(test_amqp_table SOURCES unit/test_amqp_table.c LIBS reaper::rabbitmq)
