/*
 * rp_events.h - acting on broker events as they happen (CONTRACT section 1:
 * "the event exchange (as it happens)"; issue #4).
 *
 * The daemon's exclusive queue bound to amq.rabbitmq.event
 * (adapters/rabbitmq/rp_amqp_session.c) delivers to the daemon, which
 * parses each delivery (adapters/rabbitmq/rp_amqp_events.h) and hands the
 * event here as core's plain rp_broker_event. This part is wiring: it
 * hands each event to core/rp_consumers.h, which decides (the inventory of
 * owned queues, the consumer counts, the debounced checks and the re-check
 * after the statistics emission, the seed merge, the policy-reconcile
 * timer, the queue hooks), arms the timers core asks for, runs the checks
 * and reconciles core asks for on threads of its own over the backends of
 * core/rp_runner_port.h, and logs what happened:
 *  - a check judges the queues due with the sweep's rules (core
 *    rp_pass_queues) using the events' consumer count where core gives one;
 *  - a seed lists the queues after every (re)connect (events are not
 *    replayed);
 *  - a reconcile writes reaper's policies (not while reap.enabled is false).
 *
 * HOOK for other parts of the daemon: rp_events_add_queue_hook() registers
 * a function called on the loop thread for every owned queue that appears
 * (queue.created, and every queue of each seed listing) or disappears
 * (queue.deleted), e.g. to check the dead-letter tap's bindings; and with
 * name NULL (created true) when a policy that concerns the owned queues of
 * that vhost was set or cleared (it may name a dead-letter exchange), or a
 * binding or an exchange of that vhost changed.
 *
 * Threads: every function here on the loop thread. Checks run on the
 * part's own "events" thread, over a runner set of their own (a store
 * session and a management client: a long sweep on the store thread never
 * delays them); seeds and reconciles on its "policy" thread, over a second
 * set (a management client only); results come back to the loop. Their
 * ledger events go to deps->publisher.
 * Ownership: the part borrows what rp_events_deps points at (which must
 * outlive it), copies the ports, and owns its decisions (core), timers,
 * threads and runner sets. Shut down with rp_events_stop() (after the
 * management bridge is closed, before the store thread is freed) and
 * rp_events_free() (after the store thread is freed).
 */
#ifndef RP_EVENTS_H
#define RP_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_broker_event.h"
#include "rp_config.h"
#include "rp_ports.h"
#include "rp_metrics.h"
#include "rp_runner_port.h"
#include "rp_status.h"

struct event_base;
typedef struct rp_events rp_events;

/* What the part uses: pointers borrowed (each must outlive the part),
 * ports copied. */
typedef struct rp_events_deps {
    /* The configuration in force, read through on the loop at each use (a
     * reload replaces *cfg). */
    const rp_config *const *cfg;
    /* The backends of the checks, seeds and reconciles (rp_runner_port.h):
     * the part opens two sets at rp_events_new and closes them. */
    rp_runner_port runner;
    /* Where every ledger event a check commits also goes (the events
     * exchange); copied. Called on the "events" thread. */
    rp_publisher_port publisher;
    /* The daemon is stopping (read atomically): no check is started. */
    const bool *stopping;
    /* The clocks, any thread: monotonic milliseconds (core's decisions,
     * the timers, durations) and Unix milliseconds (a judgement's delay
     * from the broker's event timestamp). */
    int64_t (*mono_ms)(void);
    int64_t (*wall_ms)(void);
    /* Optional (NULL: none): each reconcile's policies into
     * reaper_policy_verified{policy,vhost} (issue 18 item 5, issue 19 item 1). */
    rp_metrics *metrics;
    /* Optional (NULL: every vhost): whether events of vhost are taken
     * (broker.vhosts, issue 19). The one event exchange carries every
     * vhost's events; one of a vhost not watched is dropped before any
     * decision (an event without a vhost is taken). Loop thread. */
    bool (*watched)(void *arg, const char *vhost);
    void *watched_arg;
} rp_events_deps;

/* NULL when out of memory or when deps lacks something. */
rp_events *rp_events_new(struct event_base *base, const rp_events_deps *deps);
/* Joins the part's threads (their jobs finish or are cancelled): BEFORE
 * the store thread is freed, since their publishes go through it. */
void rp_events_stop(rp_events *e);
/* Stops (if not yet) and frees: AFTER the store thread is freed, since the
 * sweep's wrapped port (rp_events_wrap_sweep_port) points at e. */
void rp_events_free(rp_events *e);

/* The broker connection is up (a new generation: reseed) or down. */
void rp_events_on_up(rp_events *e);
void rp_events_on_down(rp_events *e);

/* One broker event, parsed (lent for the call). */
void rp_events_on_event(rp_events *e, const rp_broker_event *ev);

/* Wraps the sweep's broker port (the store thread's runner) so that, for
 * a queue whose consumers changed less than a statistics interval ago, the
 * sweep uses the events' consumer count as the event checks do (see
 * core/rp_consumers.c): a sweep right after a cancel then agrees with the check made
 * at once instead of clearing its sighting on a stale reading. The
 * wrapped port keeps e as self: e must outlive the port's use (free e
 * after the store thread). Call once, on the loop thread, before the first
 * pass. */
void rp_events_wrap_sweep_port(rp_events *e, rp_broker_port *port);

/* created: true when the queue appeared (event or seed), false when it was
 * deleted. Strings are lent for the call. */
typedef void (*rp_events_queue_fn)(void *arg, const char *vhost, const char *name,
                                   bool is_dead_letter_queue, bool created);
rp_status rp_events_add_queue_hook(rp_events *e, rp_events_queue_fn fn, void *arg) RP_MUSTCHECK;

#endif
