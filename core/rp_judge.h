/*
 * rp_judge.h - the one pure policy that judges the five conditions of
 * CONTRACT section 2, for the job table and for the broker alike.
 *
 * Every judge takes measurements (borrowed), the thresholds and, where time
 * matters, `now` (Unix ms, read once per pass by the caller), and fills an
 * rp_verdict with EVERY field set: object, queue, project (NULL for broker
 * objects, which have none), condition, measured, threshold, unit, action,
 * source, detail and trusted. When no condition holds the verdict is left as
 * rp_verdict_init() makes it: condition RP_COND_NONE, no strings.
 *
 * BOUNDARIES, exactly (times are compared in milliseconds; a threshold in
 * seconds counts as seconds * 1000 ms; all arithmetic saturates, so a
 * corrupt time gives a bounded measurement and never overflows):
 *   - a lease is expired when now - lease_expires_at > grace: STRICTLY
 *     greater; a lease exactly at the grace is left alone. A lease whose
 *     deadline is unknown is not expired (an unmeasurable lease is not late).
 *   - an expired lease is poison when attempts >= max_attempts (so a row
 *     with max_attempts <= 0 is poison at its first expiry).
 *   - ready work is stale when age >= stale_ready_seconds (at the threshold
 *     it IS stale). A negative age (a run_after or head timestamp in the
 *     future) is not stale; an unmeasurable age is not stale.
 *   - holder gone: unacked > 0 and consumers KNOWN to be 0. An unknown
 *     consumer count is not zero.
 *   - a dead-letter queue counts when ready + unacked >= dead_letter_min_depth.
 *   - the consumer timeout is verified when one is in force on the queue with
 *     a known value <= consumer_timeout_seconds (equal is verified).
 *
 * MEASUREMENTS AND UNITS. measured is in unit: seconds (with millisecond
 * fractions) for times, messages for depths, attempts for attempts. When a
 * verdict carries no measurement (no timeout in force, a cleared sighting)
 * measured is -1.
 *
 * Ownership: input structs borrow every pointer they hold, for the call.
 * The verdict *out is initialised by each judge (any previous content is NOT
 * freed: pass an initialised-and-empty or fresh verdict) and owns copies of
 * every string afterwards; free it with rp_verdict_cleanup() whatever the
 * judge returned. An rp_queue_judgement owns its verdict the same way.
 */
#ifndef RP_JUDGE_H
#define RP_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_deadletter.h"
#include "rp_job.h"
#include "rp_sighting.h"
#include "rp_status.h"
#include "rp_verdict.h"

/* The declared thresholds (CONTRACT section 3, section reap). */
typedef struct rp_thresholds {
    int64_t lease_grace_seconds;      /* default 0 */
    int64_t stale_ready_seconds;      /* default 900 */
    int64_t dead_letter_min_depth;    /* default 1 */
    int64_t consumer_timeout_seconds; /* default 21600 */
    int64_t delivery_limit;           /* default 20 */
    /* Issue 18 (rp_judge_long_held, rp_judge_waiting, rp_judge_queue_depth). */
    int64_t held_ceiling_seconds;     /* default 3600 */
    int64_t held_evict_factor;        /* default 0: never evict */
    int64_t waiting_depth_threshold;  /* default 10 */
    int64_t queue_depth_threshold;    /* default 10000 */
    /* Issue 18 item 4 (rp_wedged.h). */
    int64_t wedged_seconds;           /* default 900 */
    int64_t wedged_checks;            /* default 3 */
    /* Issue 18 item 3 (rp_judge_divergent.h). */
    int64_t divergence_window_seconds; /* default 86400 */
    int64_t divergence_ratio;          /* default 2 */
    int64_t divergence_min_waiting;    /* default 50 */
    /* Issue 18 item 4's restart-loop breaker (rp_wedged_broker.h). */
    bool wedge_restart;                  /* default false */
    int64_t wedge_restart_max;           /* default 3 */
    int64_t wedge_restart_window_seconds; /* default 1800 */
} rp_thresholds;

/* Fills *t with the defaults of CONTRACT section 3. */
void rp_thresholds_default(rp_thresholds *t);

/* The raw boundaries, shared with adapters that pre-filter (e.g. in SQL) so
 * that everyone draws the line in the same place. */
bool rp_judge_lease_expired(rp_time_ms now, rp_time_ms lease_expires_at, int64_t grace_seconds);
bool rp_judge_age_stale(int64_t age_ms, int64_t stale_ready_seconds);

/* ---- The job table ---------------------------------------------------- */

/* A leased row of the job table. */
typedef struct rp_held_job {
    int64_t id;
    const char *project;
    const char *kind;
    rp_job_state state;          /* only RP_JOB_LEASED rows are held */
    int32_t attempts;
    int32_t max_attempts;
    bool lease_expires_known;    /* false when lease_expires_at is NULL */
    rp_time_ms lease_expires_at;
    const char *lease_owner;     /* NULL when unknown */
} rp_held_job;

/* Judges a held job. A job that is not leased, has no known deadline or is
 * not past its grace gives no condition. Otherwise:
 *   attempts >= max_attempts: POISON / PARKED, measured attempts, threshold
 *     max_attempts, unit "attempts";
 *   else: LEASE_EXPIRED / REQUEUED, measured seconds past the deadline,
 *     threshold lease_grace_seconds, unit "seconds".
 * object "job:<id>", queue the job's kind, project the job's, source
 * job_queue, trusted. RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_held_job(const rp_held_job *job, const rp_thresholds *t, rp_time_ms now,
                            rp_verdict *out) RP_MUSTCHECK;

/* The oldest claimable job of one project (a project with none is simply
 * not listed, and yields nothing). */
typedef struct rp_claimable_job {
    const char *project;
    int64_t job_id;
    const char *kind;
    rp_time_ms run_after;
    bool dependency_finished_known;  /* false when it depends on nothing */
    rp_time_ms dependency_finished_at;
} rp_claimable_job;

/* Judges the age of a project's oldest claimable job: age = now - the later
 * of run_after and the dependency's finished_at (when known). age >=
 * stale_ready_seconds: STALE_READY / SURFACED, measured age in seconds,
 * threshold stale_ready_seconds, object "job:<id>", queue the kind, project,
 * source job_queue. RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_claimable(const rp_claimable_job *job, const rp_thresholds *t,
                             rp_time_ms now, rp_verdict *out) RP_MUSTCHECK;

/* ---- The broker ------------------------------------------------------- */

typedef enum rp_queue_type {
    RP_QUEUE_TYPE_UNKNOWN = 0,
    RP_QUEUE_TYPE_CLASSIC,
    RP_QUEUE_TYPE_QUORUM,
    RP_QUEUE_TYPE_STREAM,
    RP_QUEUE_TYPE_COUNT_
} rp_queue_type;

/* "unknown", "classic", "quorum", "stream" (the management API's names).
 * Never NULL, static. Parsing an unknown name gives RP_QUEUE_TYPE_UNKNOWN. */
const char *rp_queue_type_string(rp_queue_type t);
rp_queue_type rp_queue_type_parse(const char *s);

/* One queue as the broker reports it. */
typedef struct rp_queue_facts {
    const char *vhost;
    const char *name;
    rp_queue_type type;
    /* false when the broker has not reported the message counts (yet):
     * ready and unacked then say nothing, and nothing is judged from them
     * (an absent statistic never reads as an empty queue). */
    bool counts_known;
    int64_t ready;               /* messages_ready (negative reads as 0) */
    int64_t unacked;             /* messages_unacknowledged (likewise) */
    bool consumers_known;        /* false when the statistic is absent */
    int64_t consumers;
    bool head_timestamp_known;   /* head_message_timestamp (classic only) */
    int64_t head_timestamp;      /* Unix SECONDS */
    /* Classification by the configured patterns; adapters leave both false
     * and the pass sets them (rp_pass.h). */
    bool is_dead_letter_queue;
    bool owned;
    /* One of reaper's own queues (control, tap): never judged. Set by the
     * pass like the two above (issue 18 item 5). */
    bool reapers_own;
    /* Quorum queues: whether the broker would drop a message at a delivery
     * limit (issue 14 item 2). Filled by adapters that can tell (the
     * management listing: arguments, the effective policy, the broker's
     * version); limit_known false otherwise, and nothing is judged. */
    bool delivery_limit_known;
    int64_t delivery_limit;    /* the limit in force (policy, argument, or
                                  RabbitMQ 4's default of 20); <= 0: none */
    bool dead_letter_exchange; /* a dead-letter exchange is in force */
    /* The dead-letter exchange the queue names (issue 14 item 1), from its
     * x-dead-letter-exchange argument, else the dead-letter-exchange of its
     * effective policy: NULL when none is known, "" for the default
     * exchange. dlx_routing_key likewise (x-dead-letter-routing-key,
     * dead-letter-routing-key), NULL when none. Filled by adapters that can
     * tell (the management listing, any queue type). */
    const char *dlx_name;
    const char *dlx_routing_key;
    /* Issue 18 item 3: the queue's cumulative message_stats publish and ack
     * counters (reset when the broker or the queue restarts); stats_known
     * false when the adapter cannot tell. An absent counter reads 0. */
    bool stats_known;
    int64_t published_total;
    int64_t acked_total;
} rp_queue_facts;

/* Why stale ready could not be judged on a queue where it could hold
 * (owned, not a dead-letter queue, ready > 0, no unacked, and consumers
 * known to be 0 - or unknown). The caller turns it into a pass note. A
 * foreign work queue gets no note (unmeasured still says it could not be
 * judged): reaper says what it cannot measure about the queues it owns,
 * not about every queue on the broker. */
typedef enum rp_queue_note {
    RP_QUEUE_NOTE_NONE = 0,
    RP_QUEUE_NOTE_QUORUM_NO_AGE,     /* quorum queues report no head age */
    RP_QUEUE_NOTE_NO_HEAD_TIMESTAMP, /* the head message carries no timestamp */
    RP_QUEUE_NOTE_CONSUMERS_UNKNOWN, /* the consumer count is not reported (yet) */
    RP_QUEUE_NOTE_COUNTS_UNKNOWN,    /* the message counts are not reported (yet) */
} rp_queue_note;

typedef struct rp_queue_judgement {
    rp_verdict verdict; /* condition RP_COND_NONE when there is nothing to report */
    /* An OWNED dead-letter queue at or over dead_letter_min_depth: its
     * messages are to be peeked and parked (each parked message gets its own
     * DEAD_LETTER / PARKED verdict from rp_judge_dead_letter); no queue-level
     * verdict is given for it. */
    bool backfill;
    rp_queue_note note;
    /* The queue's conditions could not be judged (its message counts, or a
     * consumer count that matters, are unknown): a pass must neither open
     * nor CLEAR a sighting of it on this reading. */
    bool unmeasured;
} rp_queue_judgement;

void rp_queue_judgement_init(rp_queue_judgement *j);
void rp_queue_judgement_cleanup(rp_queue_judgement *j);

/* Judges one queue, in this order:
 *   0. message counts not known (counts_known false): nothing is judged,
 *      note COUNTS_UNKNOWN (none on a foreign queue), unmeasured (an
 *      absent statistic is not 0);
 *   1. a dead-letter queue yields ONLY the dead-letter condition: when
 *      ready + unacked >= dead_letter_min_depth, not owned gives DEAD_LETTER
 *      / SURFACED (measured the depth, threshold the min depth, unit
 *      messages) and owned gives backfill = true and no verdict;
 *   2. one of reaper's own queues (reapers_own), or a stream (a stream
 *      keeps what it holds by design: nothing in it is held or waiting),
 *      yields nothing; every other queue is a work queue, owned or FOREIGN
 *      (not owned, not a dead-letter queue: issue 18 item 5), and gets 3
 *      and 4 alike. Foreign ones are surfaced and never touched (their
 *      detail says so); no broker verdict moves anything anyway;
 *   3. HOLDER_GONE / SURFACED when unacked > 0 and consumers are known to be
 *      0 (measured unacked, threshold 0, unit messages); judged before stale
 *      ready, and when it holds stale ready is not reported;
 *   4. STALE_READY / SURFACED when ready > 0, consumers are known to be 0,
 *      the head timestamp is known and its age >= stale_ready_seconds
 *      (measured age in seconds). When the age cannot be measured, or the
 *      consumer count is unknown, *note says why; an unknown consumer count
 *      on a queue holding messages also makes it unmeasured.
 * object "queue:<vhost>:<name>", queue the name, project NULL, source
 * broker, trusted. *out is initialised here; clean it up whatever is
 * returned. RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_queue(const rp_queue_facts *q, const rp_thresholds *t, rp_time_ms now,
                         rp_queue_judgement *out) RP_MUSTCHECK;

/* Whether the broker would DROP a message of an owned quorum queue at its
 * delivery limit (a limit in force and no dead-letter exchange: RabbitMQ
 * then discards the message after that many deliveries; issue 14 item 2):
 * POISON / SURFACED, measured and threshold the limit, unit deliveries,
 * with a detail naming the fix. Nothing (condition RP_COND_NONE) for any
 * other queue, a dead-letter queue, or when the facts are not known.
 * *out is initialised here; clean it up whatever is returned.
 * RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_delivery_limit_drop(const rp_queue_facts *q, rp_verdict *out) RP_MUSTCHECK;

/* A dead-letter route of an owned queue that the tap cannot follow
 * (issue 14 item 1): what the pass found about it. */
typedef struct rp_dl_route {
    const char *vhost;
    const char *queue;        /* the owned queue */
    const char *exchange;     /* its dead-letter exchange; "" the default one */
    const char *routing_key;  /* its dead-letter routing key; NULL: none */
    /* A named exchange: whether it exists (known false: the pass could not
     * tell, and nothing is judged). */
    bool exchange_known;
    bool exchange_exists;
    /* An existing named exchange: whether anything but reaper's own
     * queues is bound to it (known false: not asked, nothing judged). */
    bool bound_known;
    bool bound;
    /* The default exchange with a routing key: the queue it names (the
     * target), whether it exists and its depth (ready + unacked). */
    bool target_known;
    bool target_exists;
    bool target_depth_known;
    int64_t target_depth;
} rp_dl_route;

/* Judges a dead-letter route the tap cannot follow, on the owned queue
 * itself: DEAD_LETTER / SURFACED, object "queue:<vhost>:<queue>", queue
 * the owned queue, unit messages, threshold 0, source broker, trusted,
 * with a detail naming the cause and the fix:
 *   - the default exchange (""): it cannot be bound, so no dead letter of
 *     the queue reaches the tap; with a routing key they go straight to
 *     the queue it names (the target; measured its depth when known, else
 *     -1; the pass backfills it like a dead-letter queue), without one to
 *     the queue each message's own routing key names (measured -1);
 *   - a named exchange that does not exist: the broker drops the queue's
 *     dead letters until it is declared (measured -1);
 *   - a named exchange that exists with nothing bound to it (bound_known,
 *     !bound): the broker routes the dead letters nowhere, and the tap,
 *     which copies the bindings to dead-letter queues, gets none (-1).
 * Nothing (condition RP_COND_NONE) for a named exchange that exists and
 * is bound (or whose bindings are not known), or whose existence is not
 * known. *out is initialised here; clean it up
 * whatever is returned. RP_ERR_INVALID for NULL names; RP_ERR_NOMEM. */
rp_status rp_judge_dead_letter_route(const rp_dl_route *r, rp_verdict *out) RP_MUSTCHECK;

/* The consumer timeout in force on one queue, as the broker reports it
 * (effective policy definition, queue arguments, or the broker-wide
 * setting). */
typedef struct rp_timeout_in_force {
    bool in_force;          /* some consumer timeout applies to the queue */
    bool value_known;       /* its value could be read */
    int64_t value_ms;       /* the broker's unit */
    const char *origin;     /* e.g. "policy vibey-reap", "broker-wide setting"; may be NULL */
} rp_timeout_in_force;

/* Verifies (a) on a broker queue: in force with a known value <=
 * consumer_timeout_seconds gives HUNG_HANDLER / VERIFIED; not in force, an
 * unknown value, or a longer value gives HUNG_HANDLER / SURFACED whose
 * detail says which. measured is the value in seconds (-1 when there is
 * none), threshold consumer_timeout_seconds, unit seconds, source broker.
 * Always gives a verdict. RP_ERR_INVALID for NULL arguments. */
rp_status rp_judge_consumer_timeout(const char *vhost, const char *queue,
                                    const rp_timeout_in_force *f, const rp_thresholds *t,
                                    rp_verdict *out) RP_MUSTCHECK;

/* The broker-wide consumer_timeout, as the management API gave it. */
typedef enum rp_wide_timeout_state {
    RP_WIDE_TIMEOUT_UNREADABLE = 0, /* not exposed (3.10 has no endpoint), or refused */
    RP_WIDE_TIMEOUT_VALUE,          /* value_ms */
    RP_WIDE_TIMEOUT_OFF,            /* not set: no broker-wide bound */
} rp_wide_timeout_state;

/* RabbitMQ's default consumer_timeout (30 minutes since 3.8.17). */
#define RP_BROKER_DEFAULT_CONSUMER_TIMEOUT_MS INT64_C(1800000)

/* A note for the pass report on a broker where the broker-wide
 * consumer_timeout is what bounds hung handlers (before 3.12): out of step
 * when longer than consumer_timeout_seconds (a hung handler is held longer
 * than declared), shorter than longest_lease_seconds (the broker cuts off
 * a handler that legitimately holds a message that long), or off; when it
 * cannot be read, what RabbitMQ's default would mean and how to look. why:
 * why it could not be read (may be NULL). *note is a heap string the caller
 * frees. RP_ERR_NOMEM, RP_ERR_INVALID. */
rp_status rp_judge_wide_timeout(rp_wide_timeout_state state, int64_t value_ms, const char *why,
                                int64_t consumer_timeout_seconds, int64_t longest_lease_seconds,
                                char **note) RP_MUSTCHECK;

/* One dead letter found on dead-letter queue `dlq` of `vhost`, examined by
 * rp_dead_letter_examine(): DEAD_LETTER / PARKED, object
 * "dead_letter:<identity>", queue dlq, project NULL, measured 1, threshold 1,
 * unit messages (each message counts on its own), source broker, trusted
 * false; the detail quotes the untrusted origin and reason
 * (rp_untrusted.h). RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_dead_letter(const rp_dead_letter *d, const char *vhost, const char *dlq,
                               rp_verdict *out) RP_MUSTCHECK;

/* Why the backfill left messages of an owned dead-letter queue unread
 * (rp_dl_batch in rp_ports.h says how a port reports it). */
typedef enum rp_dl_unread_reason {
    RP_DL_UNREAD_NONE = 0,
    /* They lie behind what this pass read: the dead letters at the head
     * parked already, then dead_letter_peek_limit new ones (a classic
     * queue: the next pass reads past what is parked by then). */
    RP_DL_UNREAD_PEEK_LIMIT,
    /* A queue the backfill reads once, ever (quorum: every read spends a
     * delivery): they lay behind what that one read took. */
    RP_DL_UNREAD_READ_ONCE,
    /* The backfill cannot read the queue at all (a stream: basic.get does
     * not apply). */
    RP_DL_UNREAD_NOT_READABLE,
    /* A dry run does not read the queue (a read would spend a delivery). */
    RP_DL_UNREAD_DRY_RUN,
    RP_DL_UNREAD_COUNT_
} rp_dl_unread_reason;

/* The messages of owned dead-letter queue `dlq` on `vhost` that the
 * backfill did not read (issue #5: dead letters that predate the tap):
 * DEAD_LETTER / SURFACED, object "queue:<vhost>:<dlq>" (the sighting of the
 * queue, the key a dead-letter queue reaper does not own is sighted by),
 * queue dlq, project NULL, measured `unread` (unit messages; at_most: an
 * upper bound, said "up to" in the detail), threshold the peek limit for
 * PEEK_LIMIT and READ_ONCE (what a read takes) and 0 otherwise (none can
 * be read), source broker, trusted; the detail says why they were not
 * read, that nothing is removed, and what an operator can do.
 * RP_ERR_INVALID for NULL names, unread < 1 or reason NONE or out of
 * range; RP_ERR_NOMEM. */
rp_status rp_judge_dead_letter_unread(const char *vhost, const char *dlq, int64_t unread,
                                      bool at_most, rp_dl_unread_reason reason,
                                      size_t peek_limit, rp_verdict *out) RP_MUSTCHECK;

/* The CLEARED verdict for an open sighting that a pass which read its
 * source whole no longer sees. Condition and source from the sighting (its
 * key), action CLEARED, object the key's subject (for a queue subject, queue
 * is the queue name; for a project subject, project is the project),
 * measured -1, threshold and unit those of the condition, trusted.
 * RP_ERR_INVALID when the key does not split (rp_sighting_key_split). */
rp_status rp_judge_cleared(const rp_sighting_row *s, const rp_thresholds *t,
                           rp_verdict *out) RP_MUSTCHECK;

/* ---- Issue 18: the queue runbook's checks ------------------------------
 *
 * BOUNDARIES, exactly:
 *   - a job is held too long (STALLED) when now - claimed_at >=
 *     held_ceiling_seconds: AT the ceiling it IS stalled. A hold that
 *     cannot be measured (claimed_at unknown) or is negative is not.
 *   - it is evicted when held_evict_factor > 0 and now - claimed_at >=
 *     held_evict_factor * held_ceiling_seconds (saturating).
 *   - only a LEASED row whose lease has not expired is judged: an expired
 *     lease (rp_judge_lease_expired, with the grace) is the lease reap's;
 *     a lease with no deadline never expires and is judged.
 *   - waiting depth: count > waiting_depth_threshold (job table, per
 *     project and kind) or ready > queue_depth_threshold (an owned work
 *     queue): strictly ABOVE; at the threshold nothing is surfaced. */

/* Whether a hold of held_ms is at or past the ceiling / the eviction. */
bool rp_judge_held_stalled(int64_t held_ms, int64_t ceiling_seconds);
bool rp_judge_held_evict(int64_t held_ms, int64_t ceiling_seconds, int64_t evict_factor);

/* A leased row of the job table with its hold (migration 0007's
 * claimed_at). Strings borrowed. */
typedef struct rp_long_held_job {
    int64_t id;
    const char *project;
    const char *kind;
    rp_job_state state;
    const char *lease_owner;      /* NULL when unknown */
    bool lease_expires_known;     /* false: the lease has no deadline */
    rp_time_ms lease_expires_at;
    bool claimed_known;           /* false when claimed_at is NULL */
    rp_time_ms claimed_at;
} rp_long_held_job;

/* Judges a held job's hold. Nothing when it is not leased, its lease has
 * expired (past the grace), the hold is unknown or under the ceiling.
 * Otherwise STALLED, measured the hold in seconds, unit "seconds", object
 * "job:<id>", queue the kind, project the job's, source job_queue, the
 * detail naming the job, its owner and the hold:
 *   past the eviction (held_evict_factor > 0): action REQUEUED, threshold
 *     factor * ceiling (saturating);
 *   else: action SURFACED, threshold the ceiling.
 * RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_long_held(const rp_long_held_job *job, const rp_thresholds *t,
                             rp_time_ms now, rp_verdict *out) RP_MUSTCHECK;

/* What the store's list_long_held reads (rp_ports.h): leased rows held
 * since claimed_before or earlier whose lease is not past now - grace. */
typedef struct rp_long_held_query {
    rp_time_ms now;
    rp_time_ms claimed_before;  /* now - held_ceiling_seconds */
    int64_t grace_seconds;
    const char *project;        /* NULL: every project */
    size_t limit;               /* at most this many rows, longest held first */
} rp_long_held_query;

typedef struct rp_long_held_list {
    const rp_long_held_job *jobs;  /* lent */
    size_t n;
} rp_long_held_list;

/* The claimable jobs of one kind in one project (ready, run_after <= now,
 * dependency absent or succeeded). Strings borrowed. */
typedef struct rp_waiting_group {
    const char *project;
    const char *kind;
    int64_t claimable;
} rp_waiting_group;

typedef struct rp_waiting_list {
    const rp_waiting_group *groups;  /* lent, by project then kind */
    size_t n;
} rp_waiting_list;

/* claimable > waiting_depth_threshold: WAITING_DEPTH / SURFACED, measured
 * the count, threshold the threshold, unit "jobs", object
 * "kind:<project>:<kind>" (rp_object_kind), queue the kind, project, source
 * job_queue; the detail gives the depth and the fix (a cap on admission).
 * RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_waiting(const rp_waiting_group *g, const rp_thresholds *t,
                           rp_verdict *out) RP_MUSTCHECK;

/* An OWNED work queue (not a dead-letter queue, not a stream) whose
 * message counts are known and whose ready > queue_depth_threshold:
 * WAITING_DEPTH / SURFACED, measured ready, threshold the threshold, unit
 * "messages", object "queue:<vhost>:<name>", queue the name, source broker,
 * with the depth and the fix. Nothing otherwise (owned and
 * is_dead_letter_queue are read: classify first). RP_ERR_INVALID for NULL
 * arguments; RP_ERR_NOMEM. */
rp_status rp_judge_queue_depth(const rp_queue_facts *q, const rp_thresholds *t,
                               rp_verdict *out) RP_MUSTCHECK;

#endif
