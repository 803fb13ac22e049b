/*
 * The control protocol (CONTRACT section 5, proto/SCHEMA.md): one request
 * per message on the control queue, one reply to its reply_to.
 *
 * Order for each request: the sender is checked against
 * control.allowed_users (empty: reaperd's own broker user only; "*": any
 * authenticated user; a request without user_id is never allowed) and the
 * reply_to against direct reply-to and control.reply_queue_pattern, both
 * before the body is parsed (a refused request's bytes are never read, it
 * gets NO reply, so reaperd is no relay, and it is acked, each sender
 * logged once), the body is decoded and validated, a reap is held to
 * control.reap_rate_seconds per user (busy), the op runs
 * (status at once on the loop; the others on the store thread),
 * the reply is published with the request's correlation_id and content
 * type, and the request is acked once the reply is confirmed by the broker
 * (or at once when there is no reply_to). A reply carries app_id reaperd
 * and reaperd's user_id, and is mandatory: one the broker returns or nacks
 * still acks its request (logged), so such replies cannot pile up unacked
 * and starve the consumer. A request that cannot be decoded
 * gets an error reply and is acked: never requeued. A reply that is lost
 * with the connection leaves the request unacked, so the broker delivers it
 * again and it is answered again (answer is idempotent: a second answer
 * reports already_answered).
 *
 * The decisions (who may ask, where a reply may go, the size, the reap
 * rate, redeliveries, the refusals' texts) are core's (rp_control.h); the
 * transport and the backends come through core/rp_control_port.h. This
 * file is the request's way through and the dispatch table; each op's use
 * case is a file of its own (rp_ctl_<op>.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_ctl_internal.h"
#include "rp_log.h"

/* ---- the dispatch table: one row per op (rp_ctl_internal.h) ---------------- */

static const rp_ctl_op *const rp_ctl_ops[] = {
    &rp_ctl_op_reap,
    &rp_ctl_op_answer,
    &rp_ctl_op_gates,
    &rp_ctl_op_status,
    &rp_ctl_op_jobs,
    &rp_ctl_op_job,
    &rp_ctl_op_cancel,
    &rp_ctl_op_gate,
    &rp_ctl_op_doctor,
    &rp_ctl_op_stats,
    &rp_ctl_op_answer_many,
    &rp_ctl_op_answer_set,
};

static const rp_ctl_op *rp_ctl_op_of(rp_op op) {
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_ctl_ops); i++)
        if (rp_ctl_ops[i]->op == op) return rp_ctl_ops[i];
    return NULL;
}

/* ---- answering ------------------------------------------------------------- */

const char *rp_ctl_user(const rp_ctl *c) { return c->env.has_user ? c->env.user : NULL; }

void rp_ctl_free(rp_ctl *c) {
    rp_request_cleanup(&c->req);
    if (c->state_free) c->state_free(c->state);
    free(c);
}

/* Acks the request: answered, so its redelivery count is forgotten. */
static void rp_ctl_ack(rp_ctl *c) {
    rp_redelivery_forget(&c->k->redeliveries, c->identity);
    const rp_control_transport_port *t = &c->k->deps.transport;
    t->ack(t->self, c->generation, c->delivery_tag);
}

static void rp_ctl_replied(void *arg, rp_control_reply_fate fate, const char *outcome) {
    rp_ctl *c = arg;
    RP_DEBUG("control reply settled", "outcome", outcome, NULL);
    if (fate == RP_CONTROL_REPLY_CONFIRMED || fate == RP_CONTROL_REPLY_UNDELIVERED) {
        /* Returned: the reply_to queue is gone (the client left); nacked:
         * the queue refused it (full, or a reject-publish limit). The
         * request is answered all the same: left unacked it would be
         * delivered again and again, and prefetch many of them would
         * starve the consumer. */
        if (fate != RP_CONTROL_REPLY_CONFIRMED)
            RP_WARN("control reply not delivered; its request is acked", "outcome", outcome,
                    "reply_to", c->env.reply_to, "user", rp_ctl_user(c), NULL);
        rp_ctl_ack(c);
    } else {
        RP_WARN("control reply not confirmed; the request will be delivered again", "outcome",
                outcome, NULL);
    }
    rp_ctl_free(c);
}

void rp_ctl_reply(rp_ctl *c, rp_proto_buf *buf) {
    const rp_control_deps *d = &c->k->deps;
    const rp_control_transport_port *t = &d->transport;
    if (c->env.reply_to[0] == '\0' || !t->connected(t->self)) {
        rp_ctl_ack(c);
        rp_proto_buf_cleanup(buf);
        rp_ctl_free(c);
        return;
    }
    char own[256];
    bool have_own = t->own_user(t->self, *d->cfg, own, sizeof own);
    rp_status st = t->reply(t->self, c->env.reply_to, rp_encoding_content_type(c->enc),
                            have_own ? own : NULL,
                            c->env.has_correlation_id ? c->env.correlation_id : NULL,
                            (rp_bytes){buf->ptr, buf->len}, rp_ctl_replied, c);
    RP_DEBUG("control reply queued", "reply_to", c->env.reply_to, NULL);
    rp_proto_buf_cleanup(buf);
    if (st != RP_OK) {
        RP_ERROR("cannot publish a control reply", "status", rp_status_string(st), NULL);
        rp_ctl_free(c);
    }
}

void rp_ctl_error(rp_ctl *c, const char *op, rp_status code, const char *message) {
    rp_metrics_control(c->k->deps.metrics, op, rp_proto_error_code(code));
    rp_proto_buf buf = {0};
    if (rp_proto_encode_error_reply(op, code, message, c->enc, &buf) != RP_OK) {
        rp_ctl_ack(c);
        rp_ctl_free(c);
        return;
    }
    rp_ctl_reply(c, &buf);
}

void rp_ctl_encoded(rp_ctl *c, rp_status est, rp_proto_buf *buf) {
    if (est == RP_OK) {
        rp_metrics_control(c->k->deps.metrics, rp_op_string(c->req.op), "ok");
        rp_ctl_reply(c, buf);
        return;
    }
    rp_proto_buf_cleanup(buf);
    rp_status code;
    const char *message;
    rp_control_encode_failure(est, &code, &message);
    rp_ctl_error(c, rp_op_string(c->req.op), code, message);
}

/* ---- the store thread -------------------------------------------------------- */

bool rp_ctl_store_ready(rp_ctl *c) {
    const rp_control_store_port *s = &c->k->deps.store;
    if (s->ready(s->self) == RP_OK) return true;
    c->st = RP_ERR_UNAVAILABLE;
    return false;
}

static void rp_ctl_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    c->op->work(c);
}

static void rp_ctl_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) { /* shutting down: unacked, so delivered again later */
        rp_ctl_free(c);
        return;
    }
    c->op->done(c);
}

rp_status rp_ctl_store_job(rp_ctl *c) {
    const rp_control_deps *d = &c->k->deps;
    return d->store_job(d->self, rp_ctl_work, rp_ctl_done, c);
}

/* ---- the checks before a request runs (rp_control.h) ----------------------- */

/* A request the broker keeps handing back (its reply never confirmed, the
 * connection lost while it ran) is answered internal and acked after
 * RP_REDELIVERY_MAX redeliveries, so that no request can make reaperd
 * loop. True when c was answered so (c is then taken). */
static bool rp_ctl_redelivered_too_often(rp_ctl *c) {
    c->identity = rp_control_identity(&c->env);
    unsigned n = 0;
    if (!rp_control_redelivered_too_often(&c->k->redeliveries, c->identity, c->env.redelivered,
                                          &n))
        return false;
    char times[16];
    snprintf(times, sizeof times, "%u", n);
    RP_ERROR("control request delivered again and again without being answered; answered "
             "internal and acked",
             "redeliveries", times, "user", c->env.has_user ? c->env.user : "(none)", NULL);
    rp_ctl_error(c, NULL, RP_ERR_INTERNAL, RP_CONTROL_REDELIVERED_MESSAGE);
    return true;
}

/* Acks a refused request without a reply; logs the sender once. */
static void rp_ctl_refuse_silently(rp_ctl *c, rp_control_admission a) {
    if (rp_control_tell_once(&c->k->senders, rp_ctl_user(c), a))
        RP_WARN(rp_control_admission_string(a), "user",
                c->env.has_user ? c->env.user : "(none)", "reply_to", c->env.reply_to, "note",
                "no reply is sent; logged once per sender", NULL);
    rp_metrics_control(c->k->deps.metrics, NULL, rp_proto_error_code(RP_ERR_FORBIDDEN));
    rp_ctl_ack(c);
    rp_ctl_free(c);
}

/* ---- the part ---------------------------------------------------------------- */

rp_controller *rp_controller_new(const rp_control_deps *deps) {
    rp_controller *k = calloc(1, sizeof *k);
    if (k == NULL) return NULL;
    k->deps = *deps;
    rp_redelivery_init(&k->redeliveries);
    return k;
}

void rp_controller_free(rp_controller *k) { free(k); }

void rp_controller_on_request(rp_controller *k, unsigned generation, uint64_t delivery_tag,
                              const rp_control_envelope *env) {
    const rp_control_deps *d = &k->deps;
    rp_ctl *c = calloc(1, sizeof *c);
    if (c == NULL) {
        RP_ERROR("out of memory: control request left for redelivery", NULL);
        return;
    }
    c->k = k;
    c->generation = generation;
    c->delivery_tag = delivery_tag;
    rp_request_init(&c->req);
    c->env = *env;
    rp_bytes ct = c->env.content_type;
    c->enc = rp_proto_reply_encoding(ct);

    if (rp_ctl_redelivered_too_often(c)) return;

    char own[256];
    rp_control_rules rules = {
        .allowed_users = &(*d->cfg)->control.allowed_users,
        .own_user = d->transport.own_user(d->transport.self, *d->cfg, own, sizeof own) ? own
                                                                                       : NULL,
        .reply_queue_pattern = &(*d->cfg)->control.reply_queue_pattern,
    };
    char why[128];
    rp_control_admission a = rp_control_admit(&rules, &c->env, why, sizeof why);
    if (rp_control_admission_silent(a)) {
        rp_ctl_refuse_silently(c, a);
        return;
    }
    if (a == RP_CONTROL_TOO_LARGE) {
        RP_WARN(rp_control_admission_string(a), "size", why, NULL);
        rp_ctl_error(c, NULL, RP_ERR_BAD_REQUEST, why);
        return;
    }
    rp_proto_error perr;
    rp_proto_error_init(&perr);
    rp_status st = rp_request_decode(c->env.body, ct, &c->req, &perr);
    if (st != RP_OK) {
        /* The message says what is wrong; the request's bytes are not logged. */
        RP_WARN("control request refused", "code", rp_proto_error_code(perr.code), "reason",
                perr.message, "user", rp_ctl_user(c), NULL);
        rp_metrics_control(d->metrics, rp_op_string(c->req.op), rp_proto_error_code(perr.code));
        rp_proto_buf buf = {0};
        if (rp_proto_encode_decode_error(&perr, c->enc, &buf) != RP_OK) {
            rp_ctl_ack(c);
            rp_ctl_free(c);
            return;
        }
        rp_ctl_reply(c, &buf);
        return;
    }
    RP_DEBUG("control request", "op", rp_op_string(c->req.op), "user", rp_ctl_user(c), NULL);
    if ((c->op = rp_ctl_op_of(c->req.op)) == NULL) {
        rp_ctl_error(c, NULL, RP_ERR_UNKNOWN_OP, "unknown op");
        return;
    }
    st = c->op->start ? c->op->start(c) : rp_ctl_store_job(c);
    if (st != RP_OK) rp_ctl_error(c, rp_op_string(c->req.op), RP_ERR_UNAVAILABLE,
                                  "reaperd is shutting down");
}
