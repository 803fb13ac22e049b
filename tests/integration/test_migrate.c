/*
 * The schema migrations against the real PostgreSQL: applied once, idempotent,
 * recorded, refusing a newer schema, the ledger append-only in the
 * database itself, and version 3 upgrading the dead letters of a version 2
 * database (identities with vhost and origin, deaths, occurrences), and
 * version 6's OCCURRENCE function reading its own schema. Each test works in a schema of its own, dropped after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"
#include "pg_fixture.h"
#include "rp_park.h"
#include "rp_pg_migrate.h"

typedef struct fixture {
    PGconn *pg;
    char schema[64];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    if (PQstatus(f->pg) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect: %s", PQerrorMessage(f->pg));
        return -1;
    }
    PQclear(PQexec(f->pg, "SET client_min_messages = warning"));
    static int n;
    snprintf(f->schema, sizeof f->schema, "itest_mig_%d_%d", (int)getpid(), n++);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char sql[160];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", f->schema);
    PQclear(PQexec(f->pg, sql));
    PQfinish(f->pg);
    free(f);
    return 0;
}

/* Runs sql in the fixture's schema; returns the SQLSTATE ("" when ok). */
static const char *run(fixture *f, const char *sql) {
    static char state[8];
    char set[160];
    snprintf(set, sizeof set, "SET search_path TO %s", f->schema);
    PQclear(PQexec(f->pg, set));
    PGresult *r = PQexec(f->pg, sql);
    ExecStatusType s = PQresultStatus(r);
    const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(state, sizeof state, "%s",
             (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) ? "" : (code ? code : "?"));
    PQclear(r);
    return state;
}

static void test_migrate_applies_once(void **state) {
    fixture *f = *state;
    char err[512] = "";
    int applied = -1, version = -1;
    assert_int_equal(rp_pg_schema_version(f->pg, f->schema, &version, err, sizeof err), RP_OK);
    assert_int_equal(version, 0);
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, &applied, err, sizeof err), RP_OK);
    assert_int_equal(applied, rp_pg_migration_count);
    assert_int_equal(rp_pg_schema_version(f->pg, f->schema, &version, err, sizeof err), RP_OK);
    assert_int_equal(version, rp_pg_schema_version_known());
    /* Again: nothing to do, nothing changes. */
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, &applied, err, sizeof err), RP_OK);
    assert_int_equal(applied, 0);
    /* The tables of CONTRACT section 6 exist, in the configured schema. */
    assert_string_equal(run(f, "SELECT id, project_id, kind, state, payload, attempts, max_attempts,"
                               " lease_owner, lease_expires_at, run_after, depends_on, finished_at,"
                               " created_at, updated_at FROM job"), "");
    assert_string_equal(run(f, "SELECT id, job_id, kind, question, choices, answer, answered_by,"
                               " answered_at, created_at FROM gate"), "");
    assert_string_equal(run(f, "SELECT identity, job_id, gate_id, queue, origin_queue, reason,"
                               " first_death_at, headers, properties, body, body_truncated,"
                               " parked_at FROM dead_letter"), "");
    assert_string_equal(run(f, "SELECT seq, at, kind, project_id, payload FROM ledger"), "");
    assert_string_equal(run(f, "SELECT key, condition, opened_seq, opened_at FROM sighting"), "");
    /* The gates filters' indexes: the gate row's (version 13) in place,
     * version 12's on dead_letter gone again (version 14; the park no
     * longer pays for them). */
    assert_string_equal(run(f, "DO $$ BEGIN IF to_regclass('gate_open_by_origin') IS NULL OR "
                               "to_regclass('dead_letter_by_origin') IS NOT NULL OR "
                               "to_regclass('dead_letter_by_reason') IS NOT NULL OR "
                               "to_regclass('dead_letter_by_queue') IS NOT NULL THEN "
                               "RAISE EXCEPTION 'indexes'; END IF; END $$"),
                        "");
    /* The job state is checked by the database. */
    assert_string_equal(run(f, "INSERT INTO job (project_id, kind, state) VALUES ('p', 'k', 'bogus')"),
                        "23514");
}

static void test_migrate_refuses_newer_schema(void **state) {
    fixture *f = *state;
    char err[512] = "";
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, NULL, err, sizeof err), RP_OK);
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO schema_version (version, name) VALUES (%d, 'future')",
             rp_pg_schema_version_known() + 1);
    assert_string_equal(run(f, sql), "");
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, NULL, err, sizeof err), RP_ERR_CONFLICT);
    assert_non_null(strstr(err, "newer than this reaperd knows"));
    /* The refusal left no transaction open. */
    assert_int_equal(PQtransactionStatus(f->pg), PQTRANS_IDLE);
}

static void test_ledger_is_append_only(void **state) {
    fixture *f = *state;
    char err[512] = "";
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, NULL, err, sizeof err), RP_OK);
    assert_string_equal(run(f, "INSERT INTO ledger (kind, project_id, payload)"
                               " VALUES ('QueueReaped', 'p', '{}')"), "");
    assert_string_equal(run(f, "UPDATE ledger SET kind = 'x'"), "42501");
    assert_string_equal(run(f, "DELETE FROM ledger"), "42501");
    /* Plain TRUNCATE is already refused for the sighting foreign key; with
     * CASCADE that reason is gone and the ledger's own trigger refuses. */
    assert_string_not_equal(run(f, "TRUNCATE ledger"), "");
    assert_string_equal(run(f, "TRUNCATE ledger CASCADE"), "42501");
    /* The row is still there, unchanged. */
    assert_string_equal(run(f, "DO $$BEGIN IF (SELECT count(*) FROM ledger WHERE kind = "
                               "'QueueReaped') <> 1 THEN RAISE EXCEPTION 'changed'; END IF; END$$"), "");
}

/* Two processes migrating at once: each version applied exactly once. */
static void test_concurrent_migrations_apply_once(void **state) {
    fixture *f = *state;
    PGconn *other = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    assert_int_equal(PQstatus(other), CONNECTION_OK);
    PQclear(PQexec(other, "SET client_min_messages = warning"));
    /* Hold the migration lock on one connection while the other starts. */
    PQclear(PQexec(other, "BEGIN"));
    PQclear(PQexec(other, "SELECT pg_advisory_xact_lock(1919246704)")); /* 0x72656170 */
    pid_t pid = fork();
    if (pid == 0) {
        PGconn *c = PQconnectdb(itest_env("REAPER_STORE_DSN"));
        PQclear(PQexec(c, "SET client_min_messages = warning"));
        char e[512];
        int applied = -1;
        rp_status st = rp_pg_migrate(c, f->schema, &applied, e, sizeof e);
        PQfinish(c);
        _exit(st == RP_OK ? applied : 100);
    }
    /* Until the child waits for the migration lock. */
    (void)itest_pg_wait_lock_waiters(1, 10000);
    PQclear(PQexec(other, "COMMIT"));
    char err[512];
    int applied = -1;
    assert_int_equal(rp_pg_migrate(other, f->schema, &applied, err, sizeof err), RP_OK);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(applied + WEXITSTATUS(status), rp_pg_migration_count);
    PQfinish(other);
}

/* ---- version 3: a database with version 2's dead letters ---------------- */

/* Migrations 1 and 2 only, as a reaperd of version 2 left the schema. */
static void migrate_to_v2(fixture *f) {
    char sql[400];
    snprintf(sql, sizeof sql,
             "CREATE SCHEMA %s; SET search_path TO %s; CREATE TABLE schema_version ("
             " version int PRIMARY KEY, name text NOT NULL,"
             " applied_at timestamptz NOT NULL DEFAULT now())",
             f->schema, f->schema);
    assert_string_equal(run(f, sql), "");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rp_pg_migrations[i].version, i + 1);
        assert_string_equal(run(f, rp_pg_migrations[i].sql), "");
        snprintf(sql, sizeof sql, "INSERT INTO schema_version (version, name) VALUES (%d, '%s')",
                 i + 1, rp_pg_migrations[i].name);
        assert_string_equal(run(f, sql), "");
    }
}

/* One row as version 2's park wrote it (job, gate, dead_letter), its gate
 * answered when answer is not NULL. */
static void old_row(fixture *f, int id, const char *identity, const char *vhost,
                    const char *origin_rendered, const char *headers, const char *body,
                    const char *answer) {
    char sql[2048];
    snprintf(sql, sizeof sql,
             "INSERT INTO job (id, project_id, kind, state, payload) VALUES (%d, 'bus', "
             "'bus.dead_letter', 'awaiting_human', jsonb_build_object('identity', $q$%s$q$, "
             "'vhost', $q$%s$q$, 'queue', 'vibey.orders.dlq', 'origin_queue', $q$%s$q$, "
             "'reason', '\"rejected\"'));"
             "INSERT INTO gate (id, job_id, kind, question, choices, answer, answered_at) "
             "VALUES (%d, %d, 'bus_dead_lettered', 'q?', ARRAY['replay', 'dismiss'], %s%s%s, %s);"
             "INSERT INTO dead_letter (identity, job_id, gate_id, queue, origin_queue, reason, "
             "first_death_at, headers, properties, body) VALUES ($q$%s$q$, %d, %d, "
             "'vibey.orders.dlq', $q$%s$q$, '\"rejected\"', to_timestamp(1700000000), "
             "$q$%s$q$, '{}', '%s'::bytea)",
             id, identity, vhost, origin_rendered, id, id, answer ? "'" : "",
             answer ? answer : "NULL", answer ? "'" : "", answer ? "now()" : "NULL", identity, id,
             id, origin_rendered, headers, body);
    assert_string_equal(run(f, sql), "");
}

static char *text_of(fixture *f, const char *sql) {
    char set[160];
    snprintf(set, sizeof set, "SET search_path TO %s", f->schema);
    PQclear(PQexec(f->pg, set));
    PGresult *r = PQexec(f->pg, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char *out = strdup(PQntuples(r) && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return out;
}

/* Parks the message (vhost, origin, message_id or NULL, body, x-death
 * entries) through core as the tap and the backfill do, on a store over the
 * fixture's schema; returns the outcome. */
static rp_park_outcome park_again(fixture *f, const char *vhost, const char *origin,
                                  const char *message_id, const char *body,
                                  const rp_xdeath *deaths, size_t n) {
    pgfx *p = pgfx_attach(f->schema);
    rp_dl_message msg = {0};
    if (message_id)
        msg.headers.message_id = (rp_opt_str){true, {(const uint8_t *)message_id,
                                                      strlen(message_id)}};
    msg.headers.first_death_queue = (rp_opt_str){true, {(const uint8_t *)origin, strlen(origin)}};
    msg.headers.x_death = deaths;
    msg.headers.n_x_death = n;
    msg.body = (rp_bytes){(const uint8_t *)body, strlen(body)};
    rp_park_site site = {vhost, "vibey.orders.dlq", p->dlq};
    rp_report r;
    rp_report_init(&r, false);
    rp_park_outcome out = RP_PARKED_WOULD;
    assert_int_equal(rp_park_dead_letter(&p->ports, &site, &msg, false, &r, &out), RP_OK);
    rp_report_cleanup(&r);
    pgfx_free(p);
    return out;
}

#define XD(q, t, c) {.queue = {true, {(const uint8_t *)(q), sizeof(q) - 1}}, \
                     .reason = {true, {(const uint8_t *)"rejected", 8}}, \
                     .time = {true, (t)}, .count = {(c) > 0, (c)}}

static void test_migrate_v3_upgrades_dead_letters(void **state) {
    fixture *f = *state;
    migrate_to_v2(f);
    /* The digest v2 gave body "hello" that first died on vibey.orders at
     * 1700000000 (the digest itself is unchanged by v3). */
    char digest[RP_DL_DIGEST_IDENTITY_LEN + 1];
    assert_int_equal(rp_dl_digest_identity((rp_bytes){(const uint8_t *)"vibey.orders", 12}, true,
                                           1700000000, (rp_bytes){(const uint8_t *)"hello", 5},
                                           digest),
                     RP_OK);
    static const char xd1[] =
        "{\"x-first-death-queue\": \"vibey.orders\", \"x-death\": [{\"count\": 1, "
        "\"queue\": \"vibey.orders\", \"reason\": \"rejected\", "
        "\"time\": {\"$amqp\": \"T\", \"value\": 1700000000}}]}";
    /* Two entries: a count of kind 'i' (tagged) and one without a count. */
    static const char xd2[] =
        "{\"x-death\": [{\"count\": {\"$amqp\": \"i\", \"value\": 3}, \"queue\": \"x\", "
        "\"time\": {\"$amqp\": \"T\", \"value\": 1700000050}}, {\"queue\": \"a\\\"b\\\\c\", "
        "\"time\": {\"$amqp\": \"T\", \"value\": 1700000000}}]}";
    old_row(f, 1, "id:m-1", "/", "\"vibey.orders\"", xd1, "one", "dismiss");
    old_row(f, 2, digest, "/", "\"vibey.orders\"", xd1, "hello", NULL);
    /* Origin a"b\c, a tab and an e-acute, as rendered (quoted, escaped). */
    old_row(f, 3, "id:m-2", "vh", "\"a\\\"b\\\\c\\t\xc3\xa9\"", xd2, "two", NULL);
    old_row(f, 4, "id:m-3", "/", "\"vibey.orders\"", "{}", "three", NULL);
    /* The rows took ids 1..4 by hand, where v2 drew them. */
    assert_string_equal(run(f, "SELECT setval(pg_get_serial_sequence('job', 'id'), 4), "
                               "setval(pg_get_serial_sequence('gate', 'id'), 4)"),
                        "");

    char err[512] = "";
    int applied = -1;
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, &applied, err, sizeof err), RP_OK);
    assert_int_equal(applied, rp_pg_migration_count - 2);
    char *rows = text_of(f, "SELECT string_agg(identity || ' ' || death || ' ' || occurrence, "
                            "' | ' ORDER BY job_id) FROM dead_letter");
    char want[1024];
    snprintf(want, sizeof want,
             "id:%%2F/vibey.orders/m-1 1700000000/1 1 | sha256:%%2F/%s 1700000000/1 1 | "
             "id:vh/a\"b\\c%%09%%C3%%A9/m-2 1700000000/4 1 | id:%%2F/vibey.orders/m-3 1700000000/0 1",
             digest + 7);
    assert_string_equal(rows, want);
    free(rows);
    /* The jobs name their rows' new identities; the gates are untouched. */
    assert_string_equal(run(f, "DO $$BEGIN IF (SELECT count(*) FROM job j JOIN dead_letter d "
                               "ON d.job_id = j.id WHERE j.payload->>'identity' = d.identity) "
                               "<> 4 OR (SELECT count(*) FROM gate WHERE answer = 'dismiss') <> 1 "
                               "THEN RAISE EXCEPTION 'not migrated'; END IF; END$$"),
                        "");
    char *pk = text_of(f, "SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM pg_index x "
                          "CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(n, i) "
                          "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n "
                          "WHERE x.indrelid = 'dead_letter'::regclass AND x.indisprimary");
    assert_string_equal(pk, "identity,death");
    free(pk);

    /* The copies of these deaths, read again by the backfill or redelivered
     * to the tap, find their rows: no second gate, even for the answered one. */
    rp_xdeath one[] = {XD("vibey.orders", 1700000000, 1)};
    rp_xdeath two[] = {XD("x", 1700000050, 3), XD("a", 1700000000, 0)};
    assert_int_equal(park_again(f, "/", "vibey.orders", "m-1", "one", one, 1), RP_PARKED_ALREADY);
    assert_int_equal(park_again(f, "/", "vibey.orders", NULL, "hello", one, 1), RP_PARKED_ALREADY);
    assert_int_equal(park_again(f, "vh", "a\"b\\c\t\xc3\xa9", "m-2", "two", two, 2),
                     RP_PARKED_ALREADY);
    /* m-1 dead again after its answer: occurrence 2. */
    one[0].time.value = 1700000009;
    assert_int_equal(park_again(f, "/", "vibey.orders", "m-1", "one", one, 1), RP_PARKED_NEW);
    rows = text_of(f, "SELECT string_agg(death || ' ' || occurrence, ' | ' ORDER BY occurrence) "
                      "FROM dead_letter WHERE identity = 'id:%2F/vibey.orders/m-1'");
    assert_string_equal(rows, "1700000000/1 1 | 1700000009/1 2");
    free(rows);
}

/* The OCCURRENCE rule's function (version 6) reads its own schema's tables,
 * whatever the caller's search_path: two schemas, one death parked in the
 * first; each schema's function, called while the other is on the path,
 * answers for its own rows (NULL: parked already; 1: a new identity). */
static char *scalar(fixture *f, const char *path, const char *sql) {
    char set[160];
    snprintf(set, sizeof set, "SET search_path TO %s", path);
    PQclear(PQexec(f->pg, set));
    PGresult *r = PQexec(f->pg, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char *v = strdup(PQgetisnull(r, 0, 0) ? "NULL" : PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void test_next_occurrence_reads_its_own_schema(void **state) {
    fixture *f = *state;
    char err[512] = "", other[80], sql[400];
    snprintf(other, sizeof other, "%s_b", f->schema);
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, NULL, err, sizeof err), RP_OK);
    assert_int_equal(rp_pg_migrate(f->pg, other, NULL, err, sizeof err), RP_OK);
    assert_string_equal(
        run(f, "WITH j AS (INSERT INTO job (project_id, kind, state) VALUES ('bus', "
               "'bus.dead_letter', 'awaiting_human') RETURNING id), "
               "g AS (INSERT INTO gate (job_id, kind, question, choices) SELECT id, "
               "'bus_dead_lettered', 'q', ARRAY['replay', 'dismiss'] FROM j RETURNING id, job_id) "
               "INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue, "
               "reason, headers, properties, body, vhost) SELECT 'id:%2F/q/m', '1700000000/1', "
               "job_id, id, 'q.dlq', '\"q\"', '\"rejected\"', '{}', '{}', '', '/' FROM g"),
        "");
    char *v;
    snprintf(sql, sizeof sql, "SELECT %s.dead_letter_next_occurrence('id:%%2F/q/m', '1700000000/1')",
             f->schema);
    v = scalar(f, other, sql);
    assert_string_equal(v, "NULL");
    free(v);
    /* A new death of it: its gate is open, a new lineage: occurrence 2. */
    snprintf(sql, sizeof sql, "SELECT %s.dead_letter_next_occurrence('id:%%2F/q/m', '1700000099/1')",
             f->schema);
    v = scalar(f, other, sql);
    assert_string_equal(v, "2");
    free(v);
    snprintf(sql, sizeof sql, "SELECT %s.dead_letter_next_occurrence('id:%%2F/q/m', '1700000000/1')",
             other);
    v = scalar(f, f->schema, sql);
    assert_string_equal(v, "1");
    free(v);
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", other);
    PQclear(PQexec(f->pg, sql));
}

/* ---- gate filter columns: a database with the dead letters of the
 * version before them (migration gate_filter_columns, issue #20) -------- */

/* Every migration before NAME, as a reaperd of that version left the schema;
 * returns NAME's index. */
static size_t migrate_before(fixture *f, const char *name) {
    char sql[400];
    snprintf(sql, sizeof sql,
             "CREATE SCHEMA %s; SET search_path TO %s; CREATE TABLE schema_version ("
             " version int PRIMARY KEY, name text NOT NULL,"
             " applied_at timestamptz NOT NULL DEFAULT now())",
             f->schema, f->schema);
    assert_string_equal(run(f, sql), "");
    size_t i = 0;
    for (; strstr(rp_pg_migrations[i].name, name) == NULL; i++) {
        assert_true(rp_pg_migrations[i].version < rp_pg_schema_version_known());
        assert_string_equal(run(f, rp_pg_migrations[i].sql), "");
        snprintf(sql, sizeof sql, "INSERT INTO schema_version (version, name) VALUES (%d, '%s')",
                 rp_pg_migrations[i].version, rp_pg_migrations[i].name);
        assert_string_equal(run(f, sql), "");
    }
    return i;
}

/* The migration copies each existing dead letter's queue, origin and reason
 * onto its gate (open or answered); a gate without a dead letter keeps
 * them NULL; and the open gates' filters then find the old rows. */
static void test_migrate_copies_gate_filters(void **state) {
    fixture *f = *state;
    migrate_before(f, "gate_filter_columns");
    assert_string_equal(
        run(f, "INSERT INTO job (id, project_id, kind, state) VALUES (1, 'bus', "
               "'bus.dead_letter', 'awaiting_human'), (2, 'bus', 'bus.dead_letter', "
               "'awaiting_human'), (3, 'p', 'k', 'awaiting_human');"
               "INSERT INTO gate (id, job_id, kind, question, choices, answer, answered_at) VALUES "
               "(1, 1, 'bus_dead_lettered', 'q', ARRAY['replay', 'dismiss'], NULL, NULL), "
               "(2, 2, 'bus_dead_lettered', 'q', ARRAY['replay', 'dismiss'], 'dismiss', now()), "
               "(3, 3, 'delivery_exhausted', 'q', ARRAY['retry', 'dismiss'], NULL, NULL);"
               "INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue, "
               "reason, headers, properties, body) VALUES "
               "('id:%2F/a/1', 'd1', 1, 1, 'a.dlq', '\"a\"', '\"rejected\"', '{}', '{}', ''), "
               "('id:%2F/b/2', 'd1', 2, 2, 'b.dlq', '\"b\"', '\"expired\"', '{}', '{}', '')"),
        "");
    char err[512] = "";
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, NULL, err, sizeof err), RP_OK);
    char *v = text_of(f, "SELECT string_agg(id || ':' || coalesce(queue, '-') || ',' || "
                         "coalesce(origin_queue, '-') || ',' || coalesce(reason, '-'), ' ' "
                         "ORDER BY id) FROM gate");
    assert_string_equal(v, "1:a.dlq,\"a\",\"rejected\" 2:b.dlq,\"b\",\"expired\" 3:-,-,-");
    free(v);
    v = text_of(f, "SELECT string_agg(id::text, ' ' ORDER BY id) FROM gate "
                   "WHERE answer IS NULL AND origin_queue = '\"a\"'");
    assert_string_equal(v, "1");
    free(v);
}

/* Version 15: every existing dead letter and its gate take the vhost of
 * the dead letter's identity, of either form ("id:" and "sha256:"), with
 * ESC undone ("%2F" is "/", "%25" is "%", a UTF-8 byte each "%XX"); a gate
 * without a dead letter keeps it NULL; and the column is required after. */
static void test_migrate_v15_names_the_vhost(void **state) {
    fixture *f = *state;
    migrate_before(f, "dead_letter_vhost");
    assert_string_equal(
        run(f, "INSERT INTO job (id, project_id, kind, state) SELECT g, 'bus', 'bus.dead_letter', "
               "'awaiting_human' FROM generate_series(1, 4) g;"
               "INSERT INTO job (id, project_id, kind, state) VALUES (5, 'p', 'k', 'awaiting_human');"
               "INSERT INTO gate (id, job_id, kind, question, choices) SELECT g, g, "
               "'bus_dead_lettered', 'q', ARRAY['replay', 'dismiss'] FROM generate_series(1, 4) g;"
               "INSERT INTO gate (id, job_id, kind, question, choices) VALUES "
               "(5, 5, 'delivery_exhausted', 'q', ARRAY['retry', 'dismiss']);"
               "INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue, "
               "reason, headers, properties, body) VALUES "
               "('id:%2F/a/1', 'd1', 1, 1, 'a.dlq', '\"a\"', '\"rejected\"', '{}', '{}', ''), "
               "('sha256:tenant%2Fb%25x/00ff', 'd1', 2, 2, 'b.dlq', '\"b\"', '\"expired\"', "
               "'{}', '{}', ''), "
               "('id:plain/o%2Fq/m/2', 'd1', 3, 3, 'c.dlq', '\"o/q\"', '\"rejected\"', '{}', "
               "'{}', ''), "
               "('sha256:caf%C3%A9%20x/ab', 'd1', 4, 4, 'd.dlq', '\"d\"', '\"rejected\"', '{}', "
               "'{}', '')"),
        "");
    char err[512] = "";
    assert_int_equal(rp_pg_migrate(f->pg, f->schema, NULL, err, sizeof err), RP_OK);
    char *v = text_of(f, "SELECT string_agg(g.id || '=' || coalesce(g.vhost, '-') || '|' || "
                         "coalesce(dl.vhost, '-'), ' ' ORDER BY g.id) FROM gate g "
                         "LEFT JOIN dead_letter dl ON dl.gate_id = g.id");
    assert_string_equal(v, "1=/|/ 2=tenant/b%x|tenant/b%x 3=plain|plain 4=caf\xc3\xa9 x|caf\xc3\xa9 x "
                           "5=-|-");
    free(v);
    v = text_of(f, "SELECT is_nullable FROM information_schema.columns WHERE table_schema = "
                   "current_schema() AND table_name = 'dead_letter' AND column_name = 'vhost'");
    assert_string_equal(v, "NO");
    free(v);
    /* A reaperd older than version 15, still parking during the rollout,
     * names no vhost: the row takes its identity's, and the park succeeds. */
    assert_string_equal(
        run(f, "INSERT INTO job (id, project_id, kind, state) VALUES (6, 'bus', "
               "'bus.dead_letter', 'awaiting_human');"
               "INSERT INTO gate (id, job_id, kind, question, choices) VALUES "
               "(6, 6, 'bus_dead_lettered', 'q', ARRAY['replay', 'dismiss']);"
               "INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue, "
               "reason, headers, properties, body) VALUES "
               "('sha256:old%2Fpod/ab', 'd1', 6, 6, 'e.dlq', '\"e\"', '\"rejected\"', '{}', "
               "'{}', '')"),
        "");
    v = text_of(f, "SELECT vhost FROM dead_letter WHERE job_id = 6");
    assert_string_equal(v, "old/pod");
    free(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_applies_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ledger_is_append_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_migrations_apply_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v3_upgrades_dead_letters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_occurrence_reads_its_own_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_copies_gate_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v15_names_the_vhost, setup, teardown),
    };
    return cmocka_run_group_tests_name("migrate", tests, NULL, NULL);
}
