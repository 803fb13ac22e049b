/*
 * rp_amqp_publisher.h - publishing with publisher confirms on the loop.
 *
 * One channel in confirm mode (RP_AMQP_PUBLISH_CHANNEL, put in confirm mode
 * by rp_amqp_publisher_setup on the connect thread). Every publish gets the
 * channel's next sequence number; basic.ack / basic.nack (with `multiple`)
 * settle them in order. A mandatory publish that the broker cannot route
 * comes back as basic.return before its ack: to know which publish a return
 * belongs to, mandatory publishes go out one at a time (they are rare:
 * replays a person asked for).
 *
 * When the connection is lost, publishes not yet confirmed are either
 * queued again (retry: the events feed) or settled as LOST (replies: the
 * request is redelivered and answered again). Queued publishes go out when
 * the connection is back. The queue is bounded (RP_AMQP_PUBLISH_QUEUE_MAX):
 * past it a retry publish is settled DROPPED at once (the ledger, not the
 * feed, is the record).
 *
 * While the broker has the connection blocked (connection.blocked, sent
 * when a memory or disk alarm stops publishing; RabbitMQ then reads nothing
 * more from the socket), nothing is written: publishes wait in the queue
 * (same bound) and go out at connection.unblocked or on a new connection,
 * so that a write never blocks the loop on a socket nobody reads. The
 * broker stops reading before that notice arrives (it blocks the
 * connection at its next publish), so a flush also writes only what the
 * socket has room for (rp_amqp_socket_room) and goes on when the socket is
 * writable; a publish bigger than the room goes alone, nothing else
 * unconfirmed. Over plain TCP a write that still waits 10 s drops the
 * connection; over TLS that lone publish is written by rabbitmq-c, whose
 * send waits without a bound.
 *
 * Over plain TCP a flush's publishes are encoded by reaper into one buffer
 * and written in one send (rp_amqp_frames.h: the bytes amqp_basic_publish
 * would write); over TLS they go through amqp_basic_publish, corked.
 *
 * Threads: loop thread only. Ownership: rp_amqp_publisher_publish copies
 * everything it is given, unless the caller hands it over (rp_publish
 * release); the callback's arg is the caller's.
 */
#ifndef RP_AMQP_PUBLISHER_H
#define RP_AMQP_PUBLISHER_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_amqp_conn.h"
#include "rp_common.h"
#include "rp_status.h"

#define RP_AMQP_PUBLISH_CHANNEL 2
#define RP_AMQP_PUBLISH_QUEUE_MAX 100000
/* The most publishes sent in one loop turn; a longer backlog goes on over
 * the next turns, so the loop serves other events in between. */
#define RP_AMQP_PUBLISH_BATCH 500

typedef enum rp_publish_outcome {
    RP_PUBLISH_CONFIRMED = 0, /* the broker took responsibility */
    RP_PUBLISH_NACKED,        /* the broker refused it */
    RP_PUBLISH_RETURNED,      /* mandatory and unroutable */
    RP_PUBLISH_LOST,          /* the connection went before a confirm */
    RP_PUBLISH_DROPPED,       /* not sent: the queue was full or closing */
    RP_PUBLISH_REFUSED,       /* the broker closed the channel because of it
                                 (a channel error, e.g. 406 for a user_id that
                                 is not the connection's): not delivered; the
                                 reason is rp_amqp_publisher_refusal() */
    RP_PUBLISH_OUTCOME_COUNT_
} rp_publish_outcome;

const char *rp_publish_outcome_string(rp_publish_outcome o);

typedef void (*rp_publish_done_fn)(void *arg, rp_publish_outcome outcome);

typedef struct rp_publish {
    const char *exchange;     /* "" for the default exchange */
    const char *routing_key;
    const amqp_basic_properties_t *props; /* may be NULL */
    rp_bytes body;
    bool mandatory;
    bool retry;               /* queue again when the connection is lost */
    rp_publish_done_fn done;  /* may be NULL */
    void *arg;
    /* NULL: exchange, routing_key, props and body are copied by the
     * publish call. Set: they are handed over instead, not copied: they
     * must stay valid and unchanged until the publisher calls
     * release(owner), once, after done (or, when the publish call fails,
     * never: the caller keeps them). The events feed hands its encoded
     * events over this way (no copy per event). */
    void (*release)(void *owner);
    void *owner;
} rp_publish;

typedef struct rp_amqp_publisher rp_amqp_publisher;

rp_amqp_publisher *rp_amqp_publisher_new(rp_amqp_conn *conn);
/* The same on a channel of the caller's choice (set up with
 * rp_amqp_publisher_setup_on): a publisher whose publishes the broker may
 * refuse with a channel error (replays of stored messages) gets a channel of
 * its own, so that such an error never closes a channel anything else uses. */
rp_amqp_publisher *rp_amqp_publisher_new_on(rp_amqp_conn *conn, uint16_t channel);
/* Settles everything still pending as DROPPED and frees. */
void rp_amqp_publisher_free(rp_amqp_publisher *p);
/* Sets the bound of queued plus in-flight publishes (default
 * RP_AMQP_PUBLISH_QUEUE_MAX; at least 1). Past it a publish is settled
 * DROPPED on the next loop turn. For tests of that path. */
void rp_amqp_publisher_set_limit(rp_amqp_publisher *p, size_t max);

/* Connect thread (from the conn's on_setup hook): opens the publish channel
 * and puts it in confirm mode. False with a reason in err on failure. */
bool rp_amqp_publisher_setup(amqp_connection_state_t c, char *err, size_t errlen);
bool rp_amqp_publisher_setup_on(amqp_connection_state_t c, uint16_t channel, char *err,
                                size_t errlen);

/* Loop thread, from the conn's on_channel_close hook (the conn has already
 * answered channel.close-ok): when channel is this publisher's, the oldest
 * unconfirmed publish is settled REFUSED with why (the broker's reply code
 * and text), later unconfirmed ones are queued again (retry) or LOST, and
 * the channel is opened again and put in confirm mode without blocking
 * (queued publishes go out once it is). Returns false, doing nothing, for
 * another channel. */
bool rp_amqp_publisher_channel_closed(rp_amqp_publisher *p, uint16_t channel, const char *why);
/* Inside a done callback with RP_PUBLISH_REFUSED: the broker's reason
 * (borrowed for the call); "" otherwise. */
const char *rp_amqp_publisher_refusal(const rp_amqp_publisher *p);

/* Loop thread, from the conn's on_state hook: the connection is UP (sends
 * what is queued) or DOWN (requeues or loses what was in flight). */
void rp_amqp_publisher_on_up(rp_amqp_publisher *p);
void rp_amqp_publisher_on_down(rp_amqp_publisher *p);

/* Loop thread, from the conn's on_frame hook: true when the frame was a
 * confirm or a return on the publish channel, or connection.blocked /
 * unblocked (consumed). */
bool rp_amqp_publisher_frame(rp_amqp_publisher *p, const amqp_frame_t *f);

/* Queues one publish; it is sent on this loop pass, after the callbacks
 * running now, with every other publish they queue (one write of
 * them all). The done callback is called later, never from inside this
 * call. Returns RP_ERR_NOMEM (done and release are then never called). */
rp_status rp_amqp_publisher_publish(rp_amqp_publisher *p, const rp_publish *pub) RP_MUSTCHECK;

/* Publishes not settled yet (queued, in flight, or with a callback due):
 * a stopping daemon waits for this to reach zero. */
size_t rp_amqp_publisher_pending(const rp_amqp_publisher *p);


#endif
