rp_integration_test(test_migrate SOURCES integration/test_migrate.c integration/itest.c
  LIBS reaper::postgres PkgConfig::PQ)
