/*
 * The PostgreSQL store when the database goes away: a connection killed
 * between take and move, killed in the middle of a pass, a store that cannot
 * be reached, a server that stops answering, and a database restart in the
 * middle of a 20,000-row reap. Nothing crashes or hangs, every call returns
 * promptly, no row is ever half-moved, and the next call reconnects.
 *
 * Restarts the private database (scripts/services restart postgres): run
 * alone (RUN_SERIAL).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "pg_fixture.h"

static int setup(void **state) {
    *state = pgfx_new("fault");
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool unreadable(const rp_report *r, const char *what) {
    for (size_t i = 0; i < r->n_unreadable; i++)
        if (strcmp(r->unreadable[i], what) == 0) return true;
    return false;
}

/* No row half-moved: every moved row has exactly one event, every other
 * row is still leased with none. Returns how many were moved. */
static int64_t check_consistent(pgfx *f, int64_t rows) {
    int64_t moved = pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'ready'"
                                " AND lease_owner IS NULL AND lease_expires_at IS NULL");
    int64_t leased = pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'leased'"
                                 " AND lease_owner IS NOT NULL");
    assert_int_equal(moved + leased, rows);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), moved);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job j LEFT JOIN (SELECT payload->>'object'"
                                 " AS o, count(*) AS n FROM ledger GROUP BY 1) l"
                                 " ON l.o = 'job:' || j.id"
                                 " WHERE coalesce(l.n, 0) <> CASE j.state WHEN 'ready' THEN 1"
                                 " ELSE 0 END"),
                     0);
    return moved;
}

static int backend_pid(pgfx *f) { return PQbackendPID(rp_pg_conn_handle(f->conn)); }

/* The connection dies while a row is taken: the move says the store is
 * unavailable (promptly), nothing was committed, and the next take
 * reconnects and finds the row again, unlocked. */
static void test_connection_killed_between_take_and_move(void **state) {
    pgfx *f = *state;
    int64_t first = pgfx_expired(f, 3, "alpha", 1, 7, "5 minutes");
    const rp_store_port *s = &f->ports.store;
    rp_lease_query q = {.now = f->ports.clock.now_ms(f->ports.clock.self), .lock = true};
    rp_held_job job;
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_int_equal(job.id, first);
    rp_verdict v;
    assert_int_equal(rp_judge_held_job(&job, &f->opt.thresholds, q.now, &v), RP_OK);
    pgfx_exec(f, "SELECT pg_terminate_backend(%d, 5000)", backend_pid(f));
    double t0 = mono_s();
    rp_event_ref ev;
    assert_int_equal(pgfx_move1(s, &job, &v, &ev), RP_ERR_UNAVAILABLE);
    assert_true(mono_s() - t0 < 3.0);
    rp_verdict_cleanup(&v);
    assert_false(rp_pg_conn_is_up(f->conn));
    check_consistent(f, 3);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'leased'"), 3);

    /* The next call reconnects: a new session, the row free again. */
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_int_equal(job.id, first);
    assert_int_equal(rp_judge_held_job(&job, &f->opt.thresholds, q.now, &v), RP_OK);
    assert_int_equal(pgfx_move1(s, &job, &v, &ev), RP_OK);
    rp_verdict_cleanup(&v);
    /* Killed while idle: the pass's first call (the clock) finds out, falls
     * back to the system clock, and the rest of the pass reconnects. */
    pgfx_exec(f, "SELECT pg_terminate_backend(%d, 5000)", backend_pid(f));
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 2);
    rp_report_cleanup(&r);
    assert_int_equal(check_consistent(f, 3), 3);
}

/* Kills every session of this store, after delay_ms, from a child. */
static pid_t killer(pgfx *f, const char *app, int delay_ms) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    usleep((useconds_t)delay_ms * 1000); /* deliberate: the fault lands mid-operation */
    PGconn *c = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
             " WHERE application_name = '%s'",
             app);
    PGresult *r = PQexec(c, sql);
    int killed = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) : -1;
    PQclear(r);
    PQfinish(c);
    (void)f;
    _exit(killed == 1 ? 0 : 1);
}

/* The connection dies in the middle of a pass: the pass returns with the
 * store unreadable, no row half-moved; the next pass finishes the rest. */
static void test_connection_killed_mid_pass(void **state) {
    pgfx *f = *state;
    char app[64];
    snprintf(app, sizeof app, "reaper_fault_%d", (int)getpid());
    char extra[96];
    snprintf(extra, sizeof extra, "application_name=%s", app);
    pgfx_reconnect(f, NULL, extra);
    /* Enough rows that the batched pass (store.lease_batch_size, about
     * 10,000 rows/s here) is still at work when the killer strikes. */
    const int rows = 60000;
    pgfx_expired(f, rows, "alpha", 1, 7, "5 minutes");
    (void)f->ports.clock.now_ms(f->ports.clock.self); /* connected before the killer looks */
    pid_t k = killer(f, app, 400);
    rp_report r;
    double t0 = mono_s();
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    print_message("first pass: %zu moved in %.2f s, ok %d\n", r.n_verdicts + r.n_omitted, mono_s() - t0, r.ok);
    int status = 0;
    waitpid(k, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_false(r.ok);
    assert_true(unreadable(&r, "job_queue"));
    size_t first = r.n_verdicts + r.n_omitted;
    rp_report_cleanup(&r);
    int64_t moved = check_consistent(f, rows);
    assert_true(moved > 0 && moved < rows);
    /* What the report lists was committed (a commit whose reply was lost
     * may be committed and not listed, never the other way round). */
    assert_true((int64_t)first <= moved);
    t0 = mono_s();
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    print_message("second pass: %zu moved in %.2f s\n", r.n_verdicts + r.n_omitted, mono_s() - t0);
    assert_true(r.ok);
    assert_int_equal((int64_t)(r.n_verdicts + r.n_omitted), rows - moved);
    rp_report_cleanup(&r);
    assert_int_equal(check_consistent(f, rows), rows);
}

/* A store that cannot be reached: every port answers unavailable at once,
 * the clock falls back to the system's, the pass reports the store
 * unreadable. */
static void test_unreachable_store(void **state) {
    pgfx *f = *state;
    pgfx_reconnect(f, "host=127.0.0.1 port=1 dbname=vibey user=reaper", NULL);
    double t0 = mono_s();
    rp_time_ms now = f->ports.clock.now_ms(f->ports.clock.self);
    assert_true(llabs(now - (rp_time_ms)time(NULL) * 1000) < 5000);
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_false(r.ok);
    assert_true(unreadable(&r, "job_queue"));
    rp_report_cleanup(&r);
    const rp_store_port *s = &f->ports.store;
    rp_lease_query q = {.now = now, .lock = true};
    rp_held_job job;
    assert_int_equal(pgfx_take1(s, &q, &job), RP_ERR_UNAVAILABLE);
    rp_time_ms at;
    bool any;
    assert_int_equal(s->next_lease_deadline(s->self, 0, &at, &any), RP_ERR_UNAVAILABLE);
    rp_gate *g;
    size_t n;
    rp_gate_query gq = {.state = RP_GATE_STATE_ALL, .limit = 5};
    assert_int_equal(f->ports.gates.list(f->ports.gates.self, &gq, &g, &n, NULL), RP_ERR_UNAVAILABLE);
    rp_answer_result a;
    assert_int_equal(f->ports.gates.answer(f->ports.gates.self, 1, RP_CHOICE_RETRY, NULL, NULL, &a),
                     RP_ERR_UNAVAILABLE);
    bool parked;
    rp_dead_letter x = {.identity = "id:%2F/q/x", .death = "/0"};
    assert_int_equal(f->ports.dead_letters.is_parked(f->ports.dead_letters.self, &x, &parked),
                     RP_ERR_UNAVAILABLE);
    assert_true(mono_s() - t0 < 10.0);
}

/* A server that stops answering (its backend stopped): the call gives up
 * after the store's timeout, the session is closed, and the next call
 * works on a new one. */
static void test_server_that_stops_answering(void **state) {
    pgfx *f = *state;
    pgfx_expired(f, 2, "alpha", 1, 7, "5 minutes");
    rp_pg_store_set_timeout(f->store, 1000);
    const rp_store_port *s = &f->ports.store;
    rp_lease_query q = {.now = f->ports.clock.now_ms(f->ports.clock.self), .lock = true};
    int pid = backend_pid(f);
    assert_true(pid > 0);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    rp_held_job job;
    double t0 = mono_s();
    rp_status st = pgfx_take1(s, &q, &job);
    double dt = mono_s() - t0;
    kill(pid, SIGCONT);
    assert_int_equal(st, RP_ERR_UNAVAILABLE);
    assert_true(dt >= 0.9 && dt < 3.0);
    /* The stopped session is gone for good (it ends when it reads the
     * closed socket); the next call has a new one. */
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_true(backend_pid(f) != pid);
    assert_int_equal(s->release_leases(s->self), RP_OK);
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    rp_report_cleanup(&r);
    assert_int_equal(check_consistent(f, 2), 2);
}

/* The database restarts in the middle of a 20,000-row reap: the pass
 * returns with the store unreadable, nothing is half-moved, and a pass
 * after the restart finishes the rest. */
static void test_database_restart_mid_reap(void **state) {
    pgfx *f = *state;
    /* Enough rows that the batched pass outlasts the second before the
     * restart by several times. */
    const int rows = 200000;
    pgfx_expired(f, rows, "alpha", 1, 7, "5 minutes");
    pgfx_exec(f, "ANALYZE job");
    (void)f->ports.clock.now_ms(f->ports.clock.self);
    pid_t pid = fork();
    if (pid == 0) {
        usleep(1000 * 1000); /* deliberate: the restart lands mid-reap */
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s/scripts/services' restart postgres >/dev/null 2>&1",
                 itest_env("REAPER_SOURCE_DIR"));
        int rc = system(cmd);
        _exit(WIFEXITED(rc) ? WEXITSTATUS(rc) : 1);
    }
    rp_report r;
    double t0 = mono_s();
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    double dt = mono_s() - t0;
    int status = 0;
    waitpid(pid, &status, 0);
    print_message("first pass: %zu moved in %.2f s, ok %d; restart exit %d\n", r.n_verdicts + r.n_omitted, dt,
                  r.ok, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    for (size_t i = 0; i < r.n_notes; i++) print_message("note: %s\n", r.notes[i]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_false(r.ok);
    assert_true(unreadable(&r, "job_queue"));
    size_t first = r.n_verdicts + r.n_omitted;
    rp_report_cleanup(&r);
    int64_t moved = check_consistent(f, rows);
    assert_true(moved > 0 && moved < rows);
    assert_true((int64_t)first <= moved);
    /* After the restart: a pass finishes the rest. */
    t0 = mono_s();
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    print_message("second pass: %zu moved in %.2f s\n", r.n_verdicts + r.n_omitted, mono_s() - t0);
    assert_true(r.ok);
    assert_int_equal((int64_t)(r.n_verdicts + r.n_omitted), rows - moved);
    rp_report_cleanup(&r);
    assert_int_equal(check_consistent(f, rows), rows);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_connection_killed_between_take_and_move),
        T(test_connection_killed_mid_pass),
        T(test_unreachable_store),
        T(test_server_that_stops_answering),
        T(test_database_restart_mid_reap),
    };
    return cmocka_run_group_tests_name("pg_store_faults", tests, NULL, NULL);
}
