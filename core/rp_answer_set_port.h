/*
 * rp_answer_set_port.h - the store side of answer sets (rp_answer_set.h):
 * make a set (its gates frozen at that moment), read it, cancel it, and,
 * for the runner (app/rp_answer_sets.h), take a running set under a lease,
 * step through its pending gates and end it. adapters/postgres/
 * rp_pg_answer_set.h fills it (migration 0011). Store thread only; every
 * call blocks.
 *
 * Ownership: what a call fills is the caller's struct; rp_answer_set_made's
 * queues are heap (rp_answer_set_made_cleanup). Strings passed in are
 * borrowed for the call.
 */
#ifndef RP_ANSWER_SET_PORT_H
#define RP_ANSWER_SET_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rp_answer_set.h"
#include "rp_common.h"
#include "rp_gate.h"
#include "rp_ports.h"
#include "rp_status.h"

/* What a set is made of: the ids named (n_ids > 0), or else the open gates
 * that q's filters match (q->state, limit and after are not read: a set
 * takes every open gate that matches). */
typedef struct rp_answer_set_spec {
    rp_choice choice;       /* replay or dismiss */
    int rate;               /* 1..RP_ANSWER_SET_RATE_MAX */
    const char *by;         /* the broker-validated user */
    const char *note;       /* the request's own "by", or NULL */
    bool dry_run;           /* count only: nothing is made */
    const int64_t *ids;
    size_t n_ids;
    rp_gate_query q;
} rp_answer_set_spec;

/* How many of a set's gates go to one queue (the origin queue a replay
 * publishes to, as stored; "" when a gate has no dead letter). */
typedef struct rp_answer_set_queue {
    char *queue; /* heap */
    int64_t count;
} rp_answer_set_queue;

/* At most this many queues are listed (the largest first); the rest are
 * counted in other_queues. */
#define RP_ANSWER_SET_QUEUES_MAX 50

typedef struct rp_answer_set_made {
    int64_t id;       /* 0 for a dry run */
    int64_t total;    /* gates in the set (a dry run: that would be) */
    int64_t skipped;  /* ids named that are no open gate (not in the set) */
    rp_answer_set_queue *queues; /* heap array of n_queues */
    size_t n_queues;
    int64_t other_queues; /* gates going to queues past the list */
} rp_answer_set_made;

static inline void rp_answer_set_made_cleanup(rp_answer_set_made *m) {
    for (size_t i = 0; i < m->n_queues; i++) free(m->queues[i].queue);
    free(m->queues);
    m->queues = NULL;
    m->n_queues = 0;
}

/* One set as stored. Times are Unix ms on the store's clock (0: none). */
typedef struct rp_answer_set_row {
    int64_t id;
    rp_choice choice;
    int rate;
    rp_answer_set_state state;
    char requested_by[257];
    char note[257];          /* "" when none */
    int64_t total;
    int64_t answered;
    int64_t failed;
    int64_t pending;
    char stop_reason[512];   /* "" when none */
    char owner[160];         /* "" when no runner holds it */
    rp_time_ms created_at;
    rp_time_ms updated_at;
    rp_time_ms finished_at;
} rp_answer_set_row;

/* One gate's result, recorded by step. */
typedef struct rp_answer_set_mark {
    int64_t gate;
    bool answered;           /* else failed */
    const char *outcome;     /* the gate's outcome ("replayed", "already_answered", ...) or NULL */
    const char *message;     /* why it failed, or NULL */
} rp_answer_set_mark;

typedef struct rp_answer_set_port {
    void *self;
    /* Makes a set from spec (or counts it, dry_run): one transaction that
     * freezes the ids. RP_ERR_NOT_FOUND when no open gate matches (nothing
     * made); RP_ERR_INVALID for a spec outside its bounds. */
    rp_status (*create)(void *self, const rp_answer_set_spec *spec, rp_answer_set_made *out);
    /* Reads set id. RP_ERR_NOT_FOUND. */
    rp_status (*get)(void *self, int64_t id, rp_answer_set_row *out);
    /* Cancels a running set (by and the time are kept; the runner sees it
     * at its next step). *out is the set after. RP_ERR_NOT_FOUND; a set
     * that is over already is returned as it is with RP_ERR_CONFLICT. */
    rp_status (*cancel)(void *self, int64_t id, const char *by, rp_answer_set_row *out);
    /* Takes the oldest running set no other runner holds (its lease,
     * lease_ms long, free or run out) for owner: *found false when none. */
    rp_status (*take)(void *self, const char *owner, int64_t lease_ms, rp_answer_set_row *out,
                      bool *found);
    /* One step of a taken set, one transaction: records marks (n may be 0),
     * renews the lease, reads the set into *out and up to max of its
     * pending gate ids above after, lowest first, into ids (*n). A set no
     * longer held by owner (taken over) is RP_ERR_CONFLICT with nothing
     * recorded. */
    rp_status (*step)(void *self, int64_t id, const char *owner, int64_t lease_ms,
                      const rp_answer_set_mark *marks, size_t n_marks, int64_t after,
                      int64_t *ids, size_t max, size_t *n, rp_answer_set_row *out);
    /* Ends a set held by owner in state (done or stopped; reason may be
     * NULL), or, for RP_ANSWER_SET_RUNNING, lets it go (the lease cleared:
     * another runner takes it at once). A running set that was cancelled
     * meanwhile stays cancelled. */
    rp_status (*finish)(void *self, int64_t id, const char *owner, rp_answer_set_state state,
                        const char *reason);
} rp_answer_set_port;

#endif
