rp_unit_test(test_amqp_msg SOURCES unit/test_amqp_msg.c LIBS reaper::rabbitmq)
rp_unit_test(test_events_parse SOURCES unit/test_events_parse.c
  ${CMAKE_SOURCE_DIR}/cmd/reaperd/events_parse.c LIBS reaper::core PkgConfig::RABBITMQ)
target_include_directories(test_events_parse PRIVATE ${CMAKE_SOURCE_DIR}/cmd/reaperd)
