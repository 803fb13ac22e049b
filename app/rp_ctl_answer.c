/* The control op answer: a replay runs in the replays part (app/rp_replays.h:
 * read on the store thread, publish mandatory and confirmed on the loop,
 * settle on the store thread, then the reply); any other answer to a gate
 * whose replay is in flight here is refused busy; the rest goes through the
 * store's gate port on the store thread. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_ctl_internal.h"
#include "rp_log.h"
#include "rp_replay.h"

static void rp_ctl_answer_free(void *state) { free(state); }

static void rp_ctl_answer_work(rp_ctl *c) {
    if (!rp_ctl_store_ready(c)) return;
    const rp_control_store_port *s = &c->k->deps.store;
    /* answered_by is the broker-validated user; the request's own "by" is
     * only a note. */
    s->set_claim_seconds(s->self, s->config(s->self)->control.replay_claim_seconds);
    const rp_gate_port *g = s->gates(s->self);
    c->st = g->answer(g->self, c->req.answer.gate, c->req.answer.choice, c->env.user,
                      c->req.answer.by, c->state);
}

static void rp_ctl_answer_done(rp_ctl *c) {
    const rp_answer_result *answer = c->state;
    char gate[32];
    snprintf(gate, sizeof gate, "%" PRId64, c->req.answer.gate);
    if (c->st == RP_ERR_BUSY) {
        /* Another replica's (or this one's) replay holds the gate. */
        char msg[400];
        rp_control_busy_text(msg, sizeof msg, c->req.answer.gate, answer->claimed_by,
                             answer->claimed_at);
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
    if (answer->outcome != RP_OUTCOME_ALREADY_ANSWERED)
        rp_metrics_gate_answered(c->k->deps.metrics, answer->kind, answer->choice);
    RP_INFO("gate answered", "gate", gate, "choice", rp_choice_string(answer->choice),
            "outcome", rp_outcome_string(answer->outcome), "user", rp_ctl_user(c), NULL);
    rp_proto_buf buf = {0};
    rp_status est;
    if (answer->claim == RP_GATE_CLAIM_STALE) {
        /* This answer took a stale replay claim over (rp_gate.h). */
        char note[500];
        rp_replay_takeover_text(note, sizeof note, c->req.answer.gate, answer->claimed_by,
                                answer->claimed_at);
        est = rp_proto_encode_answer_reply_note(c->req.answer.gate, answer->choice,
                                                answer->outcome, note, c->enc, &buf);
    } else {
        est = rp_proto_encode_answer_reply(c->req.answer.gate, answer->choice, answer->outcome,
                                           c->enc, &buf);
    }
    rp_ctl_encoded(c, est, &buf);
}

/* A replay of the request's gate is in flight in this reaperd: busy, as
 * when another replica holds its claim (rp_replays.h). */
static void rp_ctl_replay_in_flight(rp_ctl *c) {
    const rp_control_store_port *s = &c->k->deps.store;
    char msg[400];
    rp_control_in_flight_text(msg, sizeof msg, c->req.answer.gate, s->claimer(s->self));
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

static rp_status rp_ctl_answer_start(rp_ctl *c) {
    rp_replays *replays = c->k->deps.replays;
    rp_status st;
    switch (rp_control_route_answer(c->req.answer.choice,
                                    rp_replays_busy(replays, c->req.answer.gate))) {
    case RP_CONTROL_ANSWER_REPLAY:
        /* Published and confirmed on the loop before the gate is settled
         * (rp_replays.h). */
        st = rp_replays_start(replays, c->req.answer.gate, c->env.user, c->req.answer.by,
                              rp_ctl_replay_done, c);
        if (st == RP_ERR_CONFLICT) {
            rp_ctl_replay_in_flight(c);
            return RP_OK;
        }
        return st;
    case RP_CONTROL_ANSWER_IN_FLIGHT:
        /* Settling it now could dismiss a message being replayed. */
        rp_ctl_replay_in_flight(c);
        return RP_OK;
    default:
        if ((c->state = calloc(1, sizeof(rp_answer_result))) == NULL) return RP_ERR_NOMEM;
        c->state_free = rp_ctl_answer_free;
        return rp_ctl_store_job(c);
    }
}

const rp_ctl_op rp_ctl_op_answer = {
    .op = RP_OP_ANSWER, .start = rp_ctl_answer_start, .work = rp_ctl_answer_work,
    .done = rp_ctl_answer_done};
