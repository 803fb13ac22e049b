# The broker-event part (app/rp_events.c) on a real event_base, over a
# runner port filled with the memory adapter: the check with the events'
# consumer count, the debounce, the seed merge.
rp_unit_test(test_app_events SOURCES unit/test_app_events.c
  LIBS reaper::app reaper::memory reaper::core reaper::support)
