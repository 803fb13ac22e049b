/*
 * rp_pg_stats.h - the stats store port (core/rp_stats.h) over the
 * PostgreSQL store: issue 18 item 7's counts per (project, kind) of the job
 * table, an owned queue's publishes and acks over the window (read from
 * migration 0009's queue_increment, which the passes write; nothing is
 * written here), and the open sightings that flag rows (with the project
 * and kind of a job a STALLED sighting names).
 *
 * QUERIES. kinds is one statement: per (project, kind), claimable jobs (as
 * WAITING_DEPTH counts them: ready, run_after reached, dependency
 * succeeded), leased jobs, rows created in the window, rows whose
 * succeeded_at is in it, and when its oldest claimable job became claimable
 * (the latest of run_after, created_at and the dependency's finished_at),
 * over the rows that are ready or leased or were created or succeeded in
 * the window: four arms, each an index (the partial indexes of ready and
 * of leased rows, job_by_created, job_succeeded_by_time), so the old rows
 * of a large table are never read.
 * queue_rates is one statement per queue. sightings is one statement. All
 * plain parameterised statements (a person's look, not a hot path).
 *
 * Threading and ownership as rp_pg_store.h: the store thread; the port's
 * self borrows the store. What the port returns is the caller's (the
 * cleanup functions of rp_stats.h).
 */
#ifndef RP_PG_STATS_H
#define RP_PG_STATS_H

#include "rp_pg_store.h"
#include "rp_stats.h"

void rp_pg_stats_port(rp_pg_store *s, rp_stats_store_port *out);

#endif
