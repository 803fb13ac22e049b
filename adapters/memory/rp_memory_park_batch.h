/*
 * rp_memory_park_batch.h - the park-batch port (core/rp_park_batch_port.h)
 * in memory, for the unit tests of core/rp_tap_batch: transactions park
 * through the memory store's dead-letter port, all or nothing, read back
 * in sending order per session, with what a test needs to break it.
 *
 * Ownership: rp_memory_park_batch_new borrows m (it must outlive the
 * object); the ports filled borrow the object. One thread.
 */
#ifndef RP_MEMORY_PARK_BATCH_H
#define RP_MEMORY_PARK_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_memory.h"
#include "rp_park_batch_port.h"

#define RP_MEMORY_PARK_BATCH_MAX_SESSIONS 4

typedef struct rp_memory_park_batch rp_memory_park_batch;

/* sessions: 1..RP_MEMORY_PARK_BATCH_MAX_SESSIONS. NULL when out of memory. */
rp_memory_park_batch *rp_memory_park_batch_new(rp_memory *m, size_t sessions);
void rp_memory_park_batch_free(rp_memory_park_batch *pb);

void rp_memory_park_batch_port(rp_memory_park_batch *pb, rp_park_batch_port *out);
/* The memory store's ports, with its dead-letter park failing as this
 * object says (a bad identity fails alone there too). */
void rp_memory_park_batch_ports(rp_memory_park_batch *pb, rp_ports *out);

/* A dead letter of this identity fails on its own (RP_ERR_INTERNAL): the
 * transaction that holds it commits nothing, and its park alone fails.
 * NULL: none. Borrowed. */
void rp_memory_park_batch_fail_identity(rp_memory_park_batch *pb, const char *identity);
/* The store is unreachable (true) or back: send and recv of outstanding
 * transactions, and the park alone, return RP_ERR_UNAVAILABLE. */
void rp_memory_park_batch_set_down(rp_memory_park_batch *pb, bool down);

/* What was seen: transactions sent (on each session), committed, failed;
 * the most outstanding at once over all sessions; a recv that did not
 * match the oldest outstanding transaction of its session (a broken
 * order); single parks (through the ports). */
typedef struct rp_memory_park_batch_stats {
    size_t sent, sent_on[RP_MEMORY_PARK_BATCH_MAX_SESSIONS];
    size_t committed, failed, max_outstanding, order_errors, singles;
} rp_memory_park_batch_stats;
rp_memory_park_batch_stats rp_memory_park_batch_stats_of(const rp_memory_park_batch *pb);

#endif
