# The dead-letter tap's conversions: AMQP properties and headers to JSON and
# to core's header model (adapters/rabbitmq/rp_amqp_table.c).
rp_unit_test(test_amqp_table SOURCES unit/test_amqp_table.c LIBS reaper::rabbitmq PkgConfig::JANSSON m)
