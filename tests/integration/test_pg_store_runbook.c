/*
 * Issue 18 against the real database: migration 0007's claimed_at trigger
 * (set when a row becomes leased, untouched by heartbeats and by a worker
 * writing it, reset by a new owner, cleared when the row leaves leased);
 * STALLED surfaced once per sighting, naming job, owner and hold, left to
 * the lease reap when the lease expired, cleared when the job settles;
 * reap.held_evict_factor's fenced requeue with its ledger event (and the
 * worker's later settle failing its fence); WAITING_DEPTH per (project,
 * kind), strictly above the threshold, cleared when the depth falls back.
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

static int setup(void **state) {
    pgfx *f = pgfx_new("runbook");
    f->opt.thresholds.held_ceiling_seconds = 3600;
    f->opt.thresholds.held_evict_factor = 0;
    f->opt.thresholds.waiting_depth_threshold = 10;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

/* A job leased by owner, its lease alive for another minute, claimed `ago`
 * before now (the trigger is switched off to backdate claimed_at: a
 * worker cannot). */
static int64_t held(pgfx *f, const char *owner, const char *ago) {
    int64_t id = pgfx_i64(f,
                          "INSERT INTO job (project_id, kind, state, lease_owner, lease_expires_at)"
                          " VALUES ('alpha', 'render', 'leased', '%s', now() + interval '1 minute')"
                          " RETURNING id",
                          owner);
    pgfx_exec(f, "ALTER TABLE job DISABLE TRIGGER job_claimed_at");
    pgfx_exec(f, "UPDATE job SET claimed_at = now() - interval '%s' WHERE id = %" PRId64, ago, id);
    pgfx_exec(f, "ALTER TABLE job ENABLE TRIGGER job_claimed_at");
    return id;
}

static const rp_verdict *find(const rp_report *r, rp_condition c, rp_action a, const char *object) {
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        if (v->condition == c && v->action == a && strcmp(v->object, object) == 0) return v;
    }
    return NULL;
}

static size_t count_cond(const rp_report *r, rp_condition c) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++) n += r->verdicts[i].condition == c;
    return n;
}

static int64_t ledger(pgfx *f, const char *condition, const char *action) {
    return pgfx_i64(f,
                    "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND"
                    " payload->>'condition' = '%s' AND payload->>'action' = '%s'",
                    condition, action);
}

static void test_claimed_at_trigger(void **state) {
    pgfx *f = *state;
    int64_t id = pgfx_i64(f, "INSERT INTO job (project_id, kind, state) VALUES ('alpha', 'render',"
                             " 'ready') RETURNING id");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND claimed_at IS NULL", id), 1);
    /* Becomes leased: set. */
    pgfx_exec(f, "UPDATE job SET state = 'leased', lease_owner = 'w1', lease_expires_at = now() +"
                 " interval '1 minute' WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND claimed_at IS NOT NULL", id), 1);
    /* Backdate it, then heartbeat (also naming state, as some workers do),
     * and a worker writing claimed_at itself: unchanged. */
    pgfx_exec(f, "ALTER TABLE job DISABLE TRIGGER job_claimed_at");
    pgfx_exec(f, "UPDATE job SET claimed_at = '2020-01-01 00:00:00+00' WHERE id = %" PRId64, id);
    pgfx_exec(f, "ALTER TABLE job ENABLE TRIGGER job_claimed_at");
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() + interval '2 minutes' WHERE id = %" PRId64,
              id);
    pgfx_exec(f, "UPDATE job SET state = 'leased', lease_expires_at = now() + interval '3 minutes',"
                 " updated_at = now() WHERE id = %" PRId64, id);
    pgfx_exec(f, "UPDATE job SET claimed_at = now() WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND claimed_at = '2020-01-01 00:00:00+00'", id), 1);
    /* Another owner takes the lease over: a new hold. */
    pgfx_exec(f, "UPDATE job SET lease_owner = 'w2' WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND claimed_at > now() - interval '1 minute'", id), 1);
    /* Leaves leased: cleared. */
    pgfx_exec(f, "UPDATE job SET state = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,"
                 " finished_at = now() WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND claimed_at IS NULL", id), 1);
    /* Inserted leased: set. */
    int64_t id2 = pgfx_i64(f, "INSERT INTO job (project_id, kind, state, lease_owner,"
                              " lease_expires_at) VALUES ('alpha', 'render', 'leased', 'w',"
                              " now() + interval '1 minute') RETURNING id");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND claimed_at IS NOT NULL", id2), 1);
}

static void test_stalled_surfaced_once_then_cleared(void **state) {
    pgfx *f = *state;
    int64_t stalled = held(f, "worker-7", "2 hours");
    int64_t young = held(f, "worker-8", "59 minutes");
    /* Held long, but its lease expired: the lease reap's (requeued). */
    int64_t expired = held(f, "worker-9", "3 hours");
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() - interval '1 minute' WHERE id = %" PRId64,
              expired);
    char obj[32], obj_young[32], obj_expired[32];
    snprintf(obj, sizeof obj, "job:%" PRId64, stalled);
    snprintf(obj_young, sizeof obj_young, "job:%" PRId64, young);
    snprintf(obj_expired, sizeof obj_expired, "job:%" PRId64, expired);

    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    const rp_verdict *v = find(&r, RP_COND_STALLED, RP_ACTION_SURFACED, obj);
    assert_non_null(v);
    assert_string_equal(v->project, "alpha");
    assert_string_equal(v->queue, "render");
    assert_non_null(strstr(v->detail, "worker-7"));
    assert_true(v->measured >= 7200 && v->measured < 7300);
    assert_int_equal(v->threshold, 3600);
    assert_int_equal(count_cond(&r, RP_COND_STALLED), 1);
    assert_non_null(find(&r, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED, obj_expired));
    assert_null(find(&r, RP_COND_STALLED, RP_ACTION_SURFACED, obj_young));
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "STALLED", "SURFACED"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting WHERE key ="
                                 " 'job_queue|STALLED|job:%" PRId64 "'", stalled), 1);
    /* The hold is untouched (it is only surfaced). */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'leased' AND lease_owner = 'worker-7'", stalled), 1);

    /* A heartbeat, then another pass: open already, nothing recorded. */
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() + interval '1 minute' WHERE id = %" PRId64,
              stalled);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(count_cond(&r, RP_COND_STALLED), 0);
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "STALLED", "SURFACED"), 1);

    /* The worker settles: the next pass clears it, once. */
    pgfx_exec(f, "UPDATE job SET state = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,"
                 " finished_at = now() WHERE id = %" PRId64, stalled);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_non_null(find(&r, RP_COND_STALLED, RP_ACTION_CLEARED, obj));
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "STALLED", "CLEARED"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting WHERE key LIKE"
                                 " 'job_queue|STALLED|%%'"), 0);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(count_cond(&r, RP_COND_STALLED), 0);
    rp_report_cleanup(&r);
}

static void test_stalled_evicted_fenced(void **state) {
    pgfx *f = *state;
    f->opt.thresholds.held_evict_factor = 2;
    int64_t evict = held(f, "worker-7", "2 hours 1 second");
    int64_t keep = held(f, "worker-8", "90 minutes");
    char obj[32], obj_keep[32];
    snprintf(obj, sizeof obj, "job:%" PRId64, evict);
    snprintf(obj_keep, sizeof obj_keep, "job:%" PRId64, keep);

    /* A dry run moves nothing but says what a pass would. */
    rp_report r;
    char *before = pgfx_dump(f);
    assert_int_equal(pgfx_pass(f, true, &r), RP_OK);
    assert_non_null(find(&r, RP_COND_STALLED, RP_ACTION_REQUEUED, obj));
    rp_report_cleanup(&r);
    char *after = pgfx_dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    size_t published = f->published;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    const rp_verdict *v = find(&r, RP_COND_STALLED, RP_ACTION_REQUEUED, obj);
    assert_non_null(v);
    assert_int_equal(v->threshold, 7200);
    assert_non_null(strstr(v->detail, "worker-7"));
    assert_non_null(find(&r, RP_COND_STALLED, RP_ACTION_SURFACED, obj_keep));
    assert_null(find(&r, RP_COND_STALLED, RP_ACTION_SURFACED, obj));
    rp_report_cleanup(&r);
    assert_true(f->published >= published + 2);
    /* Requeued: ready, lease and hold cleared, attempts unchanged; one
     * STALLED / REQUEUED ledger event naming the job. */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'ready' AND lease_owner IS NULL AND lease_expires_at"
                                 " IS NULL AND claimed_at IS NULL AND attempts = 0", evict), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE payload->>'condition' ="
                                 " 'STALLED' AND payload->>'action' = 'REQUEUED' AND"
                                 " payload->>'object' = '%s' AND project_id = 'alpha'", obj), 1);
    /* The worker's later settle, fenced on its lease, changes nothing. */
    assert_int_equal(pgfx_i64(f, "WITH s AS (UPDATE job SET state = 'succeeded' WHERE id = %" PRId64
                                 " AND state = 'leased' AND lease_owner = 'worker-7' RETURNING id)"
                                 " SELECT count(*) FROM s", evict), 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'leased'", keep), 1);

    /* The eviction's fence: a row claimed anew since it was listed is not
     * moved. */
    const rp_store_port *s = &f->ports.store;
    rp_long_held_query q = {.now = f->ports.clock.now_ms(f->ports.clock.self),
                            .grace_seconds = 0, .limit = 10};
    q.claimed_before = q.now - 3600 * 1000;
    rp_long_held_list l;
    assert_int_equal(s->list_long_held(s->self, &q, &l), RP_OK);
    assert_int_equal(l.n, 1);
    rp_long_held_job job = l.jobs[0];
    assert_int_equal(job.id, keep);
    assert_true(job.claimed_known);
    job.lease_owner = "worker-8";
    job.project = job.kind = NULL;
    /* The same owner gave it back and claimed it again: a new hold. */
    pgfx_exec(f, "UPDATE job SET state = 'ready', lease_owner = NULL, lease_expires_at = NULL"
                 " WHERE id = %" PRId64, keep);
    pgfx_exec(f, "UPDATE job SET state = 'leased', lease_owner = 'worker-8', lease_expires_at ="
                 " now() + interval '1 minute' WHERE id = %" PRId64, keep);
    rp_verdict ev;
    rp_verdict_init(&ev);
    ev.condition = RP_COND_STALLED;
    ev.action = RP_ACTION_REQUEUED;
    ev.source = RP_SOURCE_JOB_QUEUE;
    assert_int_equal(rp_verdict_set_object(&ev, obj_keep), RP_OK);
    assert_int_equal(rp_verdict_set_unit(&ev, "seconds"), RP_OK);
    rp_event_ref ref;
    assert_int_equal(s->evict_held(s->self, &job, &ev, &ref), RP_ERR_CONFLICT);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'leased' AND lease_owner = 'worker-8'", keep), 1);
    /* Another owner took it over (same claim time as listed): refused too. */
    pgfx_exec(f, "ALTER TABLE job DISABLE TRIGGER job_claimed_at");
    pgfx_exec(f, "UPDATE job SET lease_owner = 'worker-9', claimed_at = to_timestamp(%" PRId64
                 " / 1000.0) WHERE id = %" PRId64, job.claimed_at, keep);
    pgfx_exec(f, "ALTER TABLE job ENABLE TRIGGER job_claimed_at");
    assert_int_equal(s->evict_held(s->self, &job, &ev, &ref), RP_ERR_CONFLICT);
    /* And the row as listed is evicted (the fence holds both ways). */
    pgfx_exec(f, "UPDATE job SET lease_owner = 'worker-8' WHERE id = %" PRId64, keep);
    pgfx_exec(f, "ALTER TABLE job DISABLE TRIGGER job_claimed_at");
    pgfx_exec(f, "UPDATE job SET claimed_at = to_timestamp(%" PRId64 " / 1000.0) WHERE id = %" PRId64,
              job.claimed_at, keep);
    pgfx_exec(f, "ALTER TABLE job ENABLE TRIGGER job_claimed_at");
    assert_int_equal(s->evict_held(s->self, &job, &ev, &ref), RP_OK);
    assert_true(ref.seq > 0);
    rp_verdict_cleanup(&ev);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'ready' AND lease_owner IS NULL", keep), 1);
}

/* run_after "now()" is the database's clock to the microsecond, the pass's
 * now (the fixture's clock) is whole milliseconds: a pass within the same
 * millisecond as the insert would see the rows a fraction of a millisecond
 * in the future, not claimable yet. Such rows are claimable from a second
 * ago instead. */
#define RP_NOW_CLAIMABLE "now() - interval '1 second'"

static void add_ready(pgfx *f, const char *project, const char *kind, int n, const char *run_after) {
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, run_after) SELECT '%s', '%s', 'ready',"
                 " %s FROM generate_series(1, %d)", project, kind, run_after, n);
}

static void test_waiting_depth(void **state) {
    pgfx *f = *state;
    f->opt.thresholds.stale_ready_seconds = 86400; /* only the depth here */
    add_ready(f, "alpha", "render", 11, RP_NOW_CLAIMABLE);          /* one over */
    add_ready(f, "alpha", "mail", 10, RP_NOW_CLAIMABLE);            /* at */
    add_ready(f, "beta", "render", 10, RP_NOW_CLAIMABLE);           /* at ... */
    add_ready(f, "beta", "render", 1, "now() + interval '1 hour'"); /* ... not claimable */
    add_ready(f, "gamma", "render", 9, RP_NOW_CLAIMABLE);           /* under */
    /* A dependency not succeeded makes a job unclaimable. */
    int64_t dep = pgfx_i64(f, "INSERT INTO job (project_id, kind, state) VALUES ('delta', 'x',"
                              " 'failed') RETURNING id");
    add_ready(f, "delta", "render", 10, RP_NOW_CLAIMABLE);
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, depends_on) VALUES ('delta', 'render',"
                 " 'ready', %" PRId64 ")", dep);

    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(count_cond(&r, RP_COND_WAITING_DEPTH), 1);
    const rp_verdict *v = find(&r, RP_COND_WAITING_DEPTH, RP_ACTION_SURFACED, "kind:alpha:render");
    assert_non_null(v);
    assert_true(v->measured == 11.0);
    assert_int_equal(v->threshold, 10);
    assert_string_equal(v->unit, "jobs");
    assert_non_null(strstr(v->detail, "cap on admission"));
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "WAITING_DEPTH", "SURFACED"), 1);

    /* Still deep: nothing new. */
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(count_cond(&r, RP_COND_WAITING_DEPTH), 0);
    rp_report_cleanup(&r);

    /* A worker takes one: at the threshold, cleared once. */
    pgfx_exec(f, "UPDATE job SET state = 'leased', lease_owner = 'w', lease_expires_at = now() +"
                 " interval '1 minute' WHERE id = (SELECT min(id) FROM job WHERE project_id ="
                 " 'alpha' AND kind = 'render')");
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    v = find(&r, RP_COND_WAITING_DEPTH, RP_ACTION_CLEARED, "kind:alpha:render");
    assert_non_null(v);
    assert_string_equal(v->project, "alpha");
    assert_string_equal(v->queue, "render");
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "WAITING_DEPTH", "CLEARED"), 1);

    /* A pass narrowed to another project does not clear alpha's. */
    add_ready(f, "alpha", "render", 5, RP_NOW_CLAIMABLE);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_non_null(find(&r, RP_COND_WAITING_DEPTH, RP_ACTION_SURFACED, "kind:alpha:render"));
    rp_report_cleanup(&r);
    pgfx_exec(f, "DELETE FROM job WHERE project_id = 'alpha' AND kind = 'render' AND state ="
                 " 'ready'");
    f->opt.project = "beta";
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(count_cond(&r, RP_COND_WAITING_DEPTH), 0);
    rp_report_cleanup(&r);
    f->opt.project = NULL;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_non_null(find(&r, RP_COND_WAITING_DEPTH, RP_ACTION_CLEARED, "kind:alpha:render"));
    rp_report_cleanup(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claimed_at_trigger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_surfaced_once_then_cleared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_evicted_fenced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_depth, setup, teardown),
    };
    return cmocka_run_group_tests_name("pg_store_runbook", tests, NULL, NULL);
}
