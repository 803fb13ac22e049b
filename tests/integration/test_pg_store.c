/*
 * The PostgreSQL store's lease reap against the real database: core's pass
 * over ports built from the adapter. Requeue and park exactly as CONTRACT
 * section 2 says (row fields checked), the grace boundary judged with the
 * database's clock, the fence, a failing row that blocks nothing, the
 * ledger, and a dry run that changes nothing anywhere in the schema. Each
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

#include "pg_fixture.h"

static int setup(void **state) {
    *state = pgfx_new("lease");
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

/* A clock that says what the test says (read from the database first). */
typedef struct fixed_clock {
    rp_time_ms t;
} fixed_clock;

static rp_time_ms fixed_now(void *self) { return ((fixed_clock *)self)->t; }

static size_t count_verdicts(const rp_report *r, rp_action a) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].action == a) n++;
    return n;
}

/* An expired lease is requeued: ready, lease cleared, run_after not in the
 * past (and a future one kept), attempts unchanged, updated_at now; one
 * ledger row with the verdict's fields, published once. */
static void test_requeue_fields(void **state) {
    pgfx *f = *state;
    int64_t id = pgfx_expired(f, 1, "alpha", 2, 7, "10 minutes");
    int64_t later = pgfx_expired(f, 1, "alpha", 3, 7, "10 minutes");
    pgfx_exec(f, "UPDATE job SET run_after = now() + interval '1 hour',"
                 " updated_at = now() - interval '1 day' WHERE id = %" PRId64, later);
    pgfx_exec(f, "UPDATE job SET updated_at = now() - interval '1 day' WHERE id = %" PRId64, id);

    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 2);
    assert_int_equal(count_verdicts(&r, RP_ACTION_REQUEUED), 2);
    rp_report_cleanup(&r);

    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'ready' AND lease_owner IS NULL"
                                 " AND lease_expires_at IS NULL AND attempts = 2"
                                 " AND run_after BETWEEN now() - interval '1 minute' AND now()"
                                 " AND updated_at > now() - interval '1 minute'"
                                 " AND finished_at IS NULL",
                                 id),
                     1);
    /* greatest(run_after, now()): a run_after in the future stays. */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'ready' AND attempts = 3"
                                 " AND run_after > now() + interval '59 minutes'"
                                 " AND updated_at > now() - interval '1 minute'",
                                 later),
                     1);
    /* One ledger row per move, with the verdict's fields and the job's
     * project. */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 2);
    assert_int_equal(
        pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND project_id = 'alpha'"
                    " AND payload->>'object' = 'job:%" PRId64 "'"
                    " AND payload->>'queue' = 'send_email' AND payload->>'project' = 'alpha'"
                    " AND payload->>'condition' = 'LEASE_EXPIRED'"
                    " AND payload->>'action' = 'REQUEUED' AND payload->>'unit' = 'seconds'"
                    " AND (payload->>'threshold')::int = 0"
                    " AND (payload->>'measured')::float8 BETWEEN 600 AND 700"
                    " AND payload->>'source' = 'job_queue' AND (payload->>'trusted')::bool"
                    " AND payload ? 'detail' AND at > now() - interval '1 minute'",
                    id),
        1);
    assert_int_equal(f->published, 2);
    assert_int_equal(f->last_published_seq, pgfx_i64(f, "SELECT max(seq) FROM ledger"));
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate"), 0);
}

/* attempts >= max_attempts at an expired lease: parked, one attempt
 * refunded, a delivery_exhausted gate naming the job and its attempts. */
static void test_park_refunds_and_opens_a_gate(void **state) {
    pgfx *f = *state;
    int64_t id = pgfx_expired(f, 1, "alpha", 7, 7, "1 minute");
    int64_t over = pgfx_expired(f, 1, "beta", 9, 7, "1 minute");
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(count_verdicts(&r, RP_ACTION_PARKED), 2);
    rp_report_cleanup(&r);

    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'awaiting_human' AND attempts = 6"
                                 " AND lease_owner IS NULL AND lease_expires_at IS NULL"
                                 " AND updated_at > now() - interval '1 minute'",
                                 id),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT attempts FROM job WHERE id = %" PRId64, over), 8);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE job_id = %" PRId64
                                 " AND kind = 'delivery_exhausted'"
                                 " AND choices = ARRAY['retry', 'dismiss'] AND answer IS NULL"
                                 " AND answered_at IS NULL AND question LIKE 'Job %" PRId64
                                 " %%' AND question LIKE '%%7 times%%'"
                                 " AND question LIKE '%%''send_email''%%'",
                                 id, id),
                     1);
    char *q = pgfx_text(f, "SELECT question FROM gate WHERE job_id = %" PRId64, id);
    print_message("gate question: %s\n", q);
    free(q);
    assert_int_equal(
        pgfx_i64(f, "SELECT count(*) FROM ledger WHERE project_id = 'alpha'"
                    " AND payload->>'object' = 'job:%" PRId64 "' AND payload->>'condition' = 'POISON'"
                    " AND payload->>'action' = 'PARKED' AND payload->>'unit' = 'attempts'"
                    " AND (payload->>'measured')::float8 = 7 AND (payload->>'threshold')::int = 7",
                    id),
        1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 2);
}

/* The boundary, exactly, with the database's clock: a lease that expired
 * exactly `grace` before the pass's time is left alone (and unlocked); one
 * a millisecond earlier is reaped. The pass's time is the clock port's, read
 * from the database. */
static void test_grace_boundary_with_the_database_clock(void **state) {
    pgfx *f = *state;
    f->opt.thresholds.lease_grace_seconds = 30;
    fixed_clock clk = {f->ports.clock.now_ms(f->ports.clock.self)};
    /* The clock port is the database's: within a second of its now(). */
    int64_t db = pgfx_i64(f, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8");
    assert_true(db - clk.t >= 0 && db - clk.t < 1000);
    int64_t at = pgfx_expired(f, 1, "alpha", 1, 7, "1 second");
    int64_t past = pgfx_expired(f, 1, "alpha", 1, 7, "1 second");
    int64_t inside = pgfx_expired(f, 1, "alpha", 1, 7, "1 second");
    pgfx_exec(f, "UPDATE job SET lease_expires_at = to_timestamp(%" PRId64 " / 1000.0)"
                 " - interval '30 seconds' WHERE id = %" PRId64, clk.t, at);
    pgfx_exec(f, "UPDATE job SET lease_expires_at = to_timestamp(%" PRId64 " / 1000.0)"
                 " - interval '30.001 seconds' WHERE id = %" PRId64, clk.t, past);
    /* Expired, but not past the grace even by the database's later now(). */
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() - interval '20 seconds'"
                 " WHERE id = %" PRId64, inside);
    f->ports.clock.self = &clk;
    f->ports.clock.now_ms = fixed_now;
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 1);
    assert_string_equal(r.verdicts[0].action == RP_ACTION_REQUEUED ? "requeued" : "other",
                        "requeued");
    char obj[40];
    snprintf(obj, sizeof obj, "job:%" PRId64, past);
    assert_string_equal(r.verdicts[0].object, obj);
    rp_report_cleanup(&r);
    char *states = pgfx_text(f, "SELECT string_agg(state, ',' ORDER BY id) FROM job");
    assert_string_equal(states, "leased,ready,leased");
    free(states);
    /* Left alone means unlocked too: another session can lock it at once. */
    assert_string_equal(pgfx_try(f, "SELECT 1 FROM job WHERE id = %" PRId64 " FOR UPDATE NOWAIT",
                                 at), "");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 1);
}

/* The fence. A lease extended before the take is not taken. A row that is
 * not as it was taken is not moved. A worker's heartbeat waits for the
 * lock and then finds its lease gone. */
static void test_fence(void **state) {
    pgfx *f = *state;
    int64_t extended = pgfx_expired(f, 1, "alpha", 1, 7, "5 minutes");
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() + interval '5 minutes'"
                 " WHERE id = %" PRId64, extended);
    int64_t a = pgfx_expired(f, 1, "alpha", 1, 7, "5 minutes");
    int64_t b = pgfx_expired(f, 1, "alpha", 1, 7, "5 minutes");
    int64_t c = pgfx_expired(f, 1, "alpha", 1, 7, "5 minutes");
    const rp_store_port *s = &f->ports.store;
    rp_lease_query q = {.now = f->ports.clock.now_ms(f->ports.clock.self), .lock = true};
    rp_held_job job;
    rp_verdict v;
    rp_event_ref ev;

    /* 1. The extended lease is not taken: the first row taken is a. */
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_int_equal(job.id, a);
    assert_int_equal(job.state, RP_JOB_LEASED);
    assert_string_equal(job.lease_owner, "worker-1");
    assert_string_equal(job.project, "alpha");
    assert_int_equal(job.attempts, 1);
    assert_int_equal(job.max_attempts, 7);
    assert_true(job.lease_expires_known);

    /* 2. The row changed inside the locked transaction (a heartbeat applied
     * on the same session stands in for any change the lock did not keep
     * out): the move is refused and commits no event. */
    char sql[200];
    snprintf(sql, sizeof sql,
             "UPDATE %s.job SET lease_expires_at = now() + interval '10 minutes' WHERE id = %" PRId64,
             f->schema, a);
    PGresult *hb = PQexec(rp_pg_conn_handle(f->conn), sql);
    assert_int_equal(PQresultStatus(hb), PGRES_COMMAND_OK);
    PQclear(hb);
    assert_int_equal(rp_judge_held_job(&job, &f->opt.thresholds, q.now, &v), RP_OK);
    assert_int_equal(pgfx_move1(s, &job, &v, &ev), RP_ERR_CONFLICT);
    rp_verdict_cleanup(&v);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'leased' AND lease_expires_at > now()", a),
                     1);

    /* 3. Core hands back a job that is not the row as taken: refused, and
     * the row's transaction is over (another session locks it at once). */
    q.after_id = a;
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_int_equal(job.id, b);
    assert_int_equal(rp_judge_held_job(&job, &f->opt.thresholds, q.now, &v), RP_OK);
    rp_held_job forged = job;
    forged.attempts = 0;
    assert_int_equal(pgfx_move1(s, &forged, &v, &ev), RP_ERR_CONFLICT);
    rp_verdict_cleanup(&v);
    assert_string_equal(pgfx_try(f, "SELECT 1 FROM job WHERE id = %" PRId64 " FOR UPDATE NOWAIT",
                                 b), "");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'leased' AND attempts = 1", b),
                     1);

    /* 4. A worker's heartbeat (fenced on its lease_owner, as CONTRACT
     * section 6 says) waits on the lock while the row is taken, and after
     * the move it updates nothing: the worker knows its lease is gone. */
    q.after_id = b;
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_int_equal(job.id, c);
    assert_int_equal(PQsendQuery(f->sql, "UPDATE job SET lease_expires_at = now() + interval '5 "
                                         "minutes' WHERE state = 'leased' AND lease_owner = "
                                         "'worker-1' AND id = (SELECT max(id) FROM job)"),
                     1);
    assert_int_equal(rp_judge_held_job(&job, &f->opt.thresholds, q.now, &v), RP_OK);
    assert_int_equal(pgfx_move1(s, &job, &v, &ev), RP_OK);
    rp_verdict_cleanup(&v);
    PGresult *res = PQgetResult(f->sql);
    assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
    assert_string_equal(PQcmdTuples(res), "0");
    PQclear(res);
    while ((res = PQgetResult(f->sql)) != NULL) PQclear(res);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'ready' AND lease_owner IS NULL", c),
                     1);

    /* 5. A row read without lock (as a dry run reads it) is never moved. */
    q.after_id = 0;
    q.lock = false;
    assert_int_equal(pgfx_take1(s, &q, &job), RP_OK);
    assert_int_equal(job.id, b);
    assert_int_equal(rp_judge_held_job(&job, &f->opt.thresholds, q.now, &v), RP_OK);
    assert_int_equal(pgfx_move1(s, &job, &v, &ev), RP_ERR_CONFLICT);
    rp_verdict_cleanup(&v);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 1);
    /* The ids: nothing past the last one. */
    q.after_id = c;
    q.lock = true;
    assert_int_equal(pgfx_take1(s, &q, &job), RP_ERR_NOT_FOUND);
    (void)extended;
}

/* A poison row and an expired one in one pass: one parked, one requeued,
 * two events, one gate. */
static void test_poison_and_requeue_in_one_pass(void **state) {
    pgfx *f = *state;
    int64_t poison = pgfx_expired(f, 1, "alpha", 7, 7, "3 minutes");
    int64_t plain = pgfx_expired(f, 1, "alpha", 3, 7, "3 minutes");
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 2);
    assert_int_equal(r.verdicts[0].condition, RP_COND_POISON);
    assert_int_equal(r.verdicts[1].condition, RP_COND_LEASE_EXPIRED);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'awaiting_human' AND attempts = 6", poison), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'ready' AND attempts = 3", plain), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 2);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate"), 1);
    /* A second pass finds nothing more to do. */
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 0);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 2);
}

/* A row whose move fails (a trigger raising on it) is rolled back alone:
 * every other row is moved, that one stays leased and unlocked, and the
 * pass report names it. */
static void test_failing_row_blocks_nothing(void **state) {
    pgfx *f = *state;
    int64_t first = pgfx_expired(f, 10, "alpha", 1, 7, "2 minutes");
    int64_t bad = first + 4;
    pgfx_exec(f, "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$"
                 " BEGIN IF OLD.id = %" PRId64 " THEN RAISE EXCEPTION 'job %% is cursed', OLD.id"
                 " USING ERRCODE = 'P0001'; END IF; RETURN NEW; END $$",
                 bad);
    pgfx_exec(f, "CREATE TRIGGER refuse_one BEFORE UPDATE ON job FOR EACH ROW"
                 " EXECUTE FUNCTION refuse_one()");
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 9);
    char needle[64];
    snprintf(needle, sizeof needle, "job %" PRId64 " could not be moved", bad);
    assert_true(pgfx_has_note(&r, needle));
    for (size_t i = 0; i < r.n_notes; i++) print_message("note: %s\n", r.notes[i]);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'ready'"), 9);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND state = 'leased' AND lease_owner IS NOT NULL", bad), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), 9);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE payload->>'object' = 'job:%"
                                 PRId64 "'", bad), 0);
    assert_string_equal(pgfx_try(f, "SELECT 1 FROM job WHERE id = %" PRId64 " FOR UPDATE NOWAIT",
                                 bad), "");
    /* Once the cause is gone, the next pass moves it. */
    pgfx_exec(f, "DROP TRIGGER refuse_one ON job");
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 1);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'ready'"), 10);
}

/* A dry run writes nothing at all: every table and sequence of the schema,
 * every row, is identical before and after, while the report shows what a
 * real pass would do. */
static void test_dry_run_changes_nothing(void **state) {
    pgfx *f = *state;
    pgfx_expired(f, 3, "alpha", 1, 7, "4 minutes");
    pgfx_expired(f, 1, "alpha", 7, 7, "4 minutes");
    /* Stale ready work, and a sighting that a real pass would clear. */
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, run_after)"
                 " VALUES ('beta', 'resize', 'ready', now() - interval '2 hours')");
    pgfx_exec(f, "WITH e AS (INSERT INTO ledger (kind, project_id, payload)"
                 " VALUES ('QueueReaped', 'gone', '{}') RETURNING seq, at)"
                 " INSERT INTO sighting SELECT 'job_queue|STALE_READY|project:gone',"
                 " 'STALE_READY', seq, at FROM e");
    char *before = pgfx_dump(f);
    rp_report r;
    assert_int_equal(pgfx_pass(f, true, &r), RP_OK);
    assert_true(r.ok);
    assert_true(r.dry_run);
    assert_int_equal(count_verdicts(&r, RP_ACTION_REQUEUED), 3);
    assert_int_equal(count_verdicts(&r, RP_ACTION_PARKED), 1);
    assert_int_equal(count_verdicts(&r, RP_ACTION_SURFACED), 1);
    assert_int_equal(count_verdicts(&r, RP_ACTION_CLEARED), 1);
    rp_report_cleanup(&r);
    char *after = pgfx_dump(f);
    assert_string_equal(before, after);
    assert_int_equal(f->published, 0);
    /* Nothing was left locked either. */
    assert_string_equal(pgfx_try(f, "SELECT 1 FROM job FOR UPDATE NOWAIT"), "");
    free(before);
    free(after);
}

/* A named project narrows the reap to its rows. */
static void test_project_narrows_the_reap(void **state) {
    pgfx *f = *state;
    pgfx_expired(f, 3, "alpha", 1, 7, "4 minutes");
    pgfx_expired(f, 2, "beta", 1, 7, "4 minutes");
    f->opt.project = "beta";
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(r.n_verdicts, 2);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'ready'"
                                 " AND project_id = 'beta'"), 2);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'leased'"
                                 " AND project_id = 'alpha'"), 3);
}

/* The next lease deadline (grace included, past ones too) and the clock. */
static void test_next_lease_deadline(void **state) {
    pgfx *f = *state;
    const rp_store_port *s = &f->ports.store;
    rp_time_ms at = -1;
    bool any = true;
    assert_int_equal(s->next_lease_deadline(s->self, 30, &at, &any), RP_OK);
    assert_false(any);
    assert_int_equal(at, 0);
    int64_t later = pgfx_expired(f, 1, "alpha", 1, 7, "1 second");
    int64_t early = pgfx_expired(f, 1, "alpha", 1, 7, "1 second");
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() + interval '1 hour' WHERE id = %" PRId64,
              later);
    pgfx_exec(f, "UPDATE job SET lease_expires_at = now() - interval '5 minutes' WHERE id = %"
                 PRId64, early);
    /* Rows not leased do not count. */
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, lease_expires_at)"
                 " VALUES ('alpha', 'k', 'ready', now() - interval '1 day')");
    assert_int_equal(s->next_lease_deadline(s->self, 30, &at, &any), RP_OK);
    assert_true(any);
    assert_int_equal(at, pgfx_i64(f, "SELECT floor(extract(epoch FROM lease_expires_at"
                                     " + interval '30 seconds') * 1000)::int8 FROM job"
                                     " WHERE id = %" PRId64, early));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_requeue_fields),
        T(test_park_refunds_and_opens_a_gate),
        T(test_grace_boundary_with_the_database_clock),
        T(test_fence),
        T(test_poison_and_requeue_in_one_pass),
        T(test_failing_row_blocks_nothing),
        T(test_dry_run_changes_nothing),
        T(test_project_narrows_the_reap),
        T(test_next_lease_deadline),
    };
    return cmocka_run_group_tests_name("pg_store", tests, NULL, NULL);
}
