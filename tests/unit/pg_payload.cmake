# The ledger payload of a verdict, encoded by the store itself
# (adapters/postgres/rp_pg_payload.c), compared with the codec's bytes.
rp_unit_test(test_pg_payload SOURCES unit/test_pg_payload.c
  LIBS reaper::postgres reaper::proto PkgConfig::JANSSON)
