# The PostgreSQL store (adapters/postgres/rp_pg_store.h) against the real
# database: core's pass over ports built from the adapter.
set(RP_PG_STORE_TEST_LIBS reaper::postgres reaper::core reaper::support PkgConfig::PQ)
foreach(t test_pg_store test_pg_store_ready test_pg_store_gates test_pg_store_concurrency
    test_pg_lease_batch test_pg_store_runbook test_pg_store_wedged
    test_pg_store_divergent test_pg_store_wedge_restart test_pg_park_heap)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/${t}.c)
    rp_integration_test(${t} SOURCES integration/${t}.c integration/pg_fixture.c
      integration/itest.c LIBS ${RP_PG_STORE_TEST_LIBS})
  endif()
endforeach()
# Restarts the database in the middle of a reap: nothing else may run then.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_pg_store_faults.c)
  rp_integration_test(test_pg_store_faults SOURCES integration/test_pg_store_faults.c
    integration/pg_fixture.c integration/itest.c LIBS ${RP_PG_STORE_TEST_LIBS})
  set_tests_properties(test_pg_store_faults PROPERTIES RUN_SERIAL TRUE)
endif()
# The reap's throughput on one connection (label bench: not part of
# scripts/test; run with ctest -L bench).
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/bench_pg_reap.c)
  add_executable(bench_pg_reap integration/bench_pg_reap.c integration/pg_fixture.c
    integration/itest.c)
  target_link_libraries(bench_pg_reap PRIVATE ${RP_PG_STORE_TEST_LIBS} PkgConfig::CMOCKA
    PkgConfig::RABBITMQ)
  target_include_directories(bench_pg_reap PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME bench_pg_reap COMMAND bench_pg_reap)
  set_tests_properties(bench_pg_reap PROPERTIES LABELS bench TIMEOUT 600 RUN_SERIAL TRUE
    ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endif()
