/*
 * rp_park_batch_port.h - the park-batch port: how the dead-letter tap's
 * thread parks many dead letters in one transaction, pipelined over one or
 * more sessions (core/rp_tap_batch.h runs it).
 *
 * adapters/postgres fills it over the tap's own PostgreSQL sessions
 * (rp_pg_park_sessions_port, rp_pg_park_batch.h); adapters/memory fills it
 * for the unit tests (rp_memory_park_batch_port, rp_memory_park_batch.h).
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)).
 * send() hands one transaction of n (>= 1) dead letters to session s
 * without waiting for its result: RP_OK, it is on its way; else nothing
 * was sent (RP_ERR_UNAVAILABLE: the session is lost, with whatever was
 * outstanding on it). recv() reads the result of the OLDEST transaction
 * sent on session s and not read yet (the same items and n: their results
 * are filled) and returns its outcome: RP_OK, committed (every item's
 * result says whether it parked now or had been parked before);
 * RP_ERR_UNAVAILABLE / RP_ERR_TIMEOUT / RP_ERR_CLOSED, the store went away
 * (committed or not: park them again, the park is idempotent by
 * identity); anything else (RP_ERR_INTERNAL, RP_ERR_CONFLICT,
 * RP_ERR_INVALID), that transaction failed on its own, nothing of it was
 * committed, and the sessions' later transactions are not touched. Each
 * transaction commits or fails alone. The caller reads every transaction
 * it sent, in sending order per session, before it uses the session any
 * other way.
 *
 * Ownership: items, and everything they point to, stay the caller's; they
 * only need to live until each call returns. One thread uses a port
 * instance at a time.
 */
#ifndef RP_PARK_BATCH_PORT_H
#define RP_PARK_BATCH_PORT_H

#include <stddef.h>

#include "rp_ports.h"

/* One dead letter of a park transaction: the arguments the dead-letter
 * port's park() takes, all borrowed, and its result. */
typedef struct rp_park_batch_item {
    const char *vhost;
    const char *queue;
    const rp_dl_message *msg;
    const rp_dead_letter *facts;
    const rp_verdict *v;
    rp_park_result result; /* out, valid after a recv that returned RP_OK */
} rp_park_batch_item;

typedef struct rp_park_batch_port {
    void *self;
    size_t sessions; /* >= 1: the sessions send and recv take (0 .. sessions-1) */
    rp_status (*send)(void *self, size_t session, rp_park_batch_item *items, size_t n);
    rp_status (*recv)(void *self, size_t session, rp_park_batch_item *items, size_t n);
} rp_park_batch_port;

#endif
