/*
 * rp_pg_console.h - the browser console's one read of the store that no
 * control op gives: the open sightings and the most recent ledger events,
 * as one JSON document built by PostgreSQL in one query:
 *   {"sightings": [{"key", "condition", "opened_at", "opened_seq"}...],
 *    "events": [{"seq", "at", "kind", "project", "payload"}...]}
 * sightings newest first (at most 200), events the newest `limit` by seq.
 * Every value is the store's; the page escapes them all.
 *
 * Ownership: *json is heap memory the caller frees. Threads: the store
 * thread (the store's connection).
 */
#ifndef RP_PG_CONSOLE_H
#define RP_PG_CONSOLE_H

#include <stddef.h>

#include "rp_pg_store.h"

/* RP_OK with *json; RP_ERR_UNAVAILABLE when the store is down, RP_ERR_NOMEM,
 * RP_ERR_INTERNAL (logged here). limit: 1..500. */
rp_status rp_pg_console_feed(rp_pg_store *s, int limit, char **json, size_t *len) RP_MUSTCHECK;

#endif
