/*
 * The PostgreSQL store's stale-ready half and its sightings against the real
 * database: the oldest claimable job of every project (one with no worker
 * included), the dependency rules, sightings opened once across passes and
 * across connections racing, and cleared when the condition is gone. Each
 * test works in a schema of its own, dropped after.
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
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"
#include "pg_fixture.h"

static int setup(void **state) {
    *state = pgfx_new("ready");
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

static int64_t add_job(pgfx *f, const char *project, const char *state, const char *run_after,
                       int64_t depends_on, const char *finished_at) {
    char dep[24] = "NULL";
    if (depends_on) snprintf(dep, sizeof dep, "%" PRId64, depends_on);
    return pgfx_i64(f,
                    "INSERT INTO job (project_id, kind, state, run_after, depends_on, finished_at,"
                    " lease_owner, lease_expires_at) VALUES ('%s', 'resize', '%s', %s, %s, %s,"
                    " CASE WHEN '%s' = 'leased' THEN 'w' END,"
                    " CASE WHEN '%s' = 'leased' THEN now() + interval '1 minute' END)"
                    " RETURNING id",
                    project, state, run_after, dep, finished_at ? finished_at : "NULL", state,
                    state);
}

static const rp_claimable_job *find(const rp_claimable_list *l, const char *project) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->jobs[i].project, project) == 0) return &l->jobs[i];
    return NULL;
}

static rp_time_ms db_ms(pgfx *f, const char *expr) {
    return pgfx_i64(f, "SELECT floor(extract(epoch FROM %s) * 1000)::int8", expr);
}

/* Every project's oldest claimable job: one with a worker, one with none,
 * one that is not stale yet; projects with nothing claimable are absent. */
static void test_oldest_claimable_per_project(void **state) {
    pgfx *f = *state;
    add_job(f, "alpha", "leased", "now() - interval '4 hours'", 0, NULL); /* a worker */
    int64_t a1 = add_job(f, "alpha", "ready", "now() - interval '3 hours'", 0, NULL);
    add_job(f, "alpha", "ready", "now() - interval '1 hour'", 0, NULL);
    int64_t b2 = add_job(f, "beta", "ready", "now() - interval '1 hour'", 0, NULL);
    int64_t b1 = add_job(f, "beta", "ready", "now() - interval '2 hours'", 0, NULL);
    int64_t g1 = add_job(f, "gamma", "ready", "now() - interval '1 minute'", 0, NULL);
    add_job(f, "delta", "ready", "now() + interval '1 hour'", 0, NULL);
    add_job(f, "epsilon", "succeeded", "now() - interval '9 hours'", 0, "now()");
    add_job(f, "epsilon", "awaiting_human", "now() - interval '9 hours'", 0, NULL);
    (void)b2;

    const rp_store_port *s = &f->ports.store;
    rp_time_ms now = f->ports.clock.now_ms(f->ports.clock.self);
    rp_claimable_list l;
    assert_int_equal(s->list_oldest_claimable(s->self, NULL, now, &l), RP_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(find(&l, "alpha")->job_id, a1);
    assert_int_equal(find(&l, "beta")->job_id, b1);
    assert_int_equal(find(&l, "gamma")->job_id, g1);
    assert_string_equal(find(&l, "beta")->kind, "resize");
    assert_false(find(&l, "beta")->dependency_finished_known);
    char expr[120];
    snprintf(expr, sizeof expr, "(SELECT run_after FROM job WHERE id = %" PRId64 ")", b1);
    assert_int_equal(find(&l, "beta")->run_after, db_ms(f, expr));
    assert_int_equal(s->list_oldest_claimable(s->self, "beta", now, &l), RP_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.jobs[0].job_id, b1);
    assert_int_equal(s->list_oldest_claimable(s->self, "delta", now, &l), RP_OK);
    assert_int_equal(l.n, 0);

    /* The pass surfaces the stale ones, with or without a worker. */
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 2);
    for (size_t i = 0; i < r.n_verdicts; i++) {
        assert_int_equal(r.verdicts[i].condition, RP_COND_STALE_READY);
        assert_int_equal(r.verdicts[i].action, RP_ACTION_SURFACED);
    }
    rp_report_cleanup(&r);
    char *keys = pgfx_text(f, "SELECT string_agg(key, ',' ORDER BY key) FROM sighting");
    assert_string_equal(keys,
                        "job_queue|STALE_READY|project:alpha,job_queue|STALE_READY|project:beta");
    free(keys);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger l JOIN sighting s"
                                 " ON s.opened_seq = l.seq AND s.opened_at = l.at"
                                 " WHERE l.payload->>'action' = 'SURFACED'"
                                 " AND l.payload->>'condition' = 'STALE_READY'"
                                 " AND l.project_id = l.payload->>'project'"),
                     2);
}

/* A dependency that has not succeeded keeps a job from being claimable; a
 * dependency that finished after the job's run_after starts its wait. */
static void test_dependency_rules(void **state) {
    pgfx *f = *state;
    /* p: blocked behind a failed and a still-ready dependency; the claimable
     * one is the plain job. */
    int64_t failed = add_job(f, "p", "failed", "now() - interval '9 hours'", 0, "now()");
    add_job(f, "p", "ready", "now() - interval '5 hours'", failed, NULL);
    int64_t pending = add_job(f, "p", "ready", "now() + interval '1 day'", 0, NULL);
    add_job(f, "p", "ready", "now() - interval '6 hours'", pending, NULL);
    int64_t plain = add_job(f, "p", "ready", "now() - interval '1 hour'", 0, NULL);
    /* q: its dependency succeeded 20 minutes ago, long after its run_after:
     * it has waited 20 minutes, not 3 hours. */
    int64_t done = add_job(f, "q", "succeeded", "now() - interval '9 hours'", 0,
                           "now() - interval '20 minutes'");
    int64_t waits = add_job(f, "q", "ready", "now() - interval '3 hours'", done, NULL);
    /* r: the later of the two decides between jobs: a job whose dependency
     * finished recently is younger than a plain one of middling age. */
    int64_t recent = add_job(f, "r", "succeeded", "now() - interval '9 hours'", 0,
                             "now() - interval '5 minutes'");
    add_job(f, "r", "ready", "now() - interval '8 hours'", recent, NULL);
    int64_t middling = add_job(f, "r", "ready", "now() - interval '30 minutes'", 0, NULL);

    const rp_store_port *s = &f->ports.store;
    rp_time_ms now = f->ports.clock.now_ms(f->ports.clock.self);
    rp_claimable_list l;
    assert_int_equal(s->list_oldest_claimable(s->self, NULL, now, &l), RP_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(find(&l, "p")->job_id, plain);
    assert_int_equal(find(&l, "q")->job_id, waits);
    assert_true(find(&l, "q")->dependency_finished_known);
    char expr[120];
    snprintf(expr, sizeof expr, "(SELECT finished_at FROM job WHERE id = %" PRId64 ")", done);
    assert_int_equal(find(&l, "q")->dependency_finished_at, db_ms(f, expr));
    assert_int_equal(find(&l, "r")->job_id, middling);

    /* Stale ready measures q from its dependency's finish: 20 minutes. */
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 3);
    for (size_t i = 0; i < r.n_verdicts; i++) {
        if (strcmp(r.verdicts[i].project, "q") != 0) continue;
        assert_true(r.verdicts[i].measured >= 1200 && r.verdicts[i].measured < 1300);
    }
    rp_report_cleanup(&r);
}

/* On a random table (projects, ready jobs in the past and future,
 * dependencies in every state, finished or not), the adapter's answer is
 * what the plain definition gives: per project, the claimable job with the
 * earliest greatest(run_after, dependency finished_at), lowest id on a tie
 * (here as one DISTINCT ON over everything). */
static void test_claimable_matches_the_definition(void **state) {
    pgfx *f = *state;
    pgfx_exec(f, "SELECT setseed(0.42)");
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, run_after, finished_at)"
                 " SELECT 'p' || (g %% 7), 'k', (ARRAY['succeeded', 'failed', 'ready',"
                 " 'leased'])[1 + floor(random() * 4)::int],"
                 " now() - (random() * 7200) * interval '1 second' + interval '10 minutes',"
                 " CASE WHEN random() < 0.8 THEN now() - (random() * 7200) * interval '1 second' END"
                 " FROM generate_series(1, 400) g");
    /* Ties on run_after, so that the id decides. */
    pgfx_exec(f, "UPDATE job SET run_after = date_trunc('minute', run_after) WHERE id %% 3 = 0");
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, run_after, depends_on)"
                 " SELECT 'p' || (g %% 9), 'k', 'ready',"
                 " now() - (random() * 7200) * interval '1 second',"
                 " 1 + (random() * 399)::int FROM generate_series(1, 600) g");
    rp_time_ms now = f->ports.clock.now_ms(f->ports.clock.self);
    char *want = pgfx_text(
        f,
        "SELECT string_agg(project_id || ':' || id, ',' ORDER BY project_id) FROM ("
        " SELECT DISTINCT ON (j.project_id) j.project_id, j.id FROM job j"
        " LEFT JOIN job d ON d.id = j.depends_on WHERE j.state = 'ready'"
        " AND j.run_after <= to_timestamp(%" PRId64 " / 1000.0)"
        " AND (j.depends_on IS NULL OR d.state = 'succeeded')"
        " ORDER BY j.project_id, greatest(j.run_after, d.finished_at), j.id) x",
        now);
    const rp_store_port *s = &f->ports.store;
    rp_claimable_list l;
    assert_int_equal(s->list_oldest_claimable(s->self, NULL, now, &l), RP_OK);
    char got[4096] = "";
    for (size_t i = 0; i < l.n; i++) {
        size_t len = strlen(got);
        snprintf(got + len, sizeof got - len, "%s%s:%" PRId64, i ? "," : "", l.jobs[i].project,
                 l.jobs[i].job_id);
    }
    print_message("oldest claimable: %s\n", got);
    assert_true(l.n >= 5);
    assert_string_equal(got, want);
    free(want);
}

/* A surfaced condition is recorded once: the first pass opens it (row and
 * event), the next ones do not record it again, and when the work is taken
 * it is cleared once (row deleted, CLEARED event). */
static void test_sighting_opened_once_and_cleared(void **state) {
    pgfx *f = *state;
    int64_t job = add_job(f, "beta", "ready", "now() - interval '2 hours'", 0, NULL);
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 1);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 1);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 0);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 1);

    pgfx_exec(f, "UPDATE job SET state = 'succeeded', finished_at = now() WHERE id = %" PRId64,
              job);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 1);
    assert_int_equal(r.verdicts[0].action, RP_ACTION_CLEARED);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting"), 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE project_id = 'beta'"
                                 " AND payload->>'action' = 'CLEARED'"
                                 " AND payload->>'condition' = 'STALE_READY'"),
                     1);
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 0);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 2);
    assert_int_equal(f->published, 2);
}

static void surfaced(rp_verdict *v, const char *project) {
    rp_verdict_init(v);
    v->condition = RP_COND_STALE_READY;
    v->action = RP_ACTION_SURFACED;
    v->source = RP_SOURCE_JOB_QUEUE;
    v->trusted = true;
    assert_int_equal(rp_verdict_set_object(v, "job:1"), RP_OK);
    assert_int_equal(rp_verdict_set_project(v, project), RP_OK);
    assert_int_equal(rp_verdict_set_unit(v, "seconds"), RP_OK);
}

/* The port calls themselves: open once, list, close once, append. */
static void test_sighting_port_calls(void **state) {
    pgfx *f = *state;
    const rp_store_port *s = &f->ports.store;
    rp_verdict v;
    surfaced(&v, "alpha");
    const char *key = "job_queue|STALE_READY|project:alpha";
    bool opened = false;
    rp_event_ref ev = {0};
    assert_int_equal(s->open_sighting(s->self, key, &v, &opened, &ev), RP_OK);
    assert_true(opened);
    assert_true(ev.seq > 0);
    rp_event_ref again = {0};
    assert_int_equal(s->open_sighting(s->self, key, &v, &opened, &again), RP_OK);
    assert_false(opened);
    assert_int_equal(again.seq, 0);
    rp_sighting_list l;
    assert_int_equal(s->list_open_sightings(s->self, &l), RP_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.rows[0].key, key);
    assert_int_equal(l.rows[0].condition, RP_COND_STALE_READY);
    assert_int_equal(l.rows[0].opened_seq, ev.seq);
    assert_int_equal(l.rows[0].opened_at, ev.at);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE seq = %" PRId64
                                 " AND project_id = 'alpha'", ev.seq), 1);

    v.action = RP_ACTION_CLEARED;
    bool closed = false;
    assert_int_equal(s->close_sighting(s->self, key, &v, &closed, &ev), RP_OK);
    assert_true(closed);
    assert_int_equal(s->close_sighting(s->self, key, &v, &closed, &ev), RP_OK);
    assert_false(closed);
    assert_int_equal(s->list_open_sightings(s->self, &l), RP_OK);
    assert_int_equal(l.n, 0);

    /* An event of its own. */
    rp_event_ref app;
    assert_int_equal(s->append_event(s->self, &v, &app), RP_OK);
    assert_true(app.seq > ev.seq);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 3);
    rp_verdict_cleanup(&v);
}

/* Opens (or closes) keys 0..n-1 in a forked child over its own connection
 * and exits with how many it opened (closed). */
static pid_t race(const char *schema, int n, bool close) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    pgfx *c = pgfx_attach(schema);
    const rp_store_port *s = &c->ports.store;
    rp_verdict v;
    rp_verdict_init(&v);
    v.condition = RP_COND_STALE_READY;
    v.action = close ? RP_ACTION_CLEARED : RP_ACTION_SURFACED;
    if (rp_verdict_set_object(&v, "job:1") != RP_OK) _exit(250);
    int won = 0;
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "job_queue|STALE_READY|project:p%d", i);
        bool done = false;
        rp_event_ref ev;
        rp_status st = close ? s->close_sighting(s->self, key, &v, &done, &ev)
                             : s->open_sighting(s->self, key, &v, &done, &ev);
        if (st != RP_OK) _exit(251);
        won += done;
    }
    rp_verdict_cleanup(&v);
    pgfx_free(c);
    _exit(won);
}

static int wait_child(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Two connections racing on the same keys: each key is opened once, with
 * one event; closed once, with one event. And a key whose insert another
 * session has not committed yet: the second waits, then sees opened=false. */
static void test_sightings_racing(void **state) {
    pgfx *f = *state;
    const int n = 120;
    pid_t a = race(f->schema, n, false), b = race(f->schema, n, false);
    int wa = wait_child(a), wb = wait_child(b);
    assert_true(wa <= n && wb <= n); /* no child failed (exit 250 and up) */
    assert_int_equal(wa + wb, n);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting"), n);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), n);
    a = race(f->schema, n, true);
    b = race(f->schema, n, true);
    wa = wait_child(a);
    wb = wait_child(b);
    assert_int_equal(wa + wb, n);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting"), 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE payload->>'action' = 'CLEARED'"),
                     n);

    /* Deterministically: another session holds an uncommitted open of key
     * p0; our open waits for it and, once it commits, opens nothing. */
    pgfx_exec(f, "BEGIN");
    pgfx_exec(f, "WITH e AS (INSERT INTO ledger (kind, payload) VALUES ('QueueReaped', '{}')"
                 " RETURNING seq, at) INSERT INTO sighting"
                 " SELECT 'job_queue|STALE_READY|project:p0', 'STALE_READY', seq, at FROM e");
    pid_t c = race(f->schema, 1, false);
    (void)itest_pg_wait_lock_waiters(1, 10000); /* until our open waits for it */
    pgfx_exec(f, "COMMIT");
    assert_int_equal(wait_child(c), 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting"), 1);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_oldest_claimable_per_project),
        T(test_dependency_rules),
        T(test_claimable_matches_the_definition),
        T(test_sighting_opened_once_and_cleared),
        T(test_sighting_port_calls),
        T(test_sightings_racing),
    };
    return cmocka_run_group_tests_name("pg_store_ready", tests, NULL, NULL);
}
