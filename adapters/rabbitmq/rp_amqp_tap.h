/*
 * rp_amqp_tap.h - the dead-letter tap's AMQP side (the decisions are
 * core/rp_tap_batch.h's): its own connection, the tap queue's declaration,
 * its consumer, the frame drain, acks, returns (nack, requeue), and the
 * consumer's cancel and consume again.
 *
 * THE CONNECTION. The tap has an AMQP connection of its own ("reaperd tap
 * <queue>"), apart from the daemon's (control, broker events, the feed,
 * replays), and asks at login for the largest frame the broker allows
 * (RP_AMQP_TAP_FRAME_MAX, 16 MiB, or the broker's frame_max when smaller:
 * 131072 by default), so a dead letter with a header table as large as the
 * broker takes, or a storm of them, never stops control requests, events or
 * confirms. It connects and reconnects by itself.
 *
 * THE QUEUE, declared on every (re)connect on RP_AMQP_TAP_CHANNEL (the
 * connect thread): a durable quorum queue; on RabbitMQ 4 with
 * x-delivery-limit -1 (no limit: a return never makes the broker drop a tap
 * message; checked on 4.0.5: 25 returns kept it); on 3.x without (3.10 has
 * no default limit, and there -1 drops a message at its first return:
 * checked on 3.10.8). A tap declared earlier without the argument is used as
 * it is (warned: it has 4.0's default limit of 20). When broker.url names
 * a host list (a cluster, rp_hostlist.h) the queue is made with
 * x-quorum-initial-group-size = min(hosts listed, 3): replicated on three
 * nodes, a majority of which must stand; with one host the broker's own
 * default applies (every cluster node on 3.x). The argument counts only
 * when the queue is made; an existing tap keeps its members. Prefetch
 * RP_TAP_PREFETCH, manual acks, consumer tag RP_TAP_CONSUMER_TAG.
 *
 * THE DELIVERIES. Each one for a tap consumer tag is copied into an
 * rp_amqp_tap_item (body, properties; a header table over header_cap is not
 * kept: only its death headers) and handed to hooks.on_item, weighed (body,
 * properties and headers as decoded, and bookkeeping); while
 * hooks.returning says so it is returned to the broker at once (basic.nack,
 * requeue) and counted (hooks.on_returned). A delivery for an unknown
 * consumer is rejected. A broker's basic.cancel (the queue deleted) drops
 * the connection, which declares the queue again.
 *
 * Every failure to write on the channel drops the connection: the broker
 * then has every unacked delivery back and delivers it again.
 *
 * Ownership: rp_amqp_tap_new copies the params and the queue name; the
 * items handed to on_item are the receiver's (rp_amqp_tap_item_free).
 * Threads: the loop, but the declaration (connect thread).
 */
#ifndef RP_AMQP_TAP_H
#define RP_AMQP_TAP_H

#include <amqp.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_amqp_conn.h"
#include "rp_amqp_msg.h"
#include "rp_common.h"
#include "rp_status.h"
#include "rp_tap_batch.h"

#define RP_AMQP_TAP_CHANNEL 3
/* The largest frame the tap asks for: the broker's frame_max wins when it
 * is smaller (its default is 131072), so the tap takes any frame the broker
 * sends under its own limit. Bounded, for a broker with no limit (0):
 * rabbitmq-c sizes its output buffer to it (malloc'd, touched only as far
 * as written). */
#define RP_AMQP_TAP_FRAME_MAX (16 * 1024 * 1024)

/* A held delivery: core's item first (rp_tap_batch.h), then the message. */
typedef struct rp_amqp_tap_item {
    rp_tap_item base;
    amqp_pool_t pool; /* owns props */
    amqp_basic_properties_t props;
    uint8_t *body;
    size_t body_len;
    bool truncated;
    /* Its header table weighed this much decoded, over the header cap:
     * props hold only its death headers (rp_amqp_death_headers), and it is
     * parked not replayable. 0: its headers are kept whole. */
    size_t headers_dropped;
} rp_amqp_tap_item;

typedef struct rp_amqp_tap_hooks {
    void *arg;
    /* The connection is up (the queue declared, consuming) / down. */
    void (*on_up)(void *arg);
    void (*on_down)(void *arg);
    /* Whether a delivery now goes back to the broker (not consuming). */
    bool (*returning)(void *arg);
    void (*on_returned)(void *arg);
    /* A delivery, copied: the receiver's from now. */
    void (*on_item)(void *arg, rp_amqp_tap_item *it);
    /* Whether the daemon is stopping: deliveries are left unacked. */
    bool (*stopping)(void *arg);
} rp_amqp_tap_hooks;

typedef struct rp_amqp_tap rp_amqp_tap;

/* params as the daemon's (its name and frame_max are the tap's own);
 * body_limit: the most of a body kept; header_cap: the most a header table
 * may weigh decoded and be kept whole. NULL with *err on failure. */
rp_amqp_tap *rp_amqp_tap_new(struct event_base *base, const rp_amqp_params *params,
                             const char *queue, size_t body_limit, size_t header_cap,
                             const rp_amqp_tap_hooks *hooks, const char **err);
/* Begins connecting. */
rp_status rp_amqp_tap_start(rp_amqp_tap *t) RP_MUSTCHECK;
void rp_amqp_tap_free(rp_amqp_tap *t);

/* Loop: an ack (one, or every one up to tag); a cancel of the consumer
 * under tag (nowait); a consume again under tag (nowait). false when the
 * connection is not up or the write failed (the connection drops). */
bool rp_amqp_tap_ack(rp_amqp_tap *t, uint64_t tag, bool multiple);
bool rp_amqp_tap_cancel(rp_amqp_tap *t, const char *tag);
bool rp_amqp_tap_consume(rp_amqp_tap *t, const char *tag);

/* An item's message goes (a stuck one needs only its tag): returns its
 * weight without it. */
size_t rp_amqp_tap_item_shed(rp_amqp_tap_item *it);
/* The item the tap holds for one assembled delivery (lent, for the
 * assembler's handler call): under header_cap it takes the assembler's pool
 * (the properties as decoded), over it only the death headers are copied;
 * the body is copied. Weighed (base.weight). NULL: out of memory. */
rp_amqp_tap_item *rp_amqp_tap_item_make(rp_amqp_assembler *a, const rp_amqp_message *msg,
                                        size_t header_cap);
void rp_amqp_tap_item_free(rp_amqp_tap_item *it);

#endif
