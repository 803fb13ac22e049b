/*
 * events.h - acting on broker events as they happen (CONTRACT section 1:
 * "the event exchange (as it happens)"; issue #4).
 *
 * The daemon's exclusive queue bound to amq.rabbitmq.event (broker.c)
 * delivers here. From the events this module keeps:
 *  - an INVENTORY of the queues reaper owns (classified as the pass does),
 *    seeded by one listing of the management API after every (re)connect
 *    (events are not replayed) and kept from queue.created/queue.deleted;
 *  - per owned queue, a CONSUMER COUNT from consumer.created/deleted and
 *    channel.closed, seeded from the listing (why: see events.c);
 * and it acts:
 *  - when a consumer, a channel or a connection of an owned queue goes
 *    away, that queue is checked at once (debounced: many events, one
 *    check) with the sweep's rules (core rp_pass_queues), and checked again
 *    after the broker's next statistics emission, so that a stale first
 *    reading cannot hide held work;
 *  - queue.created of an owned queue, and policy.set/policy.cleared of
 *    reaper's policies or of a policy whose pattern matches an owned queue,
 *    give a debounced policy reconcile (on a thread of its own, never more
 *    often than every 10 s, backing off while the broker refuses writes or
 *    something keeps changing the policy back; not while reap.enabled is
 *    false, as the sweep's reconcile).
 *
 * HOOK for other parts of the daemon: rp_events_add_queue_hook() registers
 * a function called on the loop thread for every owned queue that appears
 * (queue.created, and every queue of each seed listing) or disappears
 * (queue.deleted), e.g. to check the dead-letter tap's bindings; and with
 * name NULL (created true) when a policy that concerns the owned queues of
 * that vhost was set or cleared (it may name a dead-letter exchange).
 *
 * Threads: every function here on the loop thread. Checks run on the
 * module's own "events" thread, with a store connection and a management
 * client of their own (so a long sweep on the store thread never delays
 * them); seeds and reconciles on its "policy" thread; results come back to
 * the loop. Their ledger events go to the events exchange (feed.c).
 * Ownership: the module borrows the daemon (which must outlive it) and
 * owns its inventory, timers, threads, store connection and management
 * clients. Shut down with rp_events_stop() (after the management bridge is
 * closed, before the store thread is freed) and rp_events_free() (after
 * the store thread is freed).
 */
#ifndef RP_EVENTS_H
#define RP_EVENTS_H

#include <stdbool.h>

#include "rp_amqp_msg.h"
#include "rp_status.h"

struct rp_daemon;
typedef struct rp_events rp_events;

/* NULL when out of memory. */
rp_events *rp_events_new(struct rp_daemon *d);
/* Joins the module's threads (their jobs finish or are cancelled): BEFORE
 * the store thread is freed, since their publishes go through it. */
void rp_events_stop(rp_events *e);
/* Stops (if not yet) and frees: AFTER the store thread is freed, since the
 * sweep's wrapped port (rp_events_wrap_sweep_port) points at e. */
void rp_events_free(rp_events *e);

/* The broker connection is up (a new generation: reseed) or down. */
void rp_events_on_up(rp_events *e);
void rp_events_on_down(rp_events *e);

/* One delivery of the event queue (lent for the call). */
void rp_events_on_message(rp_events *e, const rp_amqp_message *msg);

/* Wraps the sweep's broker port (the store thread's runner) so that, for
 * a queue whose consumers changed less than a statistics interval ago, the
 * sweep uses the events' consumer count as the event checks do (see
 * events.c): a sweep right after a cancel then agrees with the check made
 * at once instead of clearing its sighting on a stale reading. The
 * wrapped port keeps e as self: e must outlive the port's use (free e
 * after the store thread). Call once, on the loop thread, before the first
 * pass. */
struct rp_broker_port;
void rp_events_wrap_sweep_port(rp_events *e, struct rp_broker_port *port);

/* created: true when the queue appeared (event or seed), false when it was
 * deleted. Strings are lent for the call. */
typedef void (*rp_events_queue_fn)(void *arg, const char *vhost, const char *name,
                                   bool is_dead_letter_queue, bool created);
rp_status rp_events_add_queue_hook(rp_events *e, rp_events_queue_fn fn, void *arg) RP_MUSTCHECK;

#endif
