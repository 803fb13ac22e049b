/*
 * rp_replay.h - whether a parked dead letter may be replayed, and where to
 * (CONTRACT section 5: "only when that queue is owned and the body was
 * stored whole"; section 6: header values "are untrusted ... and never used
 * to choose a replay destination outside the owned pattern").
 *
 * The destination is the origin queue as the store keeps it: rendered by
 * rp_untrusted_render (quoted, escaped, cut to 200 characters).
 * rp_replay_origin_parse undoes that rendering exactly; a rendering that
 * shows a cut ("..." after the closing quote) cannot give the name back and
 * is refused, as is one that is not a rendering at all.
 *
 * Ownership: *name is a heap string the caller frees; *why is static.
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_gate.h"
#include "rp_status.h"

/* The queue name a rendering shows. RP_ERR_INVALID (with *why) when it is
 * not a whole rendering, shows a cut, or names something that cannot be a
 * queue (empty, a NUL byte, longer than 255 bytes); RP_ERR_NOMEM. */
rp_status rp_replay_origin_parse(const char *rendered, char **name, const char **why) RP_MUSTCHECK;

/* The decision for one dead letter: RP_OK with the destination in *queue
 * (heap, caller frees), or RP_ERR_CONFLICT with *why saying why not
 * (static text). RP_ERR_NOMEM. owned is the owned_queue_pattern. */
rp_status rp_replay_decide(const char *rendered_origin, bool body_truncated,
                           const pcre2_code *owned, char **queue, const char **why) RP_MUSTCHECK;

/* Whether a stored `expiration` property is one the broker takes: a
 * non-negative integer of milliseconds written in decimal digits only (no
 * sign, no space), at most 4294967295 (RabbitMQ refuses anything else with
 * 406 PRECONDITION_FAILED and closes the channel). s is len bytes, not
 * NUL-terminated. */
bool rp_replay_expiration_valid(const char *s, size_t len);

/* Whether queue is one of reaper's own (the control queue, the tap queue,
 * given in own[0..n)) or a server-named queue ("amq." prefix: the broker
 * events subscription is one): never a replay destination, whatever
 * owned_queue_pattern says. NULL entries in own are skipped. */
bool rp_replay_reserved_queue(const char *queue, const char *const *own, size_t n);

/* ---- a replay's states and checks (app/rp_replays.c runs them) ---------- */

/* "gate N is being replayed by X since 2026-01-02T03:04:05Z" (claimed_at:
 * Unix ms; 0 or less: "an unknown time"; claimed_by NULL or "": "another
 * reaperd"), into buf (n bytes, cut to fit). */
void rp_replay_claim_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                          rp_time_ms claimed_at);
/* What a stale claim taken over means, one clause: "the replay of gate N
 * claimed by X since T was never settled (...): the message may have been
 * published once already; ...". */
void rp_replay_takeover_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                             rp_time_ms claimed_at);

/* What a replay does with a gate it has locked and read. */
typedef enum rp_replay_state {
    RP_REPLAY_STATE_OPEN = 0,  /* go on to the checks (rp_replay_check) */
    RP_REPLAY_STATE_ANSWERED,  /* its first answer is the outcome; nothing is sent */
    RP_REPLAY_STATE_BUSY,      /* a live claim: RP_ERR_BUSY, nothing changes */
    RP_REPLAY_STATE_TAKEN_OVER,/* a stale claim was taken over: RP_ERR_CONFLICT,
                                  nothing is published again */
    RP_REPLAY_STATE_COUNT_
} rp_replay_state;

/* An answered gate wins over any claim; then the claim decides. */
rp_replay_state rp_replay_state_of(bool answered, rp_gate_claim_state claim);

/* The refusal of a BUSY or TAKEN_OVER state into msg (n bytes): its status
 * (RP_ERR_BUSY, RP_ERR_CONFLICT). RP_OK (msg "") for the others. */
rp_status rp_replay_state_refusal(rp_replay_state s, int64_t gate, const char *claimed_by,
                                  rp_time_ms claimed_at, char *msg, size_t n);

/* What the checks of an open gate know of it. */
typedef struct rp_replay_facts {
    rp_gate_kind kind;
    bool has_dead_letter;
    const char *not_replayable;  /* the stored properties' note: kept without
                                    its headers (why), or NULL */
    const char *origin_queue;    /* as stored (rendered) */
    bool stored_whole;           /* body not cut and headers stored */
    const pcre2_code *owned;     /* owned_queue_pattern */
    const char *const *own_queues; /* control, tap queue (NULL entries skipped) */
    size_t n_own;
    const char *vhost;           /* where it was found; NULL: not known */
    bool vhost_is_ours;          /* vhost is watched: broker.url's or one of broker.vhosts */
} rp_replay_facts;

/* The checks, in order: the gate takes replay, a dead letter is stored,
 * it was not kept without its headers, the origin is owned and the body
 * whole (rp_replay_decide), the origin is not one of reaper's own queues
 * (rp_replay_reserved_queue), it was found on reaperd's vhost. RP_OK with
 * the destination in *queue (heap, caller frees); RP_ERR_CONFLICT with
 * the reply's reason in msg (n bytes); RP_ERR_INTERNAL ("out of memory"). */
rp_status rp_replay_check(const rp_replay_facts *f, char **queue, char *msg,
                          size_t n) RP_MUSTCHECK;

/* The stored properties could not be restored (restore_st, with the
 * restorer's reason perr): the replay's status (RP_ERR_INTERNAL for
 * RP_ERR_NOMEM, else RP_ERR_CONFLICT) and reason in msg. */
rp_status rp_replay_restore_refusal(rp_status restore_st, const char *perr, char *msg,
                                    size_t n);

/* What is left out of a restored message before it is published: what the
 * broker would refuse with a channel error (406), a user_id other than
 * reaperd's own user (own_user NULL: unknown, so any user_id), and an
 * expiration that is not rp_replay_expiration_valid. The stored dead letter
 * keeps them. A property whose ptr is NULL is absent. Each one left out
 * adds a sentence to note (n bytes; "" when nothing is left out). */
typedef struct rp_replay_strip {
    bool user_id;
    bool expiration;
} rp_replay_strip;

rp_replay_strip rp_replay_strip_decide(rp_bytes user_id, rp_bytes expiration,
                                       const char *own_user, char *note, size_t n);

/* How the broker settled a replay's publish (the transport's outcome). */
typedef enum rp_replay_publish {
    RP_REPLAY_PUBLISH_CONFIRMED = 0,
    RP_REPLAY_PUBLISH_RETURNED,  /* unroutable (no such queue) */
    RP_REPLAY_PUBLISH_REFUSED,   /* a channel error; refusal says why */
    RP_REPLAY_PUBLISH_NACKED,
    RP_REPLAY_PUBLISH_DROPPED,   /* not sent: reaperd is stopping */
    RP_REPLAY_PUBLISH_LOST,      /* the connection went before a confirm */
    RP_REPLAY_PUBLISH_COUNT_
} rp_replay_publish;

/* What comes after a publish. */
typedef enum rp_replay_next {
    RP_REPLAY_NEXT_SETTLE = 0, /* confirmed: settle the gate, fenced on the claim */
    RP_REPLAY_NEXT_RELEASE,    /* surely delivered nothing: release the claim, fail */
    RP_REPLAY_NEXT_KEEP_CLAIM, /* may have been delivered: keep the claim, fail */
    RP_REPLAY_NEXT_CANCEL,     /* stopping: no reply (the request comes again) */
    RP_REPLAY_NEXT_COUNT_
} rp_replay_next;

/* The step after outcome o of the publish to queue; for RELEASE and
 * KEEP_CLAIM the replay's status in *st and its reason in msg (n bytes).
 * refusal is the broker's reason for REFUSED (may be NULL otherwise). */
rp_replay_next rp_replay_after_publish(rp_replay_publish o, const char *queue,
                                       const char *refusal, rp_status *st, char *msg, size_t n);

/* The confirmed publish to queue could not be settled (the gate port said
 * settle_st; for RP_ERR_BUSY the claim now held by claimed_by since
 * claimed_at): the replay's status and reason in msg. RP_OK for RP_OK. */
rp_status rp_replay_settle_refusal(rp_status settle_st, int64_t gate, const char *queue,
                                   const char *claimed_by, rp_time_ms claimed_at, char *msg,
                                   size_t n);

#endif
