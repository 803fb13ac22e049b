rp_unit_test(test_amqp_msg SOURCES unit/test_amqp_msg.c LIBS reaper::rabbitmq)
