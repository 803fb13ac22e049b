# The configuration: core's table (test_config) and the YAML/env loader
# (test_config_load, fixtures in unit/config/).
rp_unit_test(test_config SOURCES unit/test_config.c LIBS reaper::core)
rp_unit_test(test_config_load SOURCES unit/test_config_load.c LIBS reaper::config)
target_compile_definitions(test_config_load PRIVATE
  RP_CONFIG_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/unit/config")
