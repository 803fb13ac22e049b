/*
 * rp_consumers.h - what reaper decides from broker events as they happen
 * (CONTRACT section 1: "the event exchange (as it happens)"; issue #4).
 *
 * Pure: no I/O, no clock, no logging. Every input takes the monotonic time
 * in milliseconds (now); what to do comes back as due times (the caller
 * arms its timers) and as calls on the sink below (the caller logs, runs
 * its hooks, keeps the counts the sweep shares). It keeps:
 *  - an INVENTORY of the queues reaper owns (classified as the pass does),
 *    seeded by one listing after every (re)connect (events are not
 *    replayed) and kept from queue.created/queue.deleted;
 *  - per owned queue, a CONSUMER COUNT from consumer.created/deleted and
 *    channel.closed, seeded from the listing (why: see rp_consumers.c);
 * and decides:
 *  - when a consumer, a channel or a connection of an owned queue goes
 *    away, that queue is checked RP_CONSUMERS_NOW_MS later (debounced: many
 *    events, one check) and checked again after the broker's next
 *    statistics emission, so that a stale first reading cannot hide held
 *    work (rp_consumers_take_due / rp_consumers_check_done);
 *  - queue.created of an owned queue, and policy.set/policy.cleared of
 *    reaper's policies or of a policy whose pattern matches an owned queue,
 *    want a debounced policy reconcile: never more often than every
 *    RP_CONSUMERS_RECONCILE_GAP_MS, backing off while the broker refuses
 *    writes or something keeps changing the policy back; not while
 *    reap.enabled is false, as the sweep's reconcile;
 *  - when to list again after a listing failed (5 s doubling to 5 min).
 *
 * Threads: one rp_consumers on one thread (the daemon's loop).
 * rp_consumers_classify alone may be called from any thread.
 * Ownership: rp_consumers_new copies the sink; the own-policy names are
 * borrowed for the object's life. Strings given to the sink are lent for
 * the call. Events, configs and seed items are borrowed for the call.
 */
#ifndef RP_CONSUMERS_H
#define RP_CONSUMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_broker_event.h"
#include "rp_common.h"
#include "rp_config.h"
#include "rp_status.h"

/* Timings, in milliseconds (see DEBOUNCE in rp_consumers.c). */
#define RP_CONSUMERS_NOW_MS 150
#define RP_CONSUMERS_LATE_MS 6500 /* statistics every 5 s, then about 1 s to show */
#define RP_CONSUMERS_LATE_CAP_MS 20000
#define RP_CONSUMERS_LATE_TRIES 3
#define RP_CONSUMERS_RETRY_MS 5000 /* one more statistics interval */
#define RP_CONSUMERS_STATS_WINDOW_MS 6500
#define RP_CONSUMERS_RECONCILE_DELAY_MS 1000
#define RP_CONSUMERS_RECONCILE_GAP_MS 10000
#define RP_CONSUMERS_RECONCILE_GAP_MAX_MS 300000
#define RP_CONSUMERS_SEED_RETRY_FIRST_S 5
#define RP_CONSUMERS_SEED_RETRY_MAX_S 300

typedef struct rp_consumers rp_consumers;

/* What the caller is told as it happens. Every function may be NULL. */
typedef struct rp_consumers_sink {
    void *self;
    /* An owned queue appeared (created true: an event or a seed listing) or
     * disappeared (created false); name NULL (created true): a policy or a
     * route that concerns the owned queues of vhost changed. */
    void (*queue)(void *self, const char *vhost, const char *name, bool dlq, bool created);
    /* The events' consumer count of a queue is the one to use instead of
     * the management API's until until_ms (known false: forget what was
     * said of it). Entries whose until_ms <= now may be dropped. */
    void (*recent)(void *self, const char *vhost, const char *name, bool known,
                   int64_t consumers, int64_t now, int64_t until_ms);
    /* An event asked for a policy reconcile (why: the routing key or
     * "owned queue created"; name: the policy or queue). wanted false: not
     * run, reap.enabled is false. */
    void (*reconcile)(void *self, bool wanted, const char *why, const char *name);
    /* A policy pattern could not be matched against an owned queue within
     * rp_match.h's limits: its coverage is unknown, the event counts as
     * relevant. first: the first time for this object. */
    void (*pattern_unknown)(void *self, bool first, const char *policy, const char *vhost,
                            const char *queue);
    /* Out of memory: the check of that queue was not scheduled. */
    void (*check_skipped)(void *self, const char *name);
} rp_consumers_sink;

/* Timers to arm after an input (0: leave that timer as it is). */
typedef struct rp_consumers_due {
    int64_t check_at;     /* (re)arm the check timer for this time */
    int64_t reconcile_at; /* arm the reconcile timer (not armed now) */
} rp_consumers_due;

/* own_policies: NULL-terminated names of reaper's own policies (a policy
 * event naming one is always relevant). NULL when out of memory. */
rp_consumers *rp_consumers_new(const rp_consumers_sink *sink, const char *const *own_policies);
void rp_consumers_free(rp_consumers *c);

/* Whether name is an owned queue (or the dead-letter queue of one: *dlq),
 * classified as the pass does (rp_pass.h). Any thread. */
bool rp_consumers_classify(const rp_config *cfg, const char *name, bool *dlq);

/* One parsed broker event. cfg is the configuration in force. */
rp_consumers_due rp_consumers_on_event(rp_consumers *c, const rp_config *cfg,
                                       const rp_broker_event *ev, int64_t now);

/* Owned queues in the inventory, and whether one is (for tests and logs). */
size_t rp_consumers_owned(const rp_consumers *c);
bool rp_consumers_is_owned(const rp_consumers *c, const char *vhost, const char *name);
/* The consumer count the events give for an owned queue: false when unknown
 * (not owned, no base read, or a channel of it closed within the last
 * statistics interval: the reading alone decides then). */
bool rp_consumers_count(const rp_consumers *c, const char *vhost, const char *name, int64_t now,
                        int64_t *consumers);

/* ---- seeding ------------------------------------------------------------ */

/* After every (re)connect, and when the retry timer fires. True: list the
 * queues now (then call rp_consumers_seed_done, or rp_consumers_seed_abort
 * when the listing could not be started); false: a listing is in flight,
 * another follows it. */
bool rp_consumers_seed_begin(rp_consumers *c, int64_t now) RP_MUSTCHECK;
void rp_consumers_seed_abort(rp_consumers *c);

/* One owned queue of a listing (classify with rp_consumers_classify). */
typedef struct rp_consumers_seed_item {
    const char *vhost, *name;
    bool dlq;
    bool consumers_known;
    int64_t consumers;
} rp_consumers_seed_item;

typedef enum rp_consumers_seed_outcome {
    RP_SEED_MERGED = 0, /* the inventory is the listing's now */
    RP_SEED_AGAIN,      /* reconnected or asked again meanwhile: seed_begin again now */
    RP_SEED_RETRY,      /* the listing failed: seed_begin again in retry_s seconds */
} rp_consumers_seed_outcome;

typedef struct rp_consumers_seed_result {
    rp_consumers_seed_outcome outcome;
    int retry_s;                   /* RP_SEED_RETRY */
    size_t owned, added, removed;  /* RP_SEED_MERGED */
} rp_consumers_seed_result;

/* The listing begun by the last seed_begin ended. stale: the broker
 * connection changed since it began. status: the listing's; items: the
 * owned queues it held (when RP_OK). A merge replaces the counts and the
 * inventory but keeps what events said during the listing: queues created
 * after it began stay, queues deleted during it do not come back,
 * consumers created after it began stay known. */
rp_consumers_seed_result rp_consumers_seed_done(rp_consumers *c, bool stale, rp_status status,
                                                const rp_consumers_seed_item *items, size_t n,
                                                int64_t now);

/* ---- checks ------------------------------------------------------------- */

/* What one check read of a queue (for comparing two readings). */
typedef struct rp_consumers_reading {
    bool read, counts_known, consumers_known;
    int64_t ready, unacked, consumers;
} rp_consumers_reading;

/* One queue to check. */
typedef struct rp_consumers_check {
    char *vhost, *name;
    bool late;                  /* the check after the statistics emission */
    int late_tries;
    rp_consumers_reading first; /* late: what the check at once read */
    bool override;              /* use consumers_ev instead of the reading's count */
    int64_t consumers_ev;
    char trigger[64];           /* the routing key of the event that began the round */
    bool has_ts;                /* at once, with the event's broker timestamp */
    int64_t event_ts_ms;
    /* filled by the caller from the check's reading */
    rp_status read_status;
    rp_consumers_reading got;
} rp_consumers_check;

/* The checks due together, run as one job. Owned by the caller:
 * rp_consumers_batch_cleanup. */
typedef struct rp_consumers_batch {
    rp_consumers_check *items;
    size_t n;
    int64_t built_ms;
} rp_consumers_batch;

/* The check timer fired: takes the checks due at now into out (n 0:
 * nothing to run; *due says when to arm again). With n > 0 a check is in
 * flight until rp_consumers_check_done (or rp_consumers_check_abort when
 * it could not be run). Nothing is taken while one is in flight.
 * RP_ERR_NOMEM: nothing taken, arm again at *due. */
rp_status rp_consumers_take_due(rp_consumers *c, int64_t now, rp_consumers_batch *out,
                                rp_consumers_due *due) RP_MUSTCHECK;
void rp_consumers_batch_cleanup(rp_consumers_batch *b);
/* When the check timer should fire next (0: nothing to arm: no check
 * pending, or one in flight). */
int64_t rp_consumers_check_at(const rp_consumers *c);
void rp_consumers_check_abort(rp_consumers *c);
/* The batch ran (its items' read_status and got filled). stale: the broker
 * connection changed since it was taken (its readings teach nothing).
 * Resets bases from fresh later readings and schedules a later check again
 * when it read nothing new. */
rp_consumers_due rp_consumers_check_done(rp_consumers *c, const rp_consumers_batch *b, bool stale,
                                         int64_t now);

/* ---- policy reconcile --------------------------------------------------- */

/* The reconcile timer fired. True: run one reconcile now (then call
 * rp_consumers_reconcile_done, or rp_consumers_reconcile_abort when it could
 * not be started); false: nothing, or not yet (*due). */
bool rp_consumers_reconcile_fire(rp_consumers *c, int64_t now, rp_consumers_due *due) RP_MUSTCHECK;
void rp_consumers_reconcile_abort(rp_consumers *c);
/* backoff: the reconcile failed, was refused or wrote (something may keep
 * changing the policy back): the gap doubles up to the maximum; else it
 * is RP_CONSUMERS_RECONCILE_GAP_MS again. */
rp_consumers_due rp_consumers_reconcile_done(rp_consumers *c, bool backoff, int64_t now);

#endif
