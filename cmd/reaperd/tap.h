/*
 * tap.h - the dead-letter tap (CONTRACT section 2 condition e, section 8;
 * issue #5): every message dead-lettered from an owned queue becomes a
 * parked dead letter (job bus.dead_letter, gate bus_dead_lettered,
 * dead_letter row, ledger event; one transaction, idempotent by identity),
 * never a deletion.
 *
 * THE CONNECTION. The tap has an AMQP connection of its own ("reaperd tap"),
 * apart from the daemon's (control, broker events, the feed, replays), and
 * asks at login for the largest frame the broker allows (RP_TAP_FRAME_MAX,
 * 16 MiB, or the broker's frame_max when smaller: 131072 by default), so a
 * dead letter with a header table as large as the broker takes, or a storm
 * of them, never stops control requests, events or confirms.
 *
 * THE QUEUE. broker.tap_queue, a durable quorum queue, declared on every
 * (re)connect of the tap's connection on its channel (RP_TAP_CHANNEL). On RabbitMQ 4 it is
 * declared with x-delivery-limit -1 (no limit: a return never makes the
 * broker drop a tap message; checked on 4.0.5: 25 returns kept it); on 3.x
 * without (3.10 has no default limit, and there -1 drops a message at its
 * first return: checked on 3.10.8). A tap declared earlier without the
 * argument is used as it is (warned: it has 4.0's default limit of 20).
 * NOTE: a delivery-limit POLICY that matches the tap's name wins over -1
 * (RabbitMQ takes the larger when one is negative): keep the tap's name
 * out of the pattern of any policy with a delivery-limit.
 *
 * THE BINDINGS follow the dead-letter exchanges of the owned queues
 * (adapters/management/rp_mgmt_dlx.h): reconciled after every sweep, at
 * every broker (re)connect, and whenever rp_tap_bindings_soon() is called
 * (the event inventory calls it when an owned queue appears or vanishes, a
 * policy changes, or any binding or exchange is created or deleted: an
 * application that declares its dead-letter queue and binding a moment
 * after its queue is followed within a second, not at the next sweep).
 * The broker's own dead-letter queues keep their copies: the tap never
 * reads them.
 *
 * THE CONSUMER (loop thread). Prefetch RP_TAP_PREFETCH, manual acks.
 * Deliveries are copied and queued, and what they weigh is counted (body,
 * properties and headers as decoded, and bookkeeping; a header table over
 * broker.tap_header_cap_bytes is not kept: only its death headers, and the
 * dead letter is parked not replayable, its stored properties saying why
 * under "$reaper"): past
 * RP_TAP_HOLD_BYTES the tap cancels its consumer (basic.cancel, nowait)
 * until parks bring it to half, then consumes again (basic.consume,
 * nowait), so that a storm of large dead letters waits on the broker, not
 * in this process. Deliveries the broker sent before it had the cancel are
 * returned to it at once (basic.nack, requeue), unkept. The connection
 * goes on reading meanwhile: control requests, confirms and heartbeats are
 * served, and the broker never finds its writes blocked (it closes a
 * connection whose writes wait 30 s, Ranch's default send_timeout with
 * send_timeout_close: seen on 3.10.8 when this tap stopped reading its
 * socket instead).
 * Batches (at most RP_TAP_BATCH each, at most RP_TAP_IN_FLIGHT handed
 * over at once, so that the thread starts the next as soon as one commits,
 * while the loop acks that one) go to the tap's own thread, which parks them in order and has two PostgreSQL sessions of
 * its own (so parking never waits behind a sweep on the store thread, and
 * the sessions commit side by side); its transactions go to them in turn,
 * so that one backend parks while the other flushes its commit. There the messages are examined and
 * judged as core's rp_park_dead_letter does, and parked up to 250 (and 4
 * MiB of bodies, headers and properties) per transaction, in one round trip each: the commit is the
 * cost, so a storm is parked about as fast as it comes. The session is
 * kept busy: the thread prepares the next 250 while PostgreSQL parks the
 * earlier ones, and sends their transaction (rp_pg_park_send) before it
 * reads the results of the oldest (rp_pg_park_recv), two transactions
 * outstanding on each session (RP_TAP_DEPTH), so that PostgreSQL goes from
 * one to the next without waiting for the thread; each is a transaction of
 * its own, committed or failed alone, and they may commit in any order
 * (their results are read, and their messages settled, in sending order).
 * The same identity in two transactions on the two sessions at once (a
 * message dead-lettered twice alike) waits on the unique index and ends
 * in ON CONFLICT, or, crossed, in a deadlock PostgreSQL breaks by failing
 * one: that one's messages are then parked one by one like any failure. When one fails for a reason of its own (not
 * the store going away), the ones sent after it are read first, then its
 * messages are parked one by one, each in its own transaction, so that
 * only one that fails alone is held. Idempotent by identity either
 * way (a pass's backfill parking the same identity at once is settled by ON
 * CONFLICT). The ledger events of the parked ones go to the events exchange
 * through the daemon's feed, after the commit. Back on the loop, parked messages are
 * acked (one multiple ack when they are a prefix of what is held, else one
 * by one), but only when they came on the current connection: after a
 * reconnect the broker has them again and delivers them again, and the
 * park is idempotent. A message that is not a dead letter at all (no
 * x-death, no x-first-death-queue: someone published to the dead-letter
 * exchange directly) is acked and not parked. When the store is
 * unreachable, nothing is acked and nothing is returned: the messages stay
 * unacked on the channel (no redelivery, so no delivery is spent), the
 * prefetch stops the broker from sending more, and the batch is tried
 * again after a backoff (1 s doubling to 8 s) until the store answers. A
 * message whose park fails otherwise (RP_ERR_INTERNAL...) is held unacked
 * and logged; the broker gives it back at the next reconnect.
 *
 * Ownership: the daemon owns the tap (rp_tap_new after the store thread
 * exists; rp_tap_stop BEFORE the store thread is freed, since the feed
 * posts through it; rp_tap_free after the broker is stopped). Threads:
 * every function on the loop thread, except rp_tap_setup (the connect
 * thread) and the binding reconcile (the tap's binding thread, "tapbind").
 */
#ifndef RP_TAP_H
#define RP_TAP_H

#include <amqp.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_amqp_msg.h"
#include "rp_common.h"
#include "rp_status.h"

#define RP_TAP_CHANNEL 3
#define RP_TAP_CONSUMER_TAG "reaper.tap"
#define RP_TAP_PREFETCH 4000 /* two batches in flight and one gathering */
#define RP_TAP_BATCH 2000
#define RP_TAP_IN_FLIGHT 2
/* The most the tap keeps in memory (bodies, at most RP_PG_DL_BODY_MAX
 * each, and bookkeeping) before it stops consuming: a count prefetch
 * cannot bound bytes (4,000 dead letters of 4 MiB would be 16 GiB), so
 * past this the tap cancels its consumer and the broker keeps the rest
 * until parks bring the tap to half. The chart's memory limit is 128 MiB. */
#define RP_TAP_HOLD_BYTES (32u * 1024u * 1024u)

struct rp_daemon;
typedef struct rp_tap rp_tap;

/* NULL when out of memory or the thread cannot start. */
rp_tap *rp_tap_new(struct rp_daemon *d);
/* Joins the tap's thread (its last batch's acks are sent) and closes its
 * session. Idempotent. */
void rp_tap_stop(rp_tap *t);
void rp_tap_free(rp_tap *t);

/* Starts the tap's own connection (params as the daemon's, its name and
 * frame_max the tap's own; copied): it connects and reconnects by itself,
 * each time through rp_tap_setup. RP_ERR_CONFIG when the URL does not
 * parse; RP_ERR_INTERNAL when its connect thread cannot start. */
struct rp_amqp_params;
rp_status rp_tap_connect(rp_tap *t, const struct rp_amqp_params *params) RP_MUSTCHECK;

/* Connect thread (the tap connection's on_setup): opens RP_TAP_CHANNEL,
 * declares the tap queue, sets the prefetch and consumes. Reads only the
 * configuration and the connection's server properties. */
bool rp_tap_setup(struct rp_daemon *d, amqp_connection_state_t c, char *err, size_t n);

/* Loop thread: batches are on the tap's thread (a stop waits for them). */
bool rp_tap_busy(const rp_tap *t);
/* Any thread: cancels the command the tap's session runs (a stop whose
 * grace ran out with a park waiting on a lock); its messages are held
 * unacked and the broker delivers them again. */
void rp_tap_cancel(rp_tap *t);

/* Whether a delivery's consumer tag is one of the tap's: RP_TAP_CONSUMER_TAG
 * or RP_TAP_CONSUMER_TAG ".<n>" (a consume again takes a new tag). */
bool rp_tap_owns_tag(const void *bytes, size_t len);

/* A delivery for one of the tap's consumer tags (lent for the call). */
void rp_tap_on_message(struct rp_daemon *d, const rp_amqp_message *msg);

/* For the metrics (loop): the bytes the tap holds, and whether it is
 * paused (not consuming at its memory bound, or waiting to retry the
 * store). */
void rp_tap_gauges(const rp_tap *t, int64_t *held_bytes, bool *paused);

/* Asks for a binding reconcile soon, on the tap's binding thread (its own
 * management client: it never waits behind a sweep). Coalesced: while one
 * waits or runs, a second call makes exactly one more follow it (the
 * running one may have read the broker before the change). For the event
 * inventory: call it when an owned queue is created or deleted, a policy
 * changes, a binding or an exchange is created or deleted. */
void rp_tap_bindings_soon(struct rp_daemon *d);

/* Loop thread: the tap's bindings were derived from the broker's
 * definitions since the current connection came up (so /readyz says
 * ready only once every route a dead letter can take reaches the tap;
 * true when there is no management API to bind through). */
bool rp_tap_bound(const rp_tap *t);


#endif
