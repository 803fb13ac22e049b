/* Issue 18 item 1, broker STALLED (core/rp_stalled_broker.h): the hold
 * boundary at, one millisecond below and one above the ceiling; the
 * per-channel memory across samples (first sight unsure, a start seen,
 * an ack that moves, a channel gone and back, a listing lost, duplicates,
 * a clock that steps back); the verdict's fields; its CLEARED verdict;
 * the metric series. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_metrics.h"
#include "rp_sighting.h"
#include "rp_stalled_broker.h"

#define NOW ((rp_time_ms)1700000000000LL)
#define CEIL 60
#define CEIL_MS (CEIL * 1000LL)

static void test_boundary(void **state) {
    (void)state;
    assert_int_equal(rp_judge_channel_hold(1, CEIL_MS - 1, true, CEIL), RP_HOLD_MOVING);
    assert_int_equal(rp_judge_channel_hold(1, CEIL_MS, true, CEIL), RP_HOLD_STALLED);
    assert_int_equal(rp_judge_channel_hold(1, CEIL_MS + 1, true, CEIL), RP_HOLD_STALLED);
    /* A hold seen only since the first sample: unsure below, stalled at. */
    assert_int_equal(rp_judge_channel_hold(1, CEIL_MS - 1, false, CEIL), RP_HOLD_UNSURE);
    assert_int_equal(rp_judge_channel_hold(1, CEIL_MS, false, CEIL), RP_HOLD_STALLED);
    assert_int_equal(rp_judge_channel_hold(1, CEIL_MS + 1, false, CEIL), RP_HOLD_STALLED);
    /* Holding nothing is never a hold. */
    assert_int_equal(rp_judge_channel_hold(0, CEIL_MS * 10, true, CEIL), RP_HOLD_NONE);
    assert_int_equal(rp_judge_channel_hold(-1, CEIL_MS * 10, false, CEIL), RP_HOLD_NONE);
    assert_int_equal(rp_judge_channel_hold(1, 0, true, CEIL), RP_HOLD_MOVING);
    assert_string_equal(rp_hold_state_string(RP_HOLD_STALLED), "STALLED");
    for (int s = 0; s < RP_HOLD_COUNT_; s++)
        assert_string_not_equal(rp_hold_state_string((rp_hold_state)s), "unknown");
    assert_string_equal(rp_hold_state_string(RP_HOLD_COUNT_), "unknown");
}

static const char *const QS[] = {"vibey.work"};

static rp_channel_sample chan(const char *name, int64_t unacked, int64_t acked) {
    return (rp_channel_sample){.vhost = "/", .connection = "10.0.0.9:5000 -> 10.0.0.1:5672",
                               .channel = name, .user = "worker", .unacked = unacked,
                               .acked_total = acked, .queues = QS, .n_queues = 1};
}

static rp_channel_hold update1(rp_stall_memory *m, rp_channel_sample c, rp_time_ms at) {
    rp_channel_list l = {&c, 1};
    rp_channel_hold h;
    assert_int_equal(rp_stall_memory_update(m, &l, at, CEIL, &h), RP_OK);
    return h;
}

static void test_memory_first_sight_and_ceiling(void **state) {
    (void)state;
    rp_stall_memory *m = rp_stall_memory_new();
    assert_non_null(m);
    rp_channel_hold h = update1(m, chan("a (1)", 1, 5), NOW);
    assert_int_equal(h.state, RP_HOLD_UNSURE);
    assert_false(h.since_known);
    assert_int_equal(h.held_ms, 0);
    h = update1(m, chan("a (1)", 1, 5), NOW + CEIL_MS - 1);
    assert_int_equal(h.state, RP_HOLD_UNSURE);
    assert_int_equal(h.held_ms, CEIL_MS - 1);
    h = update1(m, chan("a (1)", 3, 5), NOW + CEIL_MS); /* more taken, none acked */
    assert_int_equal(h.state, RP_HOLD_STALLED);
    assert_int_equal(h.held_ms, CEIL_MS);
    assert_true(h.since == NOW);
    /* It acks: the hold starts again, from a known start. */
    h = update1(m, chan("a (1)", 2, 6), NOW + CEIL_MS + 1);
    assert_int_equal(h.state, RP_HOLD_MOVING);
    assert_true(h.since_known);
    assert_int_equal(h.held_ms, 0);
    h = update1(m, chan("a (1)", 2, 6), NOW + 2 * CEIL_MS);
    assert_int_equal(h.state, RP_HOLD_MOVING);
    h = update1(m, chan("a (1)", 2, 6), NOW + 2 * CEIL_MS + 1);
    assert_int_equal(h.state, RP_HOLD_STALLED);
    assert_int_equal(rp_stall_memory_size(m), 1);
    rp_stall_memory_free(m);
}

static void test_memory_new_gone_forget(void **state) {
    (void)state;
    rp_stall_memory *m = rp_stall_memory_new();
    rp_channel_list empty = {NULL, 0};
    assert_int_equal(rp_stall_memory_update(m, &empty, NOW, CEIL, NULL), RP_OK);
    /* Not holding at the previous complete sample: its start is known. */
    rp_channel_hold h = update1(m, chan("b (2)", 1, 0), NOW + 1000);
    assert_int_equal(h.state, RP_HOLD_MOVING);
    assert_true(h.since_known);
    assert_true(h.since == NOW + 1000);
    /* Holds nothing: forgotten; holds again: a new start. */
    h = update1(m, chan("b (2)", 0, 0), NOW + 2000);
    assert_int_equal(h.state, RP_HOLD_NONE);
    assert_int_equal(rp_stall_memory_size(m), 0);
    h = update1(m, chan("b (2)", 1, 0), NOW + 3000);
    assert_true(h.since == NOW + 3000);
    /* Gone from the listing: forgotten. */
    assert_int_equal(rp_stall_memory_update(m, &empty, NOW + 4000, CEIL, NULL), RP_OK);
    assert_int_equal(rp_stall_memory_size(m), 0);
    /* A listing lost in between: what is new then cannot be told. */
    rp_stall_memory_forget(m);
    h = update1(m, chan("c (1)", 1, 0), NOW + 5000);
    assert_int_equal(h.state, RP_HOLD_UNSURE);
    /* ... but what it remembered keeps its start across the loss. */
    rp_stall_memory_forget(m);
    h = update1(m, chan("c (1)", 1, 0), NOW + 5000 + CEIL_MS);
    assert_int_equal(h.state, RP_HOLD_STALLED);
    rp_stall_memory_free(m);
}

static void test_memory_duplicates_clock_invalid(void **state) {
    (void)state;
    rp_stall_memory *m = rp_stall_memory_new();
    rp_channel_sample two[3] = {chan("z (1)", 1, 0), chan("a (1)", 1, 0), chan("z (1)", 1, 0)};
    rp_channel_list l = {two, 3};
    rp_channel_hold h[3];
    assert_int_equal(rp_stall_memory_update(m, &l, NOW, CEIL, h), RP_OK);
    assert_int_equal(rp_stall_memory_size(m), 2);
    assert_int_equal(h[2].state, h[0].state);
    /* A clock that steps back never makes a hold longer, nor negative. */
    assert_int_equal(rp_stall_memory_update(m, &l, NOW - 5000, CEIL, h), RP_OK);
    assert_int_equal(h[0].held_ms, 0);
    assert_int_equal(h[0].state, RP_HOLD_UNSURE);
    /* A channel without a name: nothing recorded. */
    rp_channel_sample bad = chan(NULL, 1, 0);
    rp_channel_list lb = {&bad, 1};
    assert_int_equal(rp_stall_memory_update(m, &lb, NOW, CEIL, h), RP_ERR_INVALID);
    assert_int_equal(rp_stall_memory_size(m), 2);
    assert_int_equal(rp_stall_memory_update(NULL, &l, NOW, CEIL, h), RP_ERR_INVALID);
    rp_stall_memory_free(m);
    rp_stall_memory_free(NULL);
}

static void test_verdict(void **state) {
    (void)state;
    rp_thresholds t;
    rp_thresholds_default(&t);
    t.held_ceiling_seconds = CEIL;
    rp_channel_sample c = chan("10.0.0.9:5000 -> 10.0.0.1:5672 (3)", 2, 7);
    rp_channel_hold h = {.since = NOW, .since_known = true, .held_ms = CEIL_MS + 500,
                         .state = RP_HOLD_STALLED};
    rp_verdict v;
    assert_int_equal(rp_judge_stalled_channel(&c, "vibey.work", &h, &t, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_STALLED);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.work");
    assert_string_equal(v.queue, "vibey.work");
    assert_null(v.project);
    assert_true(v.measured == 60.5);
    assert_int_equal(v.threshold, CEIL);
    assert_string_equal(v.unit, "seconds");
    assert_true(v.trusted);
    assert_non_null(strstr(v.detail, "channel 10.0.0.9:5000 -> 10.0.0.1:5672 (3) of connection "
                                     "10.0.0.9:5000 -> 10.0.0.1:5672 (user worker)"));
    assert_non_null(strstr(v.detail, "holds 2 unacknowledged"));
    assert_non_null(strstr(v.detail, "ack count (7)"));
    assert_null(strstr(v.detail, "at least"));
    char *key = NULL;
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_OK);
    assert_string_equal(key, "broker|STALLED|queue:/:vibey.work");
    free(key);
    rp_verdict_cleanup(&v);
    h.since_known = false;
    assert_int_equal(rp_judge_stalled_channel(&c, "vibey.work", &h, &t, &v), RP_OK);
    assert_non_null(strstr(v.detail, "at least"));
    rp_verdict_cleanup(&v);
    /* Any other state: no condition. */
    for (int s = RP_HOLD_NONE; s < RP_HOLD_STALLED; s++) {
        h.state = (rp_hold_state)s;
        assert_int_equal(rp_judge_stalled_channel(&c, "vibey.work", &h, &t, &v), RP_OK);
        assert_int_equal(v.condition, RP_COND_NONE);
        assert_null(v.object);
    }
    assert_int_equal(rp_judge_stalled_channel(NULL, "q", &h, &t, &v), RP_ERR_INVALID);
    assert_int_equal(rp_judge_stalled_channel(&c, NULL, &h, &t, &v), RP_ERR_INVALID);
}

static void test_cleared_and_metrics(void **state) {
    (void)state;
    rp_thresholds t;
    rp_thresholds_default(&t);
    rp_sighting_row row = {"broker|STALLED|queue:/:vibey.work", RP_COND_STALLED, 12, NOW};
    rp_verdict v;
    assert_int_equal(rp_judge_cleared(&row, &t, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_STALLED);
    assert_int_equal(v.action, RP_ACTION_CLEARED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.work");
    assert_string_equal(v.queue, "vibey.work");
    assert_int_equal(v.threshold, 3600);
    assert_string_equal(v.unit, "seconds");
    rp_verdict_cleanup(&v);
    assert_true(rp_metrics_reaped_valid(RP_SOURCE_BROKER, RP_COND_STALLED, RP_ACTION_SURFACED));
    assert_true(rp_metrics_reaped_valid(RP_SOURCE_BROKER, RP_COND_STALLED, RP_ACTION_CLEARED));
    assert_false(rp_metrics_reaped_valid(RP_SOURCE_BROKER, RP_COND_STALLED, RP_ACTION_REQUEUED));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_memory_first_sight_and_ceiling),
        cmocka_unit_test(test_memory_new_gone_forget),
        cmocka_unit_test(test_memory_duplicates_clock_invalid),
        cmocka_unit_test(test_verdict),
        cmocka_unit_test(test_cleared_and_metrics),
    };
    return cmocka_run_group_tests_name("judge_stalled_broker", tests, NULL, NULL);
}
