/*
 * rp_pg_backfill.h - core's backfill-record port (rp_backfill_port.h) over
 * the PostgreSQL store: the record that a quorum dead-letter queue has been
 * read (rp_pg_backfill_was_read / rp_pg_backfill_mark_read, a ledger event
 * of kind RP_PG_LEDGER_BACKFILL_READ) and its advisory lock
 * (rp_pg_backfill_lock / rp_pg_backfill_unlock), all in rp_pg_replay.h.
 *
 * Threading: the store's (one thread, blocking). Ownership: out->self
 * borrows s, which must outlive every use of the port.
 */
#ifndef RP_PG_BACKFILL_H
#define RP_PG_BACKFILL_H

#include "rp_backfill_port.h"
#include "rp_pg_store.h"

void rp_pg_backfill_port(rp_pg_store *s, rp_backfill_record_port *out);

#endif
