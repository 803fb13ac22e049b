# The replay decision (core/rp_replay.c) and the AMQP properties <-> JSON
# round trip (adapters/rabbitmq/rp_amqp_restore.c).
rp_unit_test(test_replay SOURCES unit/test_replay.c LIBS reaper::core)
rp_unit_test(test_amqp_restore SOURCES unit/test_amqp_restore.c LIBS reaper::rabbitmq PkgConfig::JANSSON)
# Counting redeliveries of control requests (core/rp_redelivery.c).
rp_unit_test(test_redelivery SOURCES unit/test_redelivery.c LIBS reaper::core)
