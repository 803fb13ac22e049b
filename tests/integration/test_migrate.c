/*
 * The schema migrations against the real PostgreSQL: applied once, idempotent,
 * recorded, refusing a newer schema, and the ledger append-only in the
 * database itself. Each test works in a schema of its own, dropped after.
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
    usleep(300 * 1000);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_applies_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ledger_is_append_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_migrations_apply_once, setup, teardown),
    };
    return cmocka_run_group_tests_name("migrate", tests, NULL, NULL);
}
