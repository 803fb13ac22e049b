/* Issue 18 item 4's judge (core/rp_wedged.h): one check of a (project,
 * kind) (the quiet at, 1 ms under and 1 ms over reap.wedged_seconds;
 * nothing with no claimable work or with a live lease; measured from the
 * newest completion or, later, from when the work became claimable), the
 * consecutive-check count (at, one under, one over reap.wedged_checks),
 * every field of the verdict, its sighting key and its CLEARED verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_object.h"
#include "rp_sighting.h"
#include "rp_wedged.h"

#define NOW ((rp_time_ms)1700000000000LL)
#define WINDOW_MS ((rp_time_ms)900 * 1000)

static rp_thresholds defaults(void) {
    rp_thresholds t;
    rp_thresholds_default(&t);
    return t;
}

/* Claimable for a day, the newest completion `done_ago` ms before NOW. */
static rp_wedge_group group(rp_time_ms done_ago) {
    rp_wedge_group g = {
        .project = "al:pha",
        .kind = "render",
        .claimable = 4,
        .active = 0,
        .claimable_since = NOW - 86400000,
        .completed_known = true,
        .last_completed_at = NOW - done_ago,
    };
    return g;
}

static void test_defaults(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_int_equal(t.wedged_seconds, 900);
    assert_int_equal(t.wedged_checks, 3);
    assert_string_equal(rp_condition_string(RP_COND_WEDGED), "WEDGED");
    rp_condition c;
    assert_true(rp_condition_parse("WEDGED", &c));
    assert_int_equal(c, RP_COND_WEDGED);
}

static void test_check_window_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_wedge_group at = group(WINDOW_MS), under = group(WINDOW_MS - 1),
                   over = group(WINDOW_MS + 1);
    assert_true(rp_judge_wedge_check(&at, &t, NOW));
    assert_false(rp_judge_wedge_check(&under, &t, NOW));
    assert_true(rp_judge_wedge_check(&over, &t, NOW));
    /* A completion in the future (clock skew) is not quiet. */
    rp_wedge_group skew = group(-5000);
    assert_false(rp_judge_wedge_check(&skew, &t, NOW));
    assert_false(rp_judge_wedge_check(NULL, &t, NOW));
}

static void test_check_needs_work_and_no_live_lease(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_wedge_group g = group(WINDOW_MS * 10);
    assert_true(rp_judge_wedge_check(&g, &t, NOW));
    g.active = 1; /* somebody holds a live lease: working, not wedged */
    assert_false(rp_judge_wedge_check(&g, &t, NOW));
    g.active = 0;
    g.claimable = 0; /* nothing to do */
    assert_false(rp_judge_wedge_check(&g, &t, NOW));
}

static void test_quiet_counts_from_the_later_of_completion_and_work(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    /* Idle for a day, work arrived 1 ms under the window ago: not yet. */
    rp_wedge_group g = group(86400000);
    g.claimable_since = NOW - WINDOW_MS + 1;
    assert_int_equal(rp_wedge_quiet_ms(&g, NOW), WINDOW_MS - 1);
    assert_false(rp_judge_wedge_check(&g, &t, NOW));
    g.claimable_since = NOW - WINDOW_MS;
    assert_true(rp_judge_wedge_check(&g, &t, NOW));
    /* Never completed: from when the work became claimable. */
    g.completed_known = false;
    g.last_completed_at = NOW; /* ignored */
    assert_int_equal(rp_wedge_quiet_ms(&g, NOW), WINDOW_MS);
    assert_true(rp_judge_wedge_check(&g, &t, NOW));
    g.claimable_since = NOW - WINDOW_MS + 1;
    assert_false(rp_judge_wedge_check(&g, &t, NOW));
}

static void test_count_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_false(rp_judge_wedge_count(2, &t));
    assert_true(rp_judge_wedge_count(3, &t));
    assert_true(rp_judge_wedge_count(4, &t));
    assert_false(rp_judge_wedge_count(0, &t));
    t.wedged_checks = 1;
    assert_true(rp_judge_wedge_count(1, &t));
    assert_false(rp_judge_wedge_count(0, &t));
    rp_wedge_group g = group(WINDOW_MS);
    rp_verdict v;
    t = defaults();
    assert_int_equal(rp_judge_wedged(&g, &t, NOW, 2, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_wedged(&g, &t, NOW, 3, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_WEDGED);
    rp_verdict_cleanup(&v);
    /* Enough checks but healthy now: nothing. */
    g.active = 1;
    assert_int_equal(rp_judge_wedged(&g, &t, NOW, 5, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    rp_verdict_cleanup(&v);
}

static void test_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_wedge_group g = group(WINDOW_MS + 500);
    rp_verdict v;
    assert_int_equal(rp_judge_wedged(&g, &t, NOW, 3, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_WEDGED);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_JOB_QUEUE);
    assert_string_equal(v.object, "kind:al%3Apha:render");
    assert_string_equal(v.queue, "render");
    assert_string_equal(v.project, "al:pha");
    assert_string_equal(v.unit, "seconds");
    assert_int_equal(v.threshold, 900);
    assert_true(v.measured == 900.5);
    assert_non_null(strstr(v.detail, "4 claimable jobs of kind render in project al:pha"));
    assert_non_null(strstr(v.detail, "on 3 consecutive checks"));
    assert_non_null(strstr(v.detail, "newest completion 900.500 s ago"));
    assert_non_null(strstr(v.detail, "job_queue.wedged.surfaced"));
    char *key = NULL;
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_OK);
    assert_string_equal(key, "job_queue|WEDGED|kind:al%3Apha:render");
    rp_sighting_row row = {key, RP_COND_WEDGED, 7, NOW};
    rp_verdict c;
    assert_int_equal(rp_judge_cleared(&row, &t, &c), RP_OK);
    assert_int_equal(c.condition, RP_COND_WEDGED);
    assert_int_equal(c.action, RP_ACTION_CLEARED);
    assert_string_equal(c.project, "al:pha");
    assert_string_equal(c.queue, "render");
    assert_string_equal(c.unit, "seconds");
    assert_int_equal(c.threshold, 900);
    rp_verdict_cleanup(&c);
    free(key);
    rp_verdict_cleanup(&v);
    g.completed_known = false;
    assert_int_equal(rp_judge_wedged(&g, &t, NOW, 3, &v), RP_OK);
    assert_non_null(strstr(v.detail, "no job of it ever succeeded"));
    rp_verdict_cleanup(&v);
    rp_wedge_group bad = group(WINDOW_MS);
    bad.kind = NULL;
    assert_int_equal(rp_judge_wedged(&bad, &t, NOW, 3, &v), RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_check_window_boundary),
        cmocka_unit_test(test_check_needs_work_and_no_live_lease),
        cmocka_unit_test(test_quiet_counts_from_the_later_of_completion_and_work),
        cmocka_unit_test(test_count_boundary),
        cmocka_unit_test(test_verdict_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
