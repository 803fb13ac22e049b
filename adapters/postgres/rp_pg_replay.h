/*
 * rp_pg_replay.h - what the daemon reads and writes around a replay and the
 * backfill, beside the ports (rp_pg_store.h):
 *   - the dead letter behind a bus_dead_lettered gate, for a replay
 *     (CONTRACT section 5);
 *   - the record that the backfill has read a quorum dead-letter queue, so
 *     that it never reads that queue again (rp_amqp_peek.h says why). The
 *     record is a ledger event of kind RP_PG_LEDGER_BACKFILL_READ, payload
 *     {"vhost", "queue", "read", "unread"} ("unread": the ready messages
 *     behind what it read, null when unknown; absent in records written
 *     before it was kept): append-only, like every other fact.
 *
 * Threading: the store thread, like the store (blocking). Ownership: a
 * replay row owns its strings and body (rp_pg_replay_row_cleanup frees
 * them). Failures as the store's: RP_ERR_UNAVAILABLE, RP_ERR_INTERNAL.
 */
#ifndef RP_PG_REPLAY_H
#define RP_PG_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_gate.h"
#include "rp_pg_store.h"

#define RP_PG_LEDGER_BACKFILL_READ "DeadLetterBackfillRead"

typedef struct rp_pg_replay_row {
    rp_gate_kind kind;
    bool answered;
    rp_choice answer;        /* when answered */
    bool has_dead_letter;    /* a dead_letter row names this gate */
    char *origin_queue;      /* as stored: rendered (rp_untrusted.h) */
    char *vhost;             /* from the job's payload; NULL when absent */
    char *queue;             /* the dead-letter queue it was found on */
    uint8_t *body;
    size_t body_len;
    bool body_truncated;
    char *headers_json;      /* the headers column as JSON text */
    char *properties_json;   /* the properties column as JSON text */
} rp_pg_replay_row;

/* Reads gate gate_id and its dead letter. RP_ERR_NOT_FOUND: no such gate. */
rp_status rp_pg_replay_read(rp_pg_store *s, int64_t gate_id, rp_pg_replay_row *out) RP_MUSTCHECK;
void rp_pg_replay_row_cleanup(rp_pg_replay_row *r);

/* Whether the backfill has read queue (on vhost) before, and, when it has,
 * how many ready messages lay behind what that read took (*unread; -1 when
 * the record does not say: written before the count was kept, or not
 * known at the read). */
rp_status rp_pg_backfill_was_read(rp_pg_store *s, const char *vhost, const char *queue,
                                  bool *read, int64_t *unread) RP_MUSTCHECK;
/* Records that the backfill read n messages of queue (on vhost), with
 * `unread` ready messages behind them (-1: unknown, stored as null). */
rp_status rp_pg_backfill_mark_read(rp_pg_store *s, const char *vhost, const char *queue,
                                   size_t n, int64_t unread) RP_MUSTCHECK;

#endif
