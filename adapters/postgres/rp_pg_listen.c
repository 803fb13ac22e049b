/* The lease-deadline listener (rp_pg_listen.h): one non-blocking libpq
 * session driven by the loop. */
#include "rp_pg_listen.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_conn.h"
#include "rp_pg_hosts.h"

#define RP_LISTEN_RETRY_MIN_MS 1000
#define RP_LISTEN_RETRY_MAX_MS 30000

typedef enum rp_listen_state {
    RP_LISTEN_WAITING,    /* down; the retry timer runs */
    RP_LISTEN_CONNECTING, /* PQconnectPoll in progress */
    RP_LISTEN_FIND_TABLE, /* the job table's oid asked for */
    RP_LISTEN_LISTENING,  /* LISTEN sent */
    RP_LISTEN_UP,         /* hearing notifications */
} rp_listen_state;

struct rp_pg_listen {
    struct event_base *base;
    char *dsn, *schema;
    int tcp_user_timeout_ms;
    rp_pg_listen_hooks hooks;
    PGconn *conn;
    rp_listen_state state;
    struct event *io;    /* on the session's socket */
    int io_fd;
    short io_what;
    struct event *retry; /* the next connect */
    /* libpq's non-blocking connect ignores connect_timeout: the listener
     * keeps it (rp_pg_hosts.h). wait_s is the DSN's connect_timeout in
     * force (0: wait for ever, as libpq's blocking connect would); the
     * deadline runs from the start of each host's attempt, and again for
     * the two setup queries; first is the host the next connect starts at. */
    struct event *deadline;
    int wait_s;
    rp_pg_hosts hosts;
    size_t first;
    char at_host[256], at_port[32]; /* the host being tried */
    int backoff_ms;
    uint64_t heard;
    char channel[64];
    bool warned; /* a failure was logged since the session was last up */
};

static void rp_listen_connect(rp_pg_listen *l);

static void rp_listen_io_off(rp_pg_listen *l) {
    if (l->io) event_free(l->io);
    l->io = NULL;
    l->io_fd = -1;
    l->io_what = 0;
}

/* Drops the session and tries again later, saying why once per outage. */
static void rp_listen_fail(rp_pg_listen *l, const char *why) {
    char line[300];
    rp_pg_error_line(l->conn ? PQerrorMessage(l->conn) : "", line, sizeof line);
    if (!l->warned) {
        RP_WARN("lease deadlines: cannot listen; leases are reaped at the deadline last read "
                "from the table until the session is back",
                "reason", why, "detail", line[0] ? line : NULL, NULL);
        l->warned = true;
    }
    rp_listen_io_off(l);
    evtimer_del(l->deadline);
    if (l->conn) PQfinish(l->conn);
    l->conn = NULL;
    l->state = RP_LISTEN_WAITING;
    struct timeval tv = {l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000};
    evtimer_add(l->retry, &tv);
    l->backoff_ms = l->backoff_ms * 2 > RP_LISTEN_RETRY_MAX_MS ? RP_LISTEN_RETRY_MAX_MS
                                                               : l->backoff_ms * 2;
}

static void rp_listen_on_io(evutil_socket_t fd, short what, void *arg);

/* The deadline from now: wait_s seconds (none when 0). */
static void rp_listen_arm(rp_pg_listen *l) {
    evtimer_del(l->deadline);
    if (l->wait_s <= 0) return;
    struct timeval tv = {l->wait_s, 0};
    evtimer_add(l->deadline, &tv);
}

/* During the connect: a new host's attempt (libpq moved on) gets a whole
 * wait of its own, as with libpq's blocking connect. */
static void rp_listen_note_host(rp_pg_listen *l) {
    const char *h = PQhost(l->conn), *p = PQport(l->conn);
    h = h ? h : "";
    p = p ? p : "";
    if (strcmp(h, l->at_host) == 0 && strcmp(p, l->at_port) == 0) return;
    snprintf(l->at_host, sizeof l->at_host, "%s", h);
    snprintf(l->at_port, sizeof l->at_port, "%s", p);
    rp_listen_arm(l);
}

/* Watches the session's socket for what (EV_READ or EV_WRITE). */
static bool rp_listen_watch(rp_pg_listen *l, short what) {
    int fd = PQsocket(l->conn);
    if (fd < 0) return false;
    if (l->io && l->io_fd == fd && l->io_what == what) return true;
    rp_listen_io_off(l);
    l->io = event_new(l->base, fd, what | EV_PERSIST, rp_listen_on_io, l);
    if (l->io == NULL || event_add(l->io, NULL) != 0) return false;
    l->io_fd = fd;
    l->io_what = what;
    return true;
}

/* Reads whatever the session has; false when it broke. */
static bool rp_listen_consume(rp_pg_listen *l) {
    return PQconsumeInput(l->conn) == 1;
}

/* Drains the results of the query in flight; *done when all are read. The
 * first non-OK result fails the step. */
static bool rp_listen_results(rp_pg_listen *l, ExecStatusType want, PGresult **keep, bool *done) {
    *done = false;
    while (!PQisBusy(l->conn)) {
        PGresult *r = PQgetResult(l->conn);
        if (r == NULL) {
            *done = true;
            return true;
        }
        bool ok = PQresultStatus(r) == want;
        if (ok && keep && *keep == NULL) {
            *keep = r;
        } else {
            PQclear(r);
        }
        if (!ok) return false;
    }
    return true;
}

static void rp_listen_hear(rp_pg_listen *l) {
    PGnotify *n;
    while ((n = PQnotifies(l->conn)) != NULL) {
        if (n->relname && strcmp(n->relname, l->channel) == 0 && n->extra) {
            char *end = NULL;
            errno = 0;
            long long at = strtoll(n->extra, &end, 10);
            if (errno == 0 && end != n->extra && *end == '\0' && at > 0) {
                l->heard++;
                if (l->hooks.on_deadline) l->hooks.on_deadline(l->hooks.arg, (int64_t)at);
            }
        }
        PQfreemem(n);
    }
}

/* Sends what libpq still holds of a query; watches the socket for reading,
 * and for writing too while something is left. False when it broke. */
static bool rp_listen_flush(rp_pg_listen *l) {
    int f = PQflush(l->conn);
    if (f < 0) return false;
    return rp_listen_watch(l, f == 1 ? (short)(EV_READ | EV_WRITE) : EV_READ);
}

static void rp_listen_step(rp_pg_listen *l) {
    if ((l->state == RP_LISTEN_FIND_TABLE || l->state == RP_LISTEN_LISTENING) &&
        !rp_listen_flush(l)) {
        rp_listen_fail(l, "session lost");
        return;
    }
    switch (l->state) {
    case RP_LISTEN_CONNECTING: {
        PostgresPollingStatusType p = PQconnectPoll(l->conn);
        if (p == PGRES_POLLING_FAILED) {
            rp_listen_fail(l, "connect failed");
            return;
        }
        if (p == PGRES_POLLING_READING || p == PGRES_POLLING_WRITING) {
            /* Watched afresh at every step: with several hosts (or
             * addresses) libpq closes the socket of one it gave up on (a
             * refusal that came after the non-blocking connect started, as
             * from a primary that is gone; a read-only server under
             * target_session_attrs=read-write) and opens the next, usually
             * under the SAME descriptor number, waiting for the same event.
             * The kernel dropped the old socket from the loop's poll set
             * when it was closed; an event kept because number and event
             * matched would never fire, and the session would wait for ever
             * (test_reaperd_pg_failover). */
            rp_listen_io_off(l);
            if (!rp_listen_watch(l, p == PGRES_POLLING_READING ? EV_READ : EV_WRITE))
                rp_listen_fail(l, "cannot watch the session's socket");
            else rp_listen_note_host(l);
            return;
        }
        /* PGRES_POLLING_OK: find the job table (the two setup queries get
         * one wait together). */
        rp_listen_arm(l);
        PQsetnonblocking(l->conn, 1);
        const char *vals[] = {l->schema};
        if (!PQsendQueryParams(l->conn,
                               "SELECT c.oid FROM pg_catalog.pg_class c JOIN "
                               "pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                               "WHERE n.nspname = $1 AND c.relname = 'job'",
                               1, NULL, vals, NULL, NULL, 0)) {
            rp_listen_fail(l, "cannot ask for the job table");
            return;
        }
        l->state = RP_LISTEN_FIND_TABLE;
        if (!rp_listen_flush(l)) rp_listen_fail(l, "session lost");
        return;
    }
    case RP_LISTEN_FIND_TABLE: {
        if (!rp_listen_consume(l)) {
            rp_listen_fail(l, "session lost");
            return;
        }
        PGresult *r = NULL;
        bool done = false;
        bool ok = rp_listen_results(l, PGRES_TUPLES_OK, &r, &done);
        if (!ok || !done) {
            PQclear(r);
            if (!ok) rp_listen_fail(l, "looking for the job table failed");
            return;
        }
        if (r == NULL || PQntuples(r) != 1) {
            PQclear(r);
            rp_listen_fail(l, "no job table in the schema yet (run reaperd --migrate)");
            return;
        }
        snprintf(l->channel, sizeof l->channel, "reaper_lease_%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        /* The channel is "reaper_lease_" and digits: no quoting is needed,
         * and quoting keeps its case as the trigger wrote it. */
        char sql[96];
        snprintf(sql, sizeof sql, "LISTEN \"%s\"", l->channel);
        if (!PQsendQuery(l->conn, sql)) {
            rp_listen_fail(l, "cannot send LISTEN");
            return;
        }
        l->state = RP_LISTEN_LISTENING;
        if (!rp_listen_flush(l)) rp_listen_fail(l, "session lost");
        return;
    }
    case RP_LISTEN_LISTENING: {
        if (!rp_listen_consume(l)) {
            rp_listen_fail(l, "session lost");
            return;
        }
        bool done = false;
        if (!rp_listen_results(l, PGRES_COMMAND_OK, NULL, &done)) {
            rp_listen_fail(l, "LISTEN failed");
            return;
        }
        if (!done) return;
        evtimer_del(l->deadline);
        l->state = RP_LISTEN_UP;
        l->backoff_ms = RP_LISTEN_RETRY_MIN_MS;
        if (l->warned) RP_INFO("lease deadlines: listening again", "channel", l->channel, NULL);
        else RP_DEBUG("lease deadlines: listening", "channel", l->channel, NULL);
        l->warned = false;
        rp_listen_hear(l);
        if (l->hooks.on_up) l->hooks.on_up(l->hooks.arg);
        return;
    }
    case RP_LISTEN_UP:
        if (!rp_listen_consume(l)) {
            rp_listen_fail(l, "session lost");
            return;
        }
        rp_listen_hear(l);
        return;
    case RP_LISTEN_WAITING:
    default:
        return;
    }
}

static void rp_listen_on_io(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_listen_step(arg);
}

static void rp_listen_on_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_listen_connect(arg);
}

/* The DSN's connect_timeout in force on conn, as libpq's blocking connect
 * reads it: 0 or less waits for ever, and under 2 s is 2 s. */
static int rp_listen_wait_of(PGconn *conn) {
    int s = 0;
    PQconninfoOption *opts = PQconninfo(conn);
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val) s = atoi(o->val);
    PQconninfoFree(opts);
    return s <= 0 ? 0 : s < 2 ? 2 : s;
}

static void rp_listen_on_deadline(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_pg_listen *l = arg;
    char why[400];
    if (l->state == RP_LISTEN_CONNECTING) {
        /* The next connect starts at the host after this one. */
        size_t i = rp_pg_hosts_find(&l->hosts, l->at_host, l->at_port);
        l->first = ((i < l->hosts.n ? i : l->first) + 1) % l->hosts.n;
        snprintf(why, sizeof why, "no answer from %s port %s within connect_timeout (%d s)",
                 l->at_host[0] ? l->at_host : "the server", l->at_port[0] ? l->at_port : "-",
                 l->wait_s);
    } else {
        snprintf(why, sizeof why, "no answer to the setup queries within connect_timeout (%d s)",
                 l->wait_s);
    }
    rp_listen_fail(l, why);
}

static void rp_listen_connect(rp_pg_listen *l) {
    /* Our defaults first, the operator's DSN after them (libpq keeps the
     * last value: anything the DSN sets wins, as for the store's sessions,
     * rp_pg_conn.c), then the host lists rotated when an earlier connect
     * gave up on a host. keepalives and the user timeout bound how long a
     * black-holed server goes unnoticed (the notifications are the only
     * traffic). */
    char user_timeout[16];
    snprintf(user_timeout, sizeof user_timeout, "%d",
             l->tcp_user_timeout_ms > 0 ? l->tcp_user_timeout_ms : 0);
    char *host = NULL, *hostaddr = NULL, *port = NULL;
    if (l->first > 0 && rp_pg_hosts_rotated(&l->hosts, l->first, &host, &hostaddr, &port) != RP_OK) {
        rp_listen_fail(l, "out of memory");
        return;
    }
    const char *keys[12] = {"connect_timeout", "keepalives", "keepalives_idle",
                            "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                            "application_name", "dbname"};
    const char *vals[12] = {"10", "1", "30", "10", "3", user_timeout, "reaperd-lease-listen",
                            l->dsn};
    size_t n = 8;
    if (host) keys[n] = "host", vals[n++] = host;
    if (hostaddr) keys[n] = "hostaddr", vals[n++] = hostaddr;
    if (port) keys[n] = "port", vals[n++] = port;
    keys[n] = vals[n] = NULL;
    l->conn = PQconnectStartParams(keys, vals, 1);
    free(host);
    free(hostaddr);
    free(port);
    if (l->conn == NULL || PQstatus(l->conn) == CONNECTION_BAD) {
        rp_listen_fail(l, "cannot start a connection");
        return;
    }
    l->state = RP_LISTEN_CONNECTING;
    l->wait_s = rp_listen_wait_of(l->conn);
    l->at_host[0] = l->at_port[0] = '\0';
    rp_listen_note_host(l);
    /* libpq: after PQconnectStart, wait for the socket to be writable. */
    if (!rp_listen_watch(l, EV_WRITE)) rp_listen_fail(l, "cannot watch the session's socket");
}

rp_pg_listen *rp_pg_listen_new(struct event_base *base, const char *dsn, const char *schema,
                               int tcp_user_timeout_ms, const rp_pg_listen_hooks *hooks) {
    rp_pg_listen *l = calloc(1, sizeof *l);
    if (l == NULL) return NULL;
    l->base = base;
    l->dsn = strdup(dsn ? dsn : "");
    l->schema = strdup(schema ? schema : "");
    l->tcp_user_timeout_ms = tcp_user_timeout_ms;
    if (hooks) l->hooks = *hooks;
    l->io_fd = -1;
    l->backoff_ms = RP_LISTEN_RETRY_MIN_MS;
    l->retry = evtimer_new(base, rp_listen_on_retry, l);
    l->deadline = evtimer_new(base, rp_listen_on_deadline, l);
    /* A DSN libpq cannot parse keeps one host: the connect says why. */
    if (l->dsn && rp_pg_hosts_parse(l->dsn, &l->hosts) == RP_ERR_NOMEM) l->hosts.n = 0;
    else if (l->hosts.n == 0) l->hosts.n = 1;
    if (l->dsn == NULL || l->schema == NULL || l->retry == NULL || l->deadline == NULL ||
        l->hosts.n == 0) {
        rp_pg_listen_free(l);
        return NULL;
    }
    /* Started from the loop, so that no hook runs inside this call. */
    l->state = RP_LISTEN_WAITING;
    struct timeval now = {0, 0};
    evtimer_add(l->retry, &now);
    return l;
}

void rp_pg_listen_free(rp_pg_listen *l) {
    if (l == NULL) return;
    rp_listen_io_off(l);
    if (l->retry) event_free(l->retry);
    if (l->deadline) event_free(l->deadline);
    rp_pg_hosts_cleanup(&l->hosts);
    if (l->conn) PQfinish(l->conn);
    free(l->dsn);
    free(l->schema);
    free(l);
}

bool rp_pg_listen_is_up(const rp_pg_listen *l) { return l != NULL && l->state == RP_LISTEN_UP; }

uint64_t rp_pg_listen_heard(const rp_pg_listen *l) { return l ? l->heard : 0; }

/* ---- the sweeper's lease-listen port ------------------------------------------- */

static void *rp_pgl_open(void *self, const rp_lease_listen_hooks *h) {
    rp_pg_listen_src *src = self;
    rp_pg_listen_hooks lh = {.on_deadline = h->on_deadline, .on_up = h->on_up, .arg = h->arg};
    return rp_pg_listen_new(src->base, (*src->cfg)->store.dsn, (*src->cfg)->store.schema,
                            (int)(*src->cfg)->store.tcp_user_timeout_ms, &lh);
}

static void rp_pgl_close(void *self, void *listener) {
    RP_UNUSED(self);
    rp_pg_listen_free(listener);
}

void rp_pg_listen_port(rp_pg_listen_src *src, rp_lease_listen_port *out) {
    *out = (rp_lease_listen_port){.self = src, .open = rp_pgl_open, .close = rp_pgl_close};
}
