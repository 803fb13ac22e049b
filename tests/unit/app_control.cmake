# The control part (app/rp_controller.c) over the memory adapter: a
# malformed request gets an error reply and is acked only once that reply
# is confirmed; a refused user gets no reply and is acked; status and reap
# replies; a gate listed and answered; stats over the memory store.
rp_unit_test(test_app_control SOURCES unit/test_app_control.c
  LIBS reaper::app reaper::memory reaper::proto reaper::core reaper::support)
