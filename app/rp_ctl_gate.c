/* The control op gate (proto/SCHEMA.md section 4; core/rp_gate_look.h): one
 * gate looked inside on the store thread (its job, its stored dead letter, a
 * window of the body), whether a replay would go ahead now (core's replay
 * checks, rp_replay.h), then on the loop the reply. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_ctl_internal.h"
#include "rp_replay.h"

typedef struct rp_ctl_gate {
    rp_status st; /* the look's status */
    rp_gate_look look;
    bool replayable;
    char why_not[400]; /* when !replayable */
} rp_ctl_gate;

static void rp_ctl_gate_free(void *state) {
    rp_ctl_gate *g = state;
    if (g == NULL) return;
    rp_gate_look_cleanup(&g->look);
    free(g);
}

/* Whether a replay answered now would go ahead, and why not: the gate's
 * state first (answered, a live claim), then the checks a replay makes
 * before it publishes (the broker may still refuse the message). */
static void rp_judge_replay(const rp_control_store_port *s, const rp_config *cfg,
                            rp_ctl_gate *g) {
    const rp_gate_look *l = &g->look;
    const rp_gate *gt = &l->gate;
    g->replayable = false;
    if (gt->answered) {
        snprintf(g->why_not, sizeof g->why_not, "gate %" PRId64 " was answered already (%s)",
                 gt->id, rp_choice_string(gt->answer));
        return;
    }
    rp_replay_state rs = rp_replay_state_of(false, gt->claim);
    if (rp_replay_state_refusal(rs, gt->id, gt->claimed_by, gt->claimed_at, g->why_not,
                                sizeof g->why_not) == RP_ERR_BUSY)
        return;
    char kept_why[256];
    const char *const own[] = {cfg->broker.control_queue, cfg->broker.tap_queue};
    rp_replay_facts f = {
        .kind = gt->kind,
        .has_dead_letter = l->has_dead_letter,
        .not_replayable = l->has_dead_letter &&
                                  s->kept_refusal(s->self, l->properties_json, kept_why,
                                                  sizeof kept_why)
                              ? kept_why
                              : NULL,
        .origin_queue = gt->origin_queue,
        .stored_whole = !l->body_truncated && l->headers_json != NULL,
        .owned = cfg->reap.owned_queue_pattern.code,
        .own_queues = own,
        .n_own = RP_ARRAY_LEN(own),
        .vhost = l->vhost,
        .vhost_is_ours = l->vhost != NULL && s->vhost_is_ours(s->self, cfg, l->vhost),
    };
    char *queue = NULL;
    if (rp_replay_check(&f, &queue, g->why_not, sizeof g->why_not) == RP_OK) {
        g->replayable = true;
        g->why_not[0] = '\0';
    }
    free(queue);
}

static rp_status rp_ctl_gate_start(rp_ctl *c) {
    rp_ctl_gate *g = calloc(1, sizeof *g);
    if (g == NULL) return RP_ERR_NOMEM;
    rp_gate_look_init(&g->look);
    c->state = g;
    c->state_free = rp_ctl_gate_free;
    return rp_ctl_store_job(c);
}

static void rp_ctl_gate_work(rp_ctl *c) {
    if (!rp_ctl_store_ready(c)) return;
    rp_ctl_gate *g = c->state;
    const rp_control_store_port *s = &c->k->deps.store;
    const rp_config *cfg = s->config(s->self);
    rp_gate_look_port p;
    s->set_claim_seconds(s->self, cfg->control.replay_claim_seconds);
    s->gate_look(s->self, &p);
    g->st = p.look(p.self, c->req.gate.gate, c->req.gate.body_offset,
                   (size_t)c->req.gate.body_limit, &g->look);
    if (g->st == RP_OK) rp_judge_replay(s, cfg, g);
    c->st = g->st;
}

static void rp_ctl_gate_done(rp_ctl *c) {
    rp_ctl_gate *g = c->state;
    if (c->st != RP_OK) g->st = c->st; /* the store could not be reached */
    char msg[200];
    if (g->st == RP_ERR_NOT_FOUND) {
        snprintf(msg, sizeof msg, "gate %" PRId64 " does not exist", c->req.gate.gate);
        rp_ctl_error(c, "gate", g->st, msg);
        return;
    }
    if (g->st != RP_OK) {
        snprintf(msg, sizeof msg, "%s", g->st == RP_ERR_UNAVAILABLE ? "the store is unreachable"
                                                                    : "reading the gate failed");
        rp_ctl_error(c, "gate", g->st, msg);
        return;
    }
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_gate_reply(&g->look, g->replayable ? NULL : g->why_not,
                                               c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_gate = {
    .op = RP_OP_GATE, .start = rp_ctl_gate_start, .work = rp_ctl_gate_work,
    .done = rp_ctl_gate_done};
