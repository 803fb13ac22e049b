/*
 * rp_pass_request.h - one pass asked for and what came of it: the scope,
 * dry run and project, the progress and stop hooks, then the status, the
 * report, the store's clock at the start, the duration, the open sightings
 * and the next lease deadline. Plain data shared by whoever runs a pass
 * (app/rp_pass_sequence.h fills it on the store thread, over the pass
 * runner of cmd/reaperd/ports.h) and whoever asks
 * for one (the sweeps, `--once`, the control op reap in app/).
 *
 * Ownership: the request owns its project and its report
 * (rp_pass_request_cleanup frees both); the hooks' arguments are borrowed.
 */
#ifndef RP_PASS_REQUEST_H
#define RP_PASS_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_pass.h"
#include "rp_report.h"
#include "rp_verdict.h"
#include "rp_status.h"

typedef struct rp_pass_request {
    /* What to run. */
    rp_pass_scope scope;
    bool dry_run;
    char *project;             /* NULL: every project */
    rp_pass_progress_fn progress;
    void *progress_arg;
    bool (*should_stop)(void *arg); /* polled between rows; may be NULL */
    void *stop_arg;
    /* Issue 19 item 1: the vhosts a full pass over every project lists
     * (borrowed); n_vhosts 0: every watched vhost (rp_sweep_vhosts.h). */
    const char *const *vhosts;
    size_t n_vhosts;
    /* What came of it. */
    rp_status status;          /* rp_pass_run's */
    rp_report report;
    rp_time_ms started_at;     /* the store's clock (the database's now()) */
    int64_t clock_offset_ms;   /* this host's clock minus the store's, then */
    int64_t duration_ms;
    int64_t open_sightings;    /* after the pass; -1 when unknown */
    int64_t open_by_condition[RP_COND_COUNT_]; /* the same by condition, when known */
    bool deadline_known;       /* a leased row is still in the table */
    rp_time_ms deadline_at;    /* its lease_expires_at + grace */
} rp_pass_request;

void rp_pass_request_init(rp_pass_request *req, rp_pass_scope scope, bool dry_run);
void rp_pass_request_cleanup(rp_pass_request *req);

#endif
