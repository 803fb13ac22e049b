/*
 * rp_sweep_vhost_turns.h - the fleet's sweep turn taken vhost by vhost
 * (issue #19 items 1 and 3): before a scheduled sweep, the turn of each
 * watched vhost (core/rp_sweep_vhosts.h) is asked through the store port
 * (core/rp_sweep_turn.h, a PostgreSQL advisory lock per schema and vhost);
 * the sweep lists the vhosts whose turn this replica holds, or could not
 * ask (a sweep twice is better than none), and runs as a lease reap when
 * other replicas hold every one. After the sweep, a holder whose sweep
 * could not read everything gives its turns back; with reap.enabled false
 * a lease reap gives back every turn held.
 *
 * Threads: the store thread (the port's). Ownership: a
 * rp_sweep_vhost_turns owns its vhost names (cleanup frees them); the
 * port is borrowed for each call; *held is the caller's, bit i for the
 * i-th watched vhost.
 */
#ifndef RP_SWEEP_VHOST_TURNS_H
#define RP_SWEEP_VHOST_TURNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_pass.h"
#include "rp_pass_run_port.h"
#include "rp_sweep_turn.h"
#include "rp_sweep_vhosts.h"

typedef struct rp_sweep_vhost_turns {
    rp_sweep_vhosts watched;
    rp_sweep_turn turn[RP_SWEEP_VHOSTS_MAX]; /* per watched vhost */
    /* The vhosts to sweep (into watched), n_swept 0 with watched.n 0: the
     * watched vhosts could not be told (every vhost is swept). */
    const char *swept[RP_SWEEP_VHOSTS_MAX];
    size_t n_swept;
} rp_sweep_vhost_turns;

/* Asks the turns for a scheduled pass of scope (a lease reap asks none,
 * but gives back what *held holds when reap.enabled is false). Logs when
 * a turn is taken, lost or given back, naming the vhost. */
void rp_sweep_vhost_turns_take(rp_sweep_vhost_turns *t, const rp_pass_run_port *port,
                               rp_pass_scope scope, uint64_t *held);
/* The scope the pass runs: wanted, or RP_PASS_LEASES when other replicas
 * hold every watched vhost's turn. */
rp_pass_scope rp_sweep_vhost_turns_scope(const rp_sweep_vhost_turns *t, rp_pass_scope wanted);
/* After the sweep: the turns taken are given back when
 * rp_sweep_turn_give_back(ok_status, read_all) says so. */
void rp_sweep_vhost_turns_give_back(rp_sweep_vhost_turns *t, const rp_pass_run_port *port,
                                    bool ok_status, bool read_all, uint64_t *held);
void rp_sweep_vhost_turns_cleanup(rp_sweep_vhost_turns *t);

#endif
