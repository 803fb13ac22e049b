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
 * (status at once on the loop; reap, gates and answer on the store thread),
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
 * An answer with replay runs in replay.c: read on the store thread, publish
 * (mandatory, confirmed) on the loop, settle on the store thread, then the
 * reply. While a replay of a gate is in flight, any other answer to that
 * gate is refused with conflict.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_internal.h"
#include "replay.h"
#include "report_text.h"
#include "rp_amqp_open.h"
#include "rp_log.h"
#include "rp_proto.h"
#include "version.h"

typedef struct rp_ctl {
    rp_daemon *d;
    unsigned generation;
    uint64_t delivery_tag;
    char reply_to[256];
    char correlation_id[256];
    bool has_correlation_id;
    char user[256];
    bool has_user;
    rp_encoding enc;
    uint64_t identity; /* rp_redelivery_key of the request */
    rp_request req;
    /* Results from the store thread. */
    rp_pass_request pass;
    rp_status st;
    rp_gate *gates;
    size_t n_gates;
    rp_answer_result answer;
} rp_ctl;

static void rp_ctl_free(rp_ctl *c) {
    rp_request_cleanup(&c->req);
    rp_pass_request_cleanup(&c->pass);
    for (size_t i = 0; i < c->n_gates; i++) rp_gate_cleanup(&c->gates[i]);
    free(c->gates);
    free(c);
}

/* Acks the request: answered, so its redelivery count is forgotten. */
static void rp_ctl_ack(rp_ctl *c) {
    rp_redelivery_forget(&c->d->redeliveries, c->identity);
    rp_broker_ack(c->d, c->generation, c->delivery_tag);
}

static void rp_ctl_replied(void *arg, rp_publish_outcome outcome) {
    rp_ctl *c = arg;
    RP_DEBUG("control reply settled", "outcome", rp_publish_outcome_string(outcome), NULL);
    if (outcome == RP_PUBLISH_CONFIRMED || outcome == RP_PUBLISH_RETURNED ||
        outcome == RP_PUBLISH_NACKED) {
        /* Returned: the reply_to queue is gone (the client left); nacked:
         * the queue refused it (full, or a reject-publish limit). The
         * request is answered all the same: left unacked it would be
         * delivered again and again, and prefetch many of them would
         * starve the consumer. */
        if (outcome != RP_PUBLISH_CONFIRMED)
            RP_WARN("control reply not delivered; its request is acked", "outcome",
                    rp_publish_outcome_string(outcome), "reply_to", c->reply_to, "user",
                    c->has_user ? c->user : NULL, NULL);
        rp_ctl_ack(c);
    } else {
        RP_WARN("control reply not confirmed; the request will be delivered again", "outcome",
                rp_publish_outcome_string(outcome), NULL);
    }
    rp_ctl_free(c);
}

/* Publishes buf as the reply (or acks at once without reply_to); takes c. */
static void rp_ctl_reply(rp_ctl *c, rp_proto_buf *buf) {
    rp_daemon *d = c->d;
    if (c->reply_to[0] == '\0' || d->publisher == NULL) {
        rp_ctl_ack(c);
        rp_proto_buf_cleanup(buf);
        rp_ctl_free(c);
        return;
    }
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                   AMQP_BASIC_APP_ID_FLAG;
    props.content_type = amqp_cstring_bytes(rp_encoding_content_type(c->enc));
    props.delivery_mode = 1;
    /* Who answers: the broker checks user_id against our login, so a
     * client can tell reaperd's replies from anyone else's. */
    props.app_id = amqp_cstring_bytes("reaperd");
    char own[256];
    if (rp_amqp_url_user(d->cfg->broker.url, own, sizeof own)) {
        props._flags |= AMQP_BASIC_USER_ID_FLAG;
        props.user_id = amqp_cstring_bytes(own);
    }
    if (c->has_correlation_id) {
        props._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
        props.correlation_id = amqp_cstring_bytes(c->correlation_id);
    }
    rp_publish pub = {
        .exchange = "",
        .routing_key = c->reply_to,
        .props = &props,
        .body = {buf->ptr, buf->len},
        .mandatory = true,
        .retry = false,
        .done = rp_ctl_replied,
        .arg = c,
    };
    rp_status st = rp_amqp_publisher_publish(d->publisher, &pub);
    RP_DEBUG("control reply queued", "reply_to", c->reply_to, NULL);
    rp_proto_buf_cleanup(buf);
    if (st != RP_OK) {
        RP_ERROR("cannot publish a control reply", "status", rp_status_string(st), NULL);
        rp_ctl_free(c);
    }
}

static void rp_ctl_error(rp_ctl *c, const char *op, rp_status code, const char *message) {
    rp_metrics_control(&c->d->metrics, op, rp_proto_error_code(code));
    rp_proto_buf buf = {0};
    if (rp_proto_encode_error_reply(op, code, message, c->enc, &buf) != RP_OK) {
        rp_ctl_ack(c);
        rp_ctl_free(c);
        return;
    }
    rp_ctl_reply(c, &buf);
}

static void rp_ctl_encoded(rp_ctl *c, rp_status est, rp_proto_buf *buf) {
    if (est == RP_OK) {
        rp_metrics_control(&c->d->metrics, rp_op_string(c->req.op), "ok");
        rp_ctl_reply(c, buf);
        return;
    }
    rp_proto_buf_cleanup(buf);
    rp_ctl_error(c, rp_op_string(c->req.op),
                 est == RP_ERR_TOO_LARGE ? RP_ERR_INTERNAL : est,
                 est == RP_ERR_TOO_LARGE ? "the reply is too large to send; use reaperd --once"
                                         : "the reply could not be encoded");
}

/* ---- reap ---------------------------------------------------------------- */

static void rp_ctl_reap_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_ctl *c = arg;
    rp_pass_runner_run(&d->runner, &c->pass);
}

static void rp_ctl_reap_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) { /* shutting down: unacked, so delivered again later */
        rp_ctl_free(c);
        return;
    }
    if (c->pass.status != RP_OK) {
        rp_ctl_error(c, "reap", RP_ERR_INTERNAL, "the pass stopped early");
        return;
    }
    if (!c->pass.dry_run) c->d->last_pass_at = c->pass.started_at + c->pass.clock_offset_ms;
    char who[300];
    snprintf(who, sizeof who, "%s", c->has_user ? c->user : "(unknown)");
    rp_report_log(&c->pass.report, "on demand", c->pass.duration_ms);
    RP_INFO("reap request answered", "user", who, "dry_run", c->pass.dry_run ? "true" : "false",
            "ok", c->pass.report.ok ? "true" : "false", NULL);
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_reap_reply(&c->pass.report, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

/* ---- gates and answer ---------------------------------------------------- */

/* Store thread: connects when needed; false (c->st set) when the store
 * cannot be reached. */
static bool rp_ctl_store_ready(rp_daemon *d, rp_ctl *c) {
    char err[256];
    if (rp_pg_conn_ensure(d->runner.conn, err, sizeof err) == RP_OK) return true;
    c->st = RP_ERR_UNAVAILABLE;
    return false;
}

static void rp_ctl_gates_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_ctl *c = arg;
    if (!rp_ctl_store_ready(d, c)) return;
    rp_gate_query q = {
        .state = c->req.gates.state,
        .limit = (size_t)c->req.gates.limit,
        .project = c->req.gates.project,
    };
    const rp_gate_port *g = &d->runner.ports.gates;
    c->st = g->list(g->self, &q, &c->gates, &c->n_gates);
}

static void rp_ctl_gates_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    if (c->st != RP_OK) {
        rp_ctl_error(c, "gates", c->st,
                     c->st == RP_ERR_UNAVAILABLE ? "the store is unreachable" : "listing gates failed");
        return;
    }
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_gates_reply(c->gates, c->n_gates, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

static void rp_ctl_answer_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_ctl *c = arg;
    if (!rp_ctl_store_ready(d, c)) return;
    /* answered_by is the broker-validated user; the request's own "by" is
     * only a note. */
    rp_pg_store_set_claim_seconds(d->runner.store, d->runner.cfg->control.replay_claim_seconds);
    const rp_gate_port *g = &d->runner.ports.gates;
    c->st = g->answer(g->self, c->req.answer.gate, c->req.answer.choice, c->user,
                      c->req.answer.by, &c->answer);
}

static void rp_ctl_answer_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    char gate[32];
    snprintf(gate, sizeof gate, "%" PRId64, c->req.answer.gate);
    if (c->st == RP_ERR_BUSY) {
        /* Another replica's (or this one's) replay holds the gate. */
        char msg[400];
        rp_replay_claim_text(msg, sizeof msg - 64, c->req.answer.gate, c->answer.claimed_by,
                             c->answer.claimed_at);
        strcat(msg, "; ask again for its outcome later");
        RP_WARN("gate answer refused", "gate", gate, "choice",
                rp_choice_string(c->req.answer.choice), "reason", msg, NULL);
        rp_ctl_error(c, "answer", RP_ERR_BUSY, msg);
        return;
    }
    if (c->st != RP_OK) {
        const char *msg = c->st == RP_ERR_NOT_FOUND      ? "no such gate"
                          : c->st == RP_ERR_CONFLICT     ? "this gate does not take that choice"
                          : c->st == RP_ERR_UNAVAILABLE  ? "the store is unreachable"
                                                         : "answering the gate failed";
        RP_WARN("gate answer refused", "gate", gate, "choice", rp_choice_string(c->req.answer.choice),
                "reason", msg, NULL);
        rp_ctl_error(c, "answer", c->st, msg);
        return;
    }
    if (c->answer.outcome != RP_OUTCOME_ALREADY_ANSWERED)
        rp_metrics_gate_answered(&c->d->metrics, c->answer.kind, c->answer.choice);
    RP_INFO("gate answered", "gate", gate, "choice", rp_choice_string(c->answer.choice),
            "outcome", rp_outcome_string(c->answer.outcome), "user", c->has_user ? c->user : NULL,
            NULL);
    rp_proto_buf buf = {0};
    rp_status est;
    if (c->answer.claim == RP_GATE_CLAIM_STALE) {
        /* This answer took a stale replay claim over (rp_gate.h). */
        char note[500];
        rp_replay_takeover_text(note, sizeof note, c->req.answer.gate, c->answer.claimed_by,
                                c->answer.claimed_at);
        est = rp_proto_encode_answer_reply_note(c->req.answer.gate, c->answer.choice,
                                                c->answer.outcome, note, c->enc, &buf);
    } else {
        est = rp_proto_encode_answer_reply(c->req.answer.gate, c->answer.choice,
                                           c->answer.outcome, c->enc, &buf);
    }
    rp_ctl_encoded(c, est, &buf);
}

/* A replay of the request's gate is in flight in this reaperd: busy, as
 * when another replica holds its claim (replay.h). */
static void rp_ctl_replay_in_flight(rp_ctl *c) {
    char msg[400];
    rp_replay_claim_text(msg, sizeof msg - 64, c->req.answer.gate,
                         rp_pg_store_claimer(c->d->runner.store), 0);
    /* No claim time is known on the loop: say "now" rather than a time. */
    char *since = strstr(msg, " since ");
    if (since) *since = '\0';
    strcat(msg, " (this reaperd); ask again for its outcome later");
    rp_ctl_error(c, "answer", RP_ERR_BUSY, msg);
}

/* Loop: the end of a replay (replay.h). */
static void rp_ctl_replay_done(void *arg, const rp_replay_result *r) {
    rp_ctl *c = arg;
    if (r->cancelled) { /* shutting down: unacked, so delivered again later */
        rp_ctl_free(c);
        return;
    }
    char gate[32];
    snprintf(gate, sizeof gate, "%" PRId64, c->req.answer.gate);
    if (r->st != RP_OK) {
        const char *msg = r->message ? r->message : "replaying failed";
        RP_WARN("gate answer refused", "gate", gate, "choice", "replay", "reason", msg, NULL);
        rp_ctl_error(c, "answer", r->st, msg);
        return;
    }
    RP_INFO("gate answered", "gate", gate, "choice", rp_choice_string(r->answer.choice),
            "outcome", rp_outcome_string(r->answer.outcome), "user", c->has_user ? c->user : NULL,
            NULL);
    rp_proto_buf buf = {0};
    if (r->note) RP_WARN("replay published without some stored properties", "gate", gate,
                         "note", r->note, NULL);
    rp_status est = rp_proto_encode_answer_reply_note(c->req.answer.gate, r->answer.choice,
                                                      r->answer.outcome, r->note, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

/* ---- status -------------------------------------------------------------- */

static void rp_ctl_status(rp_ctl *c) {
    rp_daemon *d = c->d;
    rp_proto_status s = {
        .version = RP_VERSION_STRING,
        .broker_up = d->broker_up,
        .store_up = d->store_up,
        .last_pass_at = d->last_pass_at,
        .open_sightings = d->open_sightings,
    };
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_status_reply(&s, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

/* ---- senders: who may ask, how often, and told once ----------------------- */

/* What reaperd remembers of a sender (by user_id; "" for none): when its
 * last reap was accepted, and whether its refusals were logged. Loop
 * thread only. A bounded table (one daemon per process, so it lives here
 * and rp_daemon stays as it is): past RP_CTL_SENDERS names the oldest slot
 * is reused, which at worst logs a sender again or lets one reap early. */
#define RP_CTL_SENDERS 256
typedef struct rp_ctl_sender {
    bool used;
    bool told_forbidden;
    bool told_reply_to;
    bool reaped;
    int64_t last_reap_ms; /* monotonic, when reaped */
    char user[256];
} rp_ctl_sender;

static rp_ctl_sender rp_ctl_senders[RP_CTL_SENDERS];
static size_t rp_ctl_senders_next;

static rp_ctl_sender *rp_ctl_sender_of(const rp_ctl *c) {
    const char *user = c->has_user ? c->user : "";
    for (size_t i = 0; i < RP_CTL_SENDERS; i++)
        if (rp_ctl_senders[i].used && strcmp(rp_ctl_senders[i].user, user) == 0)
            return &rp_ctl_senders[i];
    rp_ctl_sender *s = &rp_ctl_senders[rp_ctl_senders_next++ % RP_CTL_SENDERS];
    memset(s, 0, sizeof *s);
    s->used = true;
    snprintf(s->user, sizeof s->user, "%s", user);
    return s;
}

static int64_t rp_ctl_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* control.allowed_users: empty means reaperd's own broker user only, "*"
 * any authenticated user; a request without user_id is from nobody the
 * broker vouched for, so it is never allowed. */
static bool rp_user_allowed(const rp_config *cfg, const rp_ctl *c) {
    if (!c->has_user) return false;
    const rp_config_strlist *users = &cfg->control.allowed_users;
    if (users->n == 0) {
        char own[256];
        return rp_amqp_url_user(cfg->broker.url, own, sizeof own) && strcmp(own, c->user) == 0;
    }
    for (size_t i = 0; i < users->n; i++)
        if (strcmp(users->items[i], "*") == 0 || strcmp(users->items[i], c->user) == 0)
            return true;
    return false;
}

/* A request the broker keeps handing back (its reply never confirmed, the
 * connection lost while it ran) is answered internal and acked after
 * RP_REDELIVERY_MAX redeliveries, so that no request can make reaperd
 * loop (rp_redelivery.h). True when c was answered so (c is then taken). */
static bool rp_ctl_redelivered_too_often(rp_ctl *c, const rp_amqp_message *msg) {
    const amqp_basic_properties_t *p = &msg->props;
    rp_bytes idp[5] = {{NULL, 0}};
    if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
        idp[0] = (rp_bytes){p->message_id.bytes, p->message_id.len};
    } else {
        if (c->reply_to[0]) idp[1] = (rp_bytes){(const uint8_t *)c->reply_to, strlen(c->reply_to)};
        if (c->has_correlation_id)
            idp[2] = (rp_bytes){(const uint8_t *)c->correlation_id, strlen(c->correlation_id)};
        if (c->has_user) idp[3] = (rp_bytes){(const uint8_t *)c->user, strlen(c->user)};
        idp[4] = (rp_bytes){msg->body ? msg->body : (const uint8_t *)"", msg->body_len};
    }
    c->identity = rp_redelivery_key(idp, RP_ARRAY_LEN(idp));
    if (!msg->redelivered) return false;
    unsigned n = rp_redelivery_note(&c->d->redeliveries, c->identity);
    if (n <= RP_REDELIVERY_MAX) return false;
    char times[16];
    snprintf(times, sizeof times, "%u", n);
    RP_ERROR("control request delivered again and again without being answered; answered "
             "internal and acked",
             "redeliveries", times, "user", c->has_user ? c->user : "(none)", NULL);
    rp_ctl_error(c, NULL, RP_ERR_INTERNAL,
                 "this request was delivered again more than 3 times without being answered "
                 "(each time reaperd lost its reply or its connection); it is dropped from the "
                 "control queue: send it again");
    return true;
}


/* Replies go to direct reply-to or to a queue control.reply_queue_pattern
 * names, nowhere else: reaperd is not a relay into other queues. */
static bool rp_reply_to_allowed(const rp_config *cfg, const char *reply_to) {
    static const char direct[] = "amq.rabbitmq.reply-to";
    size_t n = strlen(direct);
    if (strncmp(reply_to, direct, n) == 0 && (reply_to[n] == '\0' || reply_to[n] == '.'))
        return true;
    return rp_config_pattern_match(&cfg->control.reply_queue_pattern, reply_to,
                                   strlen(reply_to)) == 1;
}

/* Acks a refused request without a reply; logs the sender once. */
static void rp_ctl_refuse_silently(rp_ctl *c, bool *told, const char *why) {
    if (!*told) {
        *told = true;
        RP_WARN(why, "user", c->has_user ? c->user : "(none)", "reply_to", c->reply_to,
                "note", "no reply is sent; logged once per sender", NULL);
    }
    rp_metrics_control(&c->d->metrics, NULL, rp_proto_error_code(RP_ERR_FORBIDDEN));
    rp_ctl_ack(c);
    rp_ctl_free(c);
}

/* control.reap_rate_seconds: one reap per user per that many seconds.
 * True (and c answered busy) when this one comes too soon; else the reap
 * is counted as accepted now. */
static bool rp_ctl_reap_too_soon(rp_ctl *c) {
    rp_ctl_sender *s = rp_ctl_sender_of(c);
    int64_t rate = c->d->cfg->control.reap_rate_seconds;
    int64_t now = rp_ctl_mono_ms(), gap = rate * 1000;
    if (gap > 0 && s->reaped && now - s->last_reap_ms < gap) {
        char why[200];
        snprintf(why, sizeof why,
                 "one reap per %" PRId64 " s per user (control.reap_rate_seconds); ask again "
                 "in %" PRId64 " s",
                 rate, (gap - (now - s->last_reap_ms) + 999) / 1000);
        rp_ctl_error(c, "reap", RP_ERR_BUSY, why);
        return true;
    }
    s->reaped = true;
    s->last_reap_ms = now;
    return false;
}

/* ---- dispatch ------------------------------------------------------------ */

void rp_control_on_message(rp_daemon *d, const rp_amqp_message *msg) {
    rp_ctl *c = calloc(1, sizeof *c);
    if (c == NULL) {
        RP_ERROR("out of memory: control request left for redelivery", NULL);
        return;
    }
    c->d = d;
    c->generation = d->broker_generation;
    c->delivery_tag = msg->delivery_tag;
    rp_request_init(&c->req);
    rp_pass_request_init(&c->pass, RP_PASS_FULL, false);
    const amqp_basic_properties_t *p = &msg->props;
    rp_amqp_prop_string(p, AMQP_BASIC_REPLY_TO_FLAG, c->reply_to, sizeof c->reply_to);
    c->has_correlation_id =
        rp_amqp_prop_string(p, AMQP_BASIC_CORRELATION_ID_FLAG, c->correlation_id,
                            sizeof c->correlation_id);
    /* The broker checks user_id against the connection's user, so it is
     * the sender's real name (a message without it is from nobody). */
    c->has_user = rp_amqp_prop_string(p, AMQP_BASIC_USER_ID_FLAG, c->user, sizeof c->user);
    rp_bytes ct = {NULL, 0};
    if (p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) ct = (rp_bytes){p->content_type.bytes, p->content_type.len};
    c->enc = rp_proto_reply_encoding(ct);

    if (rp_ctl_redelivered_too_often(c, msg)) return;

    if (!rp_user_allowed(d->cfg, c)) {
        rp_ctl_refuse_silently(c, &rp_ctl_sender_of(c)->told_forbidden,
                               c->has_user ? "control request refused: sender not allowed by "
                                             "control.allowed_users"
                                           : "control request refused: no user_id property");
        return;
    }
    if (c->reply_to[0] != '\0' && !rp_reply_to_allowed(d->cfg, c->reply_to)) {
        rp_ctl_refuse_silently(c, &rp_ctl_sender_of(c)->told_reply_to,
                               "control request refused: reply_to is neither direct reply-to "
                               "nor matched by control.reply_queue_pattern");
        return;
    }
    if (msg->truncated) {
        char why[128];
        snprintf(why, sizeof why, "the request body is %" PRIu64 " bytes; the limit is 65536",
                 msg->body_size);
        RP_WARN("control request refused: too large", "size", why, NULL);
        rp_ctl_error(c, NULL, RP_ERR_BAD_REQUEST, why);
        return;
    }
    rp_proto_error perr;
    rp_proto_error_init(&perr);
    rp_status st = rp_request_decode((rp_bytes){msg->body, msg->body_len}, ct, &c->req, &perr);
    if (st != RP_OK) {
        /* The message says what is wrong; the request's bytes are not logged. */
        RP_WARN("control request refused", "code", rp_proto_error_code(perr.code), "reason",
                perr.message, "user", c->has_user ? c->user : NULL, NULL);
        rp_metrics_control(&d->metrics, rp_op_string(c->req.op), rp_proto_error_code(perr.code));
        rp_proto_buf buf = {0};
        if (rp_proto_encode_decode_error(&perr, c->enc, &buf) != RP_OK) {
            rp_ctl_ack(c);
            rp_ctl_free(c);
            return;
        }
        rp_ctl_reply(c, &buf);
        return;
    }
    RP_DEBUG("control request", "op", rp_op_string(c->req.op), "user", c->has_user ? c->user : NULL,
             NULL);
    switch (c->req.op) {
    case RP_OP_STATUS:
        rp_ctl_status(c);
        return;
    case RP_OP_REAP:
        if (rp_ctl_reap_too_soon(c)) return;
        c->pass.dry_run = c->req.reap.dry_run;
        c->pass.report.dry_run = c->req.reap.dry_run;
        if (c->req.reap.project && (c->pass.project = strdup(c->req.reap.project)) == NULL) {
            st = RP_ERR_NOMEM;
            break;
        }
        st = rp_daemon_store_job(d, rp_ctl_reap_work, rp_ctl_reap_done, c);
        break;
    case RP_OP_GATES:
        st = rp_daemon_store_job(d, rp_ctl_gates_work, rp_ctl_gates_done, c);
        break;
    case RP_OP_ANSWER:
        if (c->req.answer.choice == RP_CHOICE_REPLAY) {
            /* Published and confirmed on the loop before the gate is
             * settled (replay.h). */
            st = rp_replay_start(d, c->req.answer.gate, c->user, c->req.answer.by,
                                 rp_ctl_replay_done, c);
            if (st == RP_ERR_CONFLICT) {
                rp_ctl_replay_in_flight(c);
                return;
            }
            break;
        }
        if (rp_replay_busy(d, c->req.answer.gate)) {
            /* Settling it now could dismiss a message being replayed. */
            rp_ctl_replay_in_flight(c);
            return;
        }
        st = rp_daemon_store_job(d, rp_ctl_answer_work, rp_ctl_answer_done, c);
        break;
    default:
        rp_ctl_error(c, NULL, RP_ERR_UNKNOWN_OP, "unknown op");
        return;
    }
    if (st != RP_OK) rp_ctl_error(c, rp_op_string(c->req.op), RP_ERR_UNAVAILABLE,
                                  "reaperd is shutting down");
}
