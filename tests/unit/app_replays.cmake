# The replays part (app/rp_replays.c) on an event_base and a store thread
# with fake ports.
rp_unit_test(test_app_replays SOURCES unit/test_app_replays.c LIBS reaper::app)
# The answer sets' runner stopping (app/rp_answer_sets.c): the set in hand
# let go through the stop's own submit, on a real event_base and store
# thread with a fake answer-set port.
rp_unit_test(test_app_answer_sets SOURCES unit/test_app_answer_sets.c
  LIBS reaper::app reaper::core reaper::support PkgConfig::EVENT)
