/* The tap's consumer port over its own AMQP connection (rp_amqp_tap_port.h). */
#include "rp_amqp_tap_port.h"

#include <stdlib.h>
#include <string.h>

#include "rp_amqp_restore.h"
#include "rp_amqp_table.h"
#include "rp_amqp_tap.h"
#include "rp_backfill_port.h"
#include "rp_log.h"
#include "rp_tap_rules.h"

struct rp_amqp_tap_port {
    struct event_base *base;
    const rp_config *const *cfg;
    size_t body_max;
    rp_amqp_tap *amqp;            /* made at the start */
    const rp_amqp_params *params; /* until the start */
    rp_tap_consumer_hooks hooks;  /* the part's */
};

static const rp_config *rp_atp_cfg(const rp_amqp_tap_port *p) { return *p->cfg; }

/* ---- items (the part frees them through these; no connection needed) ------- */

static void rp_atp_item_drop(void *ctx, rp_tap_item *it) {
    RP_UNUSED(ctx);
    rp_amqp_tap_item_free((rp_amqp_tap_item *)it);
}

static size_t rp_atp_item_shed(void *ctx, rp_tap_item *it) {
    RP_UNUSED(ctx);
    return rp_amqp_tap_item_shed((rp_amqp_tap_item *)it);
}

/* ---- the tap's thread: how a delivery is read (core's examiner) ------------- */

/* What the examiner keeps for one delivery. */
typedef struct rp_atp_own {
    rp_amqp_dl_model m;
    char *headers, *props;
    rp_dl_stored h;
} rp_atp_own;

static rp_status rp_atp_inspect(void *ctx, rp_tap_item *base, rp_tap_prep *p, bool *death) {
    RP_UNUSED(ctx);
    rp_amqp_tap_item *it = (rp_amqp_tap_item *)base;
    rp_atp_own *o = calloc(1, sizeof *o);
    if (o == NULL) return RP_ERR_NOMEM;
    p->own = o;
    rp_status st = rp_amqp_dl_model_init(&o->m, &it->props);
    if (st != RP_OK) return st;
    *death = rp_amqp_dl_model_is_dead_letter(&o->m);
    return RP_OK;
}

static rp_status rp_atp_capture(void *ctx, rp_tap_item *base, rp_tap_prep *p) {
    const rp_amqp_tap_port *tp = ctx;
    rp_amqp_tap_item *it = (rp_amqp_tap_item *)base;
    rp_atp_own *o = p->own;
    /* The one stored form, the one replay reads back (rp_amqp_restore.h).
     * A header name that is not text cannot be stored losslessly: parked
     * without its JSON and marked so that it is never replayed, as the
     * backfill does (rp_amqp_peek.c). */
    rp_status st = rp_amqp_restore_capture(&it->props, &o->props, &o->headers);
    if (st == RP_ERR_NOMEM) return st;
    bool lossless = st == RP_OK;
    /* Kept without its headers, or with more x-death entries than were
     * parsed: the stored properties say so (rp_amqp_restore.h's note), and
     * a replay answers with that reason. */
    if (lossless) {
        size_t entries = rp_tap_death_entries(o->m.headers.n_x_death, o->m.x_death_unparsed);
        st = rp_amqp_restore_note_kept(&o->props, it->headers_dropped,
                                       (size_t)rp_atp_cfg(tp)->broker.tap_header_cap_bytes,
                                       entries);
        if (st != RP_OK) return st;
    }
    o->h = (rp_dl_stored){o->headers, o->props};
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

static void rp_atp_release(void *ctx, rp_tap_prep *p) {
    RP_UNUSED(ctx);
    rp_atp_own *o = p->own;
    if (o == NULL) return;
    rp_amqp_dl_model_cleanup(&o->m);
    free(o->headers);
    free(o->props);
    free(o);
}

/* ---- the consumer: the connection's hooks, passed on to the part ------------- */

static void rp_atp_on_up(void *arg) {
    rp_amqp_tap_port *p = arg;
    p->hooks.on_up(p->hooks.arg);
}

static void rp_atp_on_down(void *arg) {
    rp_amqp_tap_port *p = arg;
    p->hooks.on_down(p->hooks.arg);
}

static bool rp_atp_returning(void *arg) {
    rp_amqp_tap_port *p = arg;
    return p->hooks.returning(p->hooks.arg);
}

static void rp_atp_on_returned(void *arg) {
    rp_amqp_tap_port *p = arg;
    p->hooks.on_returned(p->hooks.arg);
}

static void rp_atp_on_item(void *arg, rp_amqp_tap_item *it) {
    rp_amqp_tap_port *p = arg;
    p->hooks.on_item(p->hooks.arg, &it->base);
}

static bool rp_atp_stopping(void *arg) {
    rp_amqp_tap_port *p = arg;
    return p->hooks.stopping(p->hooks.arg);
}

static rp_status rp_atp_start(void *self, const rp_tap_consumer_hooks *hooks) {
    rp_amqp_tap_port *p = self;
    if (p->params == NULL || p->amqp != NULL) return RP_ERR_INTERNAL;
    p->hooks = *hooks;
    rp_amqp_tap_hooks h = {
        .arg = p,
        .on_up = rp_atp_on_up,
        .on_down = rp_atp_on_down,
        .returning = rp_atp_returning,
        .on_returned = rp_atp_on_returned,
        .on_item = rp_atp_on_item,
        .stopping = rp_atp_stopping,
    };
    const rp_config *cfg = rp_atp_cfg(p);
    const char *err = NULL;
    p->amqp = rp_amqp_tap_new(p->base, p->params, cfg->broker.tap_queue, p->body_max,
                              (size_t)cfg->broker.tap_header_cap_bytes, &h, &err);
    if (p->amqp == NULL) {
        RP_ERROR("cannot make the tap's broker connection", "reason", err, NULL);
        return RP_ERR_CONFIG;
    }
    return rp_amqp_tap_start(p->amqp);
}

static bool rp_atp_ack(void *self, uint64_t tag, bool multiple) {
    return rp_amqp_tap_ack(((rp_amqp_tap_port *)self)->amqp, tag, multiple);
}

static bool rp_atp_cancel(void *self, const char *tag) {
    return rp_amqp_tap_cancel(((rp_amqp_tap_port *)self)->amqp, tag);
}

static bool rp_atp_consume(void *self, const char *tag) {
    return rp_amqp_tap_consume(((rp_amqp_tap_port *)self)->amqp, tag);
}

/* ---- life ---------------------------------------------------------------------- */

rp_amqp_tap_port *rp_amqp_tap_port_new(struct event_base *base, const rp_config *const *cfg,
                                       size_t body_max, rp_tap_consumer_port *out) {
    rp_amqp_tap_port *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->base = base;
    p->cfg = cfg;
    p->body_max = body_max;
    *out = (rp_tap_consumer_port){
        .self = p,
        .start = rp_atp_start,
        .ack = rp_atp_ack,
        .cancel = rp_atp_cancel,
        .consume = rp_atp_consume,
        .items = {.ctx = NULL, .drop = rp_atp_item_drop, .shed = rp_atp_item_shed},
        .examiner = {.ctx = p,
                     .inspect = rp_atp_inspect,
                     .capture = rp_atp_capture,
                     .release = rp_atp_release},
    };
    return p;
}

void rp_amqp_tap_port_params(rp_amqp_tap_port *p, const rp_amqp_params *params) {
    p->params = params;
}

void rp_amqp_tap_port_free(rp_amqp_tap_port *p) {
    if (p == NULL) return;
    rp_amqp_tap_free(p->amqp);
    free(p);
}
