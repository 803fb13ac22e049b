#include "rp_replay.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_match.h"

static int rp_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Appends code point cp as UTF-8. */
static size_t rp_put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

rp_status rp_replay_origin_parse(const char *rendered, char **name, const char **why) {
    *name = NULL;
    *why = NULL;
    size_t len = rendered ? strlen(rendered) : 0;
    if (len < 2 || rendered[0] != '"') {
        *why = "the stored origin queue is not a quoted name";
        return RP_ERR_INVALID;
    }
    if (len >= 5 && strcmp(rendered + len - 4, "\"...") == 0) {
        *why = "the origin queue's name was cut when it was stored (over 200 characters)";
        return RP_ERR_INVALID;
    }
    if (rendered[len - 1] != '"') {
        *why = "the stored origin queue is not a quoted name";
        return RP_ERR_INVALID;
    }
    char *out = malloc(len); /* never longer than the rendering */
    if (out == NULL) return RP_ERR_NOMEM;
    size_t w = 0;
    const char *p = rendered + 1, *end = rendered + len - 1;
    while (p < end) {
        if (*p == '"') goto bad; /* an unescaped quote inside */
        if (*p != '\\') {
            out[w++] = *p++;
            continue;
        }
        if (p + 1 >= end) goto bad;
        char e = p[1];
        p += 2;
        switch (e) {
        case '"': out[w++] = '"'; break;
        case '\\': out[w++] = '\\'; break;
        case 'n': out[w++] = '\n'; break;
        case 'r': out[w++] = '\r'; break;
        case 't': out[w++] = '\t'; break;
        case 'x': {
            if (end - p < 2 || rp_hex(p[0]) < 0 || rp_hex(p[1]) < 0) goto bad;
            int byte = rp_hex(p[0]) * 16 + rp_hex(p[1]);
            if (byte == 0) goto nul;
            out[w++] = (char)byte;
            p += 2;
            break;
        }
        case 'u': {
            if (end - p < 4) goto bad;
            uint32_t cp = 0;
            for (int i = 0; i < 4; i++) {
                int h = rp_hex(p[i]);
                if (h < 0) goto bad;
                cp = cp * 16 + (uint32_t)h;
            }
            p += 4;
            if (cp == 0) goto nul;
            w += rp_put_utf8(out + w, cp);
            break;
        }
        default: goto bad;
        }
    }
    out[w] = '\0';
    if (w == 0 || w > 255) {
        free(out);
        *why = w == 0 ? "the origin queue's name is empty"
                      : "the origin queue's name is longer than 255 bytes";
        return RP_ERR_INVALID;
    }
    *name = out;
    return RP_OK;
nul:
    free(out);
    *why = "the origin queue's name holds a NUL character";
    return RP_ERR_INVALID;
bad:
    free(out);
    *why = "the stored origin queue is not a well-formed quoted name";
    return RP_ERR_INVALID;
}

rp_status rp_replay_decide(const char *rendered_origin, bool body_truncated,
                           const pcre2_code *owned, char **queue, const char **why) {
    *queue = NULL;
    *why = NULL;
    if (body_truncated) {
        *why = "the message's body (or its properties) was not stored whole, so it cannot be "
               "replayed byte for byte";
        return RP_ERR_CONFLICT;
    }
    char *name = NULL;
    rp_status st = rp_replay_origin_parse(rendered_origin, &name, why);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) return RP_ERR_CONFLICT;
    bool is_owned = false;
    if (owned == NULL || rp_match_name(owned, name, &is_owned) != RP_OK || !is_owned) {
        free(name);
        *why = "the origin queue named by the message's (untrusted) dead-letter headers is not "
               "owned by reaper (owned_queue_pattern): reaper replays only to queues it owns";
        return RP_ERR_CONFLICT;
    }
    *queue = name;
    return RP_OK;
}

bool rp_replay_expiration_valid(const char *s, size_t len) {
    if (s == NULL || len == 0 || len > 10) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v <= UINT64_C(4294967295);
}

bool rp_replay_reserved_queue(const char *queue, const char *const *own, size_t n) {
    if (queue == NULL) return false;
    if (strncmp(queue, "amq.", 4) == 0) return true;
    for (size_t i = 0; i < n; i++)
        if (own[i] != NULL && strcmp(own[i], queue) == 0) return true;
    return false;
}

/* ---- a replay's states and checks ----------------------------------------- */

void rp_replay_claim_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                          rp_time_ms claimed_at) {
    char at[40] = "an unknown time";
    time_t t = (time_t)(claimed_at / 1000);
    struct tm tm;
    if (claimed_at > 0 && gmtime_r(&t, &tm) != NULL)
        strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(buf, n, "gate %" PRId64 " is being replayed by %s since %s", gate,
             claimed_by && *claimed_by ? claimed_by : "another reaperd", at);
}

void rp_replay_takeover_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                             rp_time_ms claimed_at) {
    char claim[300];
    rp_replay_claim_text(claim, sizeof claim, gate, claimed_by, claimed_at);
    /* "gate N is being replayed by X since T" -> reworded as the past. */
    const char *by = strstr(claim, " by ");
    snprintf(buf, n,
             "the replay of gate %" PRId64 " claimed%s was never settled (that reaperd stopped "
             "or hung between publishing and settling): the message may have been published "
             "once already; the stale claim was taken over and recorded on the ledger "
             "(GateClaimTakenOver)",
             gate, by ? by : "");
}

rp_replay_state rp_replay_state_of(bool answered, rp_gate_claim_state claim) {
    if (answered) return RP_REPLAY_STATE_ANSWERED;
    if (claim == RP_GATE_CLAIM_LIVE) return RP_REPLAY_STATE_BUSY;
    if (claim == RP_GATE_CLAIM_STALE) return RP_REPLAY_STATE_TAKEN_OVER;
    return RP_REPLAY_STATE_OPEN;
}

rp_status rp_replay_state_refusal(rp_replay_state s, int64_t gate, const char *claimed_by,
                                  rp_time_ms claimed_at, char *msg, size_t n) {
    if (n) msg[0] = '\0';
    if (s == RP_REPLAY_STATE_BUSY) {
        char claim[300];
        rp_replay_claim_text(claim, sizeof claim, gate, claimed_by, claimed_at);
        snprintf(msg, n, "%s; ask again for its outcome later", claim);
        return RP_ERR_BUSY;
    }
    if (s == RP_REPLAY_STATE_TAKEN_OVER) {
        /* Not published again: whether the claimer published cannot be
         * known here. */
        char text[500];
        rp_replay_takeover_text(text, sizeof text, gate, claimed_by, claimed_at);
        snprintf(msg, n,
                 "not replayed: %s. The claim is released and the gate stays open: look for the "
                 "message on its origin queue, then answer again (replay publishes it, dismiss "
                 "closes the gate)", text);
        return RP_ERR_CONFLICT;
    }
    return RP_OK;
}

rp_status rp_replay_check(const rp_replay_facts *f, char **queue, char *msg, size_t n) {
    *queue = NULL;
    if (n) msg[0] = '\0';
    if (!rp_gate_accepts(f->kind, RP_CHOICE_REPLAY)) {
        snprintf(msg, n, "this gate does not take that choice");
        return RP_ERR_CONFLICT;
    }
    if (!f->has_dead_letter) {
        snprintf(msg, n, "no dead letter is stored for this gate");
        return RP_ERR_CONFLICT;
    }
    if (f->not_replayable != NULL) {
        /* Kept without its headers (the tap's header cap): its stored
         * properties say why. */
        snprintf(msg, n, "not replayed: %s", f->not_replayable);
        return RP_ERR_CONFLICT;
    }
    const char *why = NULL;
    char *q = NULL;
    rp_status st = rp_replay_decide(f->origin_queue, !f->stored_whole, f->owned, &q, &why);
    if (st == RP_ERR_NOMEM) {
        snprintf(msg, n, "out of memory");
        return RP_ERR_INTERNAL;
    }
    if (st != RP_OK) {
        snprintf(msg, n, "not replayed: %s (origin queue %s)", why, f->origin_queue);
        return RP_ERR_CONFLICT;
    }
    if (rp_replay_reserved_queue(q, f->own_queues, f->n_own)) {
        free(q);
        snprintf(msg, n,
                 "not replayed: the origin queue %s is one of reaper's own queues (control, "
                 "tap or events), never a replay destination whatever owned_queue_pattern "
                 "says", f->origin_queue);
        return RP_ERR_CONFLICT;
    }
    if (f->vhost != NULL && !f->vhost_is_ours) {
        free(q);
        snprintf(msg, n,
                 "not replayed: the dead letter was found on vhost %s, and reaperd publishes "
                 "only on the vhost of broker.url and those of broker.vhosts", f->vhost);
        return RP_ERR_CONFLICT;
    }
    *queue = q;
    return RP_OK;
}

rp_status rp_replay_restore_refusal(rp_status restore_st, const char *perr, char *msg,
                                    size_t n) {
    snprintf(msg, n, "not replayed: the stored properties cannot be restored: %s",
             perr ? perr : "");
    return restore_st == RP_ERR_NOMEM ? RP_ERR_INTERNAL : RP_ERR_CONFLICT;
}

/* Appends one sentence to note (n bytes), after a space when it has one. */
static void rp_note_add(char *note, size_t n, const char *fmt, ...) RP_PRINTF(3, 4);
static void rp_note_add(char *note, size_t n, const char *fmt, ...) {
    size_t used = strlen(note);
    if (used > 0 && used + 1 < n) note[used++] = ' ', note[used] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + used, n - used, fmt, ap);
    va_end(ap);
}

rp_replay_strip rp_replay_strip_decide(rp_bytes user_id, rp_bytes expiration,
                                       const char *own_user, char *note, size_t n) {
    rp_replay_strip s = {false, false};
    if (n == 0) return s;
    note[0] = '\0';
    if (user_id.ptr != NULL) {
        /* The broker checks user_id against the connection's user: 406. */
        if (own_user == NULL || user_id.len != strlen(own_user) ||
            memcmp(user_id.ptr, own_user, user_id.len) != 0) {
            s.user_id = true;
            rp_note_add(note, n,
                        "user_id \"%.*s\" was left out of the replay: the broker accepts only "
                        "reaperd's own user (%s) there; the stored dead letter keeps it.",
                        (int)(user_id.len > 200 ? 200 : user_id.len), (const char *)user_id.ptr,
                        own_user ? own_user : "unknown");
        }
    }
    if (expiration.ptr != NULL &&
        !rp_replay_expiration_valid((const char *)expiration.ptr, expiration.len)) {
        s.expiration = true;
        rp_note_add(note, n,
                    "expiration \"%.*s\" was left out of the replay: the broker takes only a "
                    "non-negative integer of milliseconds; the stored dead letter keeps it.",
                    (int)(expiration.len > 100 ? 100 : expiration.len),
                    (const char *)expiration.ptr);
    }
    return s;
}

rp_replay_next rp_replay_after_publish(rp_replay_publish o, const char *queue,
                                       const char *refusal, rp_status *st, char *msg, size_t n) {
    switch (o) {
    case RP_REPLAY_PUBLISH_CONFIRMED:
        return RP_REPLAY_NEXT_SETTLE;
    case RP_REPLAY_PUBLISH_RETURNED:
        *st = RP_ERR_CONFLICT;
        snprintf(msg, n,
                 "not replayed: the broker could not route the message to queue %s (does it "
                 "exist?); nothing was delivered and the gate stays open", queue);
        return RP_REPLAY_NEXT_RELEASE;
    case RP_REPLAY_PUBLISH_REFUSED:
        *st = RP_ERR_CONFLICT;
        snprintf(msg, n,
                 "not replayed: the broker refused the message for queue %s (%s); nothing was "
                 "delivered and the gate stays open",
                 queue, refusal ? refusal : "");
        return RP_REPLAY_NEXT_RELEASE;
    case RP_REPLAY_PUBLISH_NACKED:
        *st = RP_ERR_UNAVAILABLE;
        snprintf(msg, n,
                 "not replayed: the broker refused the message for queue %s (nack: full, or an "
                 "internal error); the gate stays open", queue);
        return RP_REPLAY_NEXT_RELEASE;
    case RP_REPLAY_PUBLISH_DROPPED:
        /* Only when the publisher is freed (reaperd stopping) or its queue
         * is full: no reply can go out through it now; the request stays
         * unacked and is delivered again. */
        return RP_REPLAY_NEXT_CANCEL;
    case RP_REPLAY_PUBLISH_LOST:
    default:
        /* It may have been delivered: the claim stays, so that no answer
         * publishes it again before a person has been told (rp_gate.h). */
        *st = RP_ERR_UNAVAILABLE;
        snprintf(msg, n,
                 "the broker connection was lost before the broker confirmed the message for %s; "
                 "it may or may not have been delivered; the gate stays open and claimed by this "
                 "replay until control.replay_claim_seconds pass, then the next answer reports "
                 "it", queue);
        return RP_REPLAY_NEXT_KEEP_CLAIM;
    }
}

rp_status rp_replay_settle_refusal(rp_status settle_st, int64_t gate, const char *queue,
                                   const char *claimed_by, rp_time_ms claimed_at, char *msg,
                                   size_t n) {
    if (settle_st == RP_OK) {
        if (n) msg[0] = '\0';
        return RP_OK;
    }
    if (settle_st == RP_ERR_BUSY) {
        char claim[300];
        rp_replay_claim_text(claim, sizeof claim, gate, claimed_by, claimed_at);
        snprintf(msg, n,
                 "the message was published to %s and confirmed, but this reaperd's claim on "
                 "the gate was taken over meanwhile (%s), so the gate was not settled by this "
                 "replay", queue, claim);
        return RP_ERR_CONFLICT;
    }
    snprintf(msg, n,
             "the message was published to %s and confirmed, but the gate could not be "
             "settled (%s); the gate stays claimed: after control.replay_claim_seconds the "
             "next answer reports it and does not publish it again",
             queue, rp_status_string(settle_st));
    return settle_st == RP_ERR_UNAVAILABLE ? settle_st : RP_ERR_INTERNAL;
}
