/*
 * Issue 18 item 4 against the real database: WEDGED on the job table. A
 * (project, kind) with claimable jobs, no live lease and no completion for
 * reap.wedged_seconds is surfaced on the reap.wedged_checks-th consecutive
 * check, once per sighting, and cleared when a job of it succeeds; the
 * counter lives in migration 0008's wedge_check (it survives a store of
 * its own, as another replica has), one healthy check resets it, a dry run
 * writes nothing, a pass over one project leaves the others' counters.
 * Each test works in a schema of its own, dropped after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "pg_fixture.h"

static void thresholds(pgfx *f) {
    f->opt.thresholds.wedged_seconds = 900;
    f->opt.thresholds.wedged_checks = 3;
    f->opt.thresholds.waiting_depth_threshold = 1000; /* keep WAITING_DEPTH out */
}

static int setup(void **state) {
    pgfx *f = pgfx_new("wedged");
    thresholds(f);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

/* n ready jobs of kind in project, claimable since `ago`. */
static void ready(pgfx *f, const char *project, const char *kind, int n, const char *ago) {
    pgfx_exec(f,
              "INSERT INTO job (project_id, kind, state, run_after, created_at)"
              " SELECT '%s', '%s', 'ready', now() - interval '%s', now() - interval '%s'"
              " FROM generate_series(1, %d)",
              project, kind, ago, ago, n);
}

/* A job of kind in project that succeeded `ago`. */
static void succeeded(pgfx *f, const char *project, const char *kind, const char *ago) {
    pgfx_exec(f,
              "INSERT INTO job (project_id, kind, state, created_at, finished_at)"
              " VALUES ('%s', '%s', 'succeeded', now() - interval '1 day',"
              " now() - interval '%s')",
              project, kind, ago);
}

/* A job of kind in project leased with a live lease; returns its id. */
static int64_t working(pgfx *f, const char *project, const char *kind) {
    return pgfx_i64(f,
                    "INSERT INTO job (project_id, kind, state, lease_owner, lease_expires_at)"
                    " VALUES ('%s', '%s', 'leased', 'worker-1', now() + interval '1 minute')"
                    " RETURNING id",
                    project, kind);
}

static const rp_verdict *find(const rp_report *r, rp_action a, const char *object) {
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        if (v->condition == RP_COND_WEDGED && v->action == a && strcmp(v->object, object) == 0)
            return v;
    }
    return NULL;
}

static size_t count_wedged(const rp_report *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++) n += r->verdicts[i].condition == RP_COND_WEDGED;
    return n;
}

static int64_t ledger(pgfx *f, const char *action) {
    return pgfx_i64(f,
                    "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND"
                    " payload->>'condition' = 'WEDGED' AND payload->>'action' = '%s'",
                    action);
}

static int64_t checks(pgfx *f, const char *subject) {
    return pgfx_i64(f, "SELECT coalesce(max(consecutive), 0) FROM wedge_check WHERE subject = '%s'",
                    subject);
}

/* One pass (not a dry run) that must be ok and surface no WEDGED. */
static void quiet_pass(pgfx *f) {
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(count_wedged(&r), 0);
    rp_report_cleanup(&r);
}

static void test_wedged_on_the_third_check_then_cleared(void **state) {
    pgfx *f = *state;
    ready(f, "alpha", "render", 3, "2 hours");
    succeeded(f, "alpha", "render", "1 hour");
    /* Work, but a live lease on it: working. */
    ready(f, "alpha", "encode", 2, "2 hours");
    working(f, "alpha", "encode");
    /* Work claimable for 1 second under the window: not yet. */
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, run_after, created_at) VALUES"
                 " ('alpha', 'fresh', 'ready', now() - interval '899 seconds',"
                 " now() - interval '899 seconds')");
    /* No work at all, completions long ago: idle, not wedged. */
    succeeded(f, "alpha", "idle", "5 hours");
    const char *obj = "kind:alpha:render";

    quiet_pass(f);
    assert_int_equal(checks(f, obj), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM wedge_check"), 1);
    quiet_pass(f);
    assert_int_equal(checks(f, obj), 2);

    /* A dry run says what the third check would surface, and writes
     * nothing (not even the counter). */
    char *before = pgfx_dump(f);
    rp_report r;
    assert_int_equal(pgfx_pass(f, true, &r), RP_OK);
    assert_non_null(find(&r, RP_ACTION_SURFACED, obj));
    rp_report_cleanup(&r);
    char *after = pgfx_dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    size_t published = f->published;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    const rp_verdict *v = find(&r, RP_ACTION_SURFACED, obj);
    assert_non_null(v);
    assert_int_equal(v->source, RP_SOURCE_JOB_QUEUE);
    assert_string_equal(v->project, "alpha");
    assert_string_equal(v->queue, "render");
    assert_int_equal(v->threshold, 900);
    assert_true(v->measured >= 3600 && v->measured < 3700);
    assert_non_null(strstr(v->detail, "3 claimable jobs of kind render"));
    assert_non_null(strstr(v->detail, "on 3 consecutive checks"));
    assert_int_equal(count_wedged(&r), 1);
    rp_report_cleanup(&r);
    assert_int_equal(f->published, published + 1);
    assert_int_equal(ledger(f, "SURFACED"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting WHERE key ="
                                 " 'job_queue|WEDGED|kind:alpha:render'"), 1);

    /* Still wedged: open already, nothing recorded again. */
    quiet_pass(f);
    assert_int_equal(checks(f, obj), 4);
    assert_int_equal(ledger(f, "SURFACED"), 1);

    /* A worker comes back and one job succeeds: cleared once, the
     * counter gone. */
    pgfx_exec(f, "UPDATE job SET state = 'succeeded', finished_at = now() WHERE id = (SELECT"
                 " min(id) FROM job WHERE kind = 'render' AND state = 'ready')");
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_non_null(find(&r, RP_ACTION_CLEARED, obj));
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "CLEARED"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM wedge_check"), 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting WHERE key LIKE"
                                 " 'job_queue|WEDGED|%%'"), 0);
    quiet_pass(f);
    assert_int_equal(ledger(f, "CLEARED"), 1);
}

static void test_one_healthy_check_resets_the_count(void **state) {
    pgfx *f = *state;
    ready(f, "alpha", "render", 1, "1 day"); /* never completed */
    const char *obj = "kind:alpha:render";
    quiet_pass(f);
    quiet_pass(f);
    assert_int_equal(checks(f, obj), 2);
    /* One check with a live lease on the kind: healthy, the count reset. */
    int64_t id = working(f, "alpha", "render");
    quiet_pass(f);
    assert_int_equal(checks(f, obj), 0);
    pgfx_exec(f, "DELETE FROM job WHERE id = %" PRId64, id);
    quiet_pass(f);
    quiet_pass(f);
    assert_int_equal(checks(f, obj), 2);
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    const rp_verdict *v = find(&r, RP_ACTION_SURFACED, obj);
    assert_non_null(v);
    assert_non_null(strstr(v->detail, "no job of it ever succeeded"));
    rp_report_cleanup(&r);
}

static void test_count_shared_by_stores(void **state) {
    pgfx *f = *state;
    ready(f, "alpha", "render", 2, "1 hour");
    pgfx *other = pgfx_attach(f->schema); /* another replica's store */
    thresholds(other);
    const char *obj = "kind:alpha:render";
    quiet_pass(f);
    quiet_pass(other);
    assert_int_equal(checks(f, obj), 2);
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_non_null(find(&r, RP_ACTION_SURFACED, obj));
    rp_report_cleanup(&r);
    /* The other replica sees it open: nothing recorded again. */
    quiet_pass(other);
    assert_int_equal(ledger(f, "SURFACED"), 1);
    pgfx_free(other);
}

static void test_a_project_pass_keeps_other_projects(void **state) {
    pgfx *f = *state;
    ready(f, "alpha", "render", 1, "1 hour");
    ready(f, "beta", "render", 1, "1 hour");
    quiet_pass(f);
    assert_int_equal(checks(f, "kind:alpha:render"), 1);
    assert_int_equal(checks(f, "kind:beta:render"), 1);
    /* beta recovers; a pass over beta alone resets beta's, not alpha's. */
    pgfx_exec(f, "UPDATE job SET state = 'succeeded', finished_at = now() WHERE project_id ="
                 " 'beta'");
    f->opt.project = "beta";
    quiet_pass(f);
    assert_int_equal(checks(f, "kind:alpha:render"), 1);
    assert_int_equal(checks(f, "kind:beta:render"), 0);
    f->opt.project = NULL;
    quiet_pass(f);
    assert_int_equal(checks(f, "kind:alpha:render"), 2);
}

/* A job whose dependency succeeded 10 minutes ago became claimable then,
 * however old its run_after: not quiet for the window yet. */
static void test_claimable_since_its_dependency(void **state) {
    pgfx *f = *state;
    int64_t dep = pgfx_i64(f, "INSERT INTO job (project_id, kind, state, created_at, finished_at)"
                              " VALUES ('alpha', 'prep', 'succeeded', now() - interval '1 day',"
                              " now() - interval '10 minutes') RETURNING id");
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, run_after, created_at, depends_on)"
                 " VALUES ('alpha', 'assemble', 'ready', now() - interval '2 hours',"
                 " now() - interval '2 hours', %" PRId64 ")", dep);
    quiet_pass(f);
    assert_int_equal(checks(f, "kind:alpha:assemble"), 0);
    /* Its dependency 16 minutes ago: quiet past the window. */
    pgfx_exec(f, "UPDATE job SET finished_at = now() - interval '16 minutes' WHERE id = %" PRId64,
              dep);
    quiet_pass(f);
    assert_int_equal(checks(f, "kind:alpha:assemble"), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wedged_on_the_third_check_then_cleared, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_one_healthy_check_resets_the_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_count_shared_by_stores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_project_pass_keeps_other_projects, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_claimable_since_its_dependency, setup, teardown),
    };
    return cmocka_run_group_tests_name("pg_store_wedged", tests, NULL, NULL);
}
