# The dead-letter tap end to end (cmd/reaperd/tap.c), on both brokers.
rp_integration_test(test_reaperd_tap SOURCES integration/test_reaperd_tap.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap APPEND PROPERTY LABELS broker)
rp_integration_test(test_reaperd_tap_storm SOURCES integration/test_reaperd_tap_storm.c
  integration/tap_common.c integration/itest.c LIBS PkgConfig::PQ)
set_property(TEST test_reaperd_tap_storm APPEND PROPERTY LABELS broker)
