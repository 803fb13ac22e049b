# reaperctl stats' tables (cmd/reaperctl/print_stats.c; issue #18 item 7).
rp_unit_test(test_ctl_print_stats SOURCES unit/test_ctl_print_stats.c
  ${CMAKE_SOURCE_DIR}/cmd/reaperctl/print_stats.c ${CMAKE_SOURCE_DIR}/cmd/reaperctl/escape.c
  ${CMAKE_SOURCE_DIR}/cmd/reaperctl/table.c
  LIBS reaper::core reaper::proto PkgConfig::JANSSON)
target_include_directories(test_ctl_print_stats PRIVATE ${CMAKE_SOURCE_DIR}/cmd/reaperctl)
