/*
 * rp_wedged.h - issue 18 item 4: the wedged queue (WEDGED).
 *
 * A (project, kind) of the job table is wedged on one check when it has
 * claimable jobs, no live lease, and no job of it succeeded for
 * wedged_seconds. It is SURFACED once it was seen wedged on wedged_checks
 * consecutive checks; the count lives in the store (migration 0008's
 * wedge_check table, shared by passes and replicas) and one healthy check
 * resets it.
 *
 * BOUNDARIES, exactly:
 *   - quiet = now - max(newest completion, oldest claimable since); with
 *     no completion ever, now - oldest claimable since. Wedged on this
 *     check when claimable > 0 AND active == 0 AND quiet >= wedged_seconds
 *     (AT the window it IS wedged; one ms below it is not).
 *   - surfaced when the consecutive count (this check included) >=
 *     wedged_checks (AT the count: surfaced; one below: not).
 *   - a negative quiet (clock skew) is not wedged.
 *
 * Pure: no I/O, the clock passed in. Ownership: strings in the structs
 * below are borrowed; verdicts own theirs (rp_verdict.h).
 */
#ifndef RP_WEDGED_H
#define RP_WEDGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_judge.h"

/* One (project, kind) with claimable jobs, as the store counts it. */
typedef struct rp_wedge_group {
    const char *project;
    const char *kind;
    int64_t claimable;           /* ready, run_after <= now, dependency absent or succeeded */
    int64_t active;              /* leased rows whose lease is alive (with the grace) */
    rp_time_ms claimable_since;  /* when the oldest claimable job became claimable: the
                                  * latest of run_after, created_at, its dependency's
                                  * finished_at */
    bool completed_known;        /* false: no job of it ever succeeded */
    rp_time_ms last_completed_at; /* the newest succeeded job's finished_at */
} rp_wedge_group;

typedef struct rp_wedge_group_list {
    const rp_wedge_group *groups; /* lent until the store's next call */
    size_t n;
} rp_wedge_group_list;

/* How long the group has gone without a completion while it had work, in
 * ms (see BOUNDARIES). */
int64_t rp_wedge_quiet_ms(const rp_wedge_group *g, rp_time_ms now);

/* Whether the group is wedged on this one check. False for NULL. */
bool rp_judge_wedge_check(const rp_wedge_group *g, const rp_thresholds *t, rp_time_ms now);

/* Whether `consecutive` wedged checks (this one included) are enough. */
bool rp_judge_wedge_count(int64_t consecutive, const rp_thresholds *t);

/* The verdict of a group wedged on `consecutive` checks: nothing (NONE)
 * unless rp_judge_wedge_check and rp_judge_wedge_count both hold; then
 * WEDGED / SURFACED, source job_queue, measured the quiet in seconds,
 * threshold wedged_seconds, unit "seconds", object "kind:<project>:<kind>"
 * (rp_object_kind), queue the kind, project the project, the detail naming
 * the claimable count, the checks and the newest completion.
 * RP_ERR_INVALID for NULL arguments or a group without project or kind;
 * RP_ERR_NOMEM. */
rp_status rp_judge_wedged(const rp_wedge_group *g, const rp_thresholds *t, rp_time_ms now,
                          int64_t consecutive, rp_verdict *out) RP_MUSTCHECK;

#endif
