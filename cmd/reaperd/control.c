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
 * The decisions (who may ask, where a reply may go, the size, the reap
 * rate, redeliveries, the refusals' texts) are core's (rp_control.h); the
 * properties are read and written by the AMQP adapter (rp_amqp_control.h).
 * This file is the use cases: request -> use case -> reply.
 *
 * An answer with replay runs in the replays part (app/rp_replays.h): read
 * on the store thread, publish (mandatory, confirmed) on the loop, settle on
 * the store thread, then the reply. While a replay of a gate is in flight, any other answer to that
 * gate is refused with conflict.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "control_gate.h"
#include "control_doctor.h"
#include "control_jobs.h"
#include "control_stats.h"
#include "report_text.h"
#include "rp_amqp_control.h"
#include "rp_amqp_open.h"
#include "rp_control.h"
#include "rp_pg_jobs.h"
#include "rp_log.h"
#include "rp_clock.h"
#include "rp_proto.h"
#include "rp_redelivery.h"
#include "rp_replay.h"
#include "version.h"

struct rp_controller {
    rp_control_deps deps;
    /* Who sent requests, and what they were told (rp_control.h). */
    rp_control_senders senders;
    /* Control requests the broker handed over again, counted by identity. */
    rp_redelivery redeliveries;
};

typedef struct rp_ctl {
    rp_controller *d;
    unsigned generation;
    uint64_t delivery_tag;
    rp_control_envelope env; /* its rp_bytes only during rp_controller_on_message */
    rp_encoding enc;
    uint64_t identity; /* rp_control_identity of the request */
    rp_request req;
    /* Results from the store thread. */
    rp_pass_request pass;
    rp_status st;
    rp_gate *gates;
    size_t n_gates;
    rp_gate_page gate_page;
    rp_answer_result answer;
    rp_ctl_jobs jobs; /* job triage's results (control_jobs.h) */
    rp_ctl_stats stats; /* stats' rows (control_stats.h) */
    rp_ctl_gate gate; /* one gate looked inside (control_gate.h) */
    rp_ctl_doctor *doctor;         /* doctor's probes (control_doctor.h) */
    const rp_config *doctor_cfg;   /* the configuration in force when it came */
} rp_ctl;

static const char *rp_ctl_user(const rp_ctl *c) { return c->env.has_user ? c->env.user : NULL; }

static void rp_ctl_free(rp_ctl *c) {
    rp_request_cleanup(&c->req);
    rp_pass_request_cleanup(&c->pass);
    for (size_t i = 0; i < c->n_gates; i++) rp_gate_cleanup(&c->gates[i]);
    free(c->gates);
    rp_ctl_jobs_cleanup(&c->jobs);
    rp_ctl_stats_cleanup(&c->stats);
    rp_ctl_gate_cleanup(&c->gate);
    rp_ctl_doctor_free(c->doctor);
    free(c);
}

/* Acks the request: answered, so its redelivery count is forgotten. */
static void rp_ctl_ack(rp_ctl *c) {
    rp_redelivery_forget(&c->d->redeliveries, c->identity);
    c->d->deps.ack(c->d->deps.self, c->generation, c->delivery_tag);
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
                    rp_publish_outcome_string(outcome), "reply_to", c->env.reply_to, "user",
                    rp_ctl_user(c), NULL);
        rp_ctl_ack(c);
    } else {
        RP_WARN("control reply not confirmed; the request will be delivered again", "outcome",
                rp_publish_outcome_string(outcome), NULL);
    }
    rp_ctl_free(c);
}

/* Publishes buf as the reply (or acks at once without reply_to); takes c. */
static void rp_ctl_reply(rp_ctl *c, rp_proto_buf *buf) {
    const rp_control_deps *d = &c->d->deps;
    if (c->env.reply_to[0] == '\0' || *d->publisher == NULL) {
        rp_ctl_ack(c);
        rp_proto_buf_cleanup(buf);
        rp_ctl_free(c);
        return;
    }
    char own[256];
    bool have_own = rp_amqp_url_user((*d->cfg)->broker.url, own, sizeof own);
    rp_status st = rp_amqp_control_reply(
        *d->publisher, c->env.reply_to, rp_encoding_content_type(c->enc), have_own ? own : NULL,
        c->env.has_correlation_id ? c->env.correlation_id : NULL, (rp_bytes){buf->ptr, buf->len},
        rp_ctl_replied, c);
    RP_DEBUG("control reply queued", "reply_to", c->env.reply_to, NULL);
    rp_proto_buf_cleanup(buf);
    if (st != RP_OK) {
        RP_ERROR("cannot publish a control reply", "status", rp_status_string(st), NULL);
        rp_ctl_free(c);
    }
}

static void rp_ctl_error(rp_ctl *c, const char *op, rp_status code, const char *message) {
    rp_metrics_control(c->d->deps.metrics, op, rp_proto_error_code(code));
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
        rp_metrics_control(c->d->deps.metrics, rp_op_string(c->req.op), "ok");
        rp_ctl_reply(c, buf);
        return;
    }
    rp_proto_buf_cleanup(buf);
    rp_status code;
    const char *message;
    rp_control_encode_failure(est, &code, &message);
    rp_ctl_error(c, rp_op_string(c->req.op), code, message);
}

/* ---- reap ---------------------------------------------------------------- */

static void rp_ctl_reap_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_pass_runner_run(c->d->deps.runner, &c->pass);
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
    if (!c->pass.dry_run) *c->d->deps.last_pass_at = c->pass.started_at + c->pass.clock_offset_ms;
    char who[300];
    snprintf(who, sizeof who, "%s", c->env.has_user ? c->env.user : "(unknown)");
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
static bool rp_ctl_store_ready(rp_pass_runner *r, rp_ctl *c) {
    char err[256];
    if (rp_pg_conn_ensure(r->conn, err, sizeof err) == RP_OK) return true;
    c->st = RP_ERR_UNAVAILABLE;
    return false;
}

static void rp_ctl_gates_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_pass_runner *r = c->d->deps.runner;
    if (!rp_ctl_store_ready(r, c)) return;
    rp_gate_query q = {
        .state = c->req.gates.state,
        .limit = (size_t)c->req.gates.limit,
        .project = c->req.gates.project,
        .has_kind = c->req.gates.has_kind,
        .kind = c->req.gates.kind,
        .queue = c->req.gates.queue,
        .origin = c->req.gates.origin,
        .reason = c->req.gates.reason,
        .older_than_ms = c->req.gates.older_than_seconds * 1000,
        .after = c->req.gates.after,
    };
    const rp_gate_port *g = &r->ports.gates;
    c->st = g->list(g->self, &q, &c->gates, &c->n_gates, &c->gate_page);
}

static void rp_ctl_gates_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    if (c->st != RP_OK) {
        rp_ctl_error(c, "gates", c->st, rp_control_gates_refusal(c->st));
        return;
    }
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_gates_reply(c->gates, c->n_gates, &c->gate_page, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

static void rp_ctl_answer_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_pass_runner *r = c->d->deps.runner;
    if (!rp_ctl_store_ready(r, c)) return;
    /* answered_by is the broker-validated user; the request's own "by" is
     * only a note. */
    rp_pg_store_set_claim_seconds(r->store, r->cfg->control.replay_claim_seconds);
    const rp_gate_port *g = &r->ports.gates;
    c->st = g->answer(g->self, c->req.answer.gate, c->req.answer.choice, c->env.user,
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
        rp_control_busy_text(msg, sizeof msg, c->req.answer.gate, c->answer.claimed_by,
                             c->answer.claimed_at);
        RP_WARN("gate answer refused", "gate", gate, "choice",
                rp_choice_string(c->req.answer.choice), "reason", msg, NULL);
        rp_ctl_error(c, "answer", RP_ERR_BUSY, msg);
        return;
    }
    if (c->st != RP_OK) {
        const char *msg = rp_control_answer_refusal(c->st);
        RP_WARN("gate answer refused", "gate", gate, "choice", rp_choice_string(c->req.answer.choice),
                "reason", msg, NULL);
        rp_ctl_error(c, "answer", c->st, msg);
        return;
    }
    if (c->answer.outcome != RP_OUTCOME_ALREADY_ANSWERED)
        rp_metrics_gate_answered(c->d->deps.metrics, c->answer.kind, c->answer.choice);
    RP_INFO("gate answered", "gate", gate, "choice", rp_choice_string(c->answer.choice),
            "outcome", rp_outcome_string(c->answer.outcome), "user", rp_ctl_user(c), NULL);
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
 * when another replica holds its claim (rp_replays.h). */
static void rp_ctl_replay_in_flight(rp_ctl *c) {
    char msg[400];
    rp_control_in_flight_text(msg, sizeof msg, c->req.answer.gate,
                              rp_pg_store_claimer(c->d->deps.runner->store));
    rp_ctl_error(c, "answer", RP_ERR_BUSY, msg);
}

/* Loop: the end of a replay (rp_replays.h). */
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
            "outcome", rp_outcome_string(r->answer.outcome), "user", rp_ctl_user(c), NULL);
    rp_proto_buf buf = {0};
    if (r->note) RP_WARN("replay published without some stored properties", "gate", gate,
                         "note", r->note, NULL);
    rp_status est = rp_proto_encode_answer_reply_note(c->req.answer.gate, r->answer.choice,
                                                      r->answer.outcome, r->note, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

/* ---- one gate looked inside (control_gate.h) ------------------------------- */

static void rp_ctl_gate_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_pass_runner *r = c->d->deps.runner;
    if (!rp_ctl_store_ready(r, c)) return;
    rp_ctl_gate_run(r, &c->req, &c->gate);
    c->st = c->gate.st;
}

static void rp_ctl_gate_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    if (c->st != RP_OK) c->gate.st = c->st; /* the store could not be reached */
    char msg[200];
    rp_proto_buf buf = {0};
    rp_status est = RP_OK;
    rp_status st = rp_ctl_gate_reply(&c->req, &c->gate, c->enc, &buf, &est, msg, sizeof msg);
    if (st != RP_OK) rp_ctl_error(c, "gate", st, msg);
    else rp_ctl_encoded(c, est, &buf);
}

/* ---- job triage: jobs, job, cancel (control_jobs.h) ---------------------- */

static void rp_ctl_jobs_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_pass_runner *r = c->d->deps.runner;
    if (!rp_ctl_store_ready(r, c)) return;
    rp_jobs_port p;
    rp_pg_jobs_port(r->store, &p);
    rp_ctl_jobs_run(&p, &c->req, rp_ctl_user(c), &c->jobs);
    c->st = c->jobs.st;
}

static void rp_ctl_jobs_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    if (c->st != RP_OK) c->jobs.st = c->st; /* the store could not be reached */
    char msg[200];
    rp_proto_buf buf = {0};
    rp_status est = RP_OK;
    rp_status st = rp_ctl_jobs_reply(&c->req, &c->jobs, rp_ctl_user(c), c->enc, &buf, &est, msg,
                                     sizeof msg);
    if (st != RP_OK) rp_ctl_error(c, rp_op_string(c->req.op), st, msg);
    else rp_ctl_encoded(c, est, &buf);
}

/* ---- stats (control_stats.h) ------------------------------------------------- */

static void rp_ctl_stats_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_pass_runner *r = c->d->deps.runner;
    if (!rp_ctl_store_ready(r, c)) return;
    rp_ctl_stats_run(r, rp_clock_wall_ms(), &c->stats);
    c->st = c->stats.st;
}

static void rp_ctl_stats_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    if (c->st != RP_OK) c->stats.st = c->st; /* the store could not be reached */
    char msg[200];
    rp_proto_buf buf = {0};
    rp_status est = RP_OK;
    rp_status st = rp_ctl_stats_reply(&c->stats, rp_ctl_user(c), c->enc, &buf, &est, msg,
                                      sizeof msg);
    if (st != RP_OK) rp_ctl_error(c, "stats", st, msg);
    else rp_ctl_encoded(c, est, &buf);
}

/* ---- doctor (control_doctor.h) ---------------------------------------------- */

static void rp_ctl_doctor_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_ctl *c = arg;
    rp_mgmt_broker *b = c->d->deps.runner->broker;
    rp_ctl_doctor_run(c->doctor, c->doctor_cfg, *c->d->deps.broker_password,
                      b != NULL ? rp_mgmt_broker_bridge(b) : NULL);
}

static void rp_ctl_doctor_done(void *arg, bool cancelled) {
    rp_ctl *c = arg;
    if (cancelled) {
        rp_ctl_free(c);
        return;
    }
    rp_proto_buf buf = {0};
    rp_status est = RP_OK;
    if (rp_ctl_doctor_reply(c->doctor, rp_ctl_user(c), c->enc, &buf, &est) != RP_OK)
        rp_ctl_error(c, "doctor", RP_ERR_INTERNAL, "out of memory");
    else rp_ctl_encoded(c, est, &buf);
}

/* ---- status -------------------------------------------------------------- */

static void rp_ctl_status(rp_ctl *c) {
    const rp_control_deps *d = &c->d->deps;
    rp_proto_status s = {
        .version = RP_VERSION_STRING,
        .broker_up = *d->broker_up,
        .store_up = *d->store_up,
        .last_pass_at = *d->last_pass_at,
        .open_sightings = *d->open_sightings,
    };
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_status_reply(&s, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

/* ---- the checks before a request runs (rp_control.h) ----------------------- */

/* A request the broker keeps handing back (its reply never confirmed, the
 * connection lost while it ran) is answered internal and acked after
 * RP_REDELIVERY_MAX redeliveries, so that no request can make reaperd
 * loop. True when c was answered so (c is then taken). */
static bool rp_ctl_redelivered_too_often(rp_ctl *c) {
    c->identity = rp_control_identity(&c->env);
    unsigned n = 0;
    if (!rp_control_redelivered_too_often(&c->d->redeliveries, c->identity, c->env.redelivered,
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
    if (rp_control_tell_once(&c->d->senders, rp_ctl_user(c), a))
        RP_WARN(rp_control_admission_string(a), "user",
                c->env.has_user ? c->env.user : "(none)", "reply_to", c->env.reply_to, "note",
                "no reply is sent; logged once per sender", NULL);
    rp_metrics_control(c->d->deps.metrics, NULL, rp_proto_error_code(RP_ERR_FORBIDDEN));
    rp_ctl_ack(c);
    rp_ctl_free(c);
}

/* True (and c answered busy) when a reap comes too soon for its user. */
static bool rp_ctl_reap_too_soon(rp_ctl *c) {
    char why[200];
    if (!rp_control_reap_too_soon(&c->d->senders, rp_ctl_user(c),
                                  (*c->d->deps.cfg)->control.reap_rate_seconds,
                                  rp_clock_mono_ms(), why, sizeof why))
        return false;
    rp_ctl_error(c, "reap", RP_ERR_BUSY, why);
    return true;
}

/* ---- dispatch ------------------------------------------------------------ */

rp_controller *rp_controller_new(const rp_control_deps *deps) {
    rp_controller *k = calloc(1, sizeof *k);
    if (k == NULL) return NULL;
    k->deps = *deps;
    rp_redelivery_init(&k->redeliveries);
    return k;
}

void rp_controller_free(rp_controller *k) { free(k); }

void rp_controller_on_message(rp_controller *k, const rp_amqp_message *msg) {
    const rp_control_deps *d = &k->deps;
    rp_ctl *c = calloc(1, sizeof *c);
    if (c == NULL) {
        RP_ERROR("out of memory: control request left for redelivery", NULL);
        return;
    }
    c->d = k;
    c->generation = *d->broker_generation;
    c->delivery_tag = msg->delivery_tag;
    rp_request_init(&c->req);
    rp_ctl_gate_init(&c->gate);
    rp_pass_request_init(&c->pass, RP_PASS_FULL, false);
    rp_amqp_control_envelope(msg, &c->env);
    rp_bytes ct = c->env.content_type;
    c->enc = rp_proto_reply_encoding(ct);

    if (rp_ctl_redelivered_too_often(c)) return;

    char own[256];
    rp_control_rules rules = {
        .allowed_users = &(*d->cfg)->control.allowed_users,
        .own_user = rp_amqp_url_user((*d->cfg)->broker.url, own, sizeof own) ? own : NULL,
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
        st = d->store_job(d->self, rp_ctl_reap_work, rp_ctl_reap_done, c);
        break;
    case RP_OP_GATES:
        st = d->store_job(d->self, rp_ctl_gates_work, rp_ctl_gates_done, c);
        break;
    case RP_OP_JOBS:
    case RP_OP_JOB:
    case RP_OP_CANCEL:
        st = d->store_job(d->self, rp_ctl_jobs_work, rp_ctl_jobs_done, c);
        break;
    case RP_OP_GATE:
        st = d->store_job(d->self, rp_ctl_gate_work, rp_ctl_gate_done, c);
        break;
    case RP_OP_STATS:
        st = d->store_job(d->self, rp_ctl_stats_work, rp_ctl_stats_done, c);
        break;
    case RP_OP_DOCTOR:
        c->doctor_cfg = *d->cfg;
        if ((c->doctor = rp_ctl_doctor_new()) == NULL) {
            rp_ctl_error(c, "doctor", RP_ERR_INTERNAL, "out of memory");
            return;
        }
        st = d->store_job(d->self, rp_ctl_doctor_work, rp_ctl_doctor_done, c);
        break;
    case RP_OP_ANSWER:
        switch (rp_control_route_answer(c->req.answer.choice,
                                        rp_replays_busy(d->replays, c->req.answer.gate))) {
        case RP_CONTROL_ANSWER_REPLAY:
            /* Published and confirmed on the loop before the gate is
             * settled (rp_replays.h). */
            st = rp_replays_start(d->replays, c->req.answer.gate, c->env.user, c->req.answer.by,
                                  rp_ctl_replay_done, c);
            if (st == RP_ERR_CONFLICT) {
                rp_ctl_replay_in_flight(c);
                return;
            }
            break;
        case RP_CONTROL_ANSWER_IN_FLIGHT:
            /* Settling it now could dismiss a message being replayed. */
            rp_ctl_replay_in_flight(c);
            return;
        default:
            st = d->store_job(d->self, rp_ctl_answer_work, rp_ctl_answer_done, c);
            break;
        }
        break;
    default:
        rp_ctl_error(c, NULL, RP_ERR_UNKNOWN_OP, "unknown op");
        return;
    }
    if (st != RP_OK) rp_ctl_error(c, rp_op_string(c->req.op), RP_ERR_UNAVAILABLE,
                                  "reaperd is shutting down");
}
