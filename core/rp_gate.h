/*
 * rp_gate.h - a question put to a person (CONTRACT sections 5 and 6).
 *
 * A gate is opened when reaper parks work it must not decide on alone: a job
 * that used all its attempts (kind delivery_exhausted, choices retry and
 * dismiss) or a dead letter (kind bus_dead_lettered, choices replay and
 * dismiss). It is answered once; a second answer changes nothing.
 *
 * Ownership: an rp_gate owns its strings (heap or NULL). rp_gate_init()
 * zeroes one, rp_gate_cleanup() frees and zeroes it. The answer outcome and
 * kind enums have static wire names.
 */
#ifndef RP_GATE_H
#define RP_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_status.h"

typedef enum rp_gate_kind {
    RP_GATE_DELIVERY_EXHAUSTED = 0,
    RP_GATE_BUS_DEAD_LETTERED,
    RP_GATE_KIND_COUNT_
} rp_gate_kind;

typedef enum rp_choice {
    RP_CHOICE_RETRY = 0,
    RP_CHOICE_REPLAY,
    RP_CHOICE_DISMISS,
    RP_CHOICE_COUNT_
} rp_choice;

typedef enum rp_outcome {
    RP_OUTCOME_RETRIED = 0,
    RP_OUTCOME_REPLAYED,
    RP_OUTCOME_DISMISSED,
    RP_OUTCOME_ALREADY_ANSWERED,
    RP_OUTCOME_COUNT_
} rp_outcome;

typedef enum rp_gate_state {
    RP_GATE_STATE_OPEN = 0,
    RP_GATE_STATE_ANSWERED,
    RP_GATE_STATE_ALL,
    RP_GATE_STATE_COUNT_
} rp_gate_state;

/* A listing counts its matches up to this many (issue #20: an exact count
 * of a million matches costs seconds; the first RP_GATE_TOTAL_CAP + 1 cost
 * milliseconds). Past it the total says "at least this many". */
#define RP_GATE_TOTAL_CAP 10000

/* Where a listing stands among every gate its filters match (after
 * ignored): total of them, exact when !total_capped; when more than
 * RP_GATE_TOTAL_CAP match, total is RP_GATE_TOTAL_CAP and total_capped is
 * true. next_after is the id to pass as `after` for the next page, 0 when
 * this page holds the last of them (exact whatever the cap). */
typedef struct rp_gate_page {
    int64_t total;
    int64_t next_after;
    bool total_capped;
} rp_gate_page;

/* "delivery_exhausted", "retry", "replayed", "open", ...; "unknown" outside
 * the enums. Never NULL, static. */
const char *rp_gate_kind_string(rp_gate_kind k);
const char *rp_choice_string(rp_choice c);
const char *rp_outcome_string(rp_outcome o);
const char *rp_gate_state_string(rp_gate_state s);
bool rp_gate_kind_parse(const char *s, rp_gate_kind *out) RP_MUSTCHECK;
bool rp_choice_parse(const char *s, rp_choice *out) RP_MUSTCHECK;
bool rp_outcome_parse(const char *s, rp_outcome *out) RP_MUSTCHECK;
bool rp_gate_state_parse(const char *s, rp_gate_state *out) RP_MUSTCHECK;

/* Whether a gate of kind k takes choice c (retry|dismiss for
 * delivery_exhausted, replay|dismiss for bus_dead_lettered). */
bool rp_gate_accepts(rp_gate_kind k, rp_choice c);

/* A replay's claim on a gate (issue #15: replicas never double-act). A
 * replay publishes between two transactions, so before it publishes it
 * claims the gate in the store (the process's instance id and the store's
 * time) and commits; the settle clears the claim, fenced on it. While a
 * claim is LIVE every other answer, from any process, is refused (busy)
 * and changes nothing. A claim is STALE once bound_seconds have passed
 * since claimed_at (its process died or hung between the publish and the
 * settle): the next answer takes it over and reports that the message may
 * have been published once already. */
typedef enum rp_gate_claim_state {
    RP_GATE_CLAIM_NONE = 0,
    RP_GATE_CLAIM_LIVE,
    RP_GATE_CLAIM_STALE,
    RP_GATE_CLAIM_STATE_COUNT_
} rp_gate_claim_state;

/* "none", "live", "stale"; "unknown" outside the enum. Static. */
const char *rp_gate_claim_state_string(rp_gate_claim_state s);

/* The state of a claim made at claimed_at, at now (both the store's clock,
 * so that replicas with skewed clocks agree): NONE when !claimed; STALE when
 * now >= claimed_at + bound_seconds (bound_seconds <= 0: every claim is
 * stale); LIVE otherwise, a claimed_at in the future included. */
rp_gate_claim_state rp_gate_claim_judge(bool claimed, rp_time_ms claimed_at, rp_time_ms now,
                                        int64_t bound_seconds);

typedef struct rp_gate {
    int64_t id;
    int64_t job_id;
    rp_gate_kind kind;
    char *project;       /* the job's project */
    char *question;      /* one human sentence */
    bool answered;
    rp_choice answer;    /* meaningful only when answered */
    char *answered_by;   /* NULL when open or unknown */
    rp_time_ms answered_at; /* 0 when open */
    rp_time_ms created_at;
    /* Dead-letter gates only (NULL otherwise). origin_queue and reason come
     * from message headers and are untrusted: shown quoted, cut to 200. */
    char *queue;         /* the dead-letter queue it was found on */
    char *origin_queue;
    char *reason;
    /* A replay's claim while one is held (see above): claim is
     * RP_GATE_CLAIM_NONE when the gate is not claimed (claimed_by NULL,
     * claimed_at 0); otherwise who holds it (the claimer's instance id,
     * host:pid), since when (the store's clock), and LIVE or STALE as judged
     * by the store when it was read. */
    rp_gate_claim_state claim;
    char *claimed_by;
    rp_time_ms claimed_at;
    /* Dead-letter gates only (NULL otherwise): the vhost its dead letter
     * was found in (issue #19: everything vhost-scoped says its vhost). */
    char *vhost;
} rp_gate;

void rp_gate_init(rp_gate *g);
void rp_gate_cleanup(rp_gate *g);

#endif
