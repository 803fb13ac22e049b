/*
 * The dead-letter tap's backends (tap_ports.h): the adapters behind the
 * tap part's ports (core/rp_tap_port.h).
 */
#include "tap_ports.h"

#include <stdlib.h>
#include <string.h>

#include "pass_runner.h"
#include "rp_amqp_restore.h"
#include "rp_amqp_table.h"
#include "rp_amqp_tap.h"
#include "rp_log.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_dlx.h"
#include "rp_pg_park_batch.h"
#include "rp_pg_store.h"
#include "rp_tap_rules.h"

struct rp_tap_ports {
    struct event_base *base;
    const rp_config *const *cfg;
    rp_amqp_tap *amqp;            /* made at the connect */
    const rp_amqp_params *params; /* during rp_tap_ports_connect only */
    rp_tap_consumer_hooks hooks;  /* the part's */
    rp_pg_park_sessions *sessions;
    rp_mgmt_broker *bind_broker;  /* NULL: no management API */
    rp_tap_bind_port bind;
};

static const rp_config *rp_tap_ports_cfg(const rp_tap_ports *p) { return *p->cfg; }

/* ---- items (the part frees them through these; no connection needed) ------- */

static void rp_tap_item_drop(void *ctx, rp_tap_item *it) {
    RP_UNUSED(ctx);
    rp_amqp_tap_item_free((rp_amqp_tap_item *)it);
}

static size_t rp_tap_item_shed(void *ctx, rp_tap_item *it) {
    RP_UNUSED(ctx);
    return rp_amqp_tap_item_shed((rp_amqp_tap_item *)it);
}

/* ---- the tap's thread: how a delivery is read (core's examiner) ------------- */

/* What the examiner keeps for one delivery. */
typedef struct rp_tap_own {
    rp_amqp_dl_model m;
    char *headers, *props;
    rp_pg_dl_handle h;
} rp_tap_own;

static rp_status rp_tap_inspect(void *ctx, rp_tap_item *base, rp_tap_prep *p, bool *death) {
    RP_UNUSED(ctx);
    rp_amqp_tap_item *it = (rp_amqp_tap_item *)base;
    rp_tap_own *o = calloc(1, sizeof *o);
    if (o == NULL) return RP_ERR_NOMEM;
    p->own = o;
    rp_status st = rp_amqp_dl_model_init(&o->m, &it->props);
    if (st != RP_OK) return st;
    *death = rp_amqp_dl_model_is_dead_letter(&o->m);
    return RP_OK;
}

static rp_status rp_tap_capture(void *ctx, rp_tap_item *base, rp_tap_prep *p) {
    const rp_tap_ports *tp = ctx;
    rp_amqp_tap_item *it = (rp_amqp_tap_item *)base;
    rp_tap_own *o = p->own;
    /* The one stored form, the one replay reads back (rp_amqp_restore.h).
     * A header name that is not text cannot be stored losslessly: parked
     * without its JSON and marked so that it is never replayed, as the
     * backfill does (peek_port.c). */
    rp_status st = rp_amqp_restore_capture(&it->props, &o->props, &o->headers);
    if (st == RP_ERR_NOMEM) return st;
    bool lossless = st == RP_OK;
    /* Kept without its headers, or with more x-death entries than were
     * parsed: the stored properties say so (rp_amqp_restore.h's note), and
     * a replay answers with that reason. */
    if (lossless) {
        size_t entries = rp_tap_death_entries(o->m.headers.n_x_death, o->m.x_death_unparsed);
        st = rp_amqp_restore_note_kept(&o->props, it->headers_dropped,
                                       (size_t)rp_tap_ports_cfg(tp)->broker.tap_header_cap_bytes,
                                       entries);
        if (st != RP_OK) return st;
    }
    o->h = (rp_pg_dl_handle){o->headers, o->props};
    p->msg = (rp_dl_message){
        .headers = o->m.headers,
        .body = {it->body, it->body_len},
        .body_truncated = rp_tap_stored_partial(it->truncated, lossless, it->headers_dropped),
        .handle = &o->h,
    };
    /* Headers and properties too: they travel with the body, in this
     * thread's parameters and in libpq's send buffer. */
    p->bytes = (o->headers ? strlen(o->headers) : 0) + (o->props ? strlen(o->props) : 0);
    return RP_OK;
}

static void rp_tap_release(void *ctx, rp_tap_prep *p) {
    RP_UNUSED(ctx);
    rp_tap_own *o = p->own;
    if (o == NULL) return;
    rp_amqp_dl_model_cleanup(&o->m);
    free(o->headers);
    free(o->props);
    free(o);
}

/* ---- the consumer: the connection's hooks, passed on to the part ------------- */

static void rp_tap_c_on_up(void *arg) {
    rp_tap_ports *p = arg;
    p->hooks.on_up(p->hooks.arg);
}

static void rp_tap_c_on_down(void *arg) {
    rp_tap_ports *p = arg;
    p->hooks.on_down(p->hooks.arg);
}

static bool rp_tap_c_returning(void *arg) {
    rp_tap_ports *p = arg;
    return p->hooks.returning(p->hooks.arg);
}

static void rp_tap_c_on_returned(void *arg) {
    rp_tap_ports *p = arg;
    p->hooks.on_returned(p->hooks.arg);
}

static void rp_tap_c_on_item(void *arg, rp_amqp_tap_item *it) {
    rp_tap_ports *p = arg;
    p->hooks.on_item(p->hooks.arg, &it->base);
}

static bool rp_tap_c_stopping(void *arg) {
    rp_tap_ports *p = arg;
    return p->hooks.stopping(p->hooks.arg);
}

static rp_status rp_tap_c_start(void *self, const rp_tap_consumer_hooks *hooks) {
    rp_tap_ports *p = self;
    if (p->params == NULL || p->amqp != NULL) return RP_ERR_INTERNAL;
    p->hooks = *hooks;
    rp_amqp_tap_hooks h = {
        .arg = p,
        .on_up = rp_tap_c_on_up,
        .on_down = rp_tap_c_on_down,
        .returning = rp_tap_c_returning,
        .on_returned = rp_tap_c_on_returned,
        .on_item = rp_tap_c_on_item,
        .stopping = rp_tap_c_stopping,
    };
    const rp_config *cfg = rp_tap_ports_cfg(p);
    const char *err = NULL;
    p->amqp = rp_amqp_tap_new(p->base, p->params, cfg->broker.tap_queue, RP_PG_DL_BODY_MAX,
                              (size_t)cfg->broker.tap_header_cap_bytes, &h, &err);
    if (p->amqp == NULL) {
        RP_ERROR("cannot make the tap's broker connection", "reason", err, NULL);
        return RP_ERR_CONFIG;
    }
    return rp_amqp_tap_start(p->amqp);
}

static bool rp_tap_c_ack(void *self, uint64_t tag, bool multiple) {
    return rp_amqp_tap_ack(((rp_tap_ports *)self)->amqp, tag, multiple);
}

static bool rp_tap_c_cancel(void *self, const char *tag) {
    return rp_amqp_tap_cancel(((rp_tap_ports *)self)->amqp, tag);
}

static bool rp_tap_c_consume(void *self, const char *tag) {
    return rp_amqp_tap_consume(((rp_tap_ports *)self)->amqp, tag);
}

/* ---- the store ------------------------------------------------------------------ */

static void rp_tap_s_cancel(void *self) {
    rp_pg_park_sessions_cancel(((rp_tap_ports *)self)->sessions);
}

/* ---- the bindings (the tap's binding thread) ---------------------------------- */

static rp_status rp_tap_b_reconcile(void *self, const rp_config *cfg, const char *vhost,
                                    rp_tap_bind_stats *out, const char **reason) {
    rp_tap_ports *p = self;
    const char *skip[] = {cfg->broker.control_queue};
    rp_mgmt_dlx_options o = {
        .vhost = vhost,
        .tap_queue = cfg->broker.tap_queue,
        .owned_pattern = cfg->reap.owned_queue_pattern.code,
        .skip = skip,
        .n_skip = 1,
    };
    rp_mgmt_dlx_stats s;
    memset(&s, 0, sizeof s);
    rp_status st = rp_mgmt_dlx_reconcile(p->bind_broker, &o, &s);
    *out = (rp_tap_bind_stats){.exchanges = s.exchanges,
                               .added = s.added,
                               .removed = s.removed,
                               .failed = s.failed,
                               .unbindable = s.unbindable,
                               .tap_missing = s.tap_missing};
    *reason = rp_mgmt_broker_last_error(p->bind_broker);
    return st;
}

/* ---- life ---------------------------------------------------------------------- */

rp_tap_ports *rp_tap_ports_new(struct event_base *base, const rp_config *const *cfg,
                               rp_mgmt_bridge *mgmt, rp_tap_deps *deps) {
    rp_tap_ports *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->base = base;
    p->cfg = cfg;
    rp_pg_conn *conns[RP_PG_PARK_SESSIONS];
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++)
        conns[k] = rp_pass_conn_new(rp_tap_ports_cfg(p), 5);
    p->sessions = rp_pg_park_sessions_new(conns, rp_tap_ports_cfg(p)->store.schema);
    if (mgmt != NULL) p->bind_broker = rp_mgmt_broker_new(mgmt, NULL);
    if (p->sessions == NULL || (mgmt != NULL && p->bind_broker == NULL)) {
        rp_tap_ports_free(p);
        return NULL;
    }
    deps->consumer = (rp_tap_consumer_port){
        .self = p,
        .start = rp_tap_c_start,
        .ack = rp_tap_c_ack,
        .cancel = rp_tap_c_cancel,
        .consume = rp_tap_c_consume,
        .items = {.ctx = NULL, .drop = rp_tap_item_drop, .shed = rp_tap_item_shed},
        .examiner = {.ctx = p,
                     .inspect = rp_tap_inspect,
                     .capture = rp_tap_capture,
                     .release = rp_tap_release},
    };
    memset(&deps->store, 0, sizeof deps->store);
    rp_pg_park_sessions_port(p->sessions, &deps->store.batch);
    rp_pg_park_sessions_ports(p->sessions, &deps->store.ports);
    deps->store.self = p;
    deps->store.cancel = rp_tap_s_cancel;
    p->bind = (rp_tap_bind_port){.self = p, .reconcile = rp_tap_b_reconcile};
    deps->bind = p->bind_broker != NULL ? &p->bind : NULL;
    return p;
}

rp_status rp_tap_ports_connect(rp_tap_ports *p, rp_tap *t, const rp_amqp_params *params) {
    p->params = params;
    rp_status st = rp_tap_connect(t);
    p->params = NULL;
    return st;
}

void rp_tap_ports_free(rp_tap_ports *p) {
    if (p == NULL) return;
    rp_amqp_tap_free(p->amqp);
    rp_mgmt_broker_free(p->bind_broker);
    rp_pg_park_sessions_free(p->sessions);
    free(p);
}
