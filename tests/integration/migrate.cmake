rp_integration_test(test_migrate SOURCES integration/test_migrate.c integration/itest.c
  integration/pg_fixture.c LIBS reaper::postgres reaper::core reaper::support PkgConfig::PQ)
# Issue #16: the variables a kubelet injects for Services named reaper...
# (--check-config, --migrate, the daemon, reaperctl, --healthcheck).
add_test(NAME test_service_links COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_service_links.sh)
set_tests_properties(test_service_links PROPERTIES LABELS "integration;broker" TIMEOUT 120
  ENVIRONMENT "REAPERD=$<TARGET_FILE:reaperd>;REAPERCTL=$<TARGET_FILE:reaperctl>")
