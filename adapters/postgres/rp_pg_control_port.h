/*
 * rp_pg_control_port.h - the control part's store port
 * (core/rp_control_port.h), the functions of it that use PostgreSQL alone:
 * config, ready, gates, set_claim_seconds, gate_look, jobs, answer_sets and
 * claimer, over the store thread's session. The rest (reap, stats, the
 * doctor's probes) use several backends and are filled by the composer
 * (cmd/reaperd/ports.c), whose self begins with an rp_pg_control_src (the
 * port has one self).
 *
 * Ownership: src is borrowed, with what it points at, for the part's life.
 * Threads: as core/rp_control_port.h (the store thread; claimer any).
 */
#ifndef RP_PG_CONTROL_PORT_H
#define RP_PG_CONTROL_PORT_H

#include "rp_control_port.h"
#include "rp_pg_conn.h"
#include "rp_pg_store.h"

typedef struct rp_pg_control_src {
    rp_pg_conn *conn;
    rp_pg_store *store;
    const rp_config *const *cfg; /* the store thread's, switched at a reload */
    const rp_gate_port *gates;   /* answers go through the events feed */
} rp_pg_control_src;

/* Fills those functions of *out and sets out->self = src. */
void rp_pg_control_store_port(rp_pg_control_src *src, rp_control_store_port *out);

#endif
