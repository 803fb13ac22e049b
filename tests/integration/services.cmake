rp_integration_test(test_services SOURCES integration/test_services.c integration/itest.c
  LIBS PkgConfig::RABBITMQ PkgConfig::PQ)
add_test(NAME test_services_script COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_services_script.sh)
set_tests_properties(test_services_script PROPERTIES LABELS integration TIMEOUT 120
  ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
rp_integration_test(test_reaperd_store SOURCES integration/test_reaperd_store.c integration/itest.c
  LIBS PkgConfig::PQ PkgConfig::JANSSON)
# Both talk to the broker: scripts/test runs them against RabbitMQ 3.10 and 4.0.
set_property(TEST test_services test_services_script APPEND PROPERTY LABELS broker)
# It restarts PostgreSQL in the middle of a reap: nothing else may run then.
set_tests_properties(test_reaperd_store PROPERTIES RUN_SERIAL TRUE)
