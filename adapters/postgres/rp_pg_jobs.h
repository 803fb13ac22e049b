/*
 * rp_pg_jobs.h - the job triage port (core/rp_jobs_port.h) over the
 * PostgreSQL store: list the job table by id with the total that match,
 * read one row with its payload, cancel a ready or leased job.
 *
 * QUERIES. list is one round trip: the page (id > after, lowest id first,
 * limit + 1 rows, the extra one only saying that more follow) and the count
 * of every row matching the filters, in one pipeline segment. get reads one
 * row; its payload is the jsonb as text, cut to RP_JOB_PAYLOAD_SHOWN
 * characters.
 *
 * CANCEL. Two round trips in one transaction: BEGIN and the row locked
 * (SELECT ... FOR UPDATE: a worker's claim, heartbeat or settle in flight is
 * waited for, and a later one waits for the cancel); core decides
 * (rp_job_cancellable); then the update (state failed, lease_owner and
 * lease_expires_at NULL, finished_at and updated_at now), the
 * RP_LEDGER_JOB_CANCELLED ledger row and COMMIT, or ROLLBACK when nothing
 * is to change. A worker's settle fenced on its lease_owner then matches no
 * row. No new statement is prepared: these run as plain parameterised
 * statements (a person's triage, not a hot path).
 *
 * Threading and ownership as rp_pg_store.h: the store thread; the port's
 * self borrows the store.
 */
#ifndef RP_PG_JOBS_H
#define RP_PG_JOBS_H

#include "rp_jobs_port.h"
#include "rp_pg_store.h"

void rp_pg_jobs_port(rp_pg_store *s, rp_jobs_port *out);

#endif
