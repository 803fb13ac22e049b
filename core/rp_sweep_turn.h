/*
 * rp_sweep_turn.h - replicas sweep a vhost one at a time (issue #19 item 3):
 * the fleet's turn to sweep, and what a replica runs when it has it or not.
 *
 * Leader-less: the turn is a PostgreSQL session advisory lock per schema
 * and vhost (the store port's take_sweep_turn, adapters/postgres), taken
 * before each scheduled sweep and kept by the session that got it. A
 * replica that gets it (or already holds it) runs the full sweep: the
 * management API listing, the judgements, the policy reconcile, the
 * backfill. One that does not runs the lease reap only (its share of the
 * expired leases, split row by row by SKIP LOCKED), so the listing calls
 * per interval do not grow with the replica count. The holder keeps the
 * turn until its session ends (killed, stopped, a lost connection) or it
 * gives the turn back: after a sweep that could not read everything (a
 * replica cut off from the broker must not keep the others from sweeping)
 * and when reap.enabled is false. The next replica to sweep takes it.
 * A turn that cannot be asked (the store down, no such port) sweeps: a
 * sweep twice is better than none.
 *
 * Pure: no I/O, no allocation. Ownership: strings borrowed for the call.
 */
#ifndef RP_SWEEP_TURN_H
#define RP_SWEEP_TURN_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_pass.h"

typedef enum rp_sweep_turn {
    RP_SWEEP_TURN_TAKEN = 0, /* this replica holds the turn */
    RP_SWEEP_TURN_HELD,      /* another replica holds it */
    RP_SWEEP_TURN_UNKNOWN,   /* not asked or not answered */
} rp_sweep_turn;

/* "taken", "held", "unknown"; "?" outside the enum. */
const char *rp_sweep_turn_string(rp_sweep_turn t);

/* The scope a scheduled pass of scope `wanted` runs: a full sweep only
 * with the turn taken or unknown; the lease reap otherwise. */
rp_pass_scope rp_sweep_turn_scope(rp_pass_scope wanted, rp_sweep_turn t);

/* Whether the holder gives the turn back after its sweep: the sweep did
 * not finish (ok_status false) or could not read every source
 * (read_all false). */
bool rp_sweep_turn_give_back(bool ok_status, bool read_all);

/* The vhost of an amqp[s] URL (its path, percent-decoded; "/" when the
 * URL has no path or an empty one), into out (n bytes). false when out is
 * too small or the URL has a bad escape (out then holds ""). */
bool rp_sweep_turn_vhost(const char *url, char *out, size_t n);

#endif
