rp_unit_test(test_amqp_msg SOURCES unit/test_amqp_msg.c LIBS reaper::rabbitmq)
rp_unit_test(test_events_parse SOURCES unit/test_events_parse.c LIBS reaper::rabbitmq)
