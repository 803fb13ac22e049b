/*
 * rp_pass.h - one whole pass over the ports (CONTRACT sections 2 and 4):
 * the job table half, the broker half, the clearing of sightings, and the
 * pass report.
 *
 * THE JOB TABLE HALF.
 *   1. Lease reap: expired leases are taken in batches of lease_batch_size
 *      (lowest id first, each batch past the previous one, so the loop
 *      ends), each row judged (rp_judge_held_job), and the batch committed
 *      by the store in one transaction (rp_store_port.commit_leases): every
 *      row moved as its verdict says (REQUEUED or PARKED) with its ledger
 *      event inside a savepoint of its own, so that a row that fails rolls
 *      back alone; a row the judge leaves alone stays unchanged. A batch's
 *      events are published and its verdicts reported only after it
 *      committed, and never those of a row rolled back.
 *   2. Stale ready: the oldest claimable job of every project (or of the
 *      named project) is judged; stale ones are surfaced.
 *   3. Issue 18 (when the store port has the functions): leased rows held
 *      past held_ceiling_seconds with their lease alive (at most 1,000,
 *      longest held first) are judged (rp_judge_long_held): STALLED
 *      surfaced per job, or, past held_evict_factor x the ceiling, requeued
 *      through evict_held (fenced, with its ledger event; not a sighting:
 *      the job's open STALLED sighting then clears). Claimable jobs per
 *      (project, kind) above waiting_depth_threshold are WAITING_DEPTH.
 * THE BROKER HALF (skipped, with a note, when a project is named: a project
 * narrows the pass to the job table). Every queue is listed page by page,
 * classified by the configured patterns (a queue is a dead-letter queue when
 * dead_letter_queue_pattern matches its name; it is owned when
 * owned_queue_pattern matches its name or, for a dead-letter queue, its name
 * less the dead-letter suffix), and judged (rp_judge_queue). Notes say where
 * stale ready could not be judged (quorum queues report no head age). Each
 * owned dead-letter queue at or over its minimum depth is then backfilled:
 * up to dead_letter_peek_limit messages are peeked and parked
 * (rp_park.h), read past the dead letters at its head that are parked
 * already (a port that can: rp_dl_batch.already; at most
 * RP_BACKFILL_PASS_OVER_MAX of them per queue per pass), so that a
 * backlog is worked through dead_letter_peek_limit new ones per pass. What the peek port says it left unread (rp_dl_batch.unread:
 * behind the peek limit, behind a quorum queue's one read, a stream, a dry
 * run's quorum queue) is surfaced as DEAD_LETTER / SURFACED on the queue's
 * own object (rp_judge_dead_letter_unread), the same sighting key as a
 * dead-letter queue reaper does not own; a backfill that finds nothing
 * unread lets it clear. A queue whose remainder cannot be told this pass
 * (unknown count, the peek or a park failed, a stop came first) keeps its
 * sightings, and so does an owned dead-letter queue in a targeted check,
 * which does no backfill. Last, with a stall memory in the options and a
 * broker port that lists channels, the channels holding unacknowledged
 * messages are sampled and STALLED is surfaced on the owned work queues
 * they consume from (rp_stalled_broker.h; not in a targeted check).
 *
 * SURFACED CONDITIONS AND SIGHTINGS. A surfaced verdict is recorded once per
 * sighting (rp_sighting.h): when its key is not open it is opened through
 * the store (row, ledger event, publish) and the verdict goes into the
 * report; while it stays open, later passes neither record nor report it
 * again. When a pass that read a source whole (every page, every list, no
 * error) no longer sees an open sighting of a condition it judges (job
 * table: STALE_READY and WAITING_DEPTH of the named project or every
 * project, STALLED only in a pass over every project that read the
 * long-held rows whole; broker: HOLDER_GONE, STALE_READY, DEAD_LETTER,
 * POISON, WAITING_DEPTH, and STALLED when the channels were listed and
 * no channel on the queue is one this memory cannot judge yet), the sighting is closed with a
 * CLEARED verdict (ledger event, publish, report). A source that could not
 * be read clears nothing and is named in the report's unreadable list
 * ("job_queue" or "broker"; report.ok is then false), with the detail in a
 * note. Sightings of conditions the pass does not judge (HUNG_HANDLER, from
 * the policy verification) are left alone.
 *
 * DRY RUN writes nothing at all: leases are read without lock and never
 * moved, no sighting is opened or closed, nothing is parked, appended or
 * published. Its report holds what a real pass would have recorded now:
 * moves, newly surfaced conditions, clearings, dead letters not yet parked.
 *
 * Ownership: ports and options (and the patterns they point to) are
 * borrowed for the call. *out is initialised by rp_pass_run() whatever it
 * returns and the caller frees it with rp_report_cleanup().
 */
#ifndef RP_PASS_H
#define RP_PASS_H

#include <stdbool.h>
#include <stddef.h>

#include <pcre2.h>

#include "rp_judge.h"
#include "rp_ports.h"
#include "rp_report.h"
#include "rp_stalled_broker.h"

/* What a pass covers. RP_PASS_LEASES is the crash-recovery reap that runs
 * even when the automatic sweep is off (reap.enabled false) and on the
 * deadline timer: the lease reap alone, no stale ready, no broker, no
 * sighting opened or cleared. */
typedef enum rp_pass_scope {
    RP_PASS_FULL = 0,
    RP_PASS_LEASES,
} rp_pass_scope;

/* Called every RP_PASS_PROGRESS_EVERY moved or judged rows of the lease reap
 * so that the caller can say how a long reap goes. phase is a static string
 * ("lease reap"), done the rows handled so far. Must not call the ports. */
typedef void (*rp_pass_progress_fn)(void *arg, const char *phase, size_t done);
#define RP_PASS_PROGRESS_EVERY 10000
#define RP_PASS_REPORT_VERDICTS 1000
/* The most dead letters already parked that a backfill reads past on one
 * queue in one pass, beside dead_letter_peek_limit new ones: a bound on
 * the read of a long backlog (its bytes are bounded by the peek). */
#define RP_BACKFILL_PASS_OVER_MAX 10000

typedef struct rp_pass_options {
    rp_pass_scope scope;
    rp_pass_progress_fn progress; /* may be NULL */
    void *progress_arg;
    /* Polled between lease batches and between queues; when it answers
     * true the pass ends there with a note (what was committed stays
     * committed: every lease batch commits on its own). May be NULL. */
    bool (*should_stop)(void *arg);
    void *stop_arg;
    /* The report lists at most this many verdicts (0: all); the rest are
     * counted, said in a note, and on the ledger. on_verdict sees every one
     * (rp_report.h). Default RP_PASS_REPORT_VERDICTS. */
    size_t max_report_verdicts;
    rp_report_verdict_fn on_verdict;
    void *on_verdict_arg;
    rp_thresholds thresholds;
    const pcre2_code *owned_queue_pattern;       /* required */
    const pcre2_code *dead_letter_queue_pattern; /* required */
    /* Reaper's own queues (broker.control_queue, broker.tap_queue), by
     * exact name: never owned work, never a dead-letter queue to backfill,
     * whatever the patterns say. NULL entries are skipped. */
    const char *own_queues[2];
    size_t dead_letter_peek_limit;               /* 1..1000 */
    /* Expired leases taken, judged and committed together: one transaction
     * per batch, one savepoint per row (rp_store_port.commit_leases).
     * RP_PASS_LEASE_BATCH_MIN..MAX; default 100. */
    size_t lease_batch_size;
    bool dry_run;
    const char *project;                         /* NULL: every project */
    /* Issue 18 item 1, broker STALLED (rp_stalled_broker.h): the channel
     * samples of earlier passes, borrowed and updated by every full pass
     * over the broker (the caller keeps it across passes, one thread at a
     * time). NULL: no broker STALLED is judged or cleared. */
    rp_stall_memory *stall_memory;
    /* Issue 19 item 5: a full pass over the broker hands every page of its
     * queue listing to this listing (begun at the first page, ended whole
     * or not), for the policy reconcile that follows. NULL: none. */
    struct rp_queue_listing *keep_listing;
    /* Issue 19 item 1: the vhosts the broker port lists (n_vhosts 0: every
     * vhost, or the port's own). A broker sighting on a queue of another
     * vhost is never cleared by this pass (that vhost was not read).
     * Borrowed. */
    const char *const *vhosts;
    size_t n_vhosts;
} rp_pass_options;

#define RP_PASS_LEASE_BATCH_MIN 1
#define RP_PASS_LEASE_BATCH_MAX 10000

/* Full scope, no hooks, a report of at most RP_PASS_REPORT_VERDICTS
 * verdicts, default thresholds, peek limit 100, lease batches of 100, no
 * patterns, not a dry run, every project. The caller sets the two
 * patterns. */
void rp_pass_options_default(rp_pass_options *o);

/* Runs one pass at the time the clock port gives (read once). Returns RP_OK
 * when the pass ran to its end, whatever it found unreadable (see
 * out->ok); RP_ERR_INVALID for missing patterns, a peek limit outside
 * 1..1000 or a lease batch size outside its range (nothing was read or written); RP_ERR_NOMEM when the pass had to
 * stop (what was committed before stays committed and is in the report). */
rp_status rp_pass_run(const rp_ports *ports, const rp_pass_options *opt, rp_report *out)
    RP_MUSTCHECK;

/* ---- The targeted check ------------------------------------------------ */

/* One queue to check. Borrowed. */
typedef struct rp_queue_ref {
    const char *vhost;
    const char *name;
} rp_queue_ref;

/* Judges the given queues, and only them, as the broker half of a full pass
 * judges each one (same classification, same rules, same sightings): each
 * is read with the broker port's get_queue, classified by the patterns and
 * judged (rp_judge_queue); a surfaced condition opens its sighting once
 * (ledger event, publish, report) and an open broker sighting of one of
 * these queues (HOLDER_GONE, STALE_READY, DEAD_LETTER) that the reading no
 * longer shows is closed with a CLEARED verdict. A queue that no longer
 * exists (get_queue RP_ERR_NOT_FOUND) holds nothing: its open sightings are
 * cleared. A queue that could not be read names "broker" unreadable and
 * clears nothing of its own; one read but not measured (statistics not
 * reported yet: rp_judge.h) clears nothing either, nor does an owned
 * dead-letter queue at or over its minimum depth (only the sweep's backfill
 * can tell whether what it could not read is gone). Sightings of queues not
 * listed, and of conditions the check does not judge, are never touched.
 * No backfill, no job table: the sweep does those. A dry run writes
 * nothing, as for rp_pass_run. opt->scope, the hooks of the lease reap and
 * opt->project are ignored (should_stop is polled between queues).
 *
 * Duplicate refs are checked once. *out is initialised whatever is
 * returned; free it with rp_report_cleanup(). Returns RP_OK when the check
 * ran to its end (see out->ok), RP_ERR_INVALID for missing patterns or a
 * NULL ref name or vhost (nothing read or written), RP_ERR_NOMEM. */
rp_status rp_pass_queues(const rp_ports *ports, const rp_pass_options *opt,
                         const rp_queue_ref *queues, size_t n, rp_report *out) RP_MUSTCHECK;

#endif
