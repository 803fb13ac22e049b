/*
 * rp_answer_set.h - answering many gates at once (issue #20 item 3): the
 * states of an answer set, the pace of its answers and what one answer's
 * result means for the rest. `reaperctl answer --all FILTERS` or `answer ID
 * ID ...` makes one set (its gates frozen to the ids matching when it was
 * made, rp_answer_set_port.h); reaperd answers them one by one, each as a
 * single answer would (app/rp_answer_sets.h), at most rate a second.
 *
 * Pure: no I/O, no clock (time is an argument, in ms of any one clock), no
 * logging. Nothing is allocated.
 */
#ifndef RP_ANSWER_SET_H
#define RP_ANSWER_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_gate.h"
#include "rp_status.h"

/* The default and the bounds of a set's rate (answers a second). */
#define RP_ANSWER_SET_RATE_DEFAULT 100
#define RP_ANSWER_SET_RATE_MAX 10000
/* How many ids one `answer ID ID ...` request may name (the request's
 * array limit, proto/rp_proto.h). */
#define RP_ANSWER_SET_IDS_MAX 64

typedef enum rp_answer_set_state {
    RP_ANSWER_SET_RUNNING = 0, /* being worked through (or waiting for a runner) */
    RP_ANSWER_SET_DONE,        /* every gate answered or failed on its own */
    RP_ANSWER_SET_CANCELLED,   /* cancelled: the gates not reached stay open */
    RP_ANSWER_SET_STOPPED,     /* stopped at a refusal that would repeat */
    RP_ANSWER_SET_STATE_COUNT_
} rp_answer_set_state;

/* "running", "done", "cancelled", "stopped"; "unknown" outside. Static. */
const char *rp_answer_set_state_string(rp_answer_set_state s);
bool rp_answer_set_state_parse(const char *s, rp_answer_set_state *out) RP_MUSTCHECK;
/* Whether a set in s is over (nothing more is answered). */
bool rp_answer_set_state_final(rp_answer_set_state s);

/* Whether a set may answer with c: replay and dismiss (retry is a job
 * table answer, one gate at a time). */
bool rp_answer_set_choice_ok(rp_choice c);

/* ---- pace ------------------------------------------------------------------ */

/* The pace of a set: when the next answer may start. Answers start at most
 * rate a second, one every 1000/rate ms (kept in microseconds so that a
 * rate that does not divide 1000 keeps its mean). Starts that fell behind
 * the schedule by at most RP_ANSWER_PACE_CATCHUP_MS (or one interval, when
 * that is longer) are caught up at once: the loop's timer fires late by a
 * millisecond or two whenever the loop is busy, which at 500 a second is
 * an interval each time, and a pace that dropped those slots ran at 79% of
 * its rate (bench/REPORT.md). The schedule never runs ahead, so over any
 * span the starts are at most rate x span plus that window's worth. After
 * a longer pause (the store was slow, the broker away, the set taken over)
 * the pace starts again from now instead of catching up in a burst. */
#define RP_ANSWER_PACE_CATCHUP_MS 100
typedef struct rp_answer_pace {
    int64_t interval_us; /* 1,000,000 / rate */
    int64_t next_us;     /* when the next answer may start; 0: at once */
} rp_answer_pace;

/* rate outside 1..RP_ANSWER_SET_RATE_MAX is taken as the bound. */
void rp_answer_pace_init(rp_answer_pace *p, int rate);
/* How long (ms, >= 0) until the next answer may start at now_ms. */
int64_t rp_answer_pace_wait_ms(const rp_answer_pace *p, int64_t now_ms);
/* Counts an answer started at now_ms (call when wait is 0). */
void rp_answer_pace_took(rp_answer_pace *p, int64_t now_ms);

/* ---- one answer's result ---------------------------------------------------- */

/* What one gate's answer means for the set. */
typedef enum rp_answer_item_verdict {
    RP_ANSWER_ITEM_ANSWERED = 0, /* settled (or found answered already) */
    RP_ANSWER_ITEM_FAILED,       /* refused for this gate alone: noted, the set goes on */
    RP_ANSWER_ITEM_LATER,        /* busy (another replay holds the gate): tried again later */
    RP_ANSWER_ITEM_STOP,         /* a refusal that would repeat: the set stops */
    RP_ANSWER_ITEM_PAUSE,        /* the broker is away: nothing done, the set waits for it */
    RP_ANSWER_ITEM_VERDICT_COUNT_
} rp_answer_item_verdict;

/* "answered", "failed", "later", "stop", "pause"; "unknown" outside. Static. */
const char *rp_answer_item_verdict_string(rp_answer_item_verdict v);

/* The verdict on one answer's status (as a single answer's reply would
 * carry it): RP_OK answered; RP_ERR_BUSY later; RP_ERR_NOT_FOUND,
 * RP_ERR_CONFLICT (this gate's kind, its stored message, its origin, a
 * returned publish, a claim taken over), RP_ERR_INVALID and
 * RP_ERR_BAD_REQUEST failed; anything else (the broker or the store
 * unavailable, a nacked publish, the daemon stopping, out of memory, an
 * internal error) stops the set, since the next gate would meet it too. */
rp_answer_item_verdict rp_answer_item_judge(rp_status st);

/* The same, knowing whether the answer met the broker away (not connected,
 * or the connection lost before its confirm): RP_ERR_UNAVAILABLE then
 * pauses the set (the gate stays pending and is answered again once the
 * broker is back: a publish not sent is sent then; a lost one keeps its
 * claim, so it is reported, never published twice) instead of stopping
 * it. Otherwise as rp_answer_item_judge. */
rp_answer_item_verdict rp_answer_item_judge_away(rp_status st, bool broker_away);

/* The stop reason of a set stopped by status st on gate: "gate N: "
 * followed by message (or the status' name). */
void rp_answer_set_stop_text(char *buf, size_t n, int64_t gate, rp_status st,
                             const char *message);

#endif
