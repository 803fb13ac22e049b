/*
 * A committed ledger event as a message of the events exchange (SCHEMA.md
 * section 7): routing key, message id, type, timestamp and body. Built for
 * the events feed (adapters/rabbitmq/rp_amqp_feed.c), which the daemon and
 * --once share, so that both publish the same message for the same event.
 *
 * Ownership: the event is borrowed; the message's body is the caller's
 * (rp_proto_event_msg_cleanup).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rp_ports.h"
#include "rp_proto.h"
#include "rp_proto_internal.h"
#include "rp_text.h"

/* Lower-cases src into dst (n bytes, always terminated). */
static void rp_lower(char *dst, size_t n, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

static bool rp_key3(char *out, size_t n, const char *a, const char *b, const char *c) {
    char la[32], lb[32], lc[32];
    rp_lower(la, sizeof la, a);
    rp_lower(lb, sizeof lb, b);
    rp_lower(lc, sizeof lc, c);
    /* "%s.%s.%s" without a format to parse (one per ledger event). */
    size_t a_len = strlen(la), b_len = strlen(lb), c_len = strlen(lc);
    if (a_len + b_len + c_len + 2 >= n) return false;
    memcpy(out, la, a_len);
    out[a_len] = '.';
    memcpy(out + a_len + 1, lb, b_len);
    out[a_len + 1 + b_len] = '.';
    memcpy(out + a_len + b_len + 2, lc, c_len + 1);
    return true;
}

static json_t *rp_answer_json(const rp_gate_answered *a) {
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "gate", json_integer(a->gate_id)) &&
              rp__set(t, "job", json_integer(a->job_id)) &&
              rp__set(t, "kind", json_string(rp_gate_kind_string(a->kind))) &&
              rp__set(t, "choice", json_string(rp_choice_string(a->choice))) &&
              rp__set(t, "outcome", json_string(rp_outcome_string(a->outcome))) &&
              rp__set(t, "by", rp__json_string(a->by));
    /* The requester's own words, unverified: present only when given, as
     * in the ledger row. */
    if (ok && a->note != NULL) ok = rp__set(t, "note", json_string(a->note));
    /* A dead-letter gate's vhost (issue #19), as in the ledger row: absent
     * for a gate without one. */
    if (ok && a->vhost != NULL) ok = rp__set(t, "vhost", json_string(a->vhost));
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

rp_status rp_proto_encode_event(const rp_ledger_event *ev, rp_encoding enc,
                                rp_proto_event_msg *out) {
    if (out == NULL) return RP_ERR_INVALID;
    rp_proto_event_msg_cleanup(out);
    if (ev == NULL || (ev->verdict == NULL) == (ev->answer == NULL) || (int)enc < 0 ||
        enc >= RP_ENC_COUNT_)
        return RP_ERR_INVALID;
    /* "ledger-%" PRId64 without a format to parse (issue 21: one per
     * parked dead letter). */
    char seq[RP_TEXT_I64_BUF];
    size_t w = rp_text_i64(ev->seq, seq);
    if (sizeof "ledger-" + w > sizeof out->message_id) return RP_ERR_INVALID;
    memcpy(out->message_id, "ledger-", sizeof "ledger-" - 1);
    memcpy(out->message_id + sizeof "ledger-" - 1, seq, w + 1);
    /* at is in milliseconds; AMQP's timestamp in seconds (rounded down,
     * also before 1970). */
    out->timestamp = ev->at >= 0 ? ev->at / 1000 : -((-ev->at + 999) / 1000);
    rp_status st;
    if (ev->verdict != NULL) {
        const rp_verdict *v = ev->verdict;
        out->type = RP_LEDGER_QUEUE_REAPED;
        /* rp_proto_encode_verdict checks the enums. */
        if (!rp_key3(out->routing_key, sizeof out->routing_key, rp_source_string(v->source),
                     rp_condition_string(v->condition), rp_action_string(v->action)))
            return RP_ERR_INVALID;
        st = rp_proto_encode_verdict(v, enc, &out->body);
    } else {
        const rp_gate_answered *a = ev->answer;
        out->type = RP_LEDGER_GATE_ANSWERED;
        if ((int)a->kind < 0 || a->kind >= RP_GATE_KIND_COUNT_ || (int)a->choice < 0 ||
            a->choice >= RP_CHOICE_COUNT_ || (int)a->outcome < 0 ||
            a->outcome >= RP_OUTCOME_COUNT_ ||
            !rp_key3(out->routing_key, sizeof out->routing_key, "gate",
                     rp_gate_kind_string(a->kind), rp_outcome_string(a->outcome)))
            return RP_ERR_INVALID;
        json_t *t = rp_answer_json(a);
        st = t == NULL ? RP_ERR_NOMEM : rp__finish(t, enc, &out->body);
    }
    if (st != RP_OK) rp_proto_event_msg_cleanup(out);
    return st;
}

void rp_proto_event_msg_cleanup(rp_proto_event_msg *m) {
    if (m == NULL) return;
    rp_proto_buf_cleanup(&m->body);
    memset(m, 0, sizeof *m);
}
