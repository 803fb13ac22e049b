/*
 * rp_redelivery.h - counting how often the broker hands the same control
 * request over again (CONTRACT section 5; issue 14 item 4: a request
 * redelivered more than RP_REDELIVERY_MAX times is answered `internal` and
 * acked, so that no request can make reaperd loop).
 *
 * AMQP's `redelivered` flag is a bool, and the control queue is a classic
 * queue (no x-delivery-count; declaring it as a quorum queue now would make
 * every existing deployment's declaration fail with 406), so reaperd keeps
 * the count itself, in memory, keyed by the request's identity: a hash of
 * its message_id when it has one, else of its reply_to, correlation_id,
 * user_id and body (rp_redelivery_key). Only redelivered requests are
 * counted, and a request is forgotten once it is acked, so the table holds
 * just the requests that keep coming back; it is bounded
 * (RP_REDELIVERY_SLOTS; the least recently seen goes first). The count does
 * not survive a restart of reaperd: a request that crashes the process is
 * not caught by it.
 *
 * Pure: no I/O, no clock. Ownership: the table is a plain struct the
 * caller embeds (zeroed by rp_redelivery_init); nothing is allocated.
 */
#ifndef RP_REDELIVERY_H
#define RP_REDELIVERY_H

#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"

#define RP_REDELIVERY_SLOTS 256
/* Redeliveries answered normally; the next one is answered `internal`. */
#define RP_REDELIVERY_MAX 3

typedef struct rp_redelivery {
    struct {
        uint64_t key;
        uint64_t seen; /* the table's tick at the last sighting; 0: free */
        unsigned count;
    } slot[RP_REDELIVERY_SLOTS];
    uint64_t tick;
} rp_redelivery;

void rp_redelivery_init(rp_redelivery *t);

/* The identity of a request: FNV-1a (64 bits) over the parts, each
 * preceded by its length, so that ("ab","c") and ("a","bc") differ. A part
 * with a NULL ptr counts as absent (distinct from empty). */
uint64_t rp_redelivery_key(const rp_bytes *parts, size_t n);

/* Counts one redelivery of key and returns how many have been seen
 * (1 the first time). */
unsigned rp_redelivery_note(rp_redelivery *t, uint64_t key);

/* The request was answered and acked: forget it. */
void rp_redelivery_forget(rp_redelivery *t, uint64_t key);

#endif
