/* Issue 18 item 4's broker judge and restart-loop breaker
 * (core/rp_wedged_broker.h): one check of an owned queue (the quiet at,
 * 1 ms under and 1 ms over reap.wedged_seconds; nothing without ready
 * messages, without consumers, with unknown counts, or on a queue that is
 * not owned work), the consecutive count (at, one under), the verdict's
 * fields; the breaker's decision (off, looped, the last restart at, one
 * under and one over the wedged window, restarts in the window at, one
 * under and one over the max, a restart at, one under and one over the
 * window's edge) and its RESTARTED / RESTART_LOOP verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_metrics.h"
#include "rp_sighting.h"
#include "rp_wedged_broker.h"

#define NOW ((rp_time_ms)1700000000000LL)
#define WINDOW_MS ((rp_time_ms)900 * 1000)

static rp_thresholds defaults(void) {
    rp_thresholds t;
    rp_thresholds_default(&t);
    return t;
}

static rp_queue_facts queue(void) {
    rp_queue_facts q;
    memset(&q, 0, sizeof q);
    q.vhost = "/";
    q.name = "vibey.work";
    q.type = RP_QUEUE_TYPE_CLASSIC;
    q.counts_known = true;
    q.ready = 4;
    q.unacked = 1;
    q.consumers_known = true;
    q.consumers = 1;
    q.owned = true;
    q.stats_known = true;
    return q;
}

static rp_queue_rates acked_ago(rp_time_ms ago) {
    rp_queue_rates r = {.known = true, .ack_known = true, .acked_at = NOW - ago};
    return r;
}

static void test_defaults_and_names(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_false(t.wedge_restart);
    assert_int_equal(t.wedge_restart_max, 3);
    assert_int_equal(t.wedge_restart_window_seconds, 1800);
    assert_string_equal(rp_action_string(RP_ACTION_RESTARTED), "RESTARTED");
    assert_string_equal(rp_action_string(RP_ACTION_RESTART_LOOP), "RESTART_LOOP");
    rp_action a;
    assert_true(rp_action_parse("RESTART_LOOP", &a));
    assert_int_equal(a, RP_ACTION_RESTART_LOOP);
    assert_true(rp_metrics_reaped_valid(RP_SOURCE_BROKER, RP_COND_WEDGED, RP_ACTION_RESTART_LOOP));
    assert_true(rp_metrics_reaped_valid(RP_SOURCE_BROKER, RP_COND_WEDGED, RP_ACTION_SURFACED));
    assert_string_equal(rp_wedge_restart_choice_string(RP_WEDGE_RESTART_LOOP), "loop");
}

static void test_check_window_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = queue();
    rp_queue_rates at = acked_ago(WINDOW_MS), under = acked_ago(WINDOW_MS - 1),
                   over = acked_ago(WINDOW_MS + 1), skew = acked_ago(-5000);
    assert_true(rp_judge_wedge_queue_check(&q, &at, &t, NOW));
    assert_false(rp_judge_wedge_queue_check(&q, &under, &t, NOW));
    assert_true(rp_judge_wedge_queue_check(&q, &over, &t, NOW));
    assert_false(rp_judge_wedge_queue_check(&q, &skew, &t, NOW));
    assert_int_equal(rp_wedge_queue_quiet_ms(&at, NOW), WINDOW_MS);
    rp_queue_rates none = {0};
    assert_false(rp_judge_wedge_queue_check(&q, &none, &t, NOW));
    assert_int_equal(rp_wedge_queue_quiet_ms(&none, NOW), INT64_MIN);
    assert_false(rp_judge_wedge_queue_check(NULL, &at, &t, NOW));
}

static void test_check_needs_ready_consumers_and_owned_work(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_rates r = acked_ago(WINDOW_MS * 4);
    rp_queue_facts q = queue();
    assert_true(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q.ready = 0; /* nothing waiting */
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.consumers = 0; /* nobody to take it: holder gone / stale ready, not wedged */
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.consumers_known = false;
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.counts_known = false;
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.owned = false; /* foreign: not restarted, not judged */
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.is_dead_letter_queue = true;
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.reapers_own = true;
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
    q = queue();
    q.type = RP_QUEUE_TYPE_STREAM;
    assert_false(rp_judge_wedge_queue_check(&q, &r, &t, NOW));
}

static void test_verdict_at_the_count(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = queue();
    rp_queue_rates r = acked_ago(WINDOW_MS + 1500);
    rp_verdict v;
    assert_int_equal(rp_judge_wedged_queue(&q, &r, &t, NOW, 2, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE); /* one under the count */
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_wedged_queue(&q, &r, &t, NOW, 3, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_WEDGED);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.work");
    assert_string_equal(v.queue, "vibey.work");
    assert_null(v.project);
    assert_string_equal(v.unit, "seconds");
    assert_int_equal(v.threshold, 900);
    assert_true(v.measured > 901.4 && v.measured < 901.6);
    assert_true(v.trusted);
    assert_non_null(strstr(v.detail, "4 ready messages and 1 consumers"));
    assert_non_null(strstr(v.detail, "3 consecutive checks"));
    rp_verdict_cleanup(&v);
    /* Not wedged on this check: nothing whatever the count. */
    rp_queue_rates fresh = acked_ago(1000);
    assert_int_equal(rp_judge_wedged_queue(&q, &fresh, &t, NOW, 99, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_wedged_queue(NULL, &r, &t, NOW, 3, &v), RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
}

static rp_thresholds breaker_on(void) {
    rp_thresholds t = defaults();
    t.wedge_restart = true;
    return t;
}

static void test_decide_off_and_looped(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_wedge_restarts h = {0};
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_NONE);
    t = breaker_on();
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_GO);
    h.looped = true; /* one RESTART_LOOP per wedge, then quiet */
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_NONE);
    h.looped = false;
    h.in_window = 99;
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_LOOP);
    h.looped = true;
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_NONE);
    assert_int_equal(rp_wedge_restart_decide(NULL, &t, NOW), RP_WEDGE_RESTART_NONE);
}

static void test_decide_waits_a_window_after_a_restart(void **state) {
    (void)state;
    rp_thresholds t = breaker_on();
    rp_wedge_restarts h = {.in_window = 1, .last_known = true};
    h.last_at = NOW - WINDOW_MS; /* at the wedged window: again */
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_GO);
    h.last_at = NOW - WINDOW_MS + 1; /* one ms under: the reconnected consumers' time */
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_NONE);
    h.last_at = NOW - WINDOW_MS - 1;
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_GO);
    h.last_at = NOW; /* another replica restarted it a moment ago */
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_NONE);
}

static void test_decide_max_boundary(void **state) {
    (void)state;
    rp_thresholds t = breaker_on();
    rp_wedge_restarts h = {.last_known = true, .last_at = NOW - WINDOW_MS};
    h.in_window = 2; /* one under the max */
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_GO);
    h.in_window = 3; /* at the max: the loop */
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_LOOP);
    h.in_window = 4;
    assert_int_equal(rp_wedge_restart_decide(&h, &t, NOW), RP_WEDGE_RESTART_LOOP);
}

static void test_restart_window_edge(void **state) {
    (void)state;
    rp_time_ms win = (rp_time_ms)1800 * 1000;
    assert_true(rp_wedge_restart_in_window(NOW - win + 1, NOW, 1800));
    assert_false(rp_wedge_restart_in_window(NOW - win, NOW, 1800)); /* at the edge: out */
    assert_false(rp_wedge_restart_in_window(NOW - win - 1, NOW, 1800));
    rp_time_ms ats[] = {NOW - win - 1, NOW - win, NOW - win + 1, NOW - 5000};
    rp_wedge_restarts h;
    rp_wedge_restarts_from(ats, 4, false, NOW, 1800, &h);
    assert_int_equal(h.in_window, 2);
    assert_true(h.last_known);
    assert_int_equal(h.last_at, NOW - 5000);
    assert_false(h.looped);
    rp_wedge_restarts_from(NULL, 0, true, NOW, 1800, &h);
    assert_int_equal(h.in_window, 0);
    assert_false(h.last_known);
    assert_true(h.looped);
}

static void test_restart_verdicts(void **state) {
    (void)state;
    rp_thresholds t = breaker_on();
    rp_wedge_restarts h = {.in_window = 1};
    const char *conns[] = {"127.0.0.1:5000 -> 127.0.0.1:5672", "b", "c", "d"};
    rp_verdict v;
    assert_int_equal(rp_judge_wedge_restart("/", "vibey.work", RP_WEDGE_RESTART_GO, &h, &t,
                                            conns, 4, &v),
                     RP_OK);
    assert_int_equal(v.condition, RP_COND_WEDGED);
    assert_int_equal(v.action, RP_ACTION_RESTARTED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.work");
    assert_string_equal(v.unit, "restarts");
    assert_true(v.measured == 2);
    assert_int_equal(v.threshold, 3);
    assert_non_null(strstr(v.detail, "closing the 4 connection(s)"));
    assert_non_null(strstr(v.detail, "\"127.0.0.1:5000 -> 127.0.0.1:5672\""));
    assert_non_null(strstr(v.detail, "and 1 more"));
    assert_non_null(strstr(v.detail, "restart 2 of at most 3 in 1800 s"));
    rp_verdict_cleanup(&v);
    h.in_window = 3;
    assert_int_equal(rp_judge_wedge_restart("/", "vibey.work", RP_WEDGE_RESTART_LOOP, &h, &t,
                                            NULL, 0, &v),
                     RP_OK);
    assert_int_equal(v.action, RP_ACTION_RESTART_LOOP);
    assert_true(v.measured == 3);
    assert_non_null(strstr(v.detail, "no more restarts until its WEDGED sighting clears"));
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_wedge_restart("/", "q", RP_WEDGE_RESTART_NONE, &h, &t, NULL, 0, &v),
                     RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
}

static void test_cleared_verdict_of_a_broker_wedge(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_sighting_row row = {"WEDGED|broker|queue:/:vibey.work", RP_COND_WEDGED, 7, NOW};
    char *key = NULL;
    rp_verdict s;
    rp_queue_facts q = queue();
    rp_queue_rates r = acked_ago(WINDOW_MS);
    assert_int_equal(rp_judge_wedged_queue(&q, &r, &t, NOW, 3, &s), RP_OK);
    assert_int_equal(rp_sighting_key_for(&s, &key), RP_OK);
    row.key = key;
    rp_verdict v;
    assert_int_equal(rp_judge_cleared(&row, &t, &v), RP_OK);
    assert_int_equal(v.action, RP_ACTION_CLEARED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.work");
    rp_verdict_cleanup(&v);
    rp_verdict_cleanup(&s);
    free(key);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_names),
        cmocka_unit_test(test_check_window_boundary),
        cmocka_unit_test(test_check_needs_ready_consumers_and_owned_work),
        cmocka_unit_test(test_verdict_at_the_count),
        cmocka_unit_test(test_decide_off_and_looped),
        cmocka_unit_test(test_decide_waits_a_window_after_a_restart),
        cmocka_unit_test(test_decide_max_boundary),
        cmocka_unit_test(test_restart_window_edge),
        cmocka_unit_test(test_restart_verdicts),
        cmocka_unit_test(test_cleared_verdict_of_a_broker_wedge),
    };
    return cmocka_run_group_tests_name("judge_wedged_broker", tests, NULL, NULL);
}
