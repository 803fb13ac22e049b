# PostgreSQL's binary array format, as the park binds its columns
# (adapters/postgres/rp_pg_binarray.h); no database needed.
rp_unit_test(test_pg_binarray SOURCES unit/test_pg_binarray.c LIBS reaper::postgres)
