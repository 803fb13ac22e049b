# The events feed's port without a broker: what reaches the loop, what is
# settled as dropped, what is counted.
rp_unit_test(test_amqp_feed SOURCES unit/test_amqp_feed.c LIBS reaper::rabbitmq reaper::proto reaper::http)
