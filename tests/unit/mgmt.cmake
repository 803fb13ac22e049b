# The management API adapter: the policy pattern join, and reading the
# API's JSON from answers captured from RabbitMQ 3.10.8 (unit/mgmt/).
rp_unit_test(test_mgmt_pattern SOURCES unit/test_mgmt_pattern.c LIBS reaper::management)
rp_unit_test(test_mgmt_parse SOURCES unit/test_mgmt_parse.c LIBS reaper::management)
target_compile_definitions(test_mgmt_parse PRIVATE
  RP_MGMT_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/unit/mgmt")
rp_unit_test(test_mgmt_channels SOURCES unit/test_mgmt_channels.c LIBS reaper::management)
