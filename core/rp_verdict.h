/*
 * rp_verdict.h - what reaper decided about one object (CONTRACT section 5).
 *
 * A verdict names one object (a job, a queue, a dead letter), the condition
 * judged on it, the measurement against the threshold, and the action taken.
 * The enums have stable upper-case wire names (rp_condition_string, ...)
 * that appear in reports, ledger payloads and routing keys.
 *
 * Ownership: an rp_verdict owns its strings (heap, NUL-terminated, or NULL
 * when absent). rp_verdict_init() zeroes one; rp_verdict_set_*() copy their
 * argument; rp_verdict_cleanup() frees the strings and leaves the verdict
 * zeroed. Copying a verdict by value transfers ownership: clean up only one.
 */
#ifndef RP_VERDICT_H
#define RP_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_status.h"

typedef enum rp_condition {
    RP_COND_NONE = 0,
    RP_COND_HUNG_HANDLER,
    RP_COND_HOLDER_GONE,
    RP_COND_LEASE_EXPIRED,
    RP_COND_POISON,
    RP_COND_STALE_READY,
    RP_COND_DEAD_LETTER,
    /* Issue 18 (the queue runbook): held too long while still heartbeating
     * (job table) or holding unacked messages without acking (broker); and
     * more work waiting than the declared depth. */
    RP_COND_STALLED,
    RP_COND_WAITING_DEPTH,
    /* Issue 18 item 4: claimable work, nothing active, no completion for
     * reap.wedged_seconds, on reap.wedged_checks consecutive checks. */
    RP_COND_WEDGED,
    /* Issue 18 item 3: intake structurally exceeds drain over a window
     * (rp_judge_divergent.h). */
    RP_COND_DIVERGENT,
    RP_COND_COUNT_
} rp_condition;

typedef enum rp_action {
    RP_ACTION_NONE = 0,
    RP_ACTION_REQUEUED,
    RP_ACTION_PARKED,
    RP_ACTION_SURFACED,
    RP_ACTION_CLEARED,
    RP_ACTION_VERIFIED,
    /* Issue 18 item 4, the restart-loop breaker (rp_wedged_broker.h): the
     * connections of a wedged queue's consumers closed, and the one event
     * that says the restarts did not help (no more until it clears). */
    RP_ACTION_RESTARTED,
    RP_ACTION_RESTART_LOOP,
    RP_ACTION_COUNT_
} rp_action;

typedef enum rp_source {
    RP_SOURCE_JOB_QUEUE = 0,
    RP_SOURCE_BROKER,
    RP_SOURCE_COUNT_
} rp_source;

/* Wire names: "HUNG_HANDLER", "REQUEUED", "job_queue", ... ("NONE" for the
 * zero values, "unknown" outside the enums). Never NULL, static. */
const char *rp_condition_string(rp_condition c);
const char *rp_action_string(rp_action a);
const char *rp_source_string(rp_source s);

/* Parse a wire name back (exact match). Returns false when unknown. */
bool rp_condition_parse(const char *s, rp_condition *out) RP_MUSTCHECK;
bool rp_action_parse(const char *s, rp_action *out) RP_MUSTCHECK;
bool rp_source_parse(const char *s, rp_source *out) RP_MUSTCHECK;

typedef struct rp_verdict {
    char *object;      /* "job:42", "queue:/:vibey.x", "dead_letter:<identity>" */
    char *queue;       /* queue name (broker) or job kind (store); may be NULL */
    char *project;     /* project id; NULL for broker objects without one */
    rp_condition condition;
    double measured;   /* the measurement, in unit */
    int64_t threshold; /* the declared threshold, in unit */
    char *unit;        /* "seconds", "messages", "attempts" */
    rp_action action;
    rp_source source;
    char *detail;      /* one human sentence; may be NULL */
    bool trusted;      /* false when any field came from untrusted headers */
} rp_verdict;

void rp_verdict_init(rp_verdict *v);
void rp_verdict_cleanup(rp_verdict *v);

/* Each setter copies s (NULL clears the field). RP_ERR_NOMEM on failure,
 * in which case the field is unchanged. */
rp_status rp_verdict_set_object(rp_verdict *v, const char *s) RP_MUSTCHECK;
rp_status rp_verdict_set_queue(rp_verdict *v, const char *s) RP_MUSTCHECK;
rp_status rp_verdict_set_project(rp_verdict *v, const char *s) RP_MUSTCHECK;
rp_status rp_verdict_set_unit(rp_verdict *v, const char *s) RP_MUSTCHECK;
rp_status rp_verdict_set_detail(rp_verdict *v, const char *s) RP_MUSTCHECK;

/* Deep copy of src into dst (dst is initialised first). */
rp_status rp_verdict_copy(rp_verdict *dst, const rp_verdict *src) RP_MUSTCHECK;

#endif
