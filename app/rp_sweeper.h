/*
 * rp_sweeper.h - when reaperd's passes run: the store thread, one pass at a
 * time on it, the sweep timer, the lease-deadline timer and the lease
 * LISTEN that brings it forward, and the store's up/down news.
 *
 * Passes. One pass runs at a time, on the store thread:
 *  - the sweep (a full pass) every reap.interval_seconds while reap.enabled;
 *  - the lease reap (RP_PASS_LEASES) on the deadline timer, which after
 *    every pass is armed for the earliest lease_expires_at + grace still in
 *    the table (at most interval_seconds away), so a dead worker's job is
 *    back about when its lease runs out. It runs even with reap.enabled
 *    false: it is crash recovery. A lease set meanwhile (heard on the
 *    LISTEN) brings the timer forward when it expires earlier; each time
 *    the LISTEN is up again a lease reap runs (what was set while it was
 *    down was not heard).
 * A timer that fires while a pass runs leaves a wish that the end of the
 * pass fulfils; a sweep wish covers a lease wish (every pass reaps leases).
 *
 * The store thread (a worker, support/worker.h) is the sweeper's: while
 * idle it checks the store every RP_SWEEPER_STORE_CHECK_MS through the
 * pass port; the loop hears when the store's state changed (and every 30th
 * failed check). Other parts run their store jobs on it
 * (rp_sweeper_store).
 *
 * Ownership: deps and what it points to are borrowed for the sweeper's
 * life (cfg is read through *deps->cfg at each use: a reload replaces it).
 * Threads: every call on the loop thread; the pass port's run and store on
 * the store thread, the rest on the loop.
 */
#ifndef RP_SWEEPER_H
#define RP_SWEEPER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_config.h"
#include "rp_ports.h"
#include "rp_status.h"
#include "rp_sweep_port.h"
#include "worker.h"

#define RP_SWEEPER_STORE_CHECK_MS 2000

typedef struct rp_sweeper rp_sweeper;

typedef struct rp_sweeper_deps {
    const rp_config *const *cfg; /* the configuration in force */
    const bool *stopping;        /* read atomically: no new pass once set */
    rp_clock_port clock;         /* this host's wall clock */
    rp_sweep_port pass;
    rp_lease_listen_port listen;
    /* Loop thread: the store's state changed (before it is logged). */
    void (*on_store)(void *arg, bool up);
    void *arg;
} rp_sweeper_deps;

/* What the sweeper has in mind (loop thread). */
typedef struct rp_sweeper_state {
    bool pass_running;
    bool want_sweep, want_leases;
    int64_t deadline_fire_ms; /* wall clock; INT64_MAX: not armed */
    int64_t clock_offset_ms;  /* measured by the last pass */
    uint64_t deadline_rearms; /* times a notification brought the timer forward */
    uint64_t passes;          /* passes submitted */
} rp_sweeper_state;

/* Makes the timers and starts the store thread (it starts checking the
 * store at once). NULL when that fails. */
rp_sweeper *rp_sweeper_new(struct event_base *base, const rp_sweeper_deps *deps);
/* Opens the lease LISTEN, runs the first pass (a sweep when reap.enabled,
 * else a lease reap) and arms the sweep timer. */
rp_status rp_sweeper_start(rp_sweeper *s) RP_MUSTCHECK;
/* The configuration in force changed from old: the sweep timer follows
 * reap.enabled and reap.interval_seconds, and the store thread writes the
 * new one (*deps->cfg) to *store_cfg between two jobs, never inside a pass
 * (its next job reads it; a warning when the thread does not take it).
 * store_cfg is borrowed and must outlive the sweeper. */
void rp_sweeper_reconfigure(rp_sweeper *s, const rp_config *old, const rp_config **store_cfg);
/* The store thread, for other store jobs (their work function's ctx is the
 * sweeper: not theirs to use). Valid until rp_sweeper_free. */
rp_worker *rp_sweeper_store(rp_sweeper *s);
bool rp_sweeper_busy(const rp_sweeper *s); /* a pass runs */
void rp_sweeper_state_get(const rp_sweeper *s, rp_sweeper_state *out);
/* Stopping: the timers stop and the LISTEN closes; the pass in flight ends
 * at its next row (deps->stopping). */
void rp_sweeper_stop(rp_sweeper *s);
/* Ends the store thread (the pass in flight finishes first; what was
 * posted or queued gets its done function, cancelled when not run), then
 * frees everything. NULL: nothing. */
void rp_sweeper_free(rp_sweeper *s);

#endif
