/*
 * rp_control.h - the control protocol's decisions (CONTRACT section 5,
 * proto/SCHEMA.md), apart from the transport: who may ask, where a reply
 * may go, how large a request may be, how often one user may reap, when a
 * request the broker keeps handing back is given up, and the texts of the
 * refusals. app/rp_controller.c takes a request from the broker, asks
 * these, runs the use case and publishes the reply.
 *
 * The order a request is checked in (control.c keeps it): redeliveries
 * (rp_control_redelivered_too_often), then the sender and reply_to, then
 * the size (rp_control_admit), then the body is decoded, then a reap is
 * held to control.reap_rate_seconds (rp_control_reap_too_soon).
 *
 * Pure: no I/O, no clock (time is an argument), no logging. Ownership: an
 * rp_control_envelope's strings are its own arrays; its rp_bytes fields are
 * borrowed from the message for the call that fills them (the envelope may
 * outlive them: they are not read afterwards). rp_control_senders is a
 * plain struct the caller owns (zero it to start); nothing is allocated.
 */
#ifndef RP_CONTROL_H
#define RP_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_gate.h"
#include "rp_redelivery.h"
#include "rp_status.h"

/* What the broker tells of one request, as the transport read it. */
typedef struct rp_control_envelope {
    char reply_to[256];       /* "" when none */
    char correlation_id[256];
    bool has_correlation_id;
    char user[256];           /* user_id, checked by the broker */
    bool has_user;
    rp_bytes content_type;    /* ptr NULL: none (borrowed) */
    rp_bytes message_id;      /* ptr NULL: none (borrowed) */
    rp_bytes body;            /* the bytes kept (borrowed) */
    uint64_t body_size;       /* as the broker declared it */
    bool truncated;           /* body.len < body_size: over the body limit */
    bool redelivered;
} rp_control_envelope;

/* What the checks need of the configuration. */
typedef struct rp_control_rules {
    const rp_config_strlist *allowed_users; /* control.allowed_users */
    const char *own_user;     /* reaperd's broker user; NULL when unknown */
    const rp_config_pattern *reply_queue_pattern;
} rp_control_rules;

/* ---- redeliveries --------------------------------------------------------- */

/* The identity of a request (rp_redelivery_key): its message_id when it has
 * one, else its reply_to (when set), correlation_id, user_id and body. */
uint64_t rp_control_identity(const rp_control_envelope *env);

/* Counts a redelivered request in t; true when it has now been handed over
 * more than RP_REDELIVERY_MAX times (it is answered internal with
 * RP_CONTROL_REDELIVERED_MESSAGE and acked). *count gets the count (0 for a
 * first delivery, which is not counted). */
bool rp_control_redelivered_too_often(rp_redelivery *t, uint64_t identity, bool redelivered,
                                      unsigned *count) RP_MUSTCHECK;

#define RP_CONTROL_REDELIVERED_MESSAGE                                                        \
    "this request was delivered again more than 3 times without being answered (each time " \
    "reaperd lost its reply or its connection); it is dropped from the control queue: send " \
    "it again"

/* ---- admission ------------------------------------------------------------ */

typedef enum rp_control_admission {
    RP_CONTROL_ADMIT = 0,
    RP_CONTROL_REFUSE_NO_USER,  /* no user_id: no reply, acked, logged once */
    RP_CONTROL_REFUSE_USER,     /* not in control.allowed_users: the same */
    RP_CONTROL_REFUSE_REPLY_TO, /* reply_to not allowed: the same */
    RP_CONTROL_TOO_LARGE,       /* answered bad_request with the reason */
    RP_CONTROL_ADMISSION_COUNT_
} rp_control_admission;

/* The log message of a refusal ("control request refused: ..."); "" for
 * RP_CONTROL_ADMIT, "unknown" outside the enum. Static. */
const char *rp_control_admission_string(rp_control_admission a);

/* Whether a refusal is silent (no reply is sent: reaperd is no relay). */
bool rp_control_admission_silent(rp_control_admission a);

/* The checks before the body is read, in order: the sender
 * (control.allowed_users: empty means reaperd's own user only, "*" any
 * authenticated user; no user_id is never allowed), the reply_to (direct
 * reply-to or control.reply_queue_pattern; "" passes: no reply is sent),
 * then the size. For RP_CONTROL_TOO_LARGE the reply's reason goes into why
 * (n bytes, cut to fit); why is untouched otherwise. */
rp_control_admission rp_control_admit(const rp_control_rules *rules,
                                      const rp_control_envelope *env, char *why, size_t n);

/* The two checks alone (rp_control_admit uses them). */
bool rp_control_user_allowed(const rp_control_rules *rules, const char *user /* NULL: none */);
bool rp_control_reply_to_allowed(const rp_config_pattern *pattern, const char *reply_to);
/* reply_to is a direct reply-to name ("amq.rabbitmq.reply-to" or one the
 * broker made of it). */
bool rp_control_reply_to_is_direct(const char *reply_to);

/* ---- senders: told once, reaps held to a rate ------------------------------ */

/* What reaperd remembers of a sender (by user_id; "" for none): when its
 * last reap was accepted, and whether its refusals were logged. A bounded
 * table: past RP_CONTROL_SENDERS names the oldest slot is reused, which at
 * worst logs a sender again or lets one reap early. */
#define RP_CONTROL_SENDERS 256
typedef struct rp_control_sender {
    bool used;
    bool told_forbidden;
    bool told_reply_to;
    bool reaped;
    int64_t last_reap_ms; /* the caller's monotonic clock, when reaped */
    char user[256];
} rp_control_sender;

typedef struct rp_control_senders {
    rp_control_sender slot[RP_CONTROL_SENDERS];
    size_t next;
} rp_control_senders;

/* The sender's record (made when new). user NULL is "". Never NULL. */
rp_control_sender *rp_control_sender_of(rp_control_senders *t, const char *user);

/* Whether a silent refusal of this sender is to be logged now: true the
 * first time for each sender and kind (the user refusals share one flag,
 * the reply_to refusal has its own), false after. */
bool rp_control_tell_once(rp_control_senders *t, const char *user, rp_control_admission a);

/* control.reap_rate_seconds: one reap per user per rate_seconds (0 or
 * less: no limit). True when a reap at now_ms comes too soon, with the
 * busy reply's reason in why; else the reap is counted as accepted at
 * now_ms and false is returned. */
bool rp_control_reap_too_soon(rp_control_senders *t, const char *user, int64_t rate_seconds,
                              int64_t now_ms, char *why, size_t n);

/* ---- answers --------------------------------------------------------------- */

/* Where an answer goes: a replay runs as one (rp_replays.h), any other answer
 * to a gate whose replay is in flight in this process is refused busy
 * (settling it could dismiss a message being replayed), the rest is
 * answered through the gate port on the store thread. */
typedef enum rp_control_answer_route {
    RP_CONTROL_ANSWER_STORE = 0,
    RP_CONTROL_ANSWER_REPLAY,
    RP_CONTROL_ANSWER_IN_FLIGHT,
    RP_CONTROL_ANSWER_ROUTE_COUNT_
} rp_control_answer_route;

rp_control_answer_route rp_control_route_answer(rp_choice choice, bool replay_in_flight);

/* The reason an answer the gate port refused is given (not for
 * RP_ERR_BUSY: rp_control_busy_text). Static. */
const char *rp_control_answer_refusal(rp_status st);
/* The same for a gates listing. Static. */
const char *rp_control_gates_refusal(rp_status st);

/* The busy reason when a replay's claim holds the gate: "gate N is being
 * replayed by X since T; ask again for its outcome later" (the claim part
 * cut to n - 64 bytes). n must be more than 64. */
void rp_control_busy_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                          rp_time_ms claimed_at);
/* The busy reason when this process's own replay of the gate is in flight
 * (no claim time is known on the loop): "gate N is being replayed by X
 * (this reaperd); ask again for its outcome later". n must be more than 64. */
void rp_control_in_flight_text(char *buf, size_t n, int64_t gate, const char *claimer);

/* A reply that could not be encoded: the error it is answered with
 * instead (a reply too large: internal, "use reaperd --once"). */
void rp_control_encode_failure(rp_status est, rp_status *code, const char **message);

#endif
