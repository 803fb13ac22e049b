rp_integration_test(test_migrate SOURCES integration/test_migrate.c integration/itest.c
  integration/pg_fixture.c LIBS reaper::postgres reaper::core reaper::log PkgConfig::PQ)
