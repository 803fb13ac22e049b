# The management API adapter against the broker the environment names
# (scripts/services env, or env rabbitmq4), and a python3 listener the
# tests start themselves.
set(RP_MGMT_ITEST_LIBS reaper::management PkgConfig::RABBITMQ PkgConfig::CURL PkgConfig::JANSSON
  PkgConfig::EVENT Threads::Threads)
foreach(t test_mgmt_http test_mgmt_broker test_mgmt_policy)
  rp_integration_test(${t} SOURCES integration/${t}.c integration/test_mgmt_common.c
    integration/itest.c LIBS ${RP_MGMT_ITEST_LIBS})
endforeach()
# They talk to the broker: scripts/test runs them against RabbitMQ 3.10 and 4.0.
set_property(TEST test_mgmt_http test_mgmt_broker test_mgmt_policy APPEND PROPERTY LABELS broker)
