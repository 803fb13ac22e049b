/*
 * rp_answer_sets.h - the runner of answer sets (issue #20 item 3,
 * core/rp_answer_set.h): reaperd works through a set made by `reaperctl
 * answer --all ...` or `answer ID ID ...` as a job of its own.
 *
 *   loop, every idle_ms while it runs none: take the oldest running set no
 *     other runner holds (its lease free or run out; store thread);
 *   store thread: a step (rp_answer_set_port.h): the results so far
 *     recorded, the lease renewed, the set's state read (a cancel is seen
 *     here) and the next batch of pending gate ids read (about two seconds'
 *     worth at the set's rate);
 *   loop: the batch's gates answered one by one through deps.answer (as a
 *     single answer settles a gate: a replay confirmed before its gate is
 *     settled), their starts paced at most rate a second (rp_answer_pace),
 *     at most RP_ANSWER_SETS_IN_FLIGHT at once;
 *   the next step goes out as soon as the batch in hand is all started
 *     (its answers still in flight are recorded at the step after), so
 *     that the paced starts do not wait for the store between batches;
 *   each result judged (rp_answer_item_judge_away): answered or failed is
 *     recorded at the next step; busy is tried again after the rest; a
 *     refusal that would repeat stops the set (state stopped, its reason
 *     kept) once the answers in flight are over and recorded; the broker
 *     away pauses it: nothing more is started, the results are recorded,
 *     and every idle_ms the set's pending gates are tried again from the
 *     first (the lease renewed at each step), its pace starting afresh
 *     once the broker is back;
 *   no pending gate left: the set is done.
 * On a clean stop (rp_answer_sets_stop, at the first stop signal) nothing
 * more is started and the set in hand is let go: one store job (through
 * store_job_last, so that the stop's grace waits for it) records the
 * results in hand and clears the lease, so that another runner (a replica,
 * or this one restarted) takes the set at once instead of after lease_ms.
 * A store job out at the stop is let come back first. Answers still in
 * flight are not waited for: their gates stay pending in the set and the
 * next runner finds them answered (or busy under their claim until it
 * ends), never publishing one twice.
 *
 * A restart or another replica: the set's lease (lease_ms) runs out and
 * the next runner takes it; the gates are the truth, so a gate answered
 * before the crash but not yet recorded is found answered
 * (already_answered) and nothing is published again, and a replay in
 * flight at the crash keeps its claim: busy until it is stale, then taken
 * over and reported, never published twice (rp_replays.h).
 *
 * Threads: every function and callback on the loop thread; the port's
 * calls on the store thread through deps.store_job. Ownership: deps is
 * copied; the selves in it are borrowed for the part's life; owner is
 * copied.
 */
#ifndef RP_ANSWER_SETS_H
#define RP_ANSWER_SETS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_answer_set.h"
#include "rp_answer_set_port.h"
#include "worker.h"

/* The most answers of one set in flight at once: the pace, not this,
 * bounds the rate; this bounds the memory (each replay in flight holds its
 * message) and covers a store round trip of half a second at 500 a
 * second. */
#define RP_ANSWER_SETS_IN_FLIGHT 256
/* The largest batch a step reads. */
#define RP_ANSWER_SETS_BATCH_MAX 500

/* The end of one answer: st as a single answer's reply would carry it,
 * away whether it met the broker away (rp_replay_result.away: the set
 * pauses, rp_answer_item_judge_away), outcome its outcome's name when RP_OK
 * (static or lent for the call), message why not (lent for the call; may
 * be NULL). */
typedef void (*rp_answer_one_done_fn)(void *arg, rp_status st, bool away, const char *outcome,
                                      const char *message);

typedef struct rp_answer_sets_deps {
    /* The port (store thread). */
    rp_answer_set_port port;
    /* Runs fn(ctx, job) on the store thread, then done(job, cancelled) on
     * the loop; an error (RP_ERR_CLOSED: stopping) means neither runs. */
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    void *store_job_self;
    /* The same, taken while stopping (rp_store_jobs_submit_last): the
     * stop's let-go goes through it. NULL: store_job. */
    rp_status (*store_job_last)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    /* Loop: answers gate with choice as a single answer would (by: the
     * set's requester, the broker-validated user; note: its own "by").
     * RP_OK: done is called later, exactly once; an error: never
     * (RP_ERR_BUSY: this process answers that gate already, it is tried
     * again later; RP_ERR_CLOSED: stopping; anything else stops the set). */
    rp_status (*answer)(void *self, int64_t gate, rp_choice choice, const char *by,
                        const char *note, rp_answer_one_done_fn done, void *arg);
    void *answer_self;
    /* Milliseconds of a monotonic clock. */
    int64_t (*now_ms)(void);
    const char *owner;   /* this process's instance id (copied) */
    int64_t lease_ms;    /* a set's lease; 0: 15000 */
    int64_t idle_ms;     /* between looks for a set; 0: 1000 */
} rp_answer_sets_deps;

typedef struct rp_answer_sets rp_answer_sets;

/* NULL when out of memory. Starts looking for a set at once. */
rp_answer_sets *rp_answer_sets_new(struct event_base *base, const rp_answer_sets_deps *deps);
/* Looks for a set now (a set was just made). */
void rp_answer_sets_poke(rp_answer_sets *a);
/* Starts nothing more; the set in hand is let go (its results so far
 * recorded and its lease cleared on the store thread, when it still takes
 * the job; else left to its lease). Call at the stop signal, while the
 * loop still turns and before the store thread stops; a second call does
 * nothing. */
void rp_answer_sets_stop(rp_answer_sets *a);
/* After the store thread is gone and no answer is in flight. NULL is fine. */
void rp_answer_sets_free(rp_answer_sets *a);

#endif
