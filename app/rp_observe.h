/*
 * rp_observe.h - the daemon's metrics glue: the loop-side state copied
 * into the registry (core/rp_metrics.h) before each scrape, readiness, the
 * event lag of broker events, every pass, and the open sightings and gates
 * after a pass and soon after ledger events.
 *
 * The HTTP endpoints are not this part's: cmd/reaperd serves them
 * (adapters/http) with rp_observe_refresh and rp_observe_ready as hooks.
 *
 * Hooks other code calls (all thread-safe, on the registry):
 *   rp_metrics_reaped               rp_amqp_feed.c, every committed ledger event
 *   rp_metrics_dead_letters_parked  rp_amqp_feed.c counts DEAD_LETTER/PARKED events,
 *                                   under the verdict's vhost
 *   rp_metrics_tap_ignored          the tap, under its vhost
 *   rp_metrics_gate_answered        control.c, an answer that changed a gate
 *   rp_metrics_control              control.c, once per reply
 *   rp_metrics_feed_publish_failed  rp_amqp_feed.c
 *   rp_metrics_feed_published       rp_amqp_feed.c, an event the exchange confirmed
 *   rp_metrics_connected            daemon.c (the session's hooks), each connection made
 *   rp_metrics_tap_parked           the tap, each dead letter it parked (its vhost)
 *   rp_observe_event_lag            daemon.c, each broker event
 *   rp_observe_pass_store           daemon.c, store thread, after a pass
 *   rp_observe_pass_done            daemon.c, loop, when a pass is done
 *   rp_observe_gauges_soon          daemon.c (the feed's loop hook), after each
 *                                   published ledger event: the open gates and
 *                                   sightings are counted again at most once
 *                                   every gauges_ms (a park, an answer, a
 *                                   sighting opened or cleared between passes
 *                                   shows within that), one recount at a time,
 *                                   and at most once every
 *                                   RP_OBSERVE_GAUGES_SPACING times what the
 *                                   last one took (at most
 *                                   RP_OBSERVE_GAUGES_MAX_MS)
 *
 * Ownership: deps and what they point to are borrowed for the part's life.
 * Threads: the loop thread, except rp_observe_pass_store (store thread) and
 * the gauges port (store thread, through deps->store_job).
 */
#ifndef RP_OBSERVE_H
#define RP_OBSERVE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_gauges_port.h"
#include "rp_metrics.h"
#include "rp_pass.h"
#include "rp_ports.h"
#include "rp_status.h"
#include "worker.h"

#define RP_OBSERVE_GAUGES_MS 2000
/* A recount takes at most 1/RP_OBSERVE_GAUGES_SPACING of the time, whatever
 * gauges_ms says: the next one waits at least RP_OBSERVE_GAUGES_SPACING times
 * as long as the last one took, and at most RP_OBSERVE_GAUGES_MAX_MS (a count
 * that was slow because the database stalled does not hold the gauges for
 * an hour). The open gates are counted over every open gate: in a storm or a
 * backlog of hundreds of thousands, a count takes a tenth of a second or
 * more, on the store thread that answers gates and on a database core. At
 * one every 2 s, two 100,000 storms held 17 counts of 124 ms each on
 * average: PostgreSQL's busiest statement after the park (bench/REPORT.md). */
#define RP_OBSERVE_GAUGES_SPACING 50
#define RP_OBSERVE_GAUGES_MAX_MS 60000

typedef struct rp_observe rp_observe;

/* One tap of another vhost, as the metrics and /readyz see it (loop
 * thread; vhost lent until the hook is called again). */
typedef struct rp_observe_tap {
    const char *vhost;
    int64_t held_bytes;
    bool paused;
    bool ready; /* its connection up and its bindings in place */
} rp_observe_tap;

typedef struct rp_observe_deps {
    rp_metrics *metrics; /* initialised by the caller */
    const bool *stopping; /* read atomically */
    const bool *broker_up, *store_up;
    rp_clock_port clock; /* this host's wall clock */
    /* Before each scrape: what the process uses (false: not known). May be NULL. */
    bool (*process_sample)(rp_metrics_process *out);
    /* The dead-letter tap: its gauges (false: no tap now, nothing set),
     * and whether its bindings are in place (readiness). NULL: no tap
     * (always bound). */
    bool (*tap_gauges)(void *arg, int64_t *held_bytes, bool *paused);
    bool (*tap_bound)(void *arg);
    void *tap_arg;
    /* The tap's vhost (broker.url's), read at each scrape: its gauges'
     * vhost label. NULL, or *NULL: counted in the overflow slot. */
    const char *const *tap_vhost;
    /* Issue 19 item 1: the taps of broker.vhosts' other vhosts, the i-th
     * into *out (false past the last; NULL: none): each one's gauges are
     * its vhost's series, and /readyz is not ready while one is not (its
     * reason names the vhost). */
    bool (*vhost_tap)(void *arg, size_t i, struct rp_observe_tap *out);
    void *vhost_tap_arg;
    /* Counts on the store thread. */
    rp_gauges_port gauges;
    /* Runs fn(job) on the store thread, then done(job) on the loop; an
     * error: neither runs. */
    rp_status (*store_job)(void *arg, rp_work_fn fn, rp_done_fn done, void *job);
    void *store_job_arg;
    int gauges_ms; /* the recount's debounce; 0: RP_OBSERVE_GAUGES_MS */
} rp_observe_deps;

rp_observe *rp_observe_new(struct event_base *base, const rp_observe_deps *deps);
/* The HTTP hooks (arg: the rp_observe). refresh: before each scrape.
 * ready: whether reaperd is ready; why (cap bytes) says what it waits for. */
void rp_observe_refresh(void *arg);
bool rp_observe_ready(void *arg, char *why, size_t cap);
/* A broker event stamped at stamped_ms (its timestamp_in_ms header). */
void rp_observe_event_lag(rp_observe *o, int64_t stamped_ms);
/* Store thread, after a daemon pass: the open sightings by condition
 * (NULL: not known) and the open gates counted now. */
void rp_observe_pass_store(rp_observe *o, const int64_t *open_by_condition);
/* The policies a reconcile checked (report->policies) into
 * reaper_policy_verified{policy,vhost}, per watched vhost (issue 18 item
 * 5, issue 19 item 1). Any thread. */
void rp_observe_pass_policies(rp_observe *o, const rp_report *report);
/* Loop, when a daemon pass is done: its scope, outcome and duration. */
void rp_observe_pass_done(rp_observe *o, rp_pass_scope scope, rp_status status, bool report_ok,
                          int64_t duration_ms);
/* Loop: count the open gates and sightings again soon (debounced). */
void rp_observe_gauges_soon(rp_observe *o);
/* How long a recount waits after a ledger event: debounce_ms, or
 * RP_OBSERVE_GAUGES_SPACING times what the last count took when that is
 * longer, never more than RP_OBSERVE_GAUGES_MAX_MS. Pure. */
int64_t rp_observe_gauges_wait_ms(int64_t debounce_ms, int64_t last_took_ms);
/* No recount is started after this. */
void rp_observe_stop(rp_observe *o);
void rp_observe_free(rp_observe *o); /* NULL: nothing */

#endif
