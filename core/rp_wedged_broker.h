/*
 * rp_wedged_broker.h - issue 18 item 4, the broker half: an owned work
 * queue that is wedged (WEDGED), and the restart-loop breaker that closes
 * its consumers' connections so that their supervisors reconnect them.
 *
 * WEDGED, BOUNDARIES, exactly:
 *   - one check: an owned work queue (not a dead-letter queue, not a
 *     stream, not one of reaper's own) with its counts and consumer count
 *     known, ready > 0 AND consumers > 0, whose ack counter the store has
 *     read before (ack_known), and quiet = now - acked_at >= wedged_seconds
 *     (AT the window it IS wedged; one ms below it is not; a negative quiet,
 *     clock skew, is not). acked_at is the time of the store's reading at
 *     which the queue's cumulative ack counter last moved, or of its first
 *     reading when it never moved (migration 0010's queue_counter.acked_at):
 *     an ack is seen at the sweep after it happened, so quiet never
 *     overstates the time since the last ack.
 *   - surfaced when the consecutive count (this check included, kept in
 *     migration 0008's wedge_check under the subject "queue:<vhost>:<name>")
 *     >= wedged_checks (rp_judge_wedge_count, as for the job table).
 *
 * THE BREAKER (thresholds wedge_restart, wedge_restart_max,
 * wedge_restart_window_seconds), decided for a queue surfaced WEDGED on this
 * check, with its restart history as the store holds it (fleet-wide, under
 * the lock of the queue's wedge_check row, so two replicas decide one after
 * the other and the second sees the first's restart):
 *   - a restart counts in the window while now - at < window (strictly:
 *     AT the window it has left it);
 *   - off (wedge_restart false), or a RESTART_LOOP already recorded for this
 *     wedge (it is forgotten with the wedge_check row, when a healthy check
 *     resets the count, which is when the sighting clears): NONE;
 *   - the newest restart less than wedged_seconds ago (now - last <
 *     wedged_seconds): NONE. The reconnected consumers get a whole window
 *     to ack before the next restart; a second replica deciding right
 *     after the first finds its restart here and does nothing;
 *   - restarts in the window >= wedge_restart_max: LOOP (one WEDGED /
 *     RESTART_LOOP event, then NONE until the wedge clears);
 *   - otherwise RESTART (one WEDGED / RESTARTED event; the pass closes the
 *     connections of the queue's consumers through the management API).
 *
 * Pure: no I/O, the clock passed in. Strings in the structs are borrowed;
 * verdicts own theirs (rp_verdict.h).
 */
#ifndef RP_WEDGED_BROKER_H
#define RP_WEDGED_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_judge.h"
#include "rp_judge_divergent.h"
#include "rp_wedged.h"

/* How long the queue has gone without an ack, in ms (now - acked_at);
 * INT64_MIN when the store has no reading of it. */
int64_t rp_wedge_queue_quiet_ms(const rp_queue_rates *r, rp_time_ms now);

/* Whether owned work queue q is wedged on this one check (see BOUNDARIES).
 * False for NULL arguments or a queue of another kind. */
bool rp_judge_wedge_queue_check(const rp_queue_facts *q, const rp_queue_rates *r,
                                const rp_thresholds *t, rp_time_ms now);

/* WEDGED / SURFACED for a queue wedged on `consecutive` checks (nothing
 * unless rp_judge_wedge_queue_check and rp_judge_wedge_count both hold):
 * source broker, measured the quiet in seconds, threshold wedged_seconds,
 * unit "seconds", object "queue:<vhost>:<name>", queue the name, project
 * NULL, the detail naming ready, consumers, the quiet and the checks.
 * RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_wedged_queue(const rp_queue_facts *q, const rp_queue_rates *r,
                                const rp_thresholds *t, rp_time_ms now, int64_t consecutive,
                                rp_verdict *out) RP_MUSTCHECK;

/* A queue's restarts as the store keeps them. */
typedef struct rp_wedge_restarts {
    int64_t in_window;   /* restarts with now - at < window */
    bool last_known;     /* any restart recorded (in the window or not) */
    rp_time_ms last_at;  /* the newest */
    bool looped;         /* RESTART_LOOP recorded for this wedge */
} rp_wedge_restarts;

typedef enum rp_wedge_restart_choice {
    RP_WEDGE_RESTART_NONE = 0,
    RP_WEDGE_RESTART_GO,
    RP_WEDGE_RESTART_LOOP,
    RP_WEDGE_RESTART_COUNT_
} rp_wedge_restart_choice;

/* "none", "restart", "loop"; "unknown" outside the enum. Static. */
const char *rp_wedge_restart_choice_string(rp_wedge_restart_choice c);

/* Whether a restart at `at` counts in the window at now. */
bool rp_wedge_restart_in_window(rp_time_ms at, rp_time_ms now, int64_t window_seconds);

/* The breaker's decision (see THE BREAKER). NONE for NULL arguments. */
rp_wedge_restart_choice rp_wedge_restart_decide(const rp_wedge_restarts *h,
                                                const rp_thresholds *t, rp_time_ms now);

/* The ledger verdict of a decision on queue vhost/name: for GO, WEDGED /
 * RESTARTED, measured the restart's number in the window (in_window + 1),
 * threshold wedge_restart_max, unit "restarts", the detail naming the
 * n_connections connections to close (the first few of `connections`,
 * which may be NULL); for LOOP, WEDGED / RESTART_LOOP, measured in_window,
 * the detail saying that no more restarts follow until the sighting
 * clears. object "queue:<vhost>:<name>", source broker, trusted.
 * RP_ERR_INVALID for NULL names or NONE; RP_ERR_NOMEM. */
rp_status rp_judge_wedge_restart(const char *vhost, const char *name,
                                 rp_wedge_restart_choice c, const rp_wedge_restarts *h,
                                 const rp_thresholds *t, const char *const *connections,
                                 size_t n_connections, rp_verdict *out) RP_MUSTCHECK;

/* A list of names a port lends (rp_broker_port.consumer_connections). */
typedef struct rp_name_list {
    const char *const *names;
    size_t n;
} rp_name_list;

/* The history a restart is decided on, as the store port hands it over
 * (rp_store_port.claim_wedge_restart): the subject's restarts still kept
 * (times in ms, oldest first) and whether a RESTART_LOOP is recorded for
 * this wedge. The function sets *choice and, for GO and LOOP, fills *v.
 * Any status but RP_OK makes the store write nothing. */
typedef rp_status (*rp_wedge_restart_decide_fn)(void *arg, const rp_time_ms *restarts, size_t n,
                                                bool looped, rp_wedge_restart_choice *choice,
                                                rp_verdict *v);

/* The history of restarts[0..n) at now: in_window (rp_wedge_restart_in_window),
 * the newest, looped as given. */
void rp_wedge_restarts_from(const rp_time_ms *restarts, size_t n, bool looped, rp_time_ms now,
                            int64_t window_seconds, rp_wedge_restarts *out);

#endif
