rp_unit_test(test_amqp_msg SOURCES unit/test_amqp_msg.c LIBS reaper::rabbitmq)
rp_unit_test(test_events_parse SOURCES unit/test_events_parse.c LIBS reaper::rabbitmq)
# A publisher flush's frames encoded by reaper: the bytes amqp_basic_publish
# writes (compared over a socketpair).
rp_unit_test(test_amqp_frames SOURCES unit/test_amqp_frames.c LIBS reaper::rabbitmq Threads::Threads)
# The publisher's hand-over of a caller's publish (no copy; released once,
# after done).
rp_unit_test(test_amqp_publisher_own SOURCES unit/test_amqp_publisher_own.c LIBS reaper::rabbitmq)
