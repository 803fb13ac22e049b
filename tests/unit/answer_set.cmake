# Answer sets' decisions (core/rp_answer_set.c; issue #20 item 3): states,
# the pace of answers, what one answer's result means for the set; and the
# request and reply codec of answer_many and answer_set.
rp_unit_test(test_answer_set SOURCES unit/test_answer_set.c LIBS reaper::core reaper::proto)
