/*
 * The loop, read top to bottom: signals, the broker connection (its socket
 * and heartbeat timer), and the store thread's posts are all events on one
 * event_base. Nothing on this thread waits for the network: the AMQP login
 * and declarations run on a connect thread, PostgreSQL on the store thread.
 */
#include "daemon.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_conn.h"
#include "rp_log.h"
#include "rp_pg_conn.h"
#include "version.h"
#include "worker.h"

#define RP_STORE_CHECK_MS 2000
#define RP_HEARTBEAT_SECONDS 10

typedef struct rp_daemon {
    struct event_base *base;
    const rp_config *cfg;
    struct event *sig_term, *sig_int;
    rp_amqp_conn *amqp;
    rp_worker *store;
    rp_pg_conn *pg; /* touched only on the store thread */
    bool store_up_seen; /* store thread side: last reported state */
    unsigned store_checks, store_failures; /* store thread side */
    bool store_up;      /* loop side */
    bool broker_up;
    int exit_code;
} rp_daemon;

/* ---- the store thread ---------------------------------------------------- */

typedef struct rp_store_news {
    rp_daemon *d;
    bool up;
    char detail[300];
} rp_store_news;

static void rp_store_news_on_loop(void *job, bool cancelled) {
    rp_store_news *n = job;
    if (!cancelled) {
        n->d->store_up = n->up;
        if (n->up)
            RP_INFO("store connected", "store", n->detail, NULL);
        else
            RP_WARN("store unreachable; retrying", "reason", n->detail, NULL);
    }
    free(n);
}

/* Runs on the store thread every RP_STORE_CHECK_MS while idle: connects,
 * or checks the connection, and tells the loop when the state changes (and
 * every 30th failed attempt, so a long outage stays visible in the log). */
static void rp_store_idle(rp_worker *w, void *ctx) {
    rp_daemon *d = ctx;
    char err[256] = "";
    rp_status st = rp_pg_conn_is_up(d->pg) ? rp_pg_conn_ping(d->pg, err, sizeof err)
                                           : rp_pg_conn_ensure(d->pg, err, sizeof err);
    bool up = st == RP_OK;
    bool changed = up != d->store_up_seen || d->store_checks == 0;
    d->store_failures = up ? 0 : d->store_failures + 1;
    d->store_checks++;
    if (!changed && (up || d->store_failures % 30 != 0)) return;
    d->store_up_seen = up;
    rp_store_news *n = calloc(1, sizeof *n);
    if (n == NULL) return;
    n->d = d;
    n->up = up;
    if (up)
        snprintf(n->detail, sizeof n->detail, "%s (server %d)", rp_pg_conn_peer(d->pg),
                 rp_pg_conn_server_version(d->pg));
    else
        snprintf(n->detail, sizeof n->detail, "%s", err);
    if (rp_worker_post(w, rp_store_news_on_loop, n) != RP_OK) free(n);
}

/* The first check runs as a job, at once, rather than after an idle period. */
static void rp_store_check_now(void *ctx, void *job) {
    RP_UNUSED(job);
    rp_daemon *d = ctx;
    rp_store_idle(d->store, d);
}

/* ---- the broker ---------------------------------------------------------- */

static void rp_broker_on_state(void *arg, rp_amqp_state state, const char *why) {
    rp_daemon *d = arg;
    switch (state) {
    case RP_AMQP_UP:
        d->broker_up = true;
        RP_INFO("broker connected", "broker", why, NULL);
        break;
    case RP_AMQP_DOWN:
        d->broker_up = false;
        RP_WARN("broker unreachable; retrying", "broker", rp_amqp_conn_peer(d->amqp),
                "reason", why, NULL);
        break;
    case RP_AMQP_CONNECTING:
        RP_DEBUG("broker connecting", "broker", why, NULL);
        break;
    default:
        break;
    }
}

static void rp_broker_on_frame(void *arg, const amqp_frame_t *f) {
    RP_UNUSED(arg);
    if (f->frame_type == AMQP_FRAME_METHOD) {
        char id[16];
        snprintf(id, sizeof id, "0x%08x", f->payload.method.id);
        RP_DEBUG("broker frame not handled yet", "method", id, NULL);
    }
}

/* ---- signals ------------------------------------------------------------- */

static void rp_on_stop_signal(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(what);
    rp_daemon *d = arg;
    RP_INFO("stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
    event_base_loopexit(d->base, NULL);
}

int rp_daemon_run(const rp_config *cfg, const char *broker_password) {
    rp_daemon d;
    memset(&d, 0, sizeof d);
    d.cfg = cfg;
    d.exit_code = 1;

    if (evthread_use_pthreads() != 0) {
        RP_ERROR("cannot enable libevent threading", NULL);
        return 1;
    }
    d.base = event_base_new();
    if (d.base == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    d.sig_term = evsignal_new(d.base, SIGTERM, rp_on_stop_signal, &d);
    d.sig_int = evsignal_new(d.base, SIGINT, rp_on_stop_signal, &d);
    if (!d.sig_term || !d.sig_int || evsignal_add(d.sig_term, NULL) || evsignal_add(d.sig_int, NULL)) {
        RP_ERROR("cannot watch signals", NULL);
        goto out;
    }

    d.pg = rp_pg_conn_new(cfg->store.dsn, 5);
    if (d.pg == NULL) {
        RP_ERROR("out of memory", NULL);
        goto out;
    }
    d.store = rp_worker_new(d.base, "store", rp_store_idle, &d, RP_STORE_CHECK_MS);
    if (d.store == NULL) {
        RP_ERROR("cannot start the store thread", NULL);
        goto out;
    }

    rp_amqp_params ap = {
        .url = cfg->broker.url,
        .password = broker_password,
        .heartbeat_seconds = RP_HEARTBEAT_SECONDS,
        .connect_timeout_ms = 5000,
        .connection_name = "reaperd",
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
    rp_amqp_hooks hooks = {.on_state = rp_broker_on_state, .on_frame = rp_broker_on_frame, .arg = &d};
    const char *err = NULL;
    d.amqp = rp_amqp_conn_new(d.base, &ap, &hooks, &err);
    if (d.amqp == NULL) {
        RP_ERROR("cannot use the broker URL", "key", "broker.url", "reason", err, NULL);
        goto out;
    }
    if (rp_amqp_conn_start(d.amqp) != RP_OK) {
        RP_ERROR("cannot start the broker connection", NULL);
        goto out;
    }
    /* The first store check now rather than after one idle period. */
    if (rp_worker_submit(d.store, rp_store_check_now, NULL, NULL) != RP_OK) {
        RP_ERROR("cannot start the store check", NULL);
        goto out;
    }

    RP_INFO("reaperd started", "version", RP_VERSION_STRING, "broker", rp_amqp_conn_peer(d.amqp),
            "store_schema", cfg->store.schema, NULL);
    event_base_dispatch(d.base);
    d.exit_code = 0;
out:
    if (d.store) rp_worker_free(d.store);
    if (d.amqp) rp_amqp_conn_free(d.amqp);
    rp_pg_conn_free(d.pg);
    if (d.sig_term) event_free(d.sig_term);
    if (d.sig_int) event_free(d.sig_int);
    event_base_free(d.base);
    if (d.exit_code == 0) RP_INFO("reaperd stopped", NULL);
    return d.exit_code;
}
