# reaperd --doctor (issue #18 item 6): each check's fail path on a really
# broken setup. It talks to the broker: run on 3.10 and 4.0.
rp_integration_test(test_reaperd_doctor SOURCES integration/test_reaperd_doctor.c
  integration/itest.c LIBS PkgConfig::PQ PkgConfig::JANSSON)
set_property(TEST test_reaperd_doctor APPEND PROPERTY LABELS broker)
