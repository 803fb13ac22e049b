/*
 * rp_pg_doctor.h - doctor's probes of the store (core's rp_doctor.h decides
 * what they mean): a connection of its own (classified by the layer that
 * failed: network, refused, authentication), store.schema's migration
 * version, the open sightings per condition and the open gates. Only reads.
 *
 * Threads: any but the loop's (it blocks, bounded by connect_timeout and
 * the session's statement_timeout). Ownership: the probe's strings live in
 * *keep, which must outlive the facts that point into it.
 */
#ifndef RP_PG_DOCTOR_H
#define RP_PG_DOCTOR_H

#include "rp_doctor.h"
#include "rp_pg_conn.h"

typedef struct rp_pg_doctor_keep {
    char why[512];
    char stalled[256], waiting_depth[256], wedged[256], divergent[256], remainders[256];
} rp_pg_doctor_keep;

/* The layer a libpq connection failure names (its one-line message). */
rp_doctor_reach rp_pg_doctor_reach(const char *why);

/* Connects with dsn and session s (connect_timeout_s seconds at most),
 * then reads; fills the store half of *f (store, schema, sightings,
 * gates). */
void rp_pg_doctor_probe(const char *dsn, int connect_timeout_s, const rp_pg_session *s,
                        rp_pg_doctor_keep *keep, rp_doctor_facts *f);

/* The probe with cfg's store.dsn and a session of cfg's store.* time-outs,
 * timeout_ms for the connect (in whole seconds) and each statement. */
void rp_pg_doctor_probe_config(const rp_config *cfg, int timeout_ms, rp_pg_doctor_keep *keep,
                               rp_doctor_facts *f);

#endif
