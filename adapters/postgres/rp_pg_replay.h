/*
 * rp_pg_replay.h - what the daemon reads and writes around a replay and the
 * backfill, beside the ports (rp_pg_store.h):
 *   - the dead letter behind a bus_dead_lettered gate, for a replay
 *     (CONTRACT section 5), and the replay's claim on its gate (rp_gate.h);
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
#include "rp_replay_port.h"

#define RP_PG_LEDGER_BACKFILL_READ "DeadLetterBackfillRead"

typedef struct rp_pg_replay_row {
    rp_gate_kind kind;
    bool answered;
    rp_choice answer;        /* when answered */
    /* The replay claim found on the gate (rp_gate.h): LIVE (nothing
     * changed), STALE (taken over: takeover_seq is the ledger event), or
     * NONE. */
    rp_gate_claim_state claim;
    char claimed_by[160];
    rp_time_ms claimed_at;   /* the store's clock */
    int64_t takeover_seq;
    /* The gate's transaction is still open, its row locked: the caller
     * ends it with rp_pg_replay_claim_commit or rp_pg_replay_claim_abandon
     * before any other call on the store. */
    bool open;
    /* The dead letter: read only when the gate is open and unclaimed. */
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

/* The first step of a replay (rp_replays.h): in a transaction, locks gate
 * gate_id (FOR UPDATE) and reads it, its claim and its dead letter. An
 * answered gate, or one with a live claim, ends the transaction having
 * changed nothing. A stale claim is taken over: cleared, with a ledger
 * event of kind RP_PG_LEDGER_CLAIM_TAKEN_OVER (by: who answers now), and
 * committed; the replay must then not publish (the claimer may have).
 * Otherwise out->open: the transaction stays open with the row locked.
 * RP_ERR_NOT_FOUND: no such gate (nothing open). On any error nothing is
 * open. */
rp_status rp_pg_replay_lock(rp_pg_store *s, int64_t gate_id, const char *by,
                            rp_pg_replay_row *out) RP_MUSTCHECK;
/* Ends rp_pg_replay_lock's open transaction by claiming the gate for this
 * store's claimer (rp_pg_store_set_claimer) at the store's now() (in
 * *claimed_at) and committing: from then on the gate is "replaying". */
rp_status rp_pg_replay_claim_commit(rp_pg_store *s, int64_t gate_id,
                                    rp_time_ms *claimed_at) RP_MUSTCHECK;
/* Ends it with nothing changed (the replay is refused). */
rp_status rp_pg_replay_claim_abandon(rp_pg_store *s) RP_MUSTCHECK;
/* Clears this store's claim on gate_id, when it is still there (a publish
 * that surely delivered nothing). *released: it was. One statement. */
rp_status rp_pg_replay_release(rp_pg_store *s, int64_t gate_id, bool *released) RP_MUSTCHECK;
void rp_pg_replay_row_cleanup(rp_pg_replay_row *r);

/* Whether the backfill has read queue (on vhost) before, and, when it has,
 * how many ready messages lay behind what that read took (*unread; -1 when
 * the record does not say: written before the count was kept, or not
 * known at the read). */
rp_status rp_pg_backfill_was_read(rp_pg_store *s, const char *vhost, const char *queue,
                                  bool *read, int64_t *unread) RP_MUSTCHECK;
/* The lock that makes a quorum queue's read and its record one act among
 * replicas: a session-level advisory lock on (schema, vhost, queue), tried
 * without waiting (*got false: another session holds it, i.e. another
 * reaperd is reading that queue now). Held across the read from the broker
 * and the parks, released after the record (rp_pg_backfill_unlock); a
 * session that ends (a crash) releases it. */
rp_status rp_pg_backfill_lock(rp_pg_store *s, const char *vhost, const char *queue,
                              bool *got) RP_MUSTCHECK;
rp_status rp_pg_backfill_unlock(rp_pg_store *s, const char *vhost,
                                const char *queue) RP_MUSTCHECK;
/* Records that the backfill read n messages of queue (on vhost), with
 * `unread` ready messages behind them (-1: unknown, stored as null). */
rp_status rp_pg_backfill_mark_read(rp_pg_store *s, const char *vhost, const char *queue,
                                   size_t n, int64_t unread) RP_MUSTCHECK;

/* The batch forms (rp_pg_replay_many.c), one commit for many gates, each
 * gate decided as the single calls decide it:
 *   rp_pg_replay_lock_many: in one transaction locks the gates ids[0..n)
 *     (FOR UPDATE, lowest id first) and reads each as rp_pg_replay_lock
 *     does into rows[i] with sts[i] (RP_OK; RP_ERR_NOT_FOUND: no such gate;
 *     RP_ERR_INTERNAL: a row it cannot read); a stale claim is taken over
 *     (by[i]) inside the transaction. On RP_OK the transaction stays open
 *     whatever the rows hold: the caller ends it with
 *     rp_pg_replay_claim_many_commit (n may be 0) or
 *     rp_pg_replay_claim_abandon before any other call. On an error nothing
 *     is open and rows hold nothing to clean up.
 *   rp_pg_replay_claim_many_commit: claims the gates ids[0..n) for this
 *     process (claimed[i], its claimed_at in at[i]) and commits.
 *   rp_pg_replay_settle_many: settles each gate with replay as the gate
 *     port's answer does (answer, job, ledger event, claim cleared), fenced
 *     on this process's claim, all in one transaction: sts[i] RP_OK (out[i]
 *     committed, or ALREADY_ANSWERED), RP_ERR_BUSY (another's claim:
 *     out[i].claimed_by, claimed_at), RP_ERR_CONFLICT (the gate does not
 *     take replay), RP_ERR_NOT_FOUND. Each committed answer is handed to
 *     publisher (may be NULL) after the commit. An error return settles
 *     nothing. by[i] answered_by, note[i] the request's own "by" or NULL. */
rp_status rp_pg_replay_lock_many(rp_pg_store *s, const int64_t *ids, size_t n,
                                 const char *const *by, rp_pg_replay_row *rows,
                                 rp_status *sts) RP_MUSTCHECK;
rp_status rp_pg_replay_claim_many_commit(rp_pg_store *s, const int64_t *ids, size_t n,
                                         rp_time_ms *at, bool *claimed) RP_MUSTCHECK;
rp_status rp_pg_replay_settle_many(rp_pg_store *s, const rp_publisher_port *publisher,
                                   const int64_t *ids, size_t n, const char *const *by,
                                   const char *const *note, rp_answer_result *out,
                                   rp_status *sts) RP_MUSTCHECK;

/* The replays part's store port (core/rp_replay_port.h) over one store
 * session: ready is conn's connect, lock/claim/abandon/release the calls
 * above (the claim's length control.replay_claim_seconds of *cfg, read at
 * each use), settle the answer REPLAY through *gates (so that it goes where
 * every answer goes: the filler's wrapping, e.g. the events feed); the
 * batch forms lock_many/claim_many/settle_many the calls above (the batch
 * settle hands its answers to *publisher).
 * Everything is borrowed and must outlive the port; self = src. Threads:
 * the store thread. */
typedef struct rp_pg_replay_src {
    rp_pg_conn *conn;
    rp_pg_store *store;
    const rp_config *const *cfg;
    const rp_gate_port *gates;
    /* Where the batch settle hands its committed answers (the events feed
     * *gates' wrapping feeds for a single settle); NULL: nowhere. */
    const rp_publisher_port *publisher;
} rp_pg_replay_src;
void rp_pg_replay_store_port(rp_pg_replay_src *src, rp_replay_store_port *out);

#endif
