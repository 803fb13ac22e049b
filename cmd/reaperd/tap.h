/*
 * tap.h - the dead-letter tap (CONTRACT section 2 condition e, section 8;
 * issue #5): every message dead-lettered from an owned queue becomes a
 * parked dead letter (job bus.dead_letter, gate bus_dead_lettered,
 * dead_letter row, ledger event; one transaction, idempotent by identity),
 * never a deletion.
 *
 * This is the tap's wiring: it joins its parts and runs them on the loop.
 *   - core/rp_tap_batch.h: every decision (what is held and weighed, when
 *     the consumer stops and starts again, batches, which deliveries are
 *     acked after which commit, what is not a dead letter, the backoff,
 *     the pipelined park and the isolation of a failed transaction);
 *   - adapters/rabbitmq/rp_amqp_tap.h: the tap's own AMQP connection, its
 *     queue's declaration, its consumer, acks, returns, cancel/consume;
 *   - adapters/postgres/rp_pg_park_batch.h: its two PostgreSQL sessions and
 *     the park-batch port over them (core/rp_park_batch_port.h);
 *   - adapters/management/rp_mgmt_dlx.h: its bindings.
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
 * (adapters/management/rp_mgmt_dlx.h): reconciled after every sweep, at
 * every broker (re)connect, and whenever rp_tap_bindings_soon() is called
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
 * posts through it; rp_tap_free after the broker is stopped); what deps
 * point to must outlive it. Threads: every function on the loop thread,
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
#include "rp_mgmt_bridge.h"
#include "rp_ports.h"
#include "rp_status.h"
#include "rp_tap_batch.h"

struct rp_daemon;
typedef struct rp_tap rp_tap;

/* What the tap reads and uses of the daemon (borrowed; pointers to the
 * daemon's own fields, read at each use: a reload replaces *cfg, a
 * reconnect changes *vhost and the broker's generation). */
typedef struct rp_tap_deps {
    struct event_base *base;
    const rp_config *const *cfg;
    const bool *stopping;            /* atomic loads: read by the tap's thread too */
    const char *const *vhost;        /* the broker's vhost (management), may be NULL */
    const unsigned *broker_generation; /* the daemon's connection: for readiness */
    const bool *broker_up;
    rp_mgmt_bridge *mgmt;            /* NULL: no management API, no bindings */
    rp_metrics *metrics;
    rp_publisher_port feed;          /* where the parked ones' events go */
} rp_tap_deps;

/* NULL when out of memory or a thread cannot start. */
rp_tap *rp_tap_new(const rp_tap_deps *deps);
/* Joins the tap's threads (its last batch's acks are sent) and closes its
 * sessions. Idempotent. */
void rp_tap_stop(rp_tap *t);
void rp_tap_free(rp_tap *t);

/* Starts the tap's own connection (params as the daemon's; copied): it
 * connects and reconnects by itself. RP_ERR_CONFIG when the URL does not
 * parse; RP_ERR_INTERNAL when its connect thread cannot start. */
struct rp_amqp_params;
rp_status rp_tap_connect(rp_tap *t, const struct rp_amqp_params *params) RP_MUSTCHECK;

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
 * deleted. rp_tap_bindings_soon(d) is the same for the daemon's tap. */
void rp_tap_bind_soon(rp_tap *t);
void rp_tap_bindings_soon(struct rp_daemon *d);

/* Loop thread: the tap's bindings were derived from the broker's
 * definitions since the daemon's current connection came up (so /readyz
 * says ready only once every route a dead letter can take reaches the
 * tap; true when there is no management API to bind through). */
bool rp_tap_bound(const rp_tap *t);

#endif
