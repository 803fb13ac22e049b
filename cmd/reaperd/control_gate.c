/* The `gate` op's use case (control_gate.h). */
#include "control_gate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_control.h"
#include "rp_amqp_restore.h"
#include "rp_pg_store.h"
#include "rp_replay.h"

void rp_ctl_gate_init(rp_ctl_gate *g) {
    memset(g, 0, sizeof *g);
    rp_gate_look_init(&g->look);
}

void rp_ctl_gate_cleanup(rp_ctl_gate *g) { rp_gate_look_cleanup(&g->look); }

/* Whether a replay answered now would go ahead, and why not: the gate's
 * state first (answered, a live claim), then the checks a replay makes
 * before it publishes (the broker may still refuse the message). */
static void rp_judge_replay(const rp_config *cfg, rp_ctl_gate *g) {
    const rp_gate_look *l = &g->look;
    const rp_gate *gt = &l->gate;
    g->replayable = false;
    if (gt->answered) {
        snprintf(g->why_not, sizeof g->why_not, "gate %" PRId64 " was answered already (%s)",
                 gt->id, rp_choice_string(gt->answer));
        return;
    }
    rp_replay_state s = rp_replay_state_of(false, gt->claim);
    if (rp_replay_state_refusal(s, gt->id, gt->claimed_by, gt->claimed_at, g->why_not,
                                sizeof g->why_not) == RP_ERR_BUSY)
        return;
    char kept_why[256];
    const char *const own[] = {cfg->broker.control_queue, cfg->broker.tap_queue};
    rp_replay_facts f = {
        .kind = gt->kind,
        .has_dead_letter = l->has_dead_letter,
        .not_replayable = l->has_dead_letter &&
                                  rp_amqp_restore_refusal(l->properties_json, kept_why,
                                                          sizeof kept_why)
                              ? kept_why
                              : NULL,
        .origin_queue = gt->origin_queue,
        .stored_whole = !l->body_truncated && l->headers_json != NULL,
        .owned = cfg->reap.owned_queue_pattern.code,
        .own_queues = own,
        .n_own = RP_ARRAY_LEN(own),
        .vhost = l->vhost,
        .vhost_is_ours = l->vhost != NULL && rp_amqp_url_vhost_is(cfg->broker.url, l->vhost),
    };
    char *queue = NULL;
    if (rp_replay_check(&f, &queue, g->why_not, sizeof g->why_not) == RP_OK) {
        g->replayable = true;
        g->why_not[0] = '\0';
    }
    free(queue);
}

void rp_ctl_gate_run(rp_pass_runner *r, const rp_request *req, rp_ctl_gate *g) {
    rp_gate_look_port p;
    rp_pg_store_set_claim_seconds(r->store, r->cfg->control.replay_claim_seconds);
    rp_pg_gate_look_port(r->store, &p);
    g->st = p.look(p.self, req->gate.gate, req->gate.body_offset, (size_t)req->gate.body_limit,
                   &g->look);
    if (g->st == RP_OK) rp_judge_replay(r->cfg, g);
}

rp_status rp_ctl_gate_reply(const rp_request *req, const rp_ctl_gate *g, rp_encoding enc,
                            rp_proto_buf *buf, rp_status *est, char *msg, size_t n) {
    if (g->st == RP_ERR_NOT_FOUND) {
        snprintf(msg, n, "gate %" PRId64 " does not exist", req->gate.gate);
        return g->st;
    }
    if (g->st != RP_OK) {
        snprintf(msg, n, "%s", g->st == RP_ERR_UNAVAILABLE ? "the store is unreachable"
                                                           : "reading the gate failed");
        return g->st;
    }
    *est = rp_proto_encode_gate_reply(&g->look, g->replayable ? NULL : g->why_not, enc, buf);
    return RP_OK;
}
