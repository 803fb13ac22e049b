/* The fleet's sweep turn vhost by vhost (rp_sweep_vhost_turns.h). */
#include "rp_sweep_vhost_turns.h"

#include <string.h>

#include "rp_log.h"

static uint64_t rp_bit(size_t i) { return (uint64_t)1 << i; }

/* Every turn unknown: each watched vhost is swept. */
static void rp_all_unknown(rp_sweep_vhost_turns *t) {
    t->n_swept = 0;
    for (size_t i = 0; i < t->watched.n; i++) {
        t->turn[i] = RP_SWEEP_TURN_UNKNOWN;
        t->swept[t->n_swept++] = t->watched.names[i];
    }
}

void rp_sweep_vhost_turns_take(rp_sweep_vhost_turns *t, const rp_pass_run_port *port,
                               rp_pass_scope scope, uint64_t *held) {
    memset(t, 0, sizeof *t);
    const rp_config *cfg = port->config(port->self);
    if (rp_sweep_vhosts_watched(cfg, &t->watched) != RP_OK) return;
    rp_all_unknown(t);
    char err[256];
    if (port->connect(port->self, err, sizeof err) != RP_OK) return;
    const rp_store_port *store = &port->ports(port->self)->store;
    if (store->take_sweep_turn == NULL) return;
    if (scope != RP_PASS_FULL) {
        for (size_t i = 0; !cfg->reap.enabled && i < t->watched.n; i++) {
            if (!(*held & rp_bit(i)) || store->give_sweep_turn == NULL ||
                store->give_sweep_turn(store->self, t->watched.names[i]) != RP_OK)
                continue;
            *held &= ~rp_bit(i);
            RP_INFO("sweep turn given back: reap.enabled is false", "vhost",
                    t->watched.names[i], NULL);
        }
        return;
    }
    t->n_swept = 0;
    for (size_t i = 0; i < t->watched.n; i++) {
        const char *vhost = t->watched.names[i];
        bool got = false, was = (*held & rp_bit(i)) != 0;
        if (store->take_sweep_turn(store->self, vhost, &got) != RP_OK) {
            t->turn[i] = RP_SWEEP_TURN_UNKNOWN;
            t->swept[t->n_swept++] = vhost;
            continue;
        }
        if (got && !was) RP_INFO("sweep turn taken: this replica sweeps", "vhost", vhost, NULL);
        if (!got && was)
            RP_INFO("sweep turn lost (a new store session): another replica sweeps", "vhost",
                    vhost, NULL);
        if (!got)
            RP_DEBUG("sweep left to the replica holding the turn: lease reap only", "vhost",
                     vhost, NULL);
        if (got) *held |= rp_bit(i);
        else *held &= ~rp_bit(i);
        t->turn[i] = got ? RP_SWEEP_TURN_TAKEN : RP_SWEEP_TURN_HELD;
        if (got) t->swept[t->n_swept++] = vhost;
    }
}

rp_pass_scope rp_sweep_vhost_turns_scope(const rp_sweep_vhost_turns *t, rp_pass_scope wanted) {
    if (t->watched.n == 0) return wanted; /* not told: every vhost */
    return rp_sweep_turn_scope(wanted, t->n_swept > 0 ? RP_SWEEP_TURN_TAKEN : RP_SWEEP_TURN_HELD);
}

void rp_sweep_vhost_turns_give_back(rp_sweep_vhost_turns *t, const rp_pass_run_port *port,
                                    bool ok_status, bool read_all, uint64_t *held) {
    if (!rp_sweep_turn_give_back(ok_status, read_all)) return;
    const rp_store_port *store = NULL;
    for (size_t i = 0; i < t->watched.n; i++) {
        if (t->turn[i] != RP_SWEEP_TURN_TAKEN) continue;
        if (store == NULL) store = &port->ports(port->self)->store;
        if (store->give_sweep_turn == NULL ||
            store->give_sweep_turn(store->self, t->watched.names[i]) != RP_OK)
            continue;
        *held &= ~rp_bit(i);
        RP_INFO("sweep turn given back: this sweep could not read everything", "vhost",
                t->watched.names[i], NULL);
    }
}

void rp_sweep_vhost_turns_cleanup(rp_sweep_vhost_turns *t) {
    rp_sweep_vhosts_cleanup(&t->watched);
    memset(t, 0, sizeof *t);
}
