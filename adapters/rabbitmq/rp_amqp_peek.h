/*
 * rp_amqp_peek.h - reading dead letters off a queue WITHOUT removing them,
 * for the backfill of a pass (CONTRACT section 2, condition e).
 *
 * The pass runs on the store thread, which must not touch the loop's AMQP
 * connection (rabbitmq-c is not thread-safe), so the peek has a blocking
 * connection of its own, opened when first needed and closed by
 * rp_amqp_peek_close (at the end of every pass), so that an idle daemon
 * keeps no second connection open.
 *
 * HOW A QUEUE IS READ. On a fresh channel: basic.get WITHOUT auto-ack up to
 * `limit` times (or until the queue answers get-empty), then the channel is
 * closed, and the broker puts every message it handed out back where it
 * was. Nothing is acked, so nothing is ever removed.
 *   - A classic queue has no delivery limit: such a read costs nothing and
 *     may be repeated at every pass; rp_amqp_peek_read_past reads past the
 *     messages the caller has dealt with (bounded by read_max), keeping
 *     only the others, so that each pass reaches further into a backlog.
 *   - A quorum queue counts every return as a delivery (RABBITMQ.md; 4.0
 *     puts a default delivery limit of 20 on every quorum queue) and drops
 *     or dead-letters a message past its limit. So a quorum queue must be
 *     read at most once per message: the backfill (core/rp_backfill_read.c,
 *     over rp_amqp_peek_port) reads a quorum dead-letter queue only once,
 *     ever, and records it in the store. This function reads what it is
 *     asked to read.
 *
 * A read also stops once the messages read hold more than
 * RP_AMQP_PEEK_BYTES (bodies, properties and headers as decoded, and their
 * JSON): *behind then counts the rest, as for `limit`.
 *
 * Ownership: the params are copied (the password is wiped when freed). What
 * rp_amqp_peek_read returns is LENT until the next read, close or free.
 * Threads: one thread at a time (the store thread, or --once's main thread).
 */
#ifndef RP_AMQP_PEEK_H
#define RP_AMQP_PEEK_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_amqp_conn.h"
#include "rp_backfill_port.h"
#include "rp_common.h"
#include "rp_deadletter.h"
#include "rp_status.h"

/* One message read from a queue. */
typedef struct rp_amqp_peeked {
    rp_dl_headers headers;   /* the header model (rp_deadletter.h) */
    rp_bytes body;           /* the whole body */
    uint64_t delivery_count; /* x-delivery-count as read (quorum), else 0 */
    bool redelivered;
    /* The properties and headers as JSON (rp_amqp_restore.h), or NULL when
     * they cannot be kept losslessly (a header name that is not text). */
    const char *properties_json;
    const char *headers_json;
    /* Kept without its headers (over the header cap, see
     * rp_amqp_peek_set_header_cap): stored as not whole, as the tap does. */
    bool headers_dropped;
} rp_amqp_peeked;

/* The most one read holds in memory before it stops (at least one message
 * is read): a peek limit of 1,000 dead letters with 128 KiB of headers each
 * would otherwise hold over 250 MiB, past the chart's memory limit. */
#define RP_AMQP_PEEK_BYTES (16u * 1024u * 1024u)

typedef struct rp_amqp_peek rp_amqp_peek;

/* NULL when out of memory. Connects nothing yet. */
rp_amqp_peek *rp_amqp_peek_new(const rp_amqp_params *params);
void rp_amqp_peek_free(rp_amqp_peek *p);
/* A header table that weighs more than cap_bytes decoded is kept as the
 * tap keeps it (broker.tap_header_cap_bytes): only its death headers, its
 * stored properties noting why it cannot be replayed. 0 (the default):
 * every table kept whole. */
void rp_amqp_peek_set_header_cap(rp_amqp_peek *p, size_t cap_bytes);

/* Reads up to limit messages from the head of queue on vhost and returns
 * them all to the queue (see above). *items is lent. *behind is how many
 * ready messages the queue held behind the last one read, as the broker
 * said at that read (basic.get-ok's message-count): 0 when the queue
 * answered get-empty (every ready message was read), -1 when unknown (an
 * error). Messages held unacknowledged by another consumer are in neither
 * count. RP_ERR_UNAVAILABLE when the broker cannot be reached or logged in
 * to (err says why); RP_ERR_NOT_FOUND when the queue does not exist;
 * RP_ERR_NOMEM. */
rp_status rp_amqp_peek_read(rp_amqp_peek *p, const char *vhost, const char *queue, size_t limit,
                            const rp_amqp_peeked **items, size_t *n, int64_t *behind, char *err,
                            size_t errlen) RP_MUSTCHECK;

/* Reading past what the caller has dealt with already (issue 14: a
 * classic dead-letter queue's backlog worked through `limit` new messages
 * per pass). pass_over(arg, m) is asked of each message read (m is valid
 * for the call only); a message it answers true for is freed at once,
 * not returned, and not counted against limit. */
typedef struct rp_amqp_peek_past {
    bool (*pass_over)(void *arg, const rp_amqp_peeked *m);
    void *arg;
    size_t read_max; /* the most messages read in all (>= limit) */
} rp_amqp_peek_past;

/* rp_amqp_peek_read reading past (past may be NULL: the same as
 * rp_amqp_peek_read). *read is how many messages were read in all, those
 * passed over included; *behind is counted behind the last one read. */
rp_status rp_amqp_peek_read_past(rp_amqp_peek *p, const char *vhost, const char *queue,
                                 size_t limit, const rp_amqp_peek_past *past,
                                 const rp_amqp_peeked **items, size_t *n, size_t *read,
                                 int64_t *behind, char *err, size_t errlen) RP_MUSTCHECK;

/* Closes the connection (the next read opens one again). */
void rp_amqp_peek_close(rp_amqp_peek *p);

/* Fills *out with core's peek port over p (rp_backfill_port.h): read is
 * rp_amqp_peek_read_past, lending core's messages (each handle points to
 * its rp_dl_stored: the properties and headers as JSON; a message whose
 * headers could not be kept whole, or kept at all, is marked
 * body_truncated, so that it is never replayed with properties other than
 * its own); close is rp_amqp_peek_close. out->self borrows p. */
void rp_amqp_peek_port(rp_amqp_peek *p, rp_peek_port *out);

#endif
