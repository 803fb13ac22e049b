/* Issue 18 item 3's judge (core/rp_judge_divergent.h): DIVERGENT on the job
 * table and on an owned queue, intake at, one under and one over ratio x
 * completions, waiting at, one under and one over the minimum, every field
 * of the verdicts, their CLEARED verdicts, and the config keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_config.h"
#include "rp_judge_divergent.h"
#include "rp_sighting.h"
#include "verdict_assert.h"

#define NOW ((rp_time_ms)1700000000000LL)

static rp_thresholds defaults(void) {
    rp_thresholds t;
    rp_thresholds_default(&t);
    return t;
}

static rp_condition kind_condition(int64_t intake, int64_t done, int64_t waiting,
                                   const rp_thresholds *t) {
    rp_divergence_group g = {.project = "alpha", .kind = "render", .intake = intake,
                             .completions = done, .waiting = waiting};
    rp_verdict v;
    assert_int_equal(rp_judge_divergent_kind(&g, t, &v), RP_OK);
    rp_condition c = v.condition;
    if (c == RP_COND_NONE) assert_null(v.object);
    rp_verdict_cleanup(&v);
    return c;
}

static void test_defaults(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_int_equal(t.divergence_window_seconds, 86400);
    assert_int_equal(t.divergence_ratio, 2);
    assert_int_equal(t.divergence_min_waiting, 50);
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    assert_int_equal(c.reap.divergence_window_seconds, 86400);
    assert_int_equal(c.reap.divergence_ratio, 2);
    assert_int_equal(c.reap.divergence_min_waiting, 50);
    rp_config_cleanup(&c);
}

static void test_ratio_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults(); /* ratio 2, min waiting 50 */
    /* 100 completions: intake 200 is AT 2x (not divergent), 199 under, 201 over. */
    assert_int_equal(kind_condition(199, 100, 51, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(200, 100, 51, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(201, 100, 51, &t), RP_COND_DIVERGENT);
    /* No completions at all: any intake diverges, none does not. */
    assert_int_equal(kind_condition(1, 0, 51, &t), RP_COND_DIVERGENT);
    assert_int_equal(kind_condition(0, 0, 51, &t), RP_COND_NONE);
    /* Another ratio. */
    t.divergence_ratio = 3;
    assert_int_equal(kind_condition(300, 100, 51, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(301, 100, 51, &t), RP_COND_DIVERGENT);
    /* The product saturates instead of wrapping. */
    t.divergence_ratio = 1000000;
    assert_int_equal(kind_condition(INT64_MAX, INT64_MAX / 2, 51, &t), RP_COND_NONE);
    /* Negative counts read as 0. */
    t = defaults();
    assert_int_equal(kind_condition(-5, 0, 51, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(1, -7, 51, &t), RP_COND_DIVERGENT);
}

static void test_waiting_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_int_equal(kind_condition(1000, 10, 49, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(1000, 10, 50, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(1000, 10, 51, &t), RP_COND_DIVERGENT);
    t.divergence_min_waiting = 0;
    assert_int_equal(kind_condition(1000, 10, 0, &t), RP_COND_NONE);
    assert_int_equal(kind_condition(1000, 10, 1, &t), RP_COND_DIVERGENT);
    assert_true(rp_judge_diverges(3, 1, 2, 2, 1));
    assert_false(rp_judge_diverges(2, 1, 2, 2, 1));
    assert_false(rp_judge_diverges(3, 1, 1, 2, 1));
}

static void test_kind_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_divergence_group g = {.project = "al:pha", .kind = "render", .intake = 300,
                             .completions = 40, .waiting = 120};
    rp_verdict v;
    assert_int_equal(rp_judge_divergent_kind(&g, &t, &v), RP_OK);
    assert_verdict(&v, &(verdict_want){RP_COND_DIVERGENT, RP_ACTION_SURFACED, RP_SOURCE_JOB_QUEUE,
                                       "kind:al%3Apha:render", "render", "al:pha", "jobs", 80,
                                       300.0, 0});
    assert_true(v.trusted);
    assert_non_null(strstr(v.detail, "300 jobs of kind render were created in project al:pha"));
    assert_non_null(strstr(v.detail, "over the last 86400 s but only 40 succeeded"));
    assert_non_null(strstr(v.detail, "120 are waiting (above 50)"));
    assert_cleared_back(&v, &t, NOW, "job_queue|DIVERGENT|kind:al%3Apha:render", 50);
    rp_verdict_cleanup(&v);
    rp_divergence_group bad = {.project = "alpha", .kind = NULL, .intake = 999, .waiting = 99};
    assert_int_equal(rp_judge_divergent_kind(&bad, &t, &v), RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_divergent_kind(NULL, &t, &v), RP_ERR_INVALID);
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

static rp_condition queue_condition(const rp_queue_facts *q, int64_t published, int64_t acked,
                                    const rp_thresholds *t) {
    rp_queue_rates r = {.known = true, .published = published, .acked = acked};
    rp_verdict v;
    assert_int_equal(rp_judge_divergent_queue(q, &r, t, &v), RP_OK);
    rp_condition c = v.condition;
    rp_verdict_cleanup(&v);
    return c;
}

static void test_queue_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue(51);
    assert_int_equal(queue_condition(&q, 199, 100, &t), RP_COND_NONE);
    assert_int_equal(queue_condition(&q, 200, 100, &t), RP_COND_NONE);
    assert_int_equal(queue_condition(&q, 201, 100, &t), RP_COND_DIVERGENT);
    q = owned_queue(50);
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_NONE);
    q = owned_queue(49);
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_NONE);
    /* Only owned work queues whose counts and rates are known. */
    q = owned_queue(500);
    q.owned = false;
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_NONE);
    q = owned_queue(500);
    q.is_dead_letter_queue = true;
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_NONE);
    q = owned_queue(500);
    q.type = RP_QUEUE_TYPE_STREAM;
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_NONE);
    q = owned_queue(500);
    q.counts_known = false;
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_NONE);
    q = owned_queue(500);
    rp_queue_rates unknown = {.known = false, .published = 1000, .acked = 0};
    rp_verdict v;
    assert_int_equal(rp_judge_divergent_queue(&q, &unknown, &t, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    rp_verdict_cleanup(&v);
    q.type = RP_QUEUE_TYPE_QUORUM;
    assert_int_equal(queue_condition(&q, 1000, 0, &t), RP_COND_DIVERGENT);
}

static void test_queue_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue(70);
    rp_queue_rates r = {.known = true, .published = 90, .acked = 30};
    rp_verdict v;
    assert_int_equal(rp_judge_divergent_queue(&q, &r, &t, &v), RP_OK);
    assert_verdict(&v, &(verdict_want){RP_COND_DIVERGENT, RP_ACTION_SURFACED, RP_SOURCE_BROKER,
                                       "queue:/:vibey.render", "vibey.render", NULL, "messages",
                                       60, 90.0, 0});
    assert_non_null(strstr(v.detail, "90 publishes"));
    assert_non_null(strstr(v.detail, "only 30 acks"));
    assert_non_null(strstr(v.detail, "70 ready messages (above 50)"));
    assert_cleared_back(&v, &t, NOW, "broker|DIVERGENT|queue:/:vibey.render", -1);
    rp_verdict_cleanup(&v);
}

static void test_condition_name(void **state) {
    (void)state;
    assert_string_equal(rp_condition_string(RP_COND_DIVERGENT), "DIVERGENT");
    rp_condition c;
    assert_true(rp_condition_parse("DIVERGENT", &c));
    assert_int_equal(c, RP_COND_DIVERGENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_ratio_boundary),
        cmocka_unit_test(test_waiting_boundary),
        cmocka_unit_test(test_kind_verdict_fields),
        cmocka_unit_test(test_queue_boundary),
        cmocka_unit_test(test_queue_verdict_fields),
        cmocka_unit_test(test_condition_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
