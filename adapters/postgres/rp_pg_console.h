/*
 * rp_pg_console.h - the browser console's one read of the store that no
 * control op gives: the open sightings, the most recent ledger events and
 * the open gates grouped, as one JSON document built by PostgreSQL in one
 * query:
 *   {"sightings": [{"key", "condition", "opened_at", "opened_seq"}...],
 *    "events": [{"seq", "at", "kind", "project", "payload"}...],
 *    "groups": [{"kind", "origin", "reason", "count", "oldest", "newest"}...],
 *    "groups_total", "open_gates"}
 * sightings newest first (at most 200), events the newest `limit` by seq,
 * groups: every open gate counted by (kind, origin queue, reason), origin
 * and reason as stored (rendered, rp_untrusted.h; null for a gate with no
 * dead letter), oldest and newest its gates' created_at, the
 * RP_PG_CONSOLE_GROUPS largest (then oldest first); groups_total how many
 * groups there are, open_gates how many open gates (all of them, not only
 * the groups listed).
 * Every value is the store's; the page escapes them all.
 *
 * Ownership: *json is heap memory the caller frees. Threads: the store
 * thread (the store's connection).
 */
#ifndef RP_PG_CONSOLE_H
#define RP_PG_CONSOLE_H

#include <stddef.h>

#include "rp_pg_store.h"

#define RP_PG_CONSOLE_GROUPS 100

/* RP_OK with *json; RP_ERR_UNAVAILABLE when the store is down, RP_ERR_NOMEM,
 * RP_ERR_INTERNAL (logged here). limit: 1..500. */
rp_status rp_pg_console_feed(rp_pg_store *s, int limit, char **json, size_t *len) RP_MUSTCHECK;

/* The browser console's feed (adapters/http/rp_http_console_jobs.h) over
 * rp_pg_console_feed: self points at the store thread's store (rp_pg_store
 * **, read at each call: the store may be made after the console). */
rp_status rp_pg_console_feed_hook(void *self, int limit, char **json, size_t *len);

#endif
