#include "rp_pg_conn.h"

#include "rp_log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rp_pg_conn {
    char *dsn;
    int connect_timeout_s;
    PGconn *conn;
    unsigned long generation; /* successful connects so far */
    char peer[300];
    /* For rp_pg_conn_cancel from another thread: made at connect, freed at
     * drop, under mu. */
    pthread_mutex_t mu;
    PGcancel *cancel;
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
    free(c->dsn);
    free(c);
}

void rp_pg_error_line(const char *msg, char *err, size_t errlen) {
    if (errlen == 0) return;
    snprintf(err, errlen, "%s", msg && *msg ? msg : "unknown error");
    /* libpq messages end with a newline and may span lines: keep line one. */
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r') {
            *p = '\0';
            break;
        }
}

/* Server notices ("schema already exists, skipping") are debug lines, not
 * stray text on standard error. */
static void rp_pg_on_notice(void *arg, const char *message) {
    RP_UNUSED(arg);
    char line[512];
    rp_pg_error_line(message, line, sizeof line);
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

rp_status rp_pg_conn_ensure(rp_pg_conn *c, char *err, size_t errlen) {
    if (c->conn && PQstatus(c->conn) == CONNECTION_OK) return RP_OK;
    rp_pg_drop(c);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", c->connect_timeout_s);
    /* Our defaults first, the operator's DSN last: libpq processes the
     * keywords in order, the expanded DSN as if it stood there, and keeps
     * the last value, so anything the DSN sets wins. */
    const char *keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                          "keepalives_interval", "keepalives_count", "application_name",
                          "dbname", NULL};
    const char *vals[] = {timeout, "1", "10", "5", "3", "reaperd", c->dsn, NULL};
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
    PQsetNoticeProcessor(c->conn, rp_pg_on_notice, NULL);
    PGcancel *cancel = PQgetCancel(c->conn);
    pthread_mutex_lock(&c->mu);
    c->cancel = cancel;
    pthread_mutex_unlock(&c->mu);
    c->generation++;
    snprintf(c->peer, sizeof c->peer, "%s:%s/%s", PQhost(c->conn), PQport(c->conn),
             PQdb(c->conn));
    return RP_OK;
}

rp_status rp_pg_conn_ping(rp_pg_conn *c, char *err, size_t errlen) {
    if (c->conn == NULL) {
        snprintf(err, errlen, "not connected");
        return RP_ERR_UNAVAILABLE;
    }
    PGresult *r = PQexec(c->conn, "SELECT 1");
    bool ok = r && PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) rp_pg_error_line(PQerrorMessage(c->conn), err, errlen);
    PQclear(r);
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

bool rp_pg_conn_is_up(const rp_pg_conn *c) {
    return c->conn && PQstatus(c->conn) == CONNECTION_OK;
}

PGconn *rp_pg_conn_handle(rp_pg_conn *c) { return c->conn; }
const char *rp_pg_conn_peer(const rp_pg_conn *c) { return c->peer; }
int rp_pg_conn_server_version(const rp_pg_conn *c) {
    return c->conn ? PQserverVersion(c->conn) : 0;
}
