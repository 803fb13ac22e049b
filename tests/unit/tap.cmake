# The header model the tap and the backfill share: AMQP headers to core's
# rp_dl_headers (adapters/rabbitmq/rp_amqp_table.c).
rp_unit_test(test_amqp_table SOURCES unit/test_amqp_table.c LIBS reaper::rabbitmq)
# The tap's decisions (core/rp_tap_batch.c) on the memory store's
# park-batch port: batching, held bytes, acks after commit, isolation.
rp_unit_test(test_tap_batch SOURCES unit/test_tap_batch.c LIBS reaper::memory reaper::core)
# The tap's decisions beside its batching (core/rp_tap_rules.c): what a
# bindings' reconcile means, how a partly stored dead letter is marked.
rp_unit_test(test_tap_rules SOURCES unit/test_tap_rules.c LIBS reaper::core)
# The tap's part (app/rp_tap.c) on a real event_base with its threads, the
# memory park batch and fake consumer and bind ports.
rp_unit_test(test_app_tap SOURCES unit/test_app_tap.c LIBS reaper::app reaper::memory
  reaper::core reaper::support)
# The taps of broker.vhosts (app/rp_vhost_taps.c): a tap part per other
# vhost over a fake port of the adapters' constructors, on a real event_base.
rp_unit_test(test_app_vhost_taps SOURCES unit/test_app_vhost_taps.c LIBS reaper::app
  reaper::memory reaper::core reaper::support)
