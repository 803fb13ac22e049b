rp_unit_test(test_worker SOURCES unit/test_worker.c ${CMAKE_SOURCE_DIR}/cmd/reaperd/worker.c
  LIBS reaper::core PkgConfig::EVENT Threads::Threads)
target_include_directories(test_worker PRIVATE ${CMAKE_SOURCE_DIR}/cmd/reaperd)
