# PostgreSQL's binary array format, as the park binds its columns
# (adapters/postgres/rp_pg_binarray.h); no database needed.
rp_unit_test(test_pg_binarray SOURCES unit/test_pg_binarray.c LIBS reaper::postgres)
# A multi-host DSN's host list rotated for the lease listener's next
# connect (adapters/postgres/rp_pg_hosts.h); no database needed.
rp_unit_test(test_pg_hosts SOURCES unit/test_pg_hosts.c LIBS reaper::postgres)
# The batch park's parameters built again and again, as a storm does, hand
# no pages back to the kernel (adapters/postgres/rp_pg_park.c's zeroed
# arrays): linked with jemalloc as reaperd is, madvise counted.
rp_unit_test(test_pg_park_zeroed SOURCES unit/test_pg_park_zeroed.c
  LIBS reaper::postgres reaper::core ${CMAKE_DL_LIBS})
if(REAPER_JEMALLOC)
  target_link_libraries(test_pg_park_zeroed PRIVATE PkgConfig::JEMALLOC)
  target_compile_definitions(test_pg_park_zeroed PRIVATE RP_TEST_JEMALLOC)
endif()
