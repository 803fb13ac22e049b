# The daemon's pass scheduling (app/rp_sweeper.c): fake pass port, fake
# lease LISTEN and a fake clock on a real event_base and store thread.
rp_unit_test(test_app_sweeper SOURCES unit/test_app_sweeper.c LIBS reaper::app)
# The metrics glue (app/rp_observe.c): the gauges' debounced recount, one
# at a time; readiness.
rp_unit_test(test_app_observe SOURCES unit/test_app_observe.c LIBS reaper::app)
# One pass request from start to end (app/rp_pass_sequence.c) over a
# pass-run port filled with the memory adapter, and the sweeper's pass port
# over it.
rp_unit_test(test_app_pass_sequence SOURCES unit/test_app_pass_sequence.c
  LIBS reaper::app reaper::memory reaper::core reaper::support PkgConfig::EVENT)
# The doctor's probes in order (app/rp_doctor_probe.c) over a fake probe
# port.
rp_unit_test(test_app_doctor_probe SOURCES unit/test_app_doctor_probe.c
  LIBS reaper::app reaper::core reaper::support)
# reaperd --once's run (app/rp_once_pass.c) on a real event_base and store
# thread over a pass-run port filled with the memory adapter.
rp_unit_test(test_app_once_pass SOURCES unit/test_app_once_pass.c
  LIBS reaper::app reaper::memory reaper::core reaper::support PkgConfig::EVENT)
# The broker session's hooks of reaperd (app/rp_broker_state.c).
rp_unit_test(test_app_broker_state SOURCES unit/test_app_broker_state.c
  LIBS reaper::app reaper::core reaper::support)
