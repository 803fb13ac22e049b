/* The control op gates: one page of gates through the store's gate port on
 * the store thread. */
#include <stdlib.h>

#include "rp_ctl_internal.h"

typedef struct rp_ctl_gates {
    rp_gate *gates;
    size_t n_gates;
    rp_gate_page page;
} rp_ctl_gates;

static void rp_ctl_gates_free(void *state) {
    rp_ctl_gates *g = state;
    if (g == NULL) return;
    for (size_t i = 0; i < g->n_gates; i++) rp_gate_cleanup(&g->gates[i]);
    free(g->gates);
    free(g);
}

static rp_status rp_ctl_gates_start(rp_ctl *c) {
    if ((c->state = calloc(1, sizeof(rp_ctl_gates))) == NULL) return RP_ERR_NOMEM;
    c->state_free = rp_ctl_gates_free;
    return rp_ctl_store_job(c);
}

static void rp_ctl_gates_work(rp_ctl *c) {
    if (!rp_ctl_store_ready(c)) return;
    rp_ctl_gates *r = c->state;
    const rp_control_store_port *s = &c->k->deps.store;
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
    const rp_gate_port *g = s->gates(s->self);
    c->st = g->list(g->self, &q, &r->gates, &r->n_gates, &r->page);
}

static void rp_ctl_gates_done(rp_ctl *c) {
    rp_ctl_gates *r = c->state;
    if (c->st != RP_OK) {
        rp_ctl_error(c, "gates", c->st, rp_control_gates_refusal(c->st));
        return;
    }
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_gates_reply(r->gates, r->n_gates, &r->page, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_gates = {
    .op = RP_OP_GATES, .start = rp_ctl_gates_start, .work = rp_ctl_gates_work,
    .done = rp_ctl_gates_done};
