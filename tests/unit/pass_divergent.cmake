# A sweep samples its owned queues' counters with one store call per listed
# page (issue 19 item 5, core/rp_pass_divergent.c), on the memory ports.
rp_unit_test(test_pass_divergent_page SOURCES unit/test_pass_divergent_page.c
             LIBS reaper::memory reaper::core)
