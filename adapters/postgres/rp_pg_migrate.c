#include "rp_pg_migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_conn.h"

/* Any constant will do, as long as every reaper uses the same one. */
#define RP_PG_MIGRATE_LOCK 0x72656170 /* "reap" */

int rp_pg_schema_version_known(void) {
    return rp_pg_migration_count > 0 ? rp_pg_migrations[rp_pg_migration_count - 1].version : 0;
}

/* Runs sql (no parameters) and checks its status; err set on failure. */
static rp_status rp_exec(PGconn *pg, const char *sql, char *err, size_t errlen) {
    PGresult *r = PQexec(pg, sql);
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    rp_status st = RP_OK;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        rp_pg_error_line(r ? PQresultErrorMessage(r) : PQerrorMessage(pg), err, errlen);
        st = PQstatus(pg) == CONNECTION_OK ? RP_ERR_INTERNAL : RP_ERR_UNAVAILABLE;
    }
    PQclear(r);
    return st;
}

/* Sets search_path for this transaction to the quoted schema. */
static rp_status rp_use_schema(PGconn *pg, const char *schema, bool create, char *err,
                               size_t errlen) {
    char *q = PQescapeIdentifier(pg, schema, strlen(schema));
    if (q == NULL) {
        rp_pg_error_line(PQerrorMessage(pg), err, errlen);
        return RP_ERR_INTERNAL;
    }
    char sql[512];
    rp_status st = RP_OK;
    if (create) {
        snprintf(sql, sizeof sql,
                 "CREATE SCHEMA IF NOT EXISTS %s;"
                 "CREATE TABLE IF NOT EXISTS %s.schema_version ("
                 " version int PRIMARY KEY, name text NOT NULL,"
                 " applied_at timestamptz NOT NULL DEFAULT now())",
                 q, q);
        st = rp_exec(pg, sql, err, errlen);
    }
    if (st == RP_OK) {
        snprintf(sql, sizeof sql, "SET LOCAL search_path TO %s", q);
        st = rp_exec(pg, sql, err, errlen);
    }
    PQfreemem(q);
    return st;
}

rp_status rp_pg_schema_version(PGconn *pg, const char *schema, int *version, char *err,
                               size_t errlen) {
    *version = 0;
    char *q = PQescapeIdentifier(pg, schema, strlen(schema));
    if (q == NULL) {
        rp_pg_error_line(PQerrorMessage(pg), err, errlen);
        return RP_ERR_INTERNAL;
    }
    /* to_regclass says whether the table exists without failing, so a
     * database reaper never migrated reads as version 0. */
    char sql[512];
    snprintf(sql, sizeof sql, "%s.schema_version", q);
    const char *params[] = {sql};
    PGresult *r = PQexecParams(pg, "SELECT to_regclass($1) IS NOT NULL", 1, NULL, params,
                               NULL, NULL, 0);
    rp_status st = RP_OK;
    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        rp_pg_error_line(r ? PQresultErrorMessage(r) : PQerrorMessage(pg), err, errlen);
        st = PQstatus(pg) == CONNECTION_OK ? RP_ERR_INTERNAL : RP_ERR_UNAVAILABLE;
    } else if (strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
        PQclear(r);
        snprintf(sql, sizeof sql, "SELECT coalesce(max(version), 0) FROM %s.schema_version", q);
        r = PQexec(pg, sql);
        if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
            rp_pg_error_line(r ? PQresultErrorMessage(r) : PQerrorMessage(pg), err, errlen);
            st = PQstatus(pg) == CONNECTION_OK ? RP_ERR_INTERNAL : RP_ERR_UNAVAILABLE;
        } else {
            *version = atoi(PQgetvalue(r, 0, 0));
        }
    }
    PQclear(r);
    PQfreemem(q);
    return st;
}

static rp_status rp_rollback(PGconn *pg, rp_status st) {
    PQclear(PQexec(pg, "ROLLBACK"));
    return st;
}

rp_status rp_pg_migrate(PGconn *pg, const char *schema, int *applied, char *err,
                        size_t errlen) {
    if (applied) *applied = 0;
    for (;;) {
        rp_status st = rp_exec(pg, "BEGIN", err, errlen);
        if (st != RP_OK) return st;
        char lock[96];
        snprintf(lock, sizeof lock, "SELECT pg_advisory_xact_lock(%d)", RP_PG_MIGRATE_LOCK);
        if ((st = rp_exec(pg, lock, err, errlen)) != RP_OK ||
            (st = rp_use_schema(pg, schema, true, err, errlen)) != RP_OK)
            return rp_rollback(pg, st);
        int have = 0;
        if ((st = rp_pg_schema_version(pg, schema, &have, err, errlen)) != RP_OK)
            return rp_rollback(pg, st);
        int known = rp_pg_schema_version_known();
        if (have > known) {
            snprintf(err, errlen,
                     "schema %s is at version %d, newer than this reaperd knows (%d); "
                     "run a newer reaperd",
                     schema, have, known);
            return rp_rollback(pg, RP_ERR_CONFLICT);
        }
        const rp_pg_migration *next = NULL;
        for (int i = 0; i < rp_pg_migration_count; i++)
            if (rp_pg_migrations[i].version > have) {
                next = &rp_pg_migrations[i];
                break;
            }
        if (next == NULL) {
            rp_status done = rp_exec(pg, "COMMIT", err, errlen);
            return done;
        }
        PGresult *r = PQexec(pg, next->sql);
        if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK) {
            char why[400];
            rp_pg_error_line(r ? PQresultErrorMessage(r) : PQerrorMessage(pg), why, sizeof why);
            snprintf(err, errlen, "migration %04d_%s failed: %s", next->version, next->name, why);
            PQclear(r);
            return rp_rollback(pg, PQstatus(pg) == CONNECTION_OK ? RP_ERR_INTERNAL
                                                                 : RP_ERR_UNAVAILABLE);
        }
        PQclear(r);
        char ver[16];
        snprintf(ver, sizeof ver, "%d", next->version);
        const char *params[] = {ver, next->name};
        r = PQexecParams(pg, "INSERT INTO schema_version (version, name) VALUES ($1::int, $2)",
                         2, NULL, params, NULL, NULL, 0);
        bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) rp_pg_error_line(r ? PQresultErrorMessage(r) : PQerrorMessage(pg), err, errlen);
        PQclear(r);
        if (!ok) return rp_rollback(pg, RP_ERR_INTERNAL);
        if ((st = rp_exec(pg, "COMMIT", err, errlen)) != RP_OK) return st;
        if (applied) (*applied)++;
    }
}

/* ---- reaperd --migrate ---------------------------------------------------- */

int rp_pg_migrate_cli(const rp_config *cfg) {
    char err[512] = "";
    rp_pg_conn *pg = rp_pg_conn_new(cfg->store.dsn, 10);
    /* The daemon's session settings, less the statement time-out: a
     * migration may build an index over a large job table. */
    rp_pg_session s = {
        .schema = cfg->store.schema,
        .statement_timeout_ms = 0,
        .lock_timeout_ms = (int)cfg->store.lock_timeout_ms,
        .idle_in_transaction_timeout_ms = (int)cfg->store.idle_in_transaction_timeout_ms,
        .tcp_user_timeout_ms = (int)cfg->store.tcp_user_timeout_ms,
    };
    if (pg != NULL && rp_pg_conn_set_session(pg, &s) != RP_OK) {
        rp_pg_conn_free(pg);
        pg = NULL;
    }
    if (pg == NULL) {
        RP_ERROR("out of memory", NULL);
        return 1;
    }
    if (rp_pg_conn_ensure(pg, err, sizeof err) != RP_OK) {
        RP_ERROR("cannot migrate: store unreachable", "reason", err, NULL);
        rp_pg_conn_free(pg);
        return 1;
    }
    int before = 0, applied = 0;
    rp_status st = rp_pg_schema_version(rp_pg_conn_handle(pg), cfg->store.schema, &before, err,
                                        sizeof err);
    if (st == RP_OK)
        st = rp_pg_migrate(rp_pg_conn_handle(pg), cfg->store.schema, &applied, err, sizeof err);
    char from[16], to[16], n[16];
    snprintf(from, sizeof from, "%d", before);
    snprintf(to, sizeof to, "%d", rp_pg_schema_version_known());
    snprintf(n, sizeof n, "%d", applied);
    if (st != RP_OK) {
        RP_ERROR("migration refused", "schema", cfg->store.schema, "store", rp_pg_conn_peer(pg),
                 "reason", err, NULL);
        rp_pg_conn_free(pg);
        return 1;
    }
    if (applied == 0)
        RP_INFO("schema already current", "schema", cfg->store.schema, "version", to, NULL);
    else
        RP_INFO("schema migrated", "schema", cfg->store.schema, "from_version", from,
                "to_version", to, "applied", n, NULL);
    rp_pg_conn_free(pg);
    return 0;
}
