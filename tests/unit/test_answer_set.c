/* Answer sets (core/rp_answer_set.c): the states and their names, the pace
 * at, one below and one above its interval, a rate that does not divide a
 * second, the verdict on every status, the stop text; and the codec of the
 * ops answer_many and answer_set (proto). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rp_answer_set.h"
#include "rp_proto.h"

static void test_states(void **state) {
    (void)state;
    for (int s = 0; s < RP_ANSWER_SET_STATE_COUNT_; s++) {
        const char *name = rp_answer_set_state_string((rp_answer_set_state)s);
        assert_string_not_equal(name, "unknown");
        rp_answer_set_state back;
        assert_true(rp_answer_set_state_parse(name, &back));
        assert_int_equal(back, s);
        assert_int_equal(rp_answer_set_state_final((rp_answer_set_state)s),
                         s != RP_ANSWER_SET_RUNNING);
    }
    assert_string_equal(rp_answer_set_state_string(RP_ANSWER_SET_STATE_COUNT_), "unknown");
    rp_answer_set_state x;
    assert_false(rp_answer_set_state_parse("Running", &x));
    assert_false(rp_answer_set_state_parse(NULL, &x));
    assert_true(rp_answer_set_choice_ok(RP_CHOICE_REPLAY));
    assert_true(rp_answer_set_choice_ok(RP_CHOICE_DISMISS));
    assert_false(rp_answer_set_choice_ok(RP_CHOICE_RETRY));
    for (int v = 0; v < RP_ANSWER_ITEM_VERDICT_COUNT_; v++)
        assert_string_not_equal(rp_answer_item_verdict_string((rp_answer_item_verdict)v),
                                "unknown");
}

/* 500 a second: one every 2 ms. */
static void test_pace_interval(void **state) {
    (void)state;
    rp_answer_pace p;
    rp_answer_pace_init(&p, 500);
    assert_int_equal(p.interval_us, 2000);
    assert_int_equal(rp_answer_pace_wait_ms(&p, 1000), 0); /* the first: at once */
    rp_answer_pace_took(&p, 1000);
    assert_int_equal(rp_answer_pace_wait_ms(&p, 1000), 2);
    assert_int_equal(rp_answer_pace_wait_ms(&p, 1001), 1); /* one below */
    assert_int_equal(rp_answer_pace_wait_ms(&p, 1002), 0); /* at */
    assert_int_equal(rp_answer_pace_wait_ms(&p, 1003), 0); /* one above */
    /* On time: the schedule goes on from the slot, not from now. */
    rp_answer_pace_took(&p, 1003);
    assert_int_equal(p.next_us, 1004000);
    /* Late by one interval (a busy loop): still the schedule, caught up. */
    rp_answer_pace_took(&p, 1006);
    assert_int_equal(p.next_us, 1006000);
    assert_int_equal(rp_answer_pace_wait_ms(&p, 1006), 0);
    rp_answer_pace_took(&p, 1006);
    assert_int_equal(p.next_us, 1008000);
    /* Late by the catch-up window exactly: caught up; by more: a pause,
     * started again from now (no burst). */
    rp_answer_pace_took(&p, 1008 + RP_ANSWER_PACE_CATCHUP_MS);
    assert_int_equal(p.next_us, 1010000);
    rp_answer_pace_took(&p, 1011 + RP_ANSWER_PACE_CATCHUP_MS);
    assert_int_equal(p.next_us, (1011 + RP_ANSWER_PACE_CATCHUP_MS) * 1000 + 2000);
}

/* 500 a second with a timer that fires 3 ms late each time (more than an
 * interval: the loop busy with a step, a log line, a publish): the mean
 * holds, starting all that is due at each firing, and no firing starts
 * more than the catch-up window's worth. A pace that dropped the slots it
 * was late for started one every 5 ms here (200 a second). */
static void test_pace_late_timer(void **state) {
    (void)state;
    rp_answer_pace p;
    rp_answer_pace_init(&p, 500);
    int started = 0, most = 0;
    int64_t now = 0;
    while (now < 10000) {
        int64_t w = rp_answer_pace_wait_ms(&p, now);
        if (w > 0) {
            now += w + 3;
            continue;
        }
        int burst = 0;
        while (rp_answer_pace_wait_ms(&p, now) == 0) {
            rp_answer_pace_took(&p, now);
            burst++;
        }
        if (burst > most) most = burst;
        started += burst;
    }
    assert_true(started >= 4990 && started <= 5000 + 1);
    assert_true(most <= 3);
    /* After a pause of a second: one start, then the schedule from there. */
    now += 1000;
    int burst = 0;
    while (rp_answer_pace_wait_ms(&p, now) == 0) {
        rp_answer_pace_took(&p, now);
        burst++;
    }
    assert_int_equal(burst, 1);
}

/* A rate that does not divide a second keeps its mean: 3 a second over
 * ten seconds starts 30, never more. */
static void test_pace_mean(void **state) {
    (void)state;
    rp_answer_pace p;
    rp_answer_pace_init(&p, 3);
    int started = 0;
    for (int64_t now = 0; now < 10000; now++) {
        if (rp_answer_pace_wait_ms(&p, now) == 0) {
            rp_answer_pace_took(&p, now);
            started++;
        }
    }
    assert_int_equal(started, 30);
    /* 500 a second over 10 s, the timer firing 1 ms late each time. */
    rp_answer_pace_init(&p, 500);
    started = 0;
    int64_t now = 0;
    while (now < 10000) {
        int64_t w = rp_answer_pace_wait_ms(&p, now);
        if (w > 0) {
            now += w + 1;
            continue;
        }
        rp_answer_pace_took(&p, now);
        started++;
    }
    assert_true(started >= 4500 && started <= 5000);
}

static void test_pace_bounds(void **state) {
    (void)state;
    rp_answer_pace p;
    rp_answer_pace_init(&p, 0);
    assert_int_equal(p.interval_us, 1000000);
    rp_answer_pace_init(&p, RP_ANSWER_SET_RATE_MAX + 1);
    assert_int_equal(p.interval_us, 1000000 / RP_ANSWER_SET_RATE_MAX);
}

/* The broker away pauses the set; anything else as without it. */
static void test_judge_away(void **state) {
    (void)state;
    assert_int_equal(rp_answer_item_judge_away(RP_ERR_UNAVAILABLE, true), RP_ANSWER_ITEM_PAUSE);
    assert_int_equal(rp_answer_item_judge_away(RP_ERR_UNAVAILABLE, false), RP_ANSWER_ITEM_STOP);
    assert_int_equal(rp_answer_item_judge_away(RP_ERR_INTERNAL, true), RP_ANSWER_ITEM_STOP);
    assert_int_equal(rp_answer_item_judge_away(RP_OK, true), RP_ANSWER_ITEM_ANSWERED);
    assert_int_equal(rp_answer_item_judge_away(RP_ERR_BUSY, true), RP_ANSWER_ITEM_LATER);
    assert_int_equal(rp_answer_item_judge_away(RP_ERR_CONFLICT, true), RP_ANSWER_ITEM_FAILED);
    assert_string_equal(rp_answer_item_verdict_string(RP_ANSWER_ITEM_PAUSE), "pause");
}

static void test_judge(void **state) {
    (void)state;
    assert_int_equal(rp_answer_item_judge(RP_OK), RP_ANSWER_ITEM_ANSWERED);
    assert_int_equal(rp_answer_item_judge(RP_ERR_BUSY), RP_ANSWER_ITEM_LATER);
    assert_int_equal(rp_answer_item_judge(RP_ERR_NOT_FOUND), RP_ANSWER_ITEM_FAILED);
    assert_int_equal(rp_answer_item_judge(RP_ERR_CONFLICT), RP_ANSWER_ITEM_FAILED);
    assert_int_equal(rp_answer_item_judge(RP_ERR_INVALID), RP_ANSWER_ITEM_FAILED);
    assert_int_equal(rp_answer_item_judge(RP_ERR_UNAVAILABLE), RP_ANSWER_ITEM_STOP);
    assert_int_equal(rp_answer_item_judge(RP_ERR_CLOSED), RP_ANSWER_ITEM_STOP);
    assert_int_equal(rp_answer_item_judge(RP_ERR_INTERNAL), RP_ANSWER_ITEM_STOP);
    assert_int_equal(rp_answer_item_judge(RP_ERR_NOMEM), RP_ANSWER_ITEM_STOP);
    char buf[64];
    rp_answer_set_stop_text(buf, sizeof buf, 7, RP_ERR_UNAVAILABLE, "the broker is away");
    assert_string_equal(buf, "gate 7: the broker is away");
    rp_answer_set_stop_text(buf, sizeof buf, 8, RP_ERR_UNAVAILABLE, NULL);
    assert_string_equal(buf, "gate 8: unavailable");
}

static rp_status decode(const char *json, rp_request *req, rp_proto_error *err) {
    rp_request_init(req);
    return rp_request_decode((rp_bytes){(const uint8_t *)json, strlen(json)},
                             (rp_bytes){(const uint8_t *)"application/json", 16}, req, err);
}

static void test_request_codec(void **state) {
    (void)state;
    rp_request req;
    rp_proto_error err;
    assert_int_equal(decode("{\"v\":1,\"op\":\"answer_many\",\"choice\":\"replay\",\"ids\":[3,4],"
                            "\"origin\":\"o\"}",
                            &req, &err),
                     RP_OK);
    assert_int_equal(req.op, RP_OP_ANSWER_MANY);
    assert_int_equal(req.answer_many.rate, RP_ANSWER_SET_RATE_DEFAULT);
    assert_int_equal(req.answer_many.n_ids, 2);
    assert_int_equal(req.answer_many.ids[1], 4);
    assert_string_equal(req.answer_many.origin, "o");
    /* Encoded again, it decodes the same. */
    rp_proto_buf b = {0};
    assert_int_equal(rp_request_encode(&req, RP_ENC_JSON, &b, &err), RP_OK);
    rp_request again;
    assert_int_equal(decode((const char *)b.ptr, &again, &err), RP_OK);
    assert_int_equal(again.answer_many.n_ids, 2);
    assert_int_equal(again.answer_many.choice, RP_CHOICE_REPLAY);
    rp_request_cleanup(&again);
    rp_proto_buf_cleanup(&b);
    rp_request_cleanup(&req);

    static const char *const bad[] = {
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"retry\"}",
        "{\"v\":1,\"op\":\"answer_many\"}",
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"rate\":0}",
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"rate\":10001}",
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"ids\":[]}",
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"ids\":[0]}",
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"ids\":[\"1\"]}",
        "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"state\":\"all\"}",
        "{\"v\":1,\"op\":\"answer_set\"}",
        "{\"v\":1,\"op\":\"answer_set\",\"job\":0}",
        "{\"v\":1,\"op\":\"answer_set\",\"job\":1,\"cancel\":1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rp_status st = decode(bad[i], &req, &err);
        if (st != RP_ERR_BAD_REQUEST) fprintf(stderr, "accepted: %s\n", bad[i]);
        assert_int_equal(st, RP_ERR_BAD_REQUEST);
        rp_request_cleanup(&req);
    }
    assert_int_equal(decode("{\"v\":1,\"op\":\"answer_set\",\"job\":9,\"cancel\":true}", &req,
                            &err),
                     RP_OK);
    assert_int_equal(req.answer_set.job, 9);
    assert_true(req.answer_set.cancel);
    rp_request_cleanup(&req);
}

static void test_reply_codec(void **state) {
    (void)state;
    rp_answer_set_queue q = {"\"orders\"", 3};
    rp_answer_set_made m = {.id = 0, .total = 3, .queues = &q, .n_queues = 1};
    rp_proto_buf b = {0};
    assert_int_equal(
        rp_proto_encode_answer_many_reply(&m, true, RP_CHOICE_REPLAY, 50, RP_ENC_JSON, &b),
        RP_OK);
    assert_string_equal((const char *)b.ptr,
                        "{\"v\":1,\"op\":\"answer_many\",\"ok\":true,\"result\":{\"job\":null,"
                        "\"dry_run\":true,\"choice\":\"replay\",\"rate\":50,\"total\":3,"
                        "\"skipped\":0,\"queues\":[{\"queue\":\"\\\"orders\\\"\",\"count\":3}],"
                        "\"other_queues\":0}}");
    rp_proto_buf_cleanup(&b);
    rp_answer_set_row r = {.id = 4, .choice = RP_CHOICE_DISMISS, .rate = 100,
                           .state = RP_ANSWER_SET_CANCELLED, .total = 10, .answered = 4,
                           .pending = 6, .created_at = 1700000000000};
    strcpy(r.requested_by, "ops");
    strcpy(r.stop_reason, "cancelled by ops");
    assert_int_equal(rp_proto_encode_answer_set_reply(&r, true, RP_ENC_JSON, &b), RP_OK);
    assert_non_null(strstr((const char *)b.ptr, "\"state\":\"cancelled\""));
    assert_non_null(strstr((const char *)b.ptr, "\"note\":null"));
    assert_non_null(strstr((const char *)b.ptr, "\"running_on\":null"));
    assert_non_null(strstr((const char *)b.ptr, "\"cancelled\":true"));
    rp_proto_buf_cleanup(&b);
    r.state = RP_ANSWER_SET_STATE_COUNT_;
    assert_int_equal(rp_proto_encode_answer_set_reply(&r, false, RP_ENC_JSON, &b), RP_ERR_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),        cmocka_unit_test(test_pace_interval),
        cmocka_unit_test(test_pace_mean),
        cmocka_unit_test(test_pace_late_timer),     cmocka_unit_test(test_pace_bounds),
        cmocka_unit_test(test_judge),         cmocka_unit_test(test_judge_away),
        cmocka_unit_test(test_request_codec),
        cmocka_unit_test(test_reply_codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
