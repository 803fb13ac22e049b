# PostgreSQL's binary array format, as the park binds its columns
# (adapters/postgres/rp_pg_binarray.h); no database needed.
rp_unit_test(test_pg_binarray SOURCES unit/test_pg_binarray.c LIBS reaper::postgres)
# A multi-host DSN's host list rotated for the lease listener's next
# connect (adapters/postgres/rp_pg_hosts.h); no database needed.
rp_unit_test(test_pg_hosts SOURCES unit/test_pg_hosts.c LIBS reaper::postgres)
