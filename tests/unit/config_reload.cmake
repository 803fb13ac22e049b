# What a reload (SIGHUP) may apply: core's restart flags, key comparison
# and copy (core/rp_config.h).
rp_unit_test(test_config_reload SOURCES unit/test_config_reload.c LIBS reaper::config)
