# docs/CONFIGURATION.md is the reference generated from the configuration
# table (scripts/gen-config-reference): checked current and complete.
rp_unit_test(test_config_reference SOURCES unit/test_config_reference.c LIBS reaper::core)
