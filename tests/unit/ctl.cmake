# reaperctl's text output: control characters escaped in everything printed
# (cmd/reaperctl/escape.c, print.c, table.c), the gates' page line, and
# --older-than's durations (duration.c).
rp_unit_test(test_ctl_print SOURCES unit/test_ctl_print.c
  ${CMAKE_SOURCE_DIR}/cmd/reaperctl/escape.c ${CMAKE_SOURCE_DIR}/cmd/reaperctl/print.c
  ${CMAKE_SOURCE_DIR}/cmd/reaperctl/table.c ${CMAKE_SOURCE_DIR}/cmd/reaperctl/duration.c
  LIBS reaper::core reaper::proto PkgConfig::JANSSON)
target_include_directories(test_ctl_print PRIVATE ${CMAKE_SOURCE_DIR}/cmd/reaperctl)
