/*
 * rp_replay_port.h - what a replay (app/rp_replays.h) needs from outside:
 *
 *   rp_replay_store_port: the gate, its claim and its dead letter in the
 *     store (adapters/postgres/rp_pg_replay.h fills it: lock, claim, settle,
 *     release). Store thread only; every call blocks.
 *   rp_replay_publish_port: the stored message restored for the broker and
 *     published back, mandatory and confirmed, on the replay channel
 *     (adapters/rabbitmq/rp_amqp_control.h fills it). The message calls
 *     (msg_*, kept_refusal, vhost_is_ours, own_user) on the store thread or
 *     any thread; publish on the loop thread only.
 *
 * cmd/reaperd fills both; self is borrowed and must outlive the replays
 * part.
 */
#ifndef RP_REPLAY_PORT_H
#define RP_REPLAY_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_gate.h"
#include "rp_ports.h"
#include "rp_replay.h"
#include "rp_status.h"

/* A gate locked for a replay, its claim and its dead letter. The strings
 * and the body are heap (free()), owned by the row: rp_replay_row_cleanup. */
typedef struct rp_replay_row {
    rp_gate_kind kind;
    bool answered;
    rp_choice answer;          /* when answered */
    rp_gate_claim_state claim; /* LIVE: nothing changed; STALE: taken over */
    char claimed_by[160];
    rp_time_ms claimed_at;     /* the store's clock */
    /* The dead letter: read only when the gate is open and unclaimed. */
    bool has_dead_letter;
    char *origin_queue;        /* as stored: rendered (rp_untrusted.h) */
    char *vhost;               /* NULL when not known */
    uint8_t *body;
    size_t body_len;
    bool body_truncated;
    char *headers_json;
    char *properties_json;
} rp_replay_row;

static inline void rp_replay_row_cleanup(rp_replay_row *r) {
    free(r->origin_queue);
    free(r->vhost);
    free(r->body);
    free(r->headers_json);
    free(r->properties_json);
    r->origin_queue = r->vhost = r->headers_json = r->properties_json = NULL;
    r->body = NULL;
}

typedef struct rp_replay_store_port {
    void *self;
    /* Connects when needed: RP_OK, or RP_ERR_UNAVAILABLE (unreachable). */
    rp_status (*ready)(void *self);
    /* The configuration in force on the store thread (borrowed until the
     * next call of any function of this port). */
    const rp_config *(*config)(void *self);
    /* Locks gate (FOR UPDATE) and reads it, its claim and its dead letter
     * into *out (zeroed first). An answered gate or a live claim ends the
     * transaction having changed nothing; a stale claim is taken over (by:
     * who answers now), recorded and committed. Otherwise the transaction
     * stays open, the row locked: the caller ends it with claim or abandon
     * before any other call. RP_ERR_NOT_FOUND: no such gate. On any error
     * nothing is open and *out holds nothing to clean up. */
    rp_status (*lock)(void *self, int64_t gate, const char *by, rp_replay_row *out);
    /* Ends lock's open transaction by claiming the gate for this process
     * (its claimed_at in *at) and committing. */
    rp_status (*claim)(void *self, int64_t gate, rp_time_ms *at);
    /* Ends it with nothing changed. */
    rp_status (*abandon)(void *self);
    /* Clears this process's claim on gate when it is still there
     * (*released: it was). */
    rp_status (*release)(void *self, int64_t gate, bool *released);
    /* Settles gate with replay (answer, job, ledger event, claim cleared:
     * one transaction), fenced on this process's claim: RP_ERR_BUSY when it
     * was taken over meanwhile (out->claimed_by, claimed_at say by whom).
     * by: answered_by; note: the request's own "by" (ledger only). */
    rp_status (*settle)(void *self, int64_t gate, const char *by, const char *note,
                        rp_answer_result *out);
    /* The batch forms (optional: NULL, and the part goes one gate at a
     * time), so that many replays share one commit for their locks and
     * claims and one for their settles; each gate is decided as the single
     * call decides it. lock_many: lock for each gate[i], its result in
     * st[i] (RP_OK with out[i] filled, RP_ERR_NOT_FOUND, RP_ERR_INTERNAL),
     * a stale claim taken over (by[i]); on RP_OK the transaction stays open
     * whatever the rows hold and the caller ends it with claim_many (n may
     * be 0) or abandon; on an error nothing is open and out holds nothing.
     * claim_many: claims each gate[i] for this process (claimed[i], at[i])
     * and commits. settle_many: settle for each gate[i] in one transaction,
     * its result in st[i] and out[i] (as settle's); an error return settles
     * nothing. */
    rp_status (*lock_many)(void *self, const int64_t *gate, size_t n, const char *const *by,
                           rp_replay_row *out, rp_status *st);
    rp_status (*claim_many)(void *self, const int64_t *gate, size_t n, rp_time_ms *at,
                            bool *claimed);
    rp_status (*settle_many)(void *self, const int64_t *gate, size_t n, const char *const *by,
                             const char *const *note, rp_answer_result *out, rp_status *st);
} rp_replay_store_port;

/* A restored message (opaque to the part). */
typedef struct rp_replay_msg rp_replay_msg;

/* How the broker settled a publish: outcome, its transport name (for the
 * log: "returned", "lost", ...), and for RP_REPLAY_PUBLISH_REFUSED the
 * broker's reason (may be NULL). Both strings are lent for the call. Loop
 * thread. */
typedef void (*rp_replay_published_fn)(void *arg, rp_replay_publish outcome, const char *name,
                                       const char *refusal);

typedef struct rp_replay_publish_port {
    void *self;
    /* NULL when out of memory; msg_free(NULL) is fine. */
    rp_replay_msg *(*msg_new)(void *self);
    void (*msg_free)(void *self, rp_replay_msg *m);
    /* Restores the properties from the stored JSON texts: RP_ERR_INVALID
     * with the reason in err; RP_ERR_NOMEM. */
    rp_status (*msg_restore)(void *self, rp_replay_msg *m, const char *props_json,
                             const char *headers_json, char *err, size_t errlen);
    /* The restored user_id and expiration (ptr NULL when absent; borrowed
     * from m). */
    void (*msg_peek)(void *self, const rp_replay_msg *m, rp_bytes *user_id, rp_bytes *expiration);
    /* Leaves out what rp_replay_strip_decide chose. */
    void (*msg_strip)(void *self, rp_replay_msg *m, rp_replay_strip s);
    /* Whether stored properties carry a "kept without its headers" note
     * (the reason into why). */
    bool (*kept_refusal)(void *self, const char *props_json, char *why, size_t n);
    /* Whether reaperd publishes on vhost: broker.url's, or one of
     * broker.vhosts (issue 19). */
    bool (*vhost_is_ours)(void *self, const char *vhost);
    /* reaperd's own broker user into buf; false when unknown. */
    bool (*own_user)(void *self, char *buf, size_t n);
    /* Loop: queues the publish of m with body (copied) to queue of vhost
     * (NULL: broker.url's) on the default exchange, mandatory, confirmed,
     * never retried. RP_OK: done(arg, ...) is called later, exactly once.
     * RP_ERR_UNAVAILABLE: the broker (that vhost's connection) is not
     * connected; RP_ERR_NOMEM. done is then never called. */
    rp_status (*publish)(void *self, const rp_replay_msg *m, const char *vhost, const char *queue,
                         rp_bytes body, rp_replay_published_fn done, void *arg);
} rp_replay_publish_port;

#endif
