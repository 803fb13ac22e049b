/*
 * rp_deadletter.h - a dead letter's identity, origin, reason and first death
 * (CONTRACT section 6), as pure functions over a neutral model of its
 * headers that the AMQP adapter fills.
 *
 * THE HEADER MODEL. Every value comes from the publisher or from earlier
 * brokers and is untrusted. The adapter maps each header to an optional
 * value: a header that is missing, or that holds a value of the wrong AMQP
 * type (a table where a string belongs, a string where a timestamp
 * belongs...), is modelled "absent" (present = false). Strings are byte
 * slices: they may hold NUL bytes and invalid UTF-8. x-death entry times are
 * Unix seconds (AMQP timestamps; the adapter maps one above INT64_MAX to
 * absent).
 *
 * ORIGIN (the queue the message died on), first rule that gives a non-empty
 * value:
 *   1. the x-first-death-queue header;
 *   2. the "queue" of the OLDEST x-death entry (below);
 *   3. the dead-letter queue's own name without the part matched by
 *      dead_letter_queue_pattern ("vibey.x.dlq" with '(\.dlq|\.dead)$' gives
 *      "vibey.x"); the first match is cut out wherever it is, so a prefix
 *      pattern works the same way. When the pattern does not match, is not
 *      given, or the cut leaves nothing, the name is used whole.
 * REASON: the x-first-death-reason header, else the oldest entry's
 * "reason", else "unknown" (each only when present and non-empty).
 * FIRST_DEATH_AT: the oldest entry's "time", else unknown.
 *
 * THE OLDEST x-death ENTRY. The broker writes "time" on every entry and keeps
 * the newest entry first; entries without a time are malformed. So: among
 * the entries that have a time, the one with the smallest time is the oldest
 * (on a tie, the one later in the array, as the broker puts older entries
 * later). Only when no entry has a time is the LAST entry of the array the
 * oldest, by the broker's order alone, and first_death_at is then unknown.
 * An entry's missing queue or reason is not looked for in other entries: the
 * rule falls through to the next rule above.
 *
 * IDENTITY: which message died where. The vhost and the origin queue are
 * part of it, so that two messages that reuse one message_id on two origin
 * queues (or two vhosts) are two dead letters:
 *   - "id:" ESC(vhost) "/" ESC(origin_queue) "/" message_id, when
 *     message_id is present and usable: non-empty, at most 255 bytes (an
 *     AMQP short string), strict UTF-8 (rp_utf8.h) and free of the
 *     characters of rp_utf8_is_control() (C0/C1 controls, DEL, separators,
 *     BOM, bidirectional controls), and the origin is at most
 *     RP_DL_ORIGIN_ID_MAX bytes (no queue name is longer). Otherwise the
 *     message_id is treated as absent, because the identity must be
 *     storable as PostgreSQL text, indexable, and shown as it is;
 *   - otherwise "sha256:" ESC(vhost) "/" followed by the 64 lower-case hex
 *     digits of SHA-256(origin_queue "\n" first_death_at "\n" body), where
 *     origin_queue is the origin's raw bytes (not rendered or cut), and
 *     first_death_at is rendered CANONICALLY as the decimal Unix seconds of
 *     the first death (ASCII digits, a leading '-' when negative, no leading
 *     zeros, no spaces; "0" for zero) or as the EMPTY string when unknown.
 *     The reason and the dead-letter queue's own name are not part of it,
 *     so the copies of one message in two dead-letter queues, or
 *     dead-lettered with a different reason, share one identity.
 * ESC() writes every byte outside '!'..'~', and '%' and '/', as '%' and two
 * upper-case hex digits (vhost "/" gives "%2F", origin "vibey.x" stays
 * "vibey.x"), so the parts cannot run into each other and the identity is
 * printable ASCII up to the message_id. The vhost is the one the
 * dead-letter queue (or the tap) was read on. For example, vhost "/",
 * origin "vibey.x", message_id "m-1" give "id:%2F/vibey.x/m-1"; origin
 * "vibey.x", first death 1700000000 and body "hello" digest the 24 bytes
 * "vibey.x\n1700000000\nhello".
 *
 * DEATH, which death of that message this is: DEATH_FIRST "/" DEATH_COUNT,
 * where DEATH_FIRST is first_death_at rendered canonically (above; empty
 * when unknown) and DEATH_COUNT the decimal sum over the x-death entries of
 * their count (an entry whose count is absent or below 1 counts 1; the sum
 * saturates at INT64_MAX; "0" without entries): "1700000000/1". The broker
 * writes one x-death entry per (queue, reason), keeps it when the message
 * dies there again and adds 1 to its count, and never changes its time, so:
 *   - a redelivery of one death (the tap's delivery requeued, the copy the
 *     backfill reads on the dead-letter queue, the copy of a second tap)
 *     carries the same headers: the same DEATH;
 *   - a message that dies again with its headers (a retry loop through a
 *     delay queue, a consumer that republishes what it got) has a larger
 *     count: the same DEATH_FIRST (its LINEAGE), a new DEATH;
 *   - a replay (which leaves the dead-letter headers out) or another message
 *     that reuses the message_id starts a new x-death: a new DEATH_FIRST
 *     unless it dies within the same second as the one parked (x-death
 *     times are whole seconds: two such deaths in one second cannot be told
 *     apart and count as one).
 * The store parks (identity, DEATH) at most once, and a new DEATH of a
 * parked identity opens a new OCCURRENCE (a new job, gate and ledger event;
 * the earlier rows are kept) unless the identity's latest occurrence has
 * the same lineage and its gate is still open: that gate is the decision
 * still to be made for that message (a retry loop does not open a gate per
 * turn). A new lineage opens a new occurrence even while the earlier gate
 * is open, because a replay is confirmed by the broker, and its message can
 * die again, before the answer that replayed it is committed.
 *
 * Ownership: an rp_dl_headers and its x-death array only borrow the
 * adapter's memory. An rp_dead_letter owns its strings (heap);
 * rp_dead_letter_init() zeroes one, rp_dead_letter_cleanup() frees and
 * zeroes it. rp_dead_letter_examine() borrows all its inputs for the call.
 */
#ifndef RP_DEADLETTER_H
#define RP_DEADLETTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pcre2.h>

#include "rp_common.h"
#include "rp_status.h"

/* An optional header string: value is meaningful only when present. */
typedef struct rp_opt_str {
    bool present;
    rp_bytes value;
} rp_opt_str;

/* An optional header integer. */
typedef struct rp_opt_i64 {
    bool present;
    int64_t value;
} rp_opt_i64;

/* One entry of the x-death array. */
typedef struct rp_xdeath {
    rp_opt_str queue;
    rp_opt_str reason;
    rp_opt_i64 time;   /* Unix seconds */
    rp_opt_i64 count;
} rp_xdeath;

typedef struct rp_dl_headers {
    rp_opt_str message_id;         /* the AMQP message-id property */
    rp_opt_str first_death_queue;  /* x-first-death-queue */
    rp_opt_str first_death_reason; /* x-first-death-reason */
    const rp_xdeath *x_death;      /* borrowed; NULL when n_x_death is 0 */
    size_t n_x_death;              /* 0 when x-death is absent or not an array */
} rp_dl_headers;

typedef enum rp_dl_origin_from {
    RP_DL_ORIGIN_FIRST_DEATH_HEADER = 0,
    RP_DL_ORIGIN_X_DEATH,
    RP_DL_ORIGIN_QUEUE_NAME,
} rp_dl_origin_from;

typedef enum rp_dl_reason_from {
    RP_DL_REASON_FIRST_DEATH_HEADER = 0,
    RP_DL_REASON_X_DEATH,
    RP_DL_REASON_UNKNOWN,
} rp_dl_reason_from;

/* What a dead letter is, as examined. origin_queue and reason are raw bytes
 * from the headers (or the queue name / "unknown") followed by a NUL that is
 * not part of them; they may hold NULs of their own, so use the lengths, and
 * show them only through rp_untrusted_render(). */
typedef struct rp_dead_letter {
    char *identity;          /* "id:..." or "sha256:<64 hex>"; printable */
    bool identity_by_id;     /* true for "id:" */
    char *origin_queue;
    size_t origin_queue_len;
    rp_dl_origin_from origin_from;
    char *reason;
    size_t reason_len;
    rp_dl_reason_from reason_from;
    bool first_death_known;
    int64_t first_death_at;  /* Unix seconds, when known */
    int64_t deaths;          /* DEATH_COUNT */
    char *death;             /* DEATH, "<first>/<count>"; printable ASCII */
} rp_dead_letter;

/* "sha256:" and 64 hex digits (the digest part of the identity). */
#define RP_DL_DIGEST_IDENTITY_LEN 71
/* The longest origin an "id:" identity is made with, in bytes. */
#define RP_DL_ORIGIN_ID_MAX 255
/* Enough for "-9223372036854775808" and the NUL. */
#define RP_DL_TIME_BUF 24
/* The longest usable message_id, in bytes (an AMQP short string). */
#define RP_DL_MESSAGE_ID_MAX 255

void rp_dead_letter_init(rp_dead_letter *d);
void rp_dead_letter_cleanup(rp_dead_letter *d);

/* Examines one dead letter found on the dead-letter queue dlq_name (a
 * NUL-terminated name; dlq_pattern may be NULL, see ORIGIN rule 3) of vhost
 * (NUL-terminated) with the given body, and fills *out (initialised here;
 * clean it up whatever is returned). RP_ERR_INVALID for a NULL header
 * model, vhost or dlq_name, or a malformed body slice; RP_ERR_NOMEM;
 * RP_ERR_INTERNAL when libcrypto fails. A failure of the pattern match
 * itself (rp_match.h) is not an error: the name is then used whole. */
rp_status rp_dead_letter_examine(const rp_dl_headers *h, const char *vhost, const char *dlq_name,
                                 const pcre2_code *dlq_pattern, rp_bytes body,
                                 rp_dead_letter *out) RP_MUSTCHECK;

/* The oldest x-death entry (rules above), or NULL when there is none.
 * Points into h->x_death. */
const rp_xdeath *rp_dl_oldest_entry(const rp_dl_headers *h);

/* Whether a message_id is usable as an identity (rules above). */
bool rp_dl_message_id_usable(rp_bytes id);

/* Writes the canonical rendering of first_death_at into buf (NUL-terminated;
 * the empty string when !known) and returns its length. */
size_t rp_dl_render_time(bool known, int64_t seconds, char buf[RP_DL_TIME_BUF]);

/* ESC() of the IDENTITY rule: a new heap string in *out (free()).
 * RP_ERR_INVALID for a malformed slice; RP_ERR_NOMEM; RP_ERR_TOO_LARGE. */
rp_status rp_dl_escape(rp_bytes in, char **out) RP_MUSTCHECK;

/* DEATH_COUNT of the DEATH rule, from the x-death entries of h. */
int64_t rp_dl_death_count(const rp_dl_headers *h);

/* Writes "sha256:<64 hex>" and a NUL into out, the digest of (origin, first
 * death, body) (the identity less its vhost part). RP_ERR_INVALID for a
 * malformed slice;
 * RP_ERR_INTERNAL or RP_ERR_NOMEM when libcrypto fails. */
rp_status rp_dl_digest_identity(rp_bytes origin, bool first_death_known, int64_t first_death_at,
                                rp_bytes body, char out[RP_DL_DIGEST_IDENTITY_LEN + 1])
    RP_MUSTCHECK;

#endif
