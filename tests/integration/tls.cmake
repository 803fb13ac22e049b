# AMQP over TLS (broker.tls.*): the daemon, reaperctl and reaperd --once
# against the broker's TLS listener (scripts/services), on both brokers.
rp_integration_test(test_broker_tls SOURCES integration/test_broker_tls.c integration/pg_fixture.c
  integration/itest.c LIBS reaper::postgres reaper::rabbitmq reaper::core reaper::support PkgConfig::PQ
  PkgConfig::JANSSON)
set_property(TEST test_broker_tls APPEND PROPERTY LABELS broker)
