/*
 * rp_gauges_port.h - counting what the metrics' gauges show between
 * passes: the open gates (with the age of the oldest of each kind) and the
 * open sightings by condition (app/rp_observe.h asks after a pass and
 * after ledger events).
 *
 * adapters/postgres fills it over the store thread's PostgreSQL store
 * (rp_pg_gauges_port); the unit tests with a fake.
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)). Every
 * call on the store thread. Ownership: self is borrowed; the arrays are
 * the caller's.
 */
#ifndef RP_GAUGES_PORT_H
#define RP_GAUGES_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_gate.h"
#include "rp_status.h"
#include "rp_verdict.h"

typedef struct rp_gauges_port {
    void *self;
    /* Whether the store is connected now (no round trip). */
    bool (*store_up)(void *self);
    /* The open gates by kind, and the age of the oldest of each kind in
     * milliseconds on the database's clock. */
    rp_status (*open_gates_aged)(void *self, int64_t by_kind[RP_GATE_KIND_COUNT_],
                                 int64_t age_ms[RP_GATE_KIND_COUNT_]);
    /* The open sightings by condition. */
    rp_status (*open_sightings)(void *self, int64_t by_condition[RP_COND_COUNT_]);
} rp_gauges_port;

#endif
