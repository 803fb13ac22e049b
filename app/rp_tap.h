/*
 * rp_tap.h - the dead-letter tap (CONTRACT section 2 condition e, section 8;
 * issue #5): every message dead-lettered from an owned queue becomes a
 * parked dead letter (job bus.dead_letter, gate bus_dead_lettered,
 * dead_letter row, ledger event; one transaction, idempotent by identity),
 * never a deletion.
 *
 * This is the tap's part: it runs core's decisions on the loop and on
 * threads of its own, over ports it is given (core/rp_tap_port.h), and turns
 * what core decides into the consumer's calls, log lines and metrics.
 *   - core/rp_tap_batch.h: every decision of the batching (what is held and
 *     weighed, when the consumer stops and starts again, batches, which
 *     deliveries are acked after which commit, what is not a dead letter,
 *     the backoff, the pipelined park and the isolation of a failed
 *     transaction); core/rp_tap_rules.h: what a bindings' reconcile means;
 *   - the consumer port: the tap's own AMQP connection, its queue, its
 *     consumer, acks, returns, cancel/consume, and how a delivery is read
 *     (adapters/rabbitmq/rp_amqp_tap_port fills it over rp_amqp_tap);
 *   - the store port: the park-batch port and store ports of its own
 *     sessions (from adapters/postgres/rp_pg_park_batch);
 *   - the bind port: its bindings' reconcile (adapters/management/rp_mgmt_dlx).
 * It includes no adapter.
 *
 * THE THREADS. The consumer, acks and the consumer switch run on the loop.
 * Batches (at most RP_TAP_BATCH each, at most RP_TAP_IN_FLIGHT handed over
 * at once, so that the thread starts the next as soon as one commits,
 * while the loop acks that one) go to the tap's own thread ("tap"), which
 * parks them in order over its own sessions (so parking never waits behind
 * a sweep on the store thread). The ledger events of the parked ones go to
 * the events exchange through the daemon's feed, after the commit. When the
 * store is unreachable, nothing is acked and nothing is returned: the
 * messages stay unacked on the channel (no redelivery, so no delivery is
 * spent), the prefetch stops the broker from sending more, and the batch is
 * tried again after a backoff (1 s doubling to 8 s) until the store
 * answers. A message whose park fails otherwise is held unacked and
 * logged; the broker gives it back at the next reconnect.
 *
 * THE BINDINGS follow the dead-letter exchanges of the owned queues
 * (the bind port): reconciled after every sweep, at
 * every broker (re)connect, and whenever rp_tap_bind_soon() is called
 * (the event inventory calls it when an owned queue appears or vanishes, a
 * policy changes, or any binding or exchange is created or deleted: an
 * application that declares its dead-letter queue and binding a moment
 * after its queue is followed within a second, not at the next sweep), on
 * the tap's binding thread ("tapbind", its own management client: it
 * never waits behind a sweep). The broker's own dead-letter queues keep
 * their copies: the tap never reads them. NOTE: a delivery-limit POLICY
 * that matches the tap's name wins over the tap queue's -1 (RabbitMQ takes
 * the larger when one is negative): keep the tap's name out of the pattern
 * of any policy with a delivery-limit.
 *
 * Ownership: the daemon owns the tap (rp_tap_new after the store thread
 * exists; rp_tap_stop BEFORE the store thread is freed, since the feed
 * posts through it; rp_tap_free after the broker is stopped). The deps and
 * what their pointers and ports point to are borrowed and must outlive the
 * tap, except the consumer's connection and the store's sessions, which may
 * go once rp_tap_stop has returned (the items and the examiner must stay
 * callable until rp_tap_free). Threads: every function on the loop thread,
 * except rp_tap_cancel (any).
 */
#ifndef RP_TAP_H
#define RP_TAP_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_metrics.h"
#include "rp_ports.h"
#include "rp_status.h"
#include "rp_tap_batch.h"
#include "rp_tap_port.h"

typedef struct rp_tap rp_tap;

/* What the tap reads and uses (borrowed; pointers to the daemon's own
 * fields, read at each use: a reload replaces *cfg, a reconnect changes
 * *vhost and the broker's generation). */
typedef struct rp_tap_deps {
    const rp_config *const *cfg;
    const bool *stopping;            /* atomic loads: read by the tap's thread too */
    const char *const *vhost;        /* the broker's vhost (management), may be NULL */
    const unsigned *broker_generation; /* the daemon's connection: for readiness */
    const bool *broker_up;
    rp_metrics *metrics;
    rp_publisher_port feed;          /* where the parked ones' events go */
    rp_tap_consumer_port consumer;   /* the tap's own connection */
    rp_tap_store_port store;         /* its own sessions */
    const rp_tap_bind_port *bind;    /* NULL: no management API, no bindings */
} rp_tap_deps;

/* NULL when out of memory or a thread cannot start. */
rp_tap *rp_tap_new(struct event_base *base, const rp_tap_deps *deps);
/* Joins the tap's threads (its last batch's acks are sent). Idempotent. */
void rp_tap_stop(rp_tap *t);
void rp_tap_free(rp_tap *t);

/* Starts the tap's own connection (the consumer port's start): it connects
 * and reconnects by itself. */
rp_status rp_tap_connect(rp_tap *t) RP_MUSTCHECK;

/* Loop thread: batches are on the tap's thread (a stop waits for them). */
bool rp_tap_busy(const rp_tap *t);
/* Any thread: cancels the command the tap's sessions run (a stop whose
 * grace ran out with a park waiting on a lock); its messages are held
 * unacked and the broker delivers them again. */
void rp_tap_cancel(rp_tap *t);

/* For the metrics (loop): the bytes the tap holds, and whether it is
 * paused (not consuming at its memory bound, or waiting to retry the
 * store). */
void rp_tap_gauges(const rp_tap *t, int64_t *held_bytes, bool *paused);

/* Asks for a binding reconcile soon, on the tap's binding thread.
 * Coalesced: while one waits or runs, a second call makes exactly one more
 * follow it (the running one may have read the broker before the change).
 * For the event inventory: call it when an owned queue is created or
 * deleted, a policy changes, a binding or an exchange is created or
 * deleted; the daemon calls it after every sweep and at every connect.
 * NULL t: nothing. */
void rp_tap_bind_soon(rp_tap *t);

/* The tap as other parts' hooks, arg = &tap (rp_tap **, read at each
 * call: the tap may be made after the part; NULL: none yet): observe's
 * gauges (false without a tap) and bound (app/rp_observe.h), and its
 * bindings looked at again (rp_tap_bind_soon) after a sweep
 * (rp_sweep_passes.after_sweep) and when an owned queue or a policy over
 * them changes (rp_events_add_queue_hook). Loop thread. */
bool rp_tap_gauges_hook(void *tapp, int64_t *held_bytes, bool *paused);
bool rp_tap_bound_hook(void *tapp);
void rp_tap_bind_soon_hook(void *tapp);
/* rp_tap_queue_hook: only for a change in the tap's own vhost (or one
 * whose vhost is not known). */
void rp_tap_queue_hook(void *tapp, const char *vhost, const char *name, bool dlq, bool created);

/* Loop thread: the tap's bindings were derived from the broker's
 * definitions since the daemon's current connection came up (so /readyz
 * says ready only once every route a dead letter can take reaches the
 * tap; true when there is no management API to bind through). */
bool rp_tap_bound(const rp_tap *t);

#endif
