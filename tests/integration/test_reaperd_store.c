/*
 * reaperd against the real PostgreSQL, from the outside: --migrate, --once
 * (human, --json, --dry-run, --project), the exit codes, the daemon's lease
 * reap on the deadline, the lease reap with the sweep off, two reapers
 * splitting the work, and a database restart under a running daemon.
 * Each test works in a schema of its own (REAPER_STORE_SCHEMA), dropped
 * after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"

/* These tests count the lease reap's events: issue 18's WAITING_DEPTH (the
 * rows requeued wait in one kind) stays out of them. */
#define NO_DEPTH "REAPER_REAP_WAITING_DEPTH_THRESHOLD=2147483647"
/* ... and issue 18's DIVERGENT (many ready rows created, none succeeded). */
#define NO_DIVERGENT "REAPER_REAP_DIVERGENCE_MIN_WAITING=2147483647"

typedef struct fixture {
    PGconn *pg;
    char schema[64];
    char owned_env[128], dlq_env[160]; /* no queue of other tests on the broker */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->pg = itest_pg_connect();
    static int n;
    snprintf(f->schema, sizeof f->schema, "itest_rd_%d_%d", (int)getpid(), n++);
    itest_env_owned(f->owned_env, sizeof f->owned_env, "rd");
    itest_env_dead_letters(f->dlq_env, sizeof f->dlq_env, "rd");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f->pg == NULL) f->pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    char sql[160];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", f->schema);
    PQclear(PQexec(f->pg, sql));
    PQfinish(f->pg);
    free(f);
    return 0;
}

static long qn(fixture *f, const char *query) {
    return atol(itest_sql(f->pg, f->schema, "%s", query));
}

/* Runs reaperd with args and the fixture's schema; returns the exit code. */
static int reaperd(fixture *f, char **out, char **err, const char *a1, const char *a2,
                   const char *a3, const char *a4) {
    char *args[] = {(char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
    char *env[] = {f->owned_env, f->dlq_env, NO_DEPTH, NO_DIVERGENT, NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .args = args, .no_interval = true};
    return itest_daemon_run(&o, out, err);
}

static void migrate(fixture *f) {
    char *out, *err;
    int rc = reaperd(f, &out, &err, "--migrate", NULL, NULL, NULL);
    if (rc != 0) fprintf(stderr, "%s", err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "schema migrated"));
    free(out);
    free(err);
    /* Again: nothing to do, said so. */
    rc = reaperd(f, &out, &err, "--migrate", NULL, NULL, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "schema already current"));
    free(out);
    free(err);
}

/* n expired leases in project p, attempts/max given, expired `ago` seconds. */
static void add_expired(fixture *f, int n, const char *p, int attempts, int max, int ago) {
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
              " lease_expires_at) SELECT '%s', 'send_mail', 'leased', %d, %d, 'worker-' || g,"
              " now() - interval '%d seconds' FROM generate_series(1, %d) g",
              p, attempts, max, ago, n);
}

static void test_once_json_reaps_and_reports(void **state) {
    fixture *f = *state;
    migrate(f);
    add_expired(f, 3, "alpha", 1, 7, 30);
    add_expired(f, 1, "alpha", 7, 7, 30); /* poison */
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, run_after) VALUES"
              " ('beta', 'k', 'ready', now() - interval '2 hours')"); /* stale ready */
    char *out, *err;
    int rc = reaperd(f, &out, &err, "--once", "--json", NULL, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s", out, err);
    assert_int_equal(rc, 0);
    /* Standard output is exactly one JSON object. */
    json_error_t je;
    json_t *rep = json_loads(out, 0, &je);
    assert_non_null(rep);
    assert_true(json_is_object(rep));
    assert_true(json_is_true(json_object_get(rep, "ok")));
    assert_true(json_is_false(json_object_get(rep, "dry_run")));
    json_t *verdicts = json_object_get(rep, "verdicts");
    assert_int_equal(json_array_size(verdicts), 5);
    int requeued = 0, parked = 0, stale = 0;
    size_t i;
    json_t *v;
    json_array_foreach(verdicts, i, v) {
        const char *action = json_string_value(json_object_get(v, "action"));
        const char *cond = json_string_value(json_object_get(v, "condition"));
        if (strcmp(action, "REQUEUED") == 0 && strcmp(cond, "LEASE_EXPIRED") == 0) requeued++;
        if (strcmp(action, "PARKED") == 0 && strcmp(cond, "POISON") == 0) parked++;
        if (strcmp(action, "SURFACED") == 0 && strcmp(cond, "STALE_READY") == 0) stale++;
        assert_string_equal(json_string_value(json_object_get(v, "source")), "job_queue");
    }
    assert_int_equal(requeued, 3);
    assert_int_equal(parked, 1);
    assert_int_equal(stale, 1);
    json_decref(rep);
    /* The database agrees: moves, the gate, one event each, one sighting. */
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'ready' AND lease_owner IS NULL"
                           " AND project_id = 'alpha'"), 3);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'awaiting_human' AND attempts = 6"), 1);
    assert_int_equal(qn(f, "SELECT count(*) FROM gate WHERE kind = 'delivery_exhausted' AND answer IS NULL"), 1);
    assert_int_equal(qn(f, "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped'"), 5);
    assert_int_equal(qn(f, "SELECT count(*) FROM sighting"), 1);
    /* Logs went to standard error, not standard output. */
    assert_non_null(strstr(err, "\"msg\":\"pass finished\""));
    free(out);
    free(err);

    /* The human report says the same for people. */
    add_expired(f, 1, "alpha", 1, 7, 30);
    rc = reaperd(f, &out, &err, "--once", NULL, NULL, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "reaper pass at"));
    assert_non_null(strstr(out, "REQUEUED"));
    assert_non_null(strstr(out, "LEASE_EXPIRED"));
    free(out);
    free(err);
}

/* Dumps every row of every table of the schema, ordered, as text. */
static char *dump(fixture *f) {
    char set[160];
    snprintf(set, sizeof set, "SET search_path TO %s", f->schema);
    PQclear(PQexec(f->pg, set));
    const char *sql =
        "SELECT string_agg(t, E'\\n' ORDER BY t) FROM ("
        " SELECT 'job ' || row_to_json(j)::text AS t FROM job j"
        " UNION ALL SELECT 'gate ' || row_to_json(g)::text FROM gate g"
        " UNION ALL SELECT 'dead_letter ' || row_to_json(d)::text FROM dead_letter d"
        " UNION ALL SELECT 'ledger ' || row_to_json(l)::text FROM ledger l"
        " UNION ALL SELECT 'sighting ' || row_to_json(s)::text FROM sighting s"
        " UNION ALL SELECT 'schema_version ' || row_to_json(v)::text FROM schema_version v) x";
    PGresult *r = PQexec(f->pg, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char *s = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return s;
}

static void test_once_dry_run_writes_nothing(void **state) {
    fixture *f = *state;
    migrate(f);
    add_expired(f, 20, "alpha", 1, 7, 30);
    add_expired(f, 2, "alpha", 7, 7, 30);
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, run_after) VALUES"
              " ('beta', 'k', 'ready', now() - interval '2 hours')");
    /* An open sighting that a real pass would clear. */
    itest_sql(
        f->pg, f->schema,
        "INSERT INTO ledger (kind, project_id, payload) VALUES ('QueueReaped', 'gone', '{}')");
    itest_sql(f->pg, f->schema,
              "INSERT INTO sighting SELECT 'job_queue|STALE_READY|project:gone', 'STALE_READY',"
              " max(seq), now() FROM ledger");
    char *before = dump(f);
    char *out, *err;
    int rc = reaperd(f, &out, &err, "--once", "--dry-run", "--json", NULL);
    assert_int_equal(rc, 0);
    json_t *rep = json_loads(out, 0, NULL);
    assert_non_null(rep);
    assert_true(json_is_true(json_object_get(rep, "dry_run")));
    /* It judged everything a real pass would do: 22 moves, 1 surfaced, 1 cleared. */
    assert_int_equal(json_array_size(json_object_get(rep, "verdicts")), 24);
    json_decref(rep);
    char *after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    free(out);
    free(err);
}

static void test_once_project_narrows(void **state) {
    fixture *f = *state;
    migrate(f);
    add_expired(f, 2, "alpha", 1, 7, 30);
    add_expired(f, 3, "beta", 1, 7, 30);
    char *out, *err;
    int rc = reaperd(f, &out, &err, "--once", "--project", "beta", "--json");
    assert_int_equal(rc, 0);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'ready' AND project_id = 'beta'"), 3);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'leased' AND project_id = 'alpha'"), 2);
    free(out);
    free(err);
}

static void test_once_store_unreachable_exits_1(void **state) {
    fixture *f = *state;
    char *argv[] = {(char *)itest_env("REAPERD"), "--once", "--json", NULL};
    char *env[] = {"REAPER_STORE_DSN=host=127.0.0.1 port=1 dbname=vibey user=reaper",
                   f->owned_env, f->dlq_env, "REAPER_LOG_FORMAT=json", NULL};
    char *out, *err;
    int rc = rp_run_capture(argv, env, &out, &err);
    assert_int_equal(rc, 1);
    json_t *rep = json_loads(out, 0, NULL);
    assert_non_null(rep);
    assert_true(json_is_false(json_object_get(rep, "ok")));
    json_t *un = json_object_get(rep, "unreadable");
    assert_int_equal(json_array_size(un), 1);
    assert_string_equal(json_string_value(json_array_get(un, 0)), "job_queue");
    json_decref(rep);
    free(out);
    free(err);
}

static void test_usage_errors_exit_2(void **state) {
    (void)state;
    char *out, *err;
    char *a1[] = {(char *)itest_env("REAPERD"), "--dry-run", NULL};
    assert_int_equal(rp_run_capture(a1, NULL, &out, &err), 2);
    assert_non_null(strstr(err, "go with --once"));
    free(out);
    free(err);
    char *a2[] = {(char *)itest_env("REAPERD"), "--bogus", NULL};
    assert_int_equal(rp_run_capture(a2, NULL, &out, &err), 2);
    assert_non_null(strstr(err, "unknown option --bogus"));
    free(out);
    free(err);
    char *a3[] = {(char *)itest_env("REAPERD"), "--help", NULL};
    assert_int_equal(rp_run_capture(a3, NULL, &out, &err), 0);
    assert_non_null(strstr(out, "--once"));
    assert_non_null(strstr(out, "--check-config"));
    free(out);
    free(err);
    char *a4[] = {(char *)itest_env("REAPERD"), "--version", NULL};
    assert_int_equal(rp_run_capture(a4, NULL, &out, &err), 0);
    assert_true(strncmp(out, "reaperd ", 8) == 0);
    free(out);
    free(err);
    char *env[] = {"REAPER_REAP_INTERVAL_SECONDS=0", "REAPER_REAP_INTERVAL_SECOND=3", NULL};
    char *a5[] = {(char *)itest_env("REAPERD"), "--check-config", NULL};
    assert_int_equal(rp_run_capture(a5, env, &out, &err), 2);
    assert_non_null(strstr(err, "reap.interval_seconds"));
    assert_non_null(strstr(err, "did you mean"));
    free(out);
    free(err);
}

/* Two reapers over the same table split the work: 5,000 expired rows, each
 * moved exactly once with exactly one event. */
static void test_two_reapers_split_the_work(void **state) {
    fixture *f = *state;
    migrate(f);
    add_expired(f, 5000, "alpha", 1, 7, 30);
    add_expired(f, 500, "beta", 7, 7, 30);
    char *args[] = {"--once", "--json", NULL};
    char *env[] = {f->owned_env, f->dlq_env, NO_DEPTH, NO_DIVERGENT, "REAPER_LOG_LEVEL=warn", NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .args = args, .no_wait = true,
                           .no_interval = true};
    rp_child *a = itest_daemon_start(&o);
    rp_child *b = itest_daemon_start(&o);
    assert_int_equal(rp_child_wait_exit(a, 300000), 0);
    assert_int_equal(rp_child_wait_exit(b, 300000), 0);
    rp_child_free(a);
    rp_child_free(b);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'leased'"), 0);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'ready'"), 5000);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'awaiting_human' AND attempts = 6"), 500);
    assert_int_equal(qn(f, "SELECT count(*) FROM gate"), 500);
    /* Exactly one event per row, none twice. */
    assert_int_equal(qn(f, "SELECT count(*) FROM ledger"), 5500);
    assert_int_equal(qn(f, "SELECT count(DISTINCT payload->>'object') FROM ledger"), 5500);
}

/* The daemon reaps a lease about when it runs out, not a whole interval
 * (here 600 s) later. */
static void test_daemon_reaps_on_the_deadline(void **state) {
    fixture *f = *state;
    migrate(f);
    /* Leases that run out 2 s from now, in the table before the daemon's
     * first pass: that pass arms the timer for them. */
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, attempts, lease_owner, lease_expires_at)"
              " SELECT 'alpha', 'k', 'leased', 1, 'w', now() + interval '2 seconds'"
              " FROM generate_series(1, 50)");
    char *env[] = {f->owned_env, f->dlq_env, NO_DEPTH, NO_DIVERGENT, "REAPER_REAP_INTERVAL_SECONDS=600", NULL};
    rp_child *c = itest_daemon_start(&(itest_daemon_opts){
        .schema = f->schema, .env = env, .ready = {ITEST_READY_PASS}, .ready_ms = 30000});
    long t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 15000 &&
           qn(f, "SELECT count(*) FROM job WHERE state = 'ready'") < 50)
        rp_child_drain(c, 50);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'ready'"), 50);
    /* Each was requeued within a second of its lease running out: the
     * verdict's measurement is the seconds past the deadline at the move,
     * on the database's clock. */
    double past =
        atof(itest_sql(f->pg, f->schema, "SELECT max((payload->>'measured')::float) FROM ledger"));
    assert_true(past >= 0.0);
    assert_true(past < 1.0);
    assert_int_equal(itest_daemon_stop(c), 0);
}

/* How many times needle stands in the child's log so far. */
static int log_count(const rp_child *c, const char *needle) {
    int n = 0;
    for (const char *p = c->log; p && (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* A daemon sweeping once an hour, once its first pass is over and its
 * lease-deadline session LISTENs (debug log, to count its re-arms). */
static rp_child *start_listening(fixture *f) {
    char *env[] = {f->owned_env, f->dlq_env, NO_DEPTH, NO_DIVERGENT, "REAPER_LOG_LEVEL=debug", NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .ready_ms = 30000,
                           .ready = {ITEST_READY_PASS, "\"msg\":\"lease deadlines: listening\""}};
    rp_child *c = itest_daemon_start(&o);
    rp_child_drain(c, 300);
    return c;
}

/* A lease claimed AFTER the daemon's pass (so the timer was armed an hour
 * away, and nothing in the table told it otherwise) is still reaped within
 * a second of running out: the job table's trigger tells reaperd
 * (LISTEN/NOTIFY, issue #15). */
static void test_lease_claimed_after_the_pass(void **state) {
    fixture *f = *state;
    migrate(f);
    itest_sql(f->pg, f->schema, "INSERT INTO job (project_id, kind, state) VALUES ('alpha', 'k', "
                                "'ready')");
    rp_child *c = start_listening(f);
    /* A worker's claim, as CONTRACT section 6 has it, with a 2 s lease. */
    itest_sql(f->pg, f->schema,
              "UPDATE job SET state = 'leased', attempts = attempts + 1, lease_owner = 'w1', "
              "lease_expires_at = now() + interval '2 seconds' WHERE id = (SELECT id FROM job "
              "WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)");
    long t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 10000 &&
           qn(f, "SELECT count(*) FROM job WHERE state = 'ready'") < 1)
        rp_child_drain(c, 50);
    if (qn(f, "SELECT count(*) FROM job WHERE state = 'ready'") != 1) fprintf(stderr, "%s", c->log);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'ready'"), 1);
    /* Within a second of its deadline, on the database's clock. */
    double past = atof(itest_sql(f->pg, f->schema,
                                 "SELECT max((payload->>'measured')::float) FROM ledger WHERE "
                                 "payload->>'condition' = 'LEASE_EXPIRED'"));
    fprintf(stderr, "a lease claimed after the pass was requeued %.3f s past its deadline\n", past);
    assert_true(past >= 0.0);
    assert_true(past < 1.0);
    assert_int_equal(itest_daemon_stop(c), 0);
}

/* A thousand claims in a second, each expiring later than the one before:
 * one deadline change (the first), so one re-arm and no pass meanwhile;
 * then ten claims each earlier than the one before: one re-arm each. */
static void test_claims_cost_one_wakeup_per_deadline_change(void **state) {
    fixture *f = *state;
    migrate(f);
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state) SELECT 'alpha', 'k', 'ready' FROM "
              "generate_series(1, 1010)");
    rp_child *c = start_listening(f);
    const char *fwd = "\"msg\":\"lease deadline brought forward\"";
    const char *done = "\"msg\":\"pass finished\"";
    int passes = log_count(c, done);
    /* One claim per statement (each statement notifies), 1,000 of them,
     * the n-th expiring 600 s + n ms from now. */
    itest_sql(f->pg, f->schema,
              "DO $$ BEGIN FOR i IN 1..1000 LOOP UPDATE job SET state = 'leased', attempts = "
              "attempts + 1, lease_owner = 'w', lease_expires_at = now() + interval '600 "
              "seconds' + i * interval '1 millisecond' WHERE id = i; END LOOP; END $$");
    rp_child_drain(c, 1500);
    assert_int_equal(log_count(c, fwd), 1);
    assert_int_equal(log_count(c, done), passes);
    /* Ten more, each earlier than the last (and than all before). */
    for (int i = 0; i < 10; i++)
        itest_sql(f->pg, f->schema,
                  "UPDATE job SET state = 'leased', attempts = attempts + 1, lease_owner = 'w', "
                  "lease_expires_at = now() + interval '500 seconds' - %d * interval '1 second' "
                  "WHERE id = %d",
                  i, 1001 + i);
    rp_child_drain(c, 1500);
    assert_int_equal(log_count(c, fwd), 11);
    assert_int_equal(log_count(c, done), passes);
    assert_int_equal(rp_child_stop(c, SIGTERM, 20000), 0);
    rp_child_free(c);
}

static void test_sweep_off_still_reaps_leases(void **state) {
    fixture *f = *state;
    migrate(f);
    add_expired(f, 10, "alpha", 1, 7, 30);
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, run_after) VALUES"
              " ('beta', 'k', 'ready', now() - interval '2 hours')");
    char *env[] = {f->owned_env, f->dlq_env, NO_DEPTH, NO_DIVERGENT, "REAPER_REAP_ENABLED=false", NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .ready = {ITEST_READY_PASS},
                           .ready_ms = 30000, .no_interval = true};
    rp_child *c = itest_daemon_start(&o);
    assert_non_null(strstr(c->log, "\"scope\":\"lease reap\""));
    assert_int_equal(rp_child_stop(c, SIGTERM, 20000), 0);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'ready' AND project_id = 'alpha'"), 10);
    /* The sweep is off: the stale ready job is not surfaced. */
    assert_int_equal(qn(f, "SELECT count(*) FROM sighting"), 0);
    assert_null(strstr(c->log, "condition surfaced"));
    rp_child_free(c);
}

/* The database restarts under a running daemon in the middle of a long
 * reap: the daemon says so, keeps running, reconnects, and finishes; no
 * row is moved twice or half (a batch in flight when the server goes
 * commits whole or not at all). */
static void test_database_restart_under_the_daemon(void **state) {
    fixture *f = *state;
    migrate(f);
    add_expired(f, 40000, "alpha", 1, 7, 30);
    char *env[] = {f->owned_env, f->dlq_env, NO_DEPTH, NO_DIVERGENT, "REAPER_REAP_INTERVAL_SECONDS=2", NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .no_wait = true};
    rp_child *c = itest_daemon_start(&o);
    /* Restart once the reap is under way. */
    long t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 30000 &&
           qn(f, "SELECT count(*) FROM job WHERE state = 'ready'") < 1000)
        rp_child_drain(c, 20);
    PQfinish(f->pg);
    f->pg = NULL; /* teardown reconnects if an assertion stops the test here */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services restart postgres >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"));
    assert_int_equal(system(cmd), 0);
    f->pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    assert_int_equal(PQstatus(f->pg), CONNECTION_OK);
    PQclear(PQexec(f->pg, "SET client_min_messages = warning"));
    /* It finishes the rest after the restart. */
    t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 120000 &&
           qn(f, "SELECT count(*) FROM job WHERE state = 'leased'") > 0)
        rp_child_drain(c, 200);
    assert_false(c->exited);
    /* It says so: a call that found the server gone ("unreachable"), or,
     * when the server is back before the daemon's next call (a batch's
     * round trips are fewer and longer than a row's were, so that happens
     * here), the call that lost its session ("store connection lost"). */
    assert_true(rp_child_wait_for(c, "unreachable", 1000) ||
                rp_child_wait_for(c, "store connection lost", 1000));
    assert_int_equal(rp_child_stop(c, SIGTERM, 30000), 0);
    rp_child_free(c);
    assert_int_equal(qn(f, "SELECT count(*) FROM job WHERE state = 'leased'"), 0);
    assert_int_equal(qn(f, "SELECT count(*) FROM ledger"), 40000);
    assert_int_equal(qn(f, "SELECT count(DISTINCT payload->>'object') FROM ledger"), 40000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test_setup_teardown(test_once_json_reaps_and_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_once_dry_run_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_once_project_narrows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_once_store_unreachable_exits_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_reapers_split_the_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_reaps_on_the_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_off_still_reaps_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_claimed_after_the_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims_cost_one_wakeup_per_deadline_change, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_database_restart_under_the_daemon, setup, teardown),
    };
    return cmocka_run_group_tests_name("reaperd_store", tests, NULL, NULL);
}
