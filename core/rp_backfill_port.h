/*
 * rp_backfill_port.h - the two ports the backfill's read of dead-letter
 * queues runs over (core/rp_backfill_read.h decides with them):
 *
 *   - the PEEK PORT reads dead letters from the head of a queue WITHOUT
 *     removing them (every message read goes back where it was).
 *     adapters/rabbitmq fills it over a blocking AMQP connection of its own
 *     (rp_amqp_peek_port, rp_amqp_peek.h); adapters/memory fills it over
 *     the memory store's dead-letter messages (rp_memory_backfill.h).
 *   - the BACKFILL-RECORD PORT keeps the record that a quorum dead-letter
 *     queue has been read (it is read once, ever) and the lock that makes
 *     the read and its record one act among replicas. adapters/postgres
 *     fills it (rp_pg_backfill_port, rp_pg_backfill.h: a ledger event and a
 *     session-level advisory lock); adapters/memory for the unit tests.
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)). Every
 * call blocks, on the thread that runs the pass (the store thread of the
 * daemon, or the main thread of --once); one thread uses a port instance at
 * a time. Strings are borrowed for the call.
 */
#ifndef RP_BACKFILL_PORT_H
#define RP_BACKFILL_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_ports.h"
#include "rp_status.h"

/* The stored form of a dead letter's headers and properties, as JSON text
 * (NULL: not kept losslessly). A message the peek port reads points its
 * rp_dl_message.handle to one of these, and the store's park
 * (adapters/postgres, rp_pg_dl_handle) stores them in its jsonb columns. */
typedef struct rp_dl_stored {
    const char *headers_json;
    const char *properties_json;
} rp_dl_stored;

/* Reading past what the caller has dealt with already (issue 14): asked of
 * each message read (m and what it points to are valid for the call only;
 * m->handle is NULL); a message it answers true for is not returned and not
 * counted against the limit. At most read_max (>= limit) messages are read
 * in all. */
typedef struct rp_peek_past {
    bool (*pass_over)(void *arg, const rp_dl_message *m);
    void *arg;
    size_t read_max;
} rp_peek_past;

typedef struct rp_peek_port {
    void *self;
    /* Reads up to limit messages from the head of queue on vhost and returns
     * every one of them to the queue. *msgs is LENT until the next read or
     * close on the same self; each message's handle points to its
     * rp_dl_stored. past may be NULL (the first `limit` messages). *read is
     * how many were read in all (those passed over included); *behind how
     * many ready messages the queue held behind the last one read, as the
     * broker said then (0: the queue answered empty; -1: unknown). Returns
     * RP_ERR_NOT_FOUND when the queue does not exist; RP_ERR_UNAVAILABLE
     * when the broker cannot be reached (err says why); RP_ERR_NOMEM. */
    rp_status (*read)(void *self, const char *vhost, const char *queue, size_t limit,
                      const rp_peek_past *past, const rp_dl_message **msgs, size_t *n,
                      size_t *read, int64_t *behind, char *err, size_t errlen);
    /* Closes what the reads keep open (a connection): the end of a pass.
     * The next read opens it again. May be NULL. */
    void (*close)(void *self);
} rp_peek_port;

typedef struct rp_backfill_record_port {
    void *self;
    /* Tries the queue's lock without waiting: *got false when another
     * session (another replica) holds it. Held until unlock, or until the
     * session ends (a crash releases it). */
    rp_status (*lock)(void *self, const char *vhost, const char *queue, bool *got);
    rp_status (*unlock)(void *self, const char *vhost, const char *queue);
    /* Whether the backfill has read queue before and, when it has, how many
     * ready messages lay behind that read (*unread; -1 when the record does
     * not say). Read only. */
    rp_status (*was_read)(void *self, const char *vhost, const char *queue, bool *read,
                          int64_t *unread);
    /* Records that the backfill read n messages of queue, with `unread`
     * ready messages behind them (-1: unknown). */
    rp_status (*mark_read)(void *self, const char *vhost, const char *queue, size_t n,
                           int64_t unread);
} rp_backfill_record_port;

#endif
