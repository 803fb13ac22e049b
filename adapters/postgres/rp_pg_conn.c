#include "rp_pg_conn.h"

#include "rp_clock.h"
#include "rp_log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

struct rp_pg_conn {
    char *dsn;
    int connect_timeout_s;
    PGconn *conn;
    unsigned long generation; /* successful connects so far */
    char peer[300];
    rp_pg_session session; /* session.schema is owned (or NULL) */
    /* For rp_pg_conn_cancel from another thread: made at connect, freed at
     * drop, under mu. */
    pthread_mutex_t mu;
    PGcancel *cancel;
    /* The WARNINGs of rp_pg_conn_sync_warnings: counted by the notice
     * receiver, in the thread that calls libpq on conn. */
    unsigned long sync_warnings;
};

rp_pg_conn *rp_pg_conn_new(const char *dsn, int connect_timeout_s) {
    rp_pg_conn *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->dsn = strdup(dsn ? dsn : "");
    if (c->dsn == NULL) {
        free(c);
        return NULL;
    }
    c->connect_timeout_s = connect_timeout_s > 0 ? connect_timeout_s : 5;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void rp_pg_conn_free(rp_pg_conn *c) {
    if (c == NULL) return;
    if (c->cancel) PQfreeCancel(c->cancel);
    if (c->conn) PQfinish(c->conn);
    pthread_mutex_destroy(&c->mu);
    free((char *)c->session.schema);
    free(c->dsn);
    free(c);
}

rp_status rp_pg_conn_set_session(rp_pg_conn *c, const rp_pg_session *s) {
    char *schema = NULL;
    if (s->schema != NULL && s->schema[0] != '\0' && (schema = strdup(s->schema)) == NULL)
        return RP_ERR_NOMEM;
    free((char *)c->session.schema);
    c->session = *s;
    c->session.schema = schema;
    return RP_OK;
}

const char *rp_pg_dsn_leak(const char *dsn) {
    char *errmsg = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn ? dsn : "", &errmsg);
    if (opts == NULL) {
        /* libpq's message may quote part of the string: not repeated. */
        if (errmsg != NULL) PQfreemem(errmsg);
        return "libpq cannot parse it (it is not shown, since it could hold a password): "
               "write keyword=value pairs or a postgresql:// URI";
    }
    const char *why = NULL;
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val == NULL) continue;
        if (strcmp(o->keyword, "password") == 0 || strcmp(o->keyword, "sslpassword") == 0) {
            why = "the DSN carries a password (libpq reads one in it): remove it; give "
                  "libpq the password through PGPASSWORD or a passfile (~/.pgpass, or "
                  "passfile=... in the DSN)";
            break;
        }
    }
    PQconninfoFree(opts);
    return why;
}

void rp_pg_error_line(const char *msg, char *err, size_t errlen) {
    if (errlen == 0) return;
    if (msg == NULL || *msg == '\0') msg = "unknown error";
    /* libpq messages end with a newline and may span lines: line one is
     * kept, and of the others only each further host's own failure (a
     * multi-host DSN: "connection to server at ... failed: ..." per host
     * tried), joined with "; ", so that the line names every host and why
     * it was refused; hints ("Is the server running ...?") are left out. */
    size_t at = 0;
    err[0] = '\0';
    for (const char *line = msg; *line != '\0';) {
        size_t len = strcspn(line, "\r\n");
        bool keep = line == msg || strncmp(line, "connection to server", 20) == 0;
        if (keep && len > 0 && at + 1 < errlen) {
            int w = snprintf(err + at, errlen - at, "%s%.*s", at > 0 ? "; " : "", (int)len, line);
            at = w < 0 ? at : at + (size_t)w;
            if (at >= errlen) at = errlen - 1;
        }
        line += len;
        while (*line == '\r' || *line == '\n') line++;
    }
}

/* The server routine that raises the WARNING of a commit whose wait for a
 * synchronous standby was cut short (src/backend/replication/syncrep.c,
 * the same name since PostgreSQL 9.1). */
#define RP_PG_SYNCREP_ROUTINE "SyncRepWaitForLSN"

/* Server notices ("schema already exists, skipping") are debug lines, not
 * stray text on standard error; the WARNINGs of a cut-short wait for a
 * synchronous standby are counted too (rp_pg_conn_sync_warnings). */
static void rp_pg_on_notice(void *arg, const PGresult *r) {
    rp_pg_conn *c = arg;
    const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *fn = PQresultErrorField(r, PG_DIAG_SOURCE_FUNCTION);
    if (sev != NULL && strcmp(sev, "WARNING") == 0 &&
        (fn == NULL || strcmp(fn, RP_PG_SYNCREP_ROUTINE) == 0))
        c->sync_warnings++;
    char line[512];
    rp_pg_error_line(PQresultErrorMessage(r), line, sizeof line);
    RP_DEBUG("store notice", "notice", line, NULL);
}

static void rp_pg_drop(rp_pg_conn *c) {
    pthread_mutex_lock(&c->mu);
    if (c->cancel) PQfreeCancel(c->cancel);
    c->cancel = NULL;
    pthread_mutex_unlock(&c->mu);
    if (c->conn) PQfinish(c->conn);
    c->conn = NULL;
    c->peer[0] = '\0';
}

/* Sets the session's settings (rp_pg_session) in one round trip. */
static rp_status rp_pg_apply_session(rp_pg_conn *c, char *err, size_t errlen) {
    char path[160] = "";
    if (c->session.schema != NULL) {
        char *q = PQescapeIdentifier(c->conn, c->session.schema, strlen(c->session.schema));
        if (q == NULL) {
            rp_pg_error_line(PQerrorMessage(c->conn), err, errlen);
            return RP_ERR_UNAVAILABLE;
        }
        snprintf(path, sizeof path, "SET search_path TO pg_catalog, %s; ", q);
        PQfreemem(q);
    }
    char sql[512];
    snprintf(sql, sizeof sql,
             "%sSET synchronous_commit TO on; SET statement_timeout TO %d; "
             "SET lock_timeout TO %d; SET idle_in_transaction_session_timeout TO %d",
             path, c->session.statement_timeout_ms, c->session.lock_timeout_ms,
             c->session.idle_in_transaction_timeout_ms);
    PGresult *r = PQexec(c->conn, sql);
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) rp_pg_error_line(PQerrorMessage(c->conn), err, errlen);
    PQclear(r);
    return ok ? RP_OK : RP_ERR_UNAVAILABLE;
}

rp_status rp_pg_conn_ensure(rp_pg_conn *c, char *err, size_t errlen) {
    if (c->conn && PQstatus(c->conn) == CONNECTION_OK) return RP_OK;
    rp_pg_drop(c);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", c->connect_timeout_s);
    /* Our defaults first, the operator's DSN last: libpq processes the
     * keywords in order, the expanded DSN as if it stood there, and keeps
     * the last value, so anything the DSN sets wins. */
    char user_timeout[16];
    snprintf(user_timeout, sizeof user_timeout, "%d",
             c->session.tcp_user_timeout_ms > 0 ? c->session.tcp_user_timeout_ms : 0);
    const char *keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                          "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                          "application_name", "dbname", NULL};
    const char *vals[] = {timeout, "1", "10", "5", "3", user_timeout, "reaperd", c->dsn, NULL};
    c->conn = PQconnectdbParams(keys, vals, 1);
    if (c->conn == NULL) {
        snprintf(err, errlen, "out of memory");
        return RP_ERR_UNAVAILABLE;
    }
    if (PQstatus(c->conn) != CONNECTION_OK) {
        rp_pg_error_line(PQerrorMessage(c->conn), err, errlen);
        rp_pg_drop(c);
        return RP_ERR_UNAVAILABLE;
    }
    PQsetNoticeReceiver(c->conn, rp_pg_on_notice, c);
    if (rp_pg_apply_session(c, err, errlen) != RP_OK) {
        rp_pg_drop(c);
        return RP_ERR_UNAVAILABLE;
    }
    PGcancel *cancel = PQgetCancel(c->conn);
    pthread_mutex_lock(&c->mu);
    c->cancel = cancel;
    pthread_mutex_unlock(&c->mu);
    c->generation++;
    snprintf(c->peer, sizeof c->peer, "%s:%s/%s", PQhost(c->conn), PQport(c->conn),
             PQdb(c->conn));
    return RP_OK;
}

/* Waits until the socket is ready for events or the deadline passes.
 * True when ready. */
static bool rp_pg_wait(PGconn *pg, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - rp_clock_mono_ms();
        if (left <= 0) return false;
        struct pollfd p = {.fd = PQsocket(pg), .events = events};
        if (p.fd < 0) return false;
        int n = poll(&p, 1, (int)left);
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

rp_status rp_pg_conn_ping(rp_pg_conn *c, char *err, size_t errlen) {
    if (c->conn == NULL) {
        snprintf(err, errlen, "not connected");
        return RP_ERR_UNAVAILABLE;
    }
    /* Sent and read without blocking past the deadline: a server that
     * stopped answering (a black hole, no RST) must not hold the store
     * thread until TCP gives up. */
    int64_t deadline = rp_clock_mono_ms() + (int64_t)c->connect_timeout_s * 1000;
    bool ok = PQsendQuery(c->conn, "SELECT 1") == 1;
    if (!ok) rp_pg_error_line(PQerrorMessage(c->conn), err, errlen);
    bool timed_out = false;
    if (ok && PQsetnonblocking(c->conn, 1) == 0) {
        int f = 0;
        while (ok && (f = PQflush(c->conn)) == 1)
            if (!rp_pg_wait(c->conn, POLLOUT, deadline)) ok = false, timed_out = true;
        if (ok && f < 0) ok = false;
        while (ok && PQisBusy(c->conn)) {
            if (!rp_pg_wait(c->conn, POLLIN, deadline))
                ok = false, timed_out = true;
            else if (PQconsumeInput(c->conn) == 0)
                ok = false;
        }
        if (PQsetnonblocking(c->conn, 0) != 0) ok = false;
    }
    if (timed_out)
        snprintf(err, errlen, "no answer to a ping within %d s", c->connect_timeout_s);
    else if (!ok)
        rp_pg_error_line(PQerrorMessage(c->conn), err, errlen);
    if (ok) {
        PGresult *r;
        while ((r = PQgetResult(c->conn)) != NULL) {
            if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                if (ok) rp_pg_error_line(PQresultErrorMessage(r), err, errlen);
                ok = false;
            }
            PQclear(r);
        }
    }
    if (!ok || PQstatus(c->conn) != CONNECTION_OK) {
        rp_pg_drop(c);
        return RP_ERR_UNAVAILABLE;
    }
    return RP_OK;
}

void rp_pg_conn_close(rp_pg_conn *c) { rp_pg_drop(c); }

bool rp_pg_conn_cancel(rp_pg_conn *c) {
    char err[256];
    bool sent = false;
    pthread_mutex_lock(&c->mu);
    if (c->cancel) sent = PQcancel(c->cancel, err, sizeof err) == 1;
    pthread_mutex_unlock(&c->mu);
    return sent;
}

unsigned long rp_pg_conn_generation(const rp_pg_conn *c) { return c->generation; }

unsigned long rp_pg_conn_sync_warnings(const rp_pg_conn *c) { return c->sync_warnings; }

bool rp_pg_conn_is_up(const rp_pg_conn *c) {
    return c->conn && PQstatus(c->conn) == CONNECTION_OK;
}

PGconn *rp_pg_conn_handle(rp_pg_conn *c) { return c->conn; }
const char *rp_pg_conn_peer(const rp_pg_conn *c) { return c->peer; }
int rp_pg_conn_server_version(const rp_pg_conn *c) {
    return c->conn ? PQserverVersion(c->conn) : 0;
}

rp_pg_conn *rp_pg_conn_from_config(const rp_config *cfg, int connect_timeout_s) {
    rp_pg_conn *c = rp_pg_conn_new(cfg->store.dsn, connect_timeout_s);
    rp_pg_session s = {
        .schema = cfg->store.schema,
        .statement_timeout_ms = (int)cfg->store.statement_timeout_ms,
        .lock_timeout_ms = (int)cfg->store.lock_timeout_ms,
        .idle_in_transaction_timeout_ms = (int)cfg->store.idle_in_transaction_timeout_ms,
        .tcp_user_timeout_ms = (int)cfg->store.tcp_user_timeout_ms,
    };
    if (c != NULL && rp_pg_conn_set_session(c, &s) != RP_OK) {
        rp_pg_conn_free(c);
        c = NULL;
    }
    return c;
}

bool rp_pg_conn_probe(rp_pg_conn *c, bool check, char *detail, size_t cap) {
    bool up = rp_pg_conn_is_up(c);
    if (check)
        up = (up ? rp_pg_conn_ping(c, detail, cap) : rp_pg_conn_ensure(c, detail, cap)) == RP_OK;
    if (up)
        snprintf(detail, cap, "%s (server %d)", rp_pg_conn_peer(c), rp_pg_conn_server_version(c));
    return up;
}
