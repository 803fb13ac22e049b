# The HTTP adapter (adapters/http): the endpoints on a loop of their own,
# the --healthcheck client, stopping.
rp_unit_test(test_http SOURCES unit/test_http.c unit/http_client.c
  LIBS reaper::http reaper::core PkgConfig::EVENT Threads::Threads)
