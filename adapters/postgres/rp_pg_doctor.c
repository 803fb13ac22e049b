/* doctor's probes of the store (rp_pg_doctor.h). */
#include "rp_pg_doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_migrate.h"

rp_doctor_reach rp_pg_doctor_reach(const char *why) {
    static const char *const refused[] = {"Connection refused", "No such file or directory"};
    static const char *const auth[] = {"password authentication failed",
                                       "authentication failed",
                                       "no pg_hba.conf entry",
                                       "no password supplied",
                                       "does not exist",
                                       "permission denied"};
    static const char *const unreachable[] = {"timeout expired", "could not translate host name",
                                              "No route to host", "Network is unreachable",
                                              "Connection timed out", "Name or service not known"};
    if (why == NULL) return RP_REACH_ERROR;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        if (strstr(why, refused[i])) return RP_REACH_REFUSED;
    /* A database that does not exist is not a login refused. */
    if (strstr(why, "database \"") != NULL && strstr(why, "does not exist") != NULL)
        return RP_REACH_ERROR;
    for (size_t i = 0; i < sizeof auth / sizeof *auth; i++)
        if (strstr(why, auth[i])) return RP_REACH_AUTH;
    for (size_t i = 0; i < sizeof unreachable / sizeof *unreachable; i++)
        if (strstr(why, unreachable[i])) return RP_REACH_UNREACHABLE;
    return RP_REACH_ERROR;
}

static void rp_doc_open_init(rp_doctor_open *o) {
    o->read = RP_REACH_OK;
    o->n = 0;
    o->oldest_age_s = 0;
    o->example = NULL;
}

/* Adds one condition's row to o (its example kept in buf if the oldest). */
static void rp_doc_open_add(rp_doctor_open *o, int64_t n, int64_t age, const char *key,
                            char *buf, size_t cap) {
    if (n <= 0) return;
    if (o->n == 0 || age > o->oldest_age_s) {
        o->oldest_age_s = age;
        snprintf(buf, cap, "%s", key);
        o->example = buf;
    }
    o->n += n;
}

static void rp_doc_read_failed(rp_doctor_facts *f, rp_pg_doctor_keep *keep, PGresult *r,
                               PGconn *pg) {
    rp_pg_error_line(r ? PQresultErrorMessage(r) : PQerrorMessage(pg), keep->why,
                     sizeof keep->why);
    f->store_why = keep->why;
    rp_doctor_reach e = RP_REACH_ERROR;
    f->stalled.read = f->waiting_depth.read = f->wedged.read = f->divergent.read = e;
    f->remainders.read = f->gates.read = e;
}

void rp_pg_doctor_probe(const char *dsn, int connect_timeout_s, const rp_pg_session *s,
                        rp_pg_doctor_keep *keep, rp_doctor_facts *f) {
    memset(keep, 0, sizeof *keep);
    rp_pg_conn *c = rp_pg_conn_new(dsn, connect_timeout_s);
    if (c == NULL || rp_pg_conn_set_session(c, s) != RP_OK) {
        snprintf(keep->why, sizeof keep->why, "out of memory");
        f->store = RP_REACH_ERROR;
        f->store_why = keep->why;
        rp_pg_conn_free(c);
        return;
    }
    if (rp_pg_conn_ensure(c, keep->why, sizeof keep->why) != RP_OK) {
        f->store = rp_pg_doctor_reach(keep->why);
        f->store_why = keep->why;
        rp_pg_conn_free(c);
        return;
    }
    f->store = RP_REACH_OK;
    PGconn *pg = rp_pg_conn_handle(c);
    f->schema_known = rp_pg_schema_version_known();
    if (rp_pg_schema_version(pg, s->schema, &f->schema_version, keep->why, sizeof keep->why) !=
        RP_OK) {
        f->schema_read = RP_REACH_ERROR;
        f->store_why = keep->why;
        rp_pg_conn_free(c);
        return;
    }
    f->schema_read = RP_REACH_OK;
    if (f->schema_version < 1) {
        rp_pg_conn_free(c);
        return;
    }
    PGresult *r = PQexec(pg, "SELECT condition, count(*)::text, "
                             "coalesce(extract(epoch FROM now() - min(opened_at)), 0)::bigint::text, "
                             "(array_agg(key ORDER BY opened_at))[1] "
                             "FROM sighting GROUP BY condition");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rp_doc_read_failed(f, keep, r, pg);
        PQclear(r);
        rp_pg_conn_free(c);
        return;
    }
    rp_doc_open_init(&f->stalled);
    rp_doc_open_init(&f->waiting_depth);
    rp_doc_open_init(&f->wedged);
    rp_doc_open_init(&f->divergent);
    rp_doc_open_init(&f->remainders);
    for (int i = 0; i < PQntuples(r); i++) {
        const char *cond = PQgetvalue(r, i, 0), *key = PQgetvalue(r, i, 3);
        int64_t n = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        int64_t age = strtoll(PQgetvalue(r, i, 2), NULL, 10);
        if (strcmp(cond, "STALLED") == 0)
            rp_doc_open_add(&f->stalled, n, age, key, keep->stalled, sizeof keep->stalled);
        else if (strcmp(cond, "WAITING_DEPTH") == 0)
            rp_doc_open_add(&f->waiting_depth, n, age, key, keep->waiting_depth,
                            sizeof keep->waiting_depth);
        else if (strcmp(cond, "WEDGED") == 0)
            rp_doc_open_add(&f->wedged, n, age, key, keep->wedged, sizeof keep->wedged);
        else if (strcmp(cond, "DIVERGENT") == 0)
            rp_doc_open_add(&f->divergent, n, age, key, keep->divergent, sizeof keep->divergent);
        else
            rp_doc_open_add(&f->remainders, n, age, key, keep->remainders,
                            sizeof keep->remainders);
    }
    PQclear(r);
    r = PQexec(pg, "SELECT count(*)::text, "
                   "coalesce(extract(epoch FROM now() - min(created_at)), 0)::bigint::text "
                   "FROM gate WHERE answer IS NULL");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        rp_doc_read_failed(f, keep, r, pg);
    } else {
        rp_doc_open_init(&f->gates);
        f->gates.n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        f->gates.oldest_age_s = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    rp_pg_conn_free(c);
}

void rp_pg_doctor_probe_config(const rp_config *cfg, int timeout_ms, rp_pg_doctor_keep *keep,
                               rp_doctor_facts *f) {
    rp_pg_session s = {
        .schema = cfg->store.schema,
        .statement_timeout_ms = timeout_ms,
        .lock_timeout_ms = (int)cfg->store.lock_timeout_ms,
        .idle_in_transaction_timeout_ms = (int)cfg->store.idle_in_transaction_timeout_ms,
        .tcp_user_timeout_ms = (int)cfg->store.tcp_user_timeout_ms,
    };
    rp_pg_doctor_probe(cfg->store.dsn, timeout_ms / 1000, &s, keep, f);
}
