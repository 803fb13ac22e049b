# The daemon's AMQP session without a broker: dispatch by consumer tag, the
# handler table's rules, acks checked against the connection's generation.
rp_unit_test(test_amqp_session SOURCES unit/test_amqp_session.c LIBS reaper::rabbitmq
  PkgConfig::EVENT)
# A connect attempt to a listener that never answers: said in the log while
# it runs (with its step), given up at the handshake time-out.
rp_unit_test(test_amqp_conn_slow SOURCES unit/test_amqp_conn_slow.c LIBS reaper::rabbitmq
  PkgConfig::EVENT)
