/*
 * rp_judge_divergent.h - issue 18 item 3: a divergent queue (DIVERGENT),
 * intake that structurally exceeds drain. Pure: no I/O, no clock (now is
 * passed in), no logging.
 *
 * BOUNDARIES, exactly (the thresholds of rp_thresholds):
 *   DIVERGENT when, over the last divergence_window_seconds,
 *     intake > divergence_ratio * completions   (strictly above; the
 *                                                product saturates)
 *   AND waiting > divergence_min_waiting        (strictly above).
 *   At either boundary nothing is surfaced. Negative counts are read as 0.
 *
 * Job table: intake = rows created in the window, completions = rows that
 * reached `succeeded` in it (migration 0009's succeeded_at; failed,
 * cancelled and dismissed rows are not drain), waiting = claimable rows,
 * per (project, kind).
 * Broker: intake = publishes, completions = acks of an owned work queue in
 * the window (the sum of the per-sweep deltas the store keeps, counter
 * resets handled there: rp_divergent_port.h), waiting = ready messages.
 *
 * Ownership: strings in the structs here are borrowed; verdicts own theirs
 * (rp_verdict_cleanup).
 */
#ifndef RP_JUDGE_DIVERGENT_H
#define RP_JUDGE_DIVERGENT_H

#include "rp_judge.h"

/* Whether intake over the window diverges from completions with waiting
 * work (the rule above). */
bool rp_judge_diverges(int64_t intake, int64_t completions, int64_t waiting, int64_t ratio,
                       int64_t min_waiting);

/* One (project, kind) of the job table over the window. */
typedef struct rp_divergence_group {
    const char *project;
    const char *kind;
    int64_t intake;      /* rows created in the window */
    int64_t completions; /* rows that reached succeeded in the window */
    int64_t waiting;     /* claimable now */
} rp_divergence_group;

typedef struct rp_divergence_list {
    const rp_divergence_group *groups; /* lent, by project then kind */
    size_t n;
} rp_divergence_list;

/* DIVERGENT / SURFACED when the rule holds: measured the intake, threshold
 * ratio * completions (saturating: what intake may reach), unit "jobs",
 * object "kind:<project>:<kind>", queue the kind, project, source
 * job_queue; the detail gives intake, completions, waiting, the window and
 * the fix. Nothing otherwise. RP_ERR_INVALID for NULL arguments (or a
 * group without project or kind); RP_ERR_NOMEM. */
rp_status rp_judge_divergent_kind(const rp_divergence_group *g, const rp_thresholds *t,
                                  rp_verdict *out) RP_MUSTCHECK;

/* An owned work queue's publishes and acks over the window (known: the
 * store held at least one earlier sample of the queue; false: nothing is
 * judged). */
typedef struct rp_queue_rates {
    bool known;
    int64_t published;
    int64_t acked;
    /* Issue 18 item 4 (rp_wedged_broker.h): when the queue's ack counter
     * last moved, as the store read it (the reading's time; the first
     * reading's when it never moved). ack_known false: no reading. */
    bool ack_known;
    rp_time_ms acked_at;
} rp_queue_rates;

/* One reading of an owned queue's counters (strings borrowed). */
typedef struct rp_queue_counter_reading {
    const char *vhost;
    const char *name;
    int64_t published_total;
    int64_t acked_total;
    rp_time_ms read_at;     /* the pass's clock */
    int64_t window_seconds; /* the rates' window; older increments pruned */
} rp_queue_counter_reading;

/* The same for an OWNED work queue (not a dead-letter queue, not a stream,
 * counts known): waiting is its ready messages; unit "messages", object
 * "queue:<vhost>:<name>", queue the name, source broker. Nothing for any
 * other queue or unknown rates. RP_ERR_INVALID for NULL arguments;
 * RP_ERR_NOMEM. */
rp_status rp_judge_divergent_queue(const rp_queue_facts *q, const rp_queue_rates *r,
                                   const rp_thresholds *t, rp_verdict *out) RP_MUSTCHECK;

#endif
