/*
 * rp_pass_sequence.h - one pass request run from start to end
 * (core/rp_pass_request.h) over the pass-run port (core/rp_pass_run_port.h):
 * the store connected when needed (a store that cannot be reached is
 * reported the way a pass would, rp_pass_report_unreachable), the pass with
 * the request's options, the backfill's read begun and ended around it, the
 * policy reconcile after a full pass over every project (CONTRACT section
 * 8), then, unless stopping, the open sightings and the next lease
 * deadline. The daemon's store thread runs it for the sweeps, the lease
 * reaps and the control op reap; --once on its store thread.
 *
 * Ownership: the port and its self are borrowed for the call; the request
 * is the caller's (its report is cleared first, then filled).
 * Threads: the thread the port serves; every call blocks.
 */
#ifndef RP_PASS_SEQUENCE_H
#define RP_PASS_SEQUENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_config.h"
#include "rp_observe.h"
#include "rp_pass.h"
#include "rp_pass_request.h"
#include "rp_pass_run_port.h"
#include "rp_sweep_port.h"

/* The pass options every pass of reaperd starts from: rp_pass_options_from_config
 * (cfg borrowed: the options point into it) with verdicts logged
 * (rp_verdict_log). */
void rp_pass_sequence_options(const rp_config *cfg, rp_pass_options *opt);

/* Runs req over port. A store that cannot be reached is reported in
 * req->report (unreadable "job_queue", with the reason in a note), never
 * fatal. */
void rp_pass_sequence_run(const rp_pass_run_port *port, rp_pass_request *req);

/* The sweeper's pass port (core/rp_sweep_port.h, app/rp_sweeper.h) over
 * the sequence. run (store thread): replicas sweep one at a time
 * (core/rp_sweep_turn.h), vhost by vhost (rp_sweep_vhost_turns.h): a
 * sweep first takes the fleet's turn of each watched vhost through the
 * store port and sweeps those it holds; it runs as a lease reap
 * (scope_name says so) when other replicas hold them all; a holder whose
 * sweep could not read everything gives its turns back. Then a pass request of that scope,
 * progress and stop hooks run over port, then the open sightings and gates
 * into the metrics (rp_observe_pass_store), and the store's clock offset
 * and the next lease deadline back to the sweeper. finish (loop thread):
 * "pass stopped early" when the status is not ok, the report's log lines
 * (rp_report_log), the pass in the metrics (rp_observe_pass_done, the
 * policies verified unless a dry run), *last_pass_at and *open_sightings
 * kept for the status reply, and after_sweep once a full pass over every
 * project that was not a dry run is done. store: port's probe.
 *
 * Ownership: everything is borrowed and must outlive the sweeper; the
 * port's self is sp. */
typedef struct rp_sweep_passes {
    rp_pass_run_port run;       /* its probe is the sweep port's store */
    rp_observe *observe;
    rp_time_ms *last_pass_at;   /* loop thread */
    int64_t *open_sightings;    /* loop thread; kept when not known */
    void (*after_sweep)(void *arg); /* loop thread; may be NULL */
    void *arg;
    /* Store thread: this replica holds the fleet's sweep turn of a
     * watched vhost (set by run; false to start with). */
    bool turn_held;
    /* Store thread: which (bit i: the i-th watched vhost,
     * rp_sweep_vhost_turns.h); 0 to start with. */
    uint64_t turns_held;
} rp_sweep_passes;

void rp_sweep_passes_port(rp_sweep_passes *sp, rp_sweep_port *out);

#endif
