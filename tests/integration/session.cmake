# Hardened PostgreSQL sessions (adapters/postgres/rp_pg_conn.h) and the
# DSN's password refusal through libpq's parser, against the real database.
rp_integration_test(test_pg_session SOURCES integration/test_pg_session.c integration/itest.c
  LIBS reaper::postgres reaper::core reaper::support PkgConfig::PQ PkgConfig::JANSSON)
# Its reaperd --once passes also read the broker: run it on 3.10 and 4.0.
set_property(TEST test_pg_session APPEND PROPERTY LABELS broker)
# The lease listener's own connect_timeout on a multi-host DSN whose first
# host accepts and says nothing (adapters/postgres/rp_pg_listen.h).
rp_integration_test(test_pg_listen SOURCES integration/test_pg_listen.c integration/itest.c
  LIBS reaper::postgres reaper::core reaper::support PkgConfig::PQ PkgConfig::EVENT)
