/* The replays part's ports over PostgreSQL and RabbitMQ (replay_port.h). */
#include "replay_port.h"

#include <stdlib.h>
#include <string.h>

#include "rp_amqp_control.h"
#include "rp_amqp_open.h"
#include "rp_amqp_restore.h"
#include "rp_pg_replay.h"

struct rp_replay_wiring {
    rp_pass_runner *runner;
    rp_amqp_publisher *const *publisher;
    const bool *broker_up;
    const char *broker_url;
};

/* ---- the store side (store thread) ----------------------------------------- */

static rp_status rp_rs_ready(void *self) {
    rp_replay_wiring *w = self;
    char err[256];
    return rp_pg_conn_ensure(w->runner->conn, err, sizeof err) == RP_OK ? RP_OK
                                                                        : RP_ERR_UNAVAILABLE;
}

static const rp_config *rp_rs_config(void *self) {
    return ((rp_replay_wiring *)self)->runner->cfg;
}

static void rp_rs_claim_seconds(rp_replay_wiring *w) {
    rp_pg_store_set_claim_seconds(w->runner->store, w->runner->cfg->control.replay_claim_seconds);
}

static rp_status rp_rs_lock(void *self, int64_t gate, const char *by, rp_replay_row *out) {
    rp_replay_wiring *w = self;
    memset(out, 0, sizeof *out);
    rp_rs_claim_seconds(w);
    rp_pg_replay_row row;
    rp_status st = rp_pg_replay_lock(w->runner->store, gate, by, &row);
    if (st != RP_OK) return st;
    *out = (rp_replay_row){
        .kind = row.kind,
        .answered = row.answered,
        .answer = row.answer,
        .claim = row.claim,
        .claimed_at = row.claimed_at,
        .has_dead_letter = row.has_dead_letter,
        .origin_queue = row.origin_queue,
        .vhost = row.vhost,
        .body = row.body,
        .body_len = row.body_len,
        .body_truncated = row.body_truncated,
        .headers_json = row.headers_json,
        .properties_json = row.properties_json,
    };
    memcpy(out->claimed_by, row.claimed_by, sizeof out->claimed_by);
    row.origin_queue = row.vhost = row.headers_json = row.properties_json = NULL;
    row.body = NULL;
    rp_pg_replay_row_cleanup(&row);
    return RP_OK;
}

static rp_status rp_rs_claim(void *self, int64_t gate, rp_time_ms *at) {
    return rp_pg_replay_claim_commit(((rp_replay_wiring *)self)->runner->store, gate, at);
}

static rp_status rp_rs_abandon(void *self) {
    return rp_pg_replay_claim_abandon(((rp_replay_wiring *)self)->runner->store);
}

static rp_status rp_rs_release(void *self, int64_t gate, bool *released) {
    return rp_pg_replay_release(((rp_replay_wiring *)self)->runner->store, gate, released);
}

/* Fenced on this process's claim (rp_pg_store.h GATES); through the gate
 * port, so that the answer goes to the events feed like any other. */
static rp_status rp_rs_settle(void *self, int64_t gate, const char *by, const char *note,
                              rp_answer_result *out) {
    rp_replay_wiring *w = self;
    rp_rs_claim_seconds(w);
    const rp_gate_port *g = &w->runner->ports.gates;
    return g->answer(g->self, gate, RP_CHOICE_REPLAY, by, note, out);
}

/* ---- the message and its publish ---------------------------------------------- */

static rp_replay_msg *rp_rp_msg_new(void *self) {
    RP_UNUSED(self);
    return (rp_replay_msg *)(void *)rp_amqp_replay_msg_new();
}

static void rp_rp_msg_free(void *self, rp_replay_msg *m) {
    RP_UNUSED(self);
    rp_amqp_replay_msg_free((rp_amqp_replay_msg *)(void *)m);
}

static rp_status rp_rp_msg_restore(void *self, rp_replay_msg *m, const char *props_json,
                                   const char *headers_json, char *err, size_t errlen) {
    RP_UNUSED(self);
    return rp_amqp_replay_msg_restore((rp_amqp_replay_msg *)(void *)m, props_json, headers_json,
                                      err, errlen);
}

static void rp_rp_msg_peek(void *self, const rp_replay_msg *m, rp_bytes *user_id,
                           rp_bytes *expiration) {
    RP_UNUSED(self);
    rp_amqp_replay_msg_peek((const rp_amqp_replay_msg *)(const void *)m, user_id, expiration);
}

static void rp_rp_msg_strip(void *self, rp_replay_msg *m, rp_replay_strip s) {
    RP_UNUSED(self);
    rp_amqp_replay_msg_strip((rp_amqp_replay_msg *)(void *)m, s);
}

static bool rp_rp_kept_refusal(void *self, const char *props_json, char *why, size_t n) {
    RP_UNUSED(self);
    return rp_amqp_restore_refusal(props_json, why, n);
}

static bool rp_rp_vhost_is_ours(void *self, const char *vhost) {
    return rp_amqp_url_vhost_is(((rp_replay_wiring *)self)->broker_url, vhost);
}

static bool rp_rp_own_user(void *self, char *buf, size_t n) {
    return rp_amqp_url_user(((rp_replay_wiring *)self)->broker_url, buf, n);
}

typedef struct rp_rp_pending {
    rp_amqp_publisher *publisher;
    rp_replay_published_fn done;
    void *arg;
} rp_rp_pending;

static void rp_rp_published(void *arg, rp_publish_outcome outcome) {
    rp_rp_pending p = *(rp_rp_pending *)arg;
    free(arg);
    p.done(p.arg, rp_amqp_replay_outcome(outcome), rp_publish_outcome_string(outcome),
           outcome == RP_PUBLISH_REFUSED ? rp_amqp_publisher_refusal(p.publisher) : NULL);
}

static rp_status rp_rp_publish(void *self, const rp_replay_msg *m, const char *queue,
                               rp_bytes body, rp_replay_published_fn done, void *arg) {
    rp_replay_wiring *w = self;
    rp_amqp_publisher *pub = *w->publisher;
    if (!*w->broker_up || pub == NULL) return RP_ERR_UNAVAILABLE;
    rp_rp_pending *p = malloc(sizeof *p);
    if (p == NULL) return RP_ERR_NOMEM;
    *p = (rp_rp_pending){pub, done, arg};
    rp_status st = rp_amqp_replay_msg_publish(pub, (const rp_amqp_replay_msg *)(const void *)m,
                                              queue, body, rp_rp_published, p);
    if (st != RP_OK) free(p);
    return st;
}

/* ---- the wiring ------------------------------------------------------------------ */

rp_replay_wiring *rp_replay_wiring_new(rp_pass_runner *runner,
                                       rp_amqp_publisher *const *publisher,
                                       const bool *broker_up, const char *broker_url) {
    rp_replay_wiring *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    *w = (rp_replay_wiring){runner, publisher, broker_up, broker_url};
    return w;
}

void rp_replay_wiring_ports(rp_replay_wiring *w, rp_replay_store_port *store,
                            rp_replay_publish_port *publish) {
    *store = (rp_replay_store_port){
        .self = w,
        .ready = rp_rs_ready,
        .config = rp_rs_config,
        .lock = rp_rs_lock,
        .claim = rp_rs_claim,
        .abandon = rp_rs_abandon,
        .release = rp_rs_release,
        .settle = rp_rs_settle,
    };
    *publish = (rp_replay_publish_port){
        .self = w,
        .msg_new = rp_rp_msg_new,
        .msg_free = rp_rp_msg_free,
        .msg_restore = rp_rp_msg_restore,
        .msg_peek = rp_rp_msg_peek,
        .msg_strip = rp_rp_msg_strip,
        .kept_refusal = rp_rp_kept_refusal,
        .vhost_is_ours = rp_rp_vhost_is_ours,
        .own_user = rp_rp_own_user,
        .publish = rp_rp_publish,
    };
}

void rp_replay_wiring_free(rp_replay_wiring *w) { free(w); }
