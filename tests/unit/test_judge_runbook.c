/* Issue 18's judges (core/rp_judge.h): STALLED (a hold at, 1 ms under and
 * 1 ms over the ceiling and the eviction; an expired lease left to the
 * lease reap) and WAITING_DEPTH (job table and broker: at, one under and
 * one over the threshold), every field of every verdict, and the CLEARED
 * verdicts of their sightings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_judge.h"
#include "rp_object.h"
#include "rp_sighting.h"
#include "verdict_assert.h"

#define NOW ((rp_time_ms)1700000000000LL)
#define HOUR_MS ((rp_time_ms)3600 * 1000)

static rp_thresholds defaults(void) {
    rp_thresholds t;
    rp_thresholds_default(&t);
    return t;
}

static rp_long_held_job held_since(rp_time_ms claimed_at) {
    rp_long_held_job j = {
        .id = 42,
        .project = "alpha",
        .kind = "render",
        .state = RP_JOB_LEASED,
        .lease_owner = "worker-7",
        .lease_expires_known = true,
        .lease_expires_at = NOW + 30000, /* heartbeating: alive */
        .claimed_known = true,
        .claimed_at = claimed_at,
    };
    return j;
}

static rp_action held_action(const rp_long_held_job *j, const rp_thresholds *t, rp_time_ms now) {
    rp_verdict v;
    assert_int_equal(rp_judge_long_held(j, t, now, &v), RP_OK);
    rp_action a = v.condition == RP_COND_NONE ? RP_ACTION_NONE : v.action;
    if (v.condition == RP_COND_NONE) assert_null(v.object);
    else assert_int_equal(v.condition, RP_COND_STALLED);
    rp_verdict_cleanup(&v);
    return a;
}

static void test_defaults(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_int_equal(t.held_ceiling_seconds, 3600);
    assert_int_equal(t.held_evict_factor, 0);
    assert_int_equal(t.waiting_depth_threshold, 10);
    assert_int_equal(t.queue_depth_threshold, 10000);
}

static void test_stalled_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_long_held_job at = held_since(NOW - HOUR_MS);
    rp_long_held_job under = held_since(NOW - HOUR_MS + 1);
    rp_long_held_job over = held_since(NOW - HOUR_MS - 1);
    assert_int_equal(held_action(&at, &t, NOW), RP_ACTION_SURFACED);
    assert_int_equal(held_action(&under, &t, NOW), RP_ACTION_NONE);
    assert_int_equal(held_action(&over, &t, NOW), RP_ACTION_SURFACED);
    /* The raw boundary. */
    assert_true(rp_judge_held_stalled(3600000, 3600));
    assert_false(rp_judge_held_stalled(3599999, 3600));
    assert_true(rp_judge_held_stalled(3600001, 3600));
    assert_false(rp_judge_held_stalled(-1, 0));
}

static void test_stalled_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_long_held_job j = held_since(NOW - HOUR_MS - 1500);
    rp_verdict v;
    assert_int_equal(rp_judge_long_held(&j, &t, NOW, &v), RP_OK);
    assert_verdict(&v, &(verdict_want){RP_COND_STALLED, RP_ACTION_SURFACED, RP_SOURCE_JOB_QUEUE,
                                       "job:42", "render", "alpha", "seconds", 3600, 3601.5,
                                       0.01});
    assert_true(v.trusted);
    /* The detail names the job, its owner and the hold. */
    assert_non_null(strstr(v.detail, "job 42"));
    assert_non_null(strstr(v.detail, "worker-7"));
    assert_non_null(strstr(v.detail, "3601.500 s"));
    rp_verdict_cleanup(&v);
}

static void test_stalled_only_live_leases(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_long_held_job j = held_since(NOW - 2 * HOUR_MS);
    /* Not leased. */
    j.state = RP_JOB_READY;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_NONE);
    j.state = RP_JOB_LEASED;
    /* Hold unknown. */
    j.claimed_known = false;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_NONE);
    j.claimed_known = true;
    /* A lease past its deadline is the lease reap's: exactly at the grace
     * it is not expired (and judged here), 1 ms later it is. */
    j.lease_expires_at = NOW;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_SURFACED);
    j.lease_expires_at = NOW - 1;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_NONE);
    t.lease_grace_seconds = 5;
    j.lease_expires_at = NOW - 5000;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_SURFACED);
    j.lease_expires_at = NOW - 5001;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_NONE);
    /* A lease with no deadline never expires: judged. */
    j.lease_expires_known = false;
    assert_int_equal(held_action(&j, &t, NOW), RP_ACTION_SURFACED);
    /* A claim in the future (clock skew) is no hold. */
    rp_long_held_job future = held_since(NOW + 1);
    t.held_ceiling_seconds = 1;
    assert_int_equal(held_action(&future, &t, NOW), RP_ACTION_NONE);
    rp_verdict v;
    assert_int_equal(rp_judge_long_held(NULL, &t, NOW, &v), RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
}

static void test_stalled_eviction_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    t.held_evict_factor = 2;
    rp_long_held_job at = held_since(NOW - 2 * HOUR_MS);
    rp_long_held_job under = held_since(NOW - 2 * HOUR_MS + 1);
    rp_long_held_job over = held_since(NOW - 2 * HOUR_MS - 1);
    assert_int_equal(held_action(&at, &t, NOW), RP_ACTION_REQUEUED);
    assert_int_equal(held_action(&under, &t, NOW), RP_ACTION_SURFACED);
    assert_int_equal(held_action(&over, &t, NOW), RP_ACTION_REQUEUED);
    rp_verdict v;
    assert_int_equal(rp_judge_long_held(&at, &t, NOW, &v), RP_OK);
    assert_int_equal(v.threshold, 7200);
    assert_string_equal(v.unit, "seconds");
    assert_non_null(strstr(v.detail, "requeued"));
    assert_non_null(strstr(v.detail, "worker-7"));
    rp_verdict_cleanup(&v);
    /* Factor 0: never evicted, however long. */
    t.held_evict_factor = 0;
    rp_long_held_job ages = held_since(NOW - 1000 * HOUR_MS);
    assert_int_equal(held_action(&ages, &t, NOW), RP_ACTION_SURFACED);
    assert_false(rp_judge_held_evict(INT64_MAX, 3600, 0));
    /* Factor 1: evicted at the ceiling itself. */
    t.held_evict_factor = 1;
    assert_int_equal(held_action(&at, &t, NOW), RP_ACTION_REQUEUED);
    /* Saturating: a huge factor never overflows into an eviction. */
    assert_false(rp_judge_held_evict(3600000, 3600, INT64_MAX));
}

static rp_condition waiting_condition(int64_t n, const rp_thresholds *t) {
    rp_waiting_group g = {.project = "alpha", .kind = "render", .claimable = n};
    rp_verdict v;
    assert_int_equal(rp_judge_waiting(&g, t, &v), RP_OK);
    rp_condition c = v.condition;
    rp_verdict_cleanup(&v);
    return c;
}

static void test_waiting_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_int_equal(waiting_condition(9, &t), RP_COND_NONE);
    assert_int_equal(waiting_condition(10, &t), RP_COND_NONE); /* at: not above */
    assert_int_equal(waiting_condition(11, &t), RP_COND_WAITING_DEPTH);
    t.waiting_depth_threshold = 0;
    assert_int_equal(waiting_condition(0, &t), RP_COND_NONE);
    assert_int_equal(waiting_condition(1, &t), RP_COND_WAITING_DEPTH);
}

static void test_waiting_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_waiting_group g = {.project = "al:pha", .kind = "render", .claimable = 11};
    rp_verdict v;
    assert_int_equal(rp_judge_waiting(&g, &t, &v), RP_OK);
    assert_verdict(&v, &(verdict_want){RP_COND_WAITING_DEPTH, RP_ACTION_SURFACED,
                                       RP_SOURCE_JOB_QUEUE, "kind:al%3Apha:render", "render",
                                       "al:pha", "jobs", 10, 11.0, 0});
    assert_non_null(strstr(v.detail, "11 claimable"));
    assert_non_null(strstr(v.detail, "cap on admission"));
    /* One sighting per (project, kind); its CLEARED verdict gives project
     * and kind back. */
    assert_cleared_back(&v, &t, NOW, "job_queue|WAITING_DEPTH|kind:al%3Apha:render", 10);
    rp_verdict_cleanup(&v);
    rp_waiting_group bad = {.project = NULL, .kind = "render", .claimable = 99};
    assert_int_equal(rp_judge_waiting(&bad, &t, &v), RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
}

static rp_queue_facts owned_queue(int64_t ready) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = "vibey.render",
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = true,
        .ready = ready,
        .consumers_known = true,
        .consumers = 2,
        .owned = true,
    };
    return q;
}

static rp_condition depth_condition(const rp_queue_facts *q, const rp_thresholds *t) {
    rp_verdict v;
    assert_int_equal(rp_judge_queue_depth(q, t, &v), RP_OK);
    rp_condition c = v.condition;
    rp_verdict_cleanup(&v);
    return c;
}

static void test_queue_depth_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts under = owned_queue(9999), at = owned_queue(10000), over = owned_queue(10001);
    assert_int_equal(depth_condition(&under, &t), RP_COND_NONE);
    assert_int_equal(depth_condition(&at, &t), RP_COND_NONE);
    assert_int_equal(depth_condition(&over, &t), RP_COND_WAITING_DEPTH);
    /* Only owned work queues whose counts are known. */
    rp_queue_facts q = owned_queue(20000);
    q.owned = false;
    assert_int_equal(depth_condition(&q, &t), RP_COND_NONE);
    q = owned_queue(20000);
    q.is_dead_letter_queue = true;
    assert_int_equal(depth_condition(&q, &t), RP_COND_NONE);
    q = owned_queue(20000);
    q.type = RP_QUEUE_TYPE_STREAM;
    assert_int_equal(depth_condition(&q, &t), RP_COND_NONE);
    q = owned_queue(20000);
    q.counts_known = false;
    assert_int_equal(depth_condition(&q, &t), RP_COND_NONE);
    q = owned_queue(20000);
    q.type = RP_QUEUE_TYPE_QUORUM;
    assert_int_equal(depth_condition(&q, &t), RP_COND_WAITING_DEPTH);
}

static void test_queue_depth_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    t.queue_depth_threshold = 3;
    rp_queue_facts q = owned_queue(4);
    rp_verdict v;
    assert_int_equal(rp_judge_queue_depth(&q, &t, &v), RP_OK);
    assert_verdict(&v, &(verdict_want){RP_COND_WAITING_DEPTH, RP_ACTION_SURFACED, RP_SOURCE_BROKER,
                                       "queue:/:vibey.render", "vibey.render", NULL, "messages", 3,
                                       4.0, 0});
    assert_non_null(strstr(v.detail, "4 ready"));
    assert_non_null(strstr(v.detail, "cap on admission"));
    assert_cleared_back(&v, &t, NOW, NULL, 3);
    rp_verdict_cleanup(&v);
}

static void test_condition_names(void **state) {
    (void)state;
    assert_string_equal(rp_condition_string(RP_COND_STALLED), "STALLED");
    assert_string_equal(rp_condition_string(RP_COND_WAITING_DEPTH), "WAITING_DEPTH");
    rp_condition c;
    assert_true(rp_condition_parse("STALLED", &c));
    assert_int_equal(c, RP_COND_STALLED);
    assert_true(rp_condition_parse("WAITING_DEPTH", &c));
    assert_int_equal(c, RP_COND_WAITING_DEPTH);
    char *p = NULL, *k = NULL;
    assert_int_equal(rp_object_kind_split("kind:a%25b%3Ac:x:y", &p, &k), RP_OK);
    assert_string_equal(p, "a%b:c");
    assert_string_equal(k, "x:y");
    free(p);
    free(k);
    assert_int_equal(rp_object_kind_split("queue:/:x", &p, &k), RP_ERR_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_stalled_boundary),
        cmocka_unit_test(test_stalled_verdict_fields),
        cmocka_unit_test(test_stalled_only_live_leases),
        cmocka_unit_test(test_stalled_eviction_boundary),
        cmocka_unit_test(test_waiting_boundary),
        cmocka_unit_test(test_waiting_verdict_fields),
        cmocka_unit_test(test_queue_depth_boundary),
        cmocka_unit_test(test_queue_depth_verdict_fields),
        cmocka_unit_test(test_condition_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
