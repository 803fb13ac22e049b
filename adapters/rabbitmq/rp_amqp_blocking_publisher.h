/*
 * rp_amqp_blocking_publisher.h - the publisher port (rp_ports.h) over a
 * blocking rabbitmq-c connection of its own, with publisher confirms, for
 * `reaperd --once`, which has no loop.
 *
 * What it does:
 *  - connects on the first event it is given (a pass that commits nothing
 *    never connects), declares broker.events_exchange as the daemon does
 *    (topic, durable) and puts its channel in confirm mode;
 *  - publishes each event as soon as it is given (rp_proto_encode_event in
 *    the encoding given to _new, broker.events_format: the same message the
 *    daemon's feed sends) and reads the confirms that
 *    have arrived without waiting, so the pass is never held up by the
 *    broker; an event is kept until the broker confirms it;
 *  - when the broker cannot be reached or the connection fails, it stops
 *    trying for the rest of the pass (a pass of 10,000 events does not wait
 *    10,000 connect time-outs) and keeps the events;
 *  - rp_amqp_blocking_publisher_flush, at the end, waits for the
 *    outstanding confirms, then retries ONCE, over a new connection,
 *    everything not confirmed (never sent, lost with a connection, or
 *    nacked), and reports what was finally not published.
 * The port's publish returns RP_OK for an accepted event (RP_ERR_NOMEM
 * when it cannot be kept); what failed is reported by the flush, so the
 * caller says it once, not once per event. At most
 * RP_AMQP_BLOCKING_PUBLISH_MAX events are kept unconfirmed; past that an
 * event is dropped at once and counted as failed.
 *
 * Heartbeats are off on this connection: a pass may spend minutes in the
 * database between two events, and no library call would answer one.
 *
 * Threads: one thread (the caller's). Ownership: _new copies params and the
 * exchange name (the password is wiped when freed); the port's self
 * borrows the publisher, which must outlive the port's use.
 */
#ifndef RP_AMQP_BLOCKING_PUBLISHER_H
#define RP_AMQP_BLOCKING_PUBLISHER_H

#include <stddef.h>
#include <stdint.h>

#include "rp_amqp_conn.h"
#include "rp_common.h"
#include "rp_ports.h"
#include "rp_proto.h"
#include "rp_status.h"

#define RP_AMQP_BLOCKING_PUBLISH_MAX 100000

typedef struct rp_amqp_blocking_publisher rp_amqp_blocking_publisher;

/* What came of the events given to the publisher. */
typedef struct rp_amqp_feed_stats {
    size_t events;        /* given to publish */
    size_t confirmed;     /* confirmed by the broker */
    size_t failed;        /* not confirmed in the end (events - confirmed) */
    int64_t first_failed_seq, last_failed_seq; /* ledger seqs; 0 when none failed */
    size_t retried;       /* published a second time by the flush */
    char why[256];        /* the first failure (also one the retry made good), without
                           * secrets; "" when none */
} rp_amqp_feed_stats;

/* enc: the bodies' encoding (and content_type), RP_ENC_MSGPACK or
 * RP_ENC_JSON. NULL when out of memory, enc is not an encoding, or
 * params->url does not parse (*err then says which; static). Connects
 * nothing yet. */
rp_amqp_blocking_publisher *rp_amqp_blocking_publisher_new(const rp_amqp_params *params,
                                                           const char *exchange,
                                                           rp_encoding enc,
                                                           const char **err);
/* Closes the connection and frees (events not confirmed are forgotten:
 * flush first). */
void rp_amqp_blocking_publisher_free(rp_amqp_blocking_publisher *p);

/* Fills out with the publisher port over p. */
void rp_amqp_blocking_publisher_port(rp_amqp_blocking_publisher *p, rp_publisher_port *out);

/* Waits up to timeout_ms for what is outstanding, retries once what was
 * not confirmed, closes the connection and fills *stats. Returns RP_OK when
 * every event was confirmed, RP_ERR_UNAVAILABLE when some were not. */
rp_status rp_amqp_blocking_publisher_flush(rp_amqp_blocking_publisher *p, int timeout_ms,
                                           rp_amqp_feed_stats *stats);

#endif
