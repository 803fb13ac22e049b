/*
 * rp_pass_internal.h - the state of one pass, shared by rp_pass.c,
 * rp_pass_store.c and rp_pass_broker.c. Not for use outside them.
 *
 * Ownership: an rp__pass owns its copies of the open sightings, the keys
 * seen this pass and the backfill targets (all heap, freed by
 * rp__pass_cleanup); it borrows ports, options and the report.
 */
#ifndef RP_PASS_INTERNAL_H
#define RP_PASS_INTERNAL_H

#include "rp_pass.h"

typedef struct rp__open_sighting {
    char *key;
    rp_condition condition;
    int64_t opened_seq;
    rp_time_ms opened_at;
} rp__open_sighting;

typedef struct rp__target {
    char *vhost;
    char *queue;
    int64_t depth;  /* ready + unacked as listed */
} rp__target;

/* A dead-letter route of an owned queue to judge after the listing
 * (rp_pass_routes.c): the queue and what it names (heap copies). */
typedef struct rp__route {
    char *vhost;
    char *queue;
    char *exchange;     /* "" the default exchange */
    char *routing_key;  /* NULL: none */
} rp__route;

/* A verdict on an owned work queue held until the listing is whole
 * (rp__pass_hold): surfaced then unless the queue turned out to be the
 * target of a dead-letter route through the default exchange. */
typedef struct rp__held {
    char *vhost;
    char *queue;
    rp_verdict v;
} rp__held;

/* A growable list of heap strings. */
typedef struct rp__strs {
    char **v;
    size_t n, cap;
} rp__strs;

/* Adds a copy of s (once). RP_ERR_NOMEM. */
rp_status rp__strs_add(rp__strs *l, const char *s) RP_MUSTCHECK;
bool rp__strs_has(const rp__strs *l, const char *s);
void rp__strs_cleanup(rp__strs *l);

typedef struct rp__pass {
    const rp_ports *ports;
    const rp_pass_options *opt;
    rp_report *report;
    rp_time_ms now;
    /* The sightings open when the pass began, sorted by key. */
    rp__open_sighting *open;
    size_t n_open;
    bool open_known;  /* false when they could not be listed */
    /* Keys of the surfaced conditions seen this pass. */
    char **seen;
    size_t n_seen, cap_seen;
    /* Whether each source was read whole (every list and page, no error). */
    bool store_whole;
    bool broker_ran;
    bool broker_whole;
    /* Owned dead-letter queues to backfill after the listing. */
    rp__target *targets;
    size_t n_targets, cap_targets;
    /* Subjects ("queue:<vhost>:<name>") read but not measured (statistics
     * not reported yet): their sightings are neither opened nor cleared. */
    rp__strs kept;
    /* A targeted check (rp_pass_queues): only broker sightings whose
     * subject is in `read` (a queue read, or found gone) may be cleared. */
    bool targeted;
    rp__strs read;
    /* Owned queues whose dead-letter exchange is named (rp__pass_add_route),
     * and what was found about named exchanges ("<vhost>\n<name>"). */
    rp__route *routes;
    size_t n_routes, cap_routes;
    rp__strs x_present, x_missing;
    /* Of the exchanges present: bound to something, or to nothing. */
    rp__strs x_bound, x_unbound;
    /* Verdicts on owned work queues, held until every route is known. */
    rp__held *held;
    size_t n_held, cap_held;
    /* Issue 18: whether the job table's STALLED and WAITING_DEPTH listings
     * were read whole this pass (only then are their sightings cleared). */
    bool stalled_read;
    bool waiting_read;
    /* Issue 18 item 4: whether the job table's wedge groups were read and
     * counted this pass (only then are WEDGED sightings cleared). */
    bool wedged_read;
    /* Issue 18 item 3: the job table's DIVERGENT counts read this pass. */
    bool divergent_read;
    /* Owned queues ("queue:<vhost>:<name>") whose publish/ack rates could
     * not be read this pass: their DIVERGENT sightings are kept. */
    rp__strs divergent_unread;
    /* Issue 18 item 1, broker: whether the channels were listed and
     * sampled this pass (only then are broker STALLED sightings cleared),
     * and the owned queues ("queue:<vhost>:<name>") consumed by a channel
     * whose hold this process cannot judge yet: their sightings are kept. */
    bool stall_broker_read;
    rp__strs stall_unsure;

    /* Issue 18 item 4, broker (rp_pass_wedged_broker.c): the owned queues
     * wedged on this check (copies), the owned queues whose ack counter
     * could not be read (their WEDGED sightings are kept), and whether the
     * consecutive checks were counted this pass (only then are broker
     * WEDGED sightings cleared). */
    struct rp__wedge_cand *wedge_cands;
    size_t n_wedge_cands, cap_wedge_cands;
    rp__strs wedge_unread;
    bool wedged_broker_read;
} rp__pass;

/* Sets up *p for a pass over ports with opt and report (the clock read
 * once), and frees what it holds. */
void rp__pass_init(rp__pass *p, const rp_ports *ports, const rp_pass_options *opt,
                   rp_report *report);
void rp__pass_cleanup(rp__pass *p);
/* Reads the open sightings (an unreadable store is recorded). */
rp_status rp__pass_load_open(rp__pass *p) RP_MUSTCHECK;
/* Closes every open sighting this pass may clear and did not see. */
rp_status rp__pass_clear(rp__pass *p) RP_MUSTCHECK;
/* Classifies and judges one queue as read; surfaces what holds; with
 * backfill, an owned dead-letter queue over its depth is kept for the
 * backfill. A queue read but not measured goes to p->kept. */
rp_status rp__pass_judge_queue(rp__pass *p, const rp_queue_facts *read, bool backfill) RP_MUSTCHECK;

/* A queue's counters as its page's one sampling gave them
 * (rp__pass_divergent_page): tried false when the queue was not sampled
 * with its page (it is then sampled on its own, if at all). */
typedef struct rp__sampled {
    bool tried;
    rp_status st;          /* the page's sampling (RP_OK: rates are the store's) */
    rp_queue_rates rates;
} rp__sampled;

/* rp__pass_judge_queue with the queue's counters already sampled with its
 * page (pre; NULL: sampled on their own when the queue needs them). */
rp_status rp__pass_judge_sampled(rp__pass *p, const rp_queue_facts *read, bool backfill,
                                 const rp__sampled *pre) RP_MUSTCHECK;
/* Issue 19 item 5: samples the counters of the owned work queues of a
 * listed page of n queues in ONE store call (sample_queue_counters_many)
 * and gives *out, n entries (heap, the caller frees; NULL when nothing was
 * sampled that way: no such queue, no such port, a targeted check). The
 * queues are classified as rp__pass_judge_queue will classify them, without
 * its notes. A failed sampling is in each entry (the queue's note is added
 * when it is judged, as before). RP_ERR_NOMEM. */
rp_status rp__pass_divergent_page(rp__pass *p, const rp_queue_facts *queues, size_t n,
                                  rp__sampled **out) RP_MUSTCHECK;

/* Notes the dead-letter route of a classified queue for rp__pass_routes
 * (owned, not a dead-letter queue, a dead-letter exchange named). */
rp_status rp__pass_add_route(rp__pass *p, const rp_queue_facts *q) RP_MUSTCHECK;
/* Judges the routes noted (rp_judge_dead_letter_route) and surfaces what
 * the tap cannot follow; with backfill, the queue a route through the
 * default exchange names becomes a backfill target like an owned
 * dead-letter queue. Call after the listing (it reads the broker port). */
rp_status rp__pass_routes(rp__pass *p, bool backfill) RP_MUSTCHECK;
void rp__pass_routes_cleanup(rp__pass *p);
/* Holds the verdict *v on the owned work queue vhost/name: moves it in
 * (*v is left empty, also on failure: then it is cleaned up). */
rp_status rp__pass_hold(rp__pass *p, const char *vhost, const char *name,
                        rp_verdict *v) RP_MUSTCHECK;
/* Surfaces the held verdicts, but drops those on a queue that a route of
 * an owned queue through the default exchange names (a dead-letter queue,
 * judged as one by rp__pass_routes): call after the listing, before
 * rp__pass_routes. Empties the held list. */
rp_status rp__pass_release_held(rp__pass *p) RP_MUSTCHECK;
/* Shared with rp_pass_routes.c (rp_pass_broker.c). */
bool rp__pass_is_own_queue(const rp__pass *p, const char *name);
rp_status rp__pass_keep_queue(rp__pass *p, const char *vhost, const char *name) RP_MUSTCHECK;
rp_status rp__pass_add_target(rp__pass *p, const rp_queue_facts *q) RP_MUSTCHECK;
bool rp__pass_has_target(const rp__pass *p, const char *vhost, const char *name);

/* Names src in the report's unreadable list (once per source) and adds the
 * note "<source>: <what>: <status>" (once: a store that is down for the
 * whole pass fails every call the same way). */
rp_status rp__pass_unreadable(rp__pass *p, rp_source src, const char *what,
                              rp_status why) RP_MUSTCHECK;
rp_status rp__pass_note(rp__pass *p, const char *fmt, ...) RP_PRINTF(2, 3) RP_MUSTCHECK;
/* Names one object (e.g. "job:42", a row that failed on its own) in the
 * report's unreadable list, once, and makes the pass not ok (issue 18
 * item 5): the source was read, this object was not dealt with. */
rp_status rp__pass_unreadable_object(rp__pass *p, const char *object) RP_MUSTCHECK;

/* Records a SURFACED verdict once per sighting (see rp_pass.h). Consumes
 * *v: it is moved into the report or cleaned up. */
rp_status rp__pass_surface(rp__pass *p, rp_verdict *v) RP_MUSTCHECK;

/* The two halves. They return only failures that stop the pass
 * (RP_ERR_NOMEM); an unreadable source is recorded and the half goes on. */
rp_status rp__pass_store(rp__pass *p) RP_MUSTCHECK;
/* The job table's WEDGED check (rp_pass_wedged.c). */
rp_status rp__pass_wedged(rp__pass *p) RP_MUSTCHECK;
/* The job table's DIVERGENT step (rp_pass_divergent.c). */
rp_status rp__pass_divergent_store(rp__pass *p) RP_MUSTCHECK;
/* The broker's DIVERGENT step for one classified queue: its counters
 * sampled into the store, its rates over the window judged, a verdict held
 * (rp__pass_hold). */
rp_status rp__pass_divergent_queue(rp__pass *p, const rp_queue_facts *q,
                                   const rp__sampled *pre) RP_MUSTCHECK;
/* Whether a pass may judge (and so clear) broker DIVERGENT sightings. */
bool rp__pass_divergent_sampled(const rp__pass *p, const char *subject);
/* The broker's STALLED step (rp_pass_stalled.c): the channels sampled,
 * STALLED surfaced on the owned queues they hold. After the listing. */
rp_status rp__pass_stalled_broker(rp__pass *p) RP_MUSTCHECK;
/* Classifies q by the patterns as the listing does (owned,
 * is_dead_letter_queue, reapers_own set). */
rp_status rp__pass_classify(rp__pass *p, rp_queue_facts *q) RP_MUSTCHECK;
/* The same without a note for a name the patterns cannot be matched
 * against (it is then neither owned nor a dead-letter queue). */
rp_status rp__pass_classify_quiet(const rp__pass *p, rp_queue_facts *q) RP_MUSTCHECK;

/* The broker's WEDGED step for one owned queue as its counters were just
 * sampled (rates: what the store gave; sampled false: not read): a queue
 * wedged on this check is kept for rp__pass_wedged_broker. */
rp_status rp__pass_wedged_queue(rp__pass *p, const rp_queue_facts *q, const rp_queue_rates *rates,
                                bool sampled) RP_MUSTCHECK;
/* After a whole listing: counts the consecutive checks of the queues kept
 * (wedge_check), surfaces WEDGED at reap.wedged_checks, and runs the
 * restart-loop breaker on them (reap.wedge_restart). */
rp_status rp__pass_wedged_broker(rp__pass *p) RP_MUSTCHECK;
/* Whether a pass may clear the broker WEDGED sighting of subject. */
bool rp__pass_wedged_broker_judged(const rp__pass *p, const char *subject);
void rp__pass_wedged_broker_cleanup(rp__pass *p);
rp_status rp__pass_leases(rp__pass *p) RP_MUSTCHECK; /* the lease reap alone */
rp_status rp__pass_broker(rp__pass *p) RP_MUSTCHECK;

#endif
