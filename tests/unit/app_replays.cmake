# The replays part (app/rp_replays.c) on an event_base and a store thread
# with fake ports.
rp_unit_test(test_app_replays SOURCES unit/test_app_replays.c LIBS reaper::app)
