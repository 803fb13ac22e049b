/* Replies and events: trees for the result shapes, envelopes, encoders, and
 * the reading of a reply envelope. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"
#include "rp_verdict_json.h"
#include "rp_verdict_vhost.h"

/* Longest error message written on the wire, in bytes. */
#define RP_PROTO_ERROR_MESSAGE_MAX 1024u

json_t *rp__time_json(rp_time_ms t) {
    char buf[RP_PROTO_TIME_SIZE];
    if (t == 0 || !rp_proto_format_time(t, buf, sizeof buf)) return json_null();
    return json_string(buf);
}

static bool rp_verdict_valid(const rp_verdict *v) {
    return v != NULL && (int)v->condition >= 0 && v->condition < RP_COND_COUNT_ &&
           (int)v->action >= 0 && v->action < RP_ACTION_COUNT_ && (int)v->source >= 0 &&
           v->source < RP_SOURCE_COUNT_;
}

static bool rp_gate_valid(const rp_gate *g) {
    return g != NULL && (int)g->kind >= 0 && g->kind < RP_GATE_KIND_COUNT_ &&
           (!g->answered || ((int)g->answer >= 0 && g->answer < RP_CHOICE_COUNT_)) &&
           (int)g->claim >= 0 && g->claim < RP_GATE_CLAIM_STATE_COUNT_;
}

/* {"by", "since", "stale"}: the replay claim on a gate (SCHEMA.md 5.3). */
static json_t *rp_claim_json(const rp_gate *g) {
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "by", rp__json_string(g->claimed_by)) &&
              rp__set(t, "since", rp__time_json(g->claimed_at)) &&
              rp__set(t, "stale", json_boolean(g->claim == RP_GATE_CLAIM_STALE));
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

static bool rp_report_valid(const rp_report *r) {
    if (r == NULL) return false;
    for (size_t i = 0; i < r->n_verdicts; i++)
        if (!rp_verdict_valid(&r->verdicts[i])) return false;
    return true;
}

json_t *rp_proto_verdict_json(const rp_verdict *v) {
    if (!rp_verdict_valid(v)) return NULL;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "object", rp__json_string(v->object)) &&
              rp__set(t, "queue", rp__json_string(v->queue)) &&
              rp__set(t, "project", rp__json_string(v->project)) &&
              rp__set(t, "condition", json_string(rp_condition_string(v->condition))) &&
              rp__set(t, "measured", isfinite(v->measured) ? json_real(v->measured) : json_null()) &&
              rp__set(t, "threshold", json_integer(v->threshold)) &&
              rp__set(t, "unit", rp__json_string(v->unit)) &&
              rp__set(t, "action", json_string(rp_action_string(v->action))) &&
              rp__set(t, "source", json_string(rp_source_string(v->source))) &&
              rp__set(t, "detail", rp__json_string(v->detail)) &&
              rp__set(t, "trusted", json_boolean(v->trusted));
    char vhost[RP_VERDICT_VHOST_MAX];
    ok = ok && rp__set(t, "vhost", rp__json_string(rp_verdict_vhost(v, vhost, sizeof vhost)
                                                        ? vhost
                                                        : NULL));
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

static json_t *rp_strings_json(char *const *s, size_t n) {
    json_t *a = json_array();
    if (a == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *e = rp__json_string(s[i]);
        if (e == NULL || json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *rp_proto_report_json(const rp_report *r) {
    if (!rp_report_valid(r)) return NULL;
    json_t *t = json_object(), *verdicts = json_array(), *policies = json_array();
    bool ok = t != NULL && verdicts != NULL && policies != NULL;
    for (size_t i = 0; ok && i < r->n_verdicts; i++) {
        json_t *v = rp_proto_verdict_json(&r->verdicts[i]);
        ok = v != NULL && json_array_append_new(verdicts, v) == 0;
    }
    for (size_t i = 0; ok && i < r->n_policies; i++) {
        const rp_policy_check *pc = &r->policies[i];
        json_t *p = json_object(), *vhosts = json_array();
        ok = p != NULL && vhosts != NULL && json_array_append_new(policies, p) == 0 &&
             rp__set(p, "name", rp__json_string(pc->name)) &&
             rp__set(p, "verified", json_boolean(pc->verified)) &&
             rp__set(p, "detail", rp__json_string(pc->detail));
        /* Each vhost's verdict (the metric's reaper_policy_verified{vhost}). */
        for (size_t k = 0; ok && k < pc->n_vhosts; k++) {
            json_t *h = json_object();
            ok = h != NULL && json_array_append_new(vhosts, h) == 0 &&
                 rp__set(h, "vhost", rp__json_string(pc->vhosts[k].vhost)) &&
                 rp__set(h, "verified", json_boolean(pc->vhosts[k].verified));
        }
        ok = ok && rp__set(p, "vhosts", json_incref(vhosts));
        json_decref(vhosts);
    }
    ok = ok && rp__set(t, "ok", json_boolean(r->ok)) &&
         rp__set(t, "dry_run", json_boolean(r->dry_run)) &&
         rp__set(t, "verdicts", json_incref(verdicts)) &&
         rp__set(t, "unreadable", rp_strings_json(r->unreadable, r->n_unreadable)) &&
         rp__set(t, "notes", rp_strings_json(r->notes, r->n_notes)) &&
         rp__set(t, "policies", json_incref(policies));
    json_decref(verdicts);
    json_decref(policies);
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

json_t *rp_proto_gate_json(const rp_gate *g) {
    if (!rp_gate_valid(g)) return NULL;
    json_t *t = json_object(), *choices = json_array();
    bool ok = t != NULL && choices != NULL;
    /* The choices the kind takes, in the order a person would read them. */
    static const rp_choice order[] = {RP_CHOICE_RETRY, RP_CHOICE_REPLAY, RP_CHOICE_DISMISS};
    for (size_t i = 0; ok && i < RP_ARRAY_LEN(order); i++)
        if (rp_gate_accepts(g->kind, order[i]))
            ok = json_array_append_new(choices, json_string(rp_choice_string(order[i]))) == 0;
    ok = ok && rp__set(t, "id", json_integer(g->id)) &&
         rp__set(t, "job_id", g->job_id > 0 ? json_integer(g->job_id) : json_null()) &&
         rp__set(t, "kind", json_string(rp_gate_kind_string(g->kind))) &&
         rp__set(t, "project", rp__json_string(g->project)) &&
         rp__set(t, "question", rp__json_string(g->question)) &&
         rp__set(t, "choices", json_incref(choices)) &&
         rp__set(t, "state", json_string(g->answered ? "answered" : "open")) &&
         rp__set(t, "answer", g->answered ? json_string(rp_choice_string(g->answer)) : json_null()) &&
         rp__set(t, "answered_by", rp__json_string(g->answered ? g->answered_by : NULL)) &&
         rp__set(t, "answered_at", rp__time_json(g->answered ? g->answered_at : 0)) &&
         rp__set(t, "created_at", rp__time_json(g->created_at)) &&
         rp__set(t, "queue", rp__json_string(g->queue)) &&
         rp__set(t, "origin_queue", rp__json_string(g->origin_queue)) &&
         rp__set(t, "reason", rp__json_string(g->reason)) &&
         rp__set(t, "vhost", rp__json_string(g->vhost));
    /* Only while claimed: a gate nobody replays has no such key, so the
     * bytes of an unclaimed gate are what they were before claims. */
    if (ok && g->claim != RP_GATE_CLAIM_NONE) ok = rp__set(t, "replaying", rp_claim_json(g));
    json_decref(choices);
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

json_t *rp_proto_status_json(const rp_proto_status *st) {
    if (st == NULL) return NULL;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "version", rp__json_string(st->version)) &&
              rp__set(t, "broker", json_string(st->broker_up ? "up" : "down")) &&
              rp__set(t, "store", json_string(st->store_up ? "up" : "down")) &&
              rp__set(t, "last_pass_at", rp__time_json(st->last_pass_at)) &&
              rp__set(t, "open_sightings", json_integer(st->open_sightings));
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

/* {"v":1,"op":op,"ok":ok} plus "result" or "error" (stolen; NULL fails). */
static json_t *rp_envelope(const char *op, bool ok, const char *key, json_t *body) {
    json_t *t = json_object();
    bool good = t != NULL && body != NULL && rp__set(t, "v", json_integer(RP_PROTO_VERSION)) &&
                rp__set(t, "op", rp__json_string(op)) && rp__set(t, "ok", json_boolean(ok)) &&
                rp__set(t, key, json_incref(body));
    json_decref(body);
    if (!good) {
        json_decref(t);
        return NULL;
    }
    return t;
}

rp_status rp__reply(rp_op op, json_t *result, rp_encoding enc, rp_proto_buf *out) {
    return rp__finish(rp_envelope(rp_op_string(op), true, "result", result), enc, out);
}

rp_status rp_proto_encode_reap_reply(const rp_report *report, rp_encoding enc,
                                     rp_proto_buf *out) {
    if (!rp_report_valid(report)) return RP_ERR_INVALID;
    return rp__reply(RP_OP_REAP, rp_proto_report_json(report), enc, out);
}

rp_status rp_proto_encode_answer_reply(int64_t gate, rp_choice choice, rp_outcome outcome,
                                       rp_encoding enc, rp_proto_buf *out) {
    return rp_proto_encode_answer_reply_note(gate, choice, outcome, NULL, enc, out);
}

rp_status rp_proto_encode_answer_reply_note(int64_t gate, rp_choice choice, rp_outcome outcome,
                                            const char *note, rp_encoding enc,
                                            rp_proto_buf *out) {
    if ((int)choice < 0 || choice >= RP_CHOICE_COUNT_ || (int)outcome < 0 ||
        outcome >= RP_OUTCOME_COUNT_)
        return RP_ERR_INVALID;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "gate", json_integer(gate)) &&
              rp__set(t, "choice", json_string(rp_choice_string(choice))) &&
              rp__set(t, "outcome", json_string(rp_outcome_string(outcome))) &&
              (note == NULL || note[0] == '\0' || rp__set(t, "note", rp__json_string(note)));
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_ANSWER, t, enc, out);
}

rp_status rp_proto_encode_gates_reply(const rp_gate *gates, size_t n, const rp_gate_page *page,
                                      rp_encoding enc, rp_proto_buf *out) {
    if (n > 0 && gates == NULL) return RP_ERR_INVALID;
    if (page != NULL && (page->total < (int64_t)n || page->next_after < 0)) return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (!rp_gate_valid(&gates[i])) return RP_ERR_INVALID;
    json_t *t = json_object(), *a = json_array();
    bool ok = t != NULL && a != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        json_t *g = rp_proto_gate_json(&gates[i]);
        ok = g != NULL && json_array_append_new(a, g) == 0;
    }
    ok = ok && rp__set(t, "gates", json_incref(a));
    json_decref(a);
    int64_t next = page != NULL ? page->next_after : 0;
    ok = ok && rp__set(t, "total", json_integer(page != NULL ? page->total : (json_int_t)n)) &&
         rp__set(t, "next_after", next > 0 ? json_integer(next) : json_null()) &&
         rp__set(t, "total_capped", json_boolean(page != NULL && page->total_capped));
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_GATES, t, enc, out);
}

rp_status rp_proto_encode_status_reply(const rp_proto_status *st, rp_encoding enc,
                                       rp_proto_buf *out) {
    if (st == NULL) return RP_ERR_INVALID;
    return rp__reply(RP_OP_STATUS, rp_proto_status_json(st), enc, out);
}

/* A heap copy of s cut to max bytes on a UTF-8 boundary. */
static char *rp_cut_copy(const char *s, size_t max) {
    size_t len = strlen(s);
    return strndup(s, len > max ? rp__utf8_cut(s, len, max) : len);
}

rp_status rp_proto_encode_error_reply(const char *op, rp_status code, const char *message,
                                      rp_encoding enc, rp_proto_buf *out) {
    const char *wire = rp_proto_error_code(code);
    char *m = rp_cut_copy(message != NULL ? message : wire, RP_PROTO_ERROR_MESSAGE_MAX);
    char *o = op != NULL ? rp_cut_copy(op, RP_PROTO_OP_MAX) : NULL;
    json_t *e = json_object();
    bool ok = m != NULL && (op == NULL || o != NULL) && e != NULL &&
              rp__set(e, "code", json_string(wire)) && rp__set(e, "message", rp__json_string(m));
    if (!ok) {
        json_decref(e);
        e = NULL;
    }
    json_t *t = rp_envelope(o, false, "error", e);
    free(m);
    free(o);
    return rp__finish(t, enc, out);
}

rp_status rp_proto_encode_decode_error(const rp_proto_error *err, rp_encoding enc,
                                       rp_proto_buf *out) {
    if (err == NULL) return RP_ERR_INVALID;
    rp_status code = err->code == RP_OK ? RP_ERR_INTERNAL : err->code;
    return rp_proto_encode_error_reply(err->has_op ? err->op : NULL, code,
                                       err->message[0] != '\0' ? err->message : NULL, enc, out);
}

/* A verdict straight to its bytes, without a tree: what rp__finish writes
 * for rp_proto_verdict_json(v) (the events feed encodes one per dead letter;
 * tests/unit/test_proto.c compares the two). */
typedef struct rp_vtext {
    const char *p; /* NULL: null */
    size_t n;
    char *owned;
} rp_vtext;

static bool rp_vtext_of(rp_vtext *t, const char *s) {
    t->p = NULL;
    t->n = 0;
    t->owned = NULL;
    return s == NULL || rp__utf8_fixed(s, strlen(s), &t->p, &t->n, &t->owned);
}

static int rp_mp_text(msgpack_packer *pk, const char *s, size_t n) {
    if (s == NULL) return msgpack_pack_nil(pk);
    if (msgpack_pack_str(pk, n) != 0) return -1;
    return msgpack_pack_str_body(pk, s, n);
}

/* msgpack-c's sbuffer starts at 8 KiB; a verdict takes a few hundred bytes. */
typedef struct rp_mpbuf {
    uint8_t *p;
    size_t len, cap;
} rp_mpbuf;

static int rp_mpbuf_write(void *data, const char *buf, size_t len) {
    rp_mpbuf *b = data;
    if (len > SIZE_MAX - 1 - b->len) return -1;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 512;
        while (cap < b->len + len + 1) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, buf, len);
    b->len += len;
    return 0;
}

static rp_status rp_verdict_msgpack(const rp_verdict *v, const rp_vtext t[5], rp_proto_buf *out) {
    const char *cond = rp_condition_string(v->condition), *act = rp_action_string(v->action),
               *src = rp_source_string(v->source);
    rp_mpbuf sb = {0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, rp_mpbuf_write);
#define RP_KEY(k) (msgpack_pack_str(&pk, sizeof k - 1) != 0 || msgpack_pack_str_body(&pk, k, sizeof k - 1) != 0)
    char vhost[RP_VERDICT_VHOST_MAX];
    rp_vtext vt = {0};
    bool named = rp_verdict_vhost(v, vhost, sizeof vhost);
    if (named && !rp_vtext_of(&vt, vhost)) return RP_ERR_NOMEM;
    bool bad = msgpack_pack_map(&pk, 12) != 0 || RP_KEY("object") ||
               rp_mp_text(&pk, t[0].p, t[0].n) != 0 || RP_KEY("queue") ||
               rp_mp_text(&pk, t[1].p, t[1].n) != 0 || RP_KEY("project") ||
               rp_mp_text(&pk, t[2].p, t[2].n) != 0 || RP_KEY("condition") ||
               rp_mp_text(&pk, cond, strlen(cond)) != 0 || RP_KEY("measured") ||
               (isfinite(v->measured) ? msgpack_pack_double(&pk, v->measured)
                                      : msgpack_pack_nil(&pk)) != 0 ||
               RP_KEY("threshold") || msgpack_pack_int64(&pk, v->threshold) != 0 ||
               RP_KEY("unit") || rp_mp_text(&pk, t[3].p, t[3].n) != 0 || RP_KEY("action") ||
               rp_mp_text(&pk, act, strlen(act)) != 0 || RP_KEY("source") ||
               rp_mp_text(&pk, src, strlen(src)) != 0 || RP_KEY("detail") ||
               rp_mp_text(&pk, t[4].p, t[4].n) != 0 || RP_KEY("trusted") ||
               (v->trusted ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk)) != 0 ||
               RP_KEY("vhost") ||
               (named ? rp_mp_text(&pk, vt.p, vt.n) : msgpack_pack_nil(&pk)) != 0 ||
               sb.p == NULL;
    free(vt.owned);
#undef RP_KEY
    if (bad) {
        free(sb.p);
        return RP_ERR_NOMEM;
    }
    sb.p[sb.len] = 0; /* the rp_proto_buf promise: a NUL after the bytes, not counted */
    out->ptr = sb.p;
    out->len = sb.len;
    return RP_OK;
}

static rp_status rp_verdict_jsonb(const rp_verdict *v, rp_proto_buf *out) {
    rp_jout w;
    rp_jout_init(&w);
    rp_jout_verdict(&w, v);
    size_t n = w.len;
    char *s = rp_jout_take(&w);
    if (s == NULL) return RP_ERR_NOMEM;
    out->ptr = (uint8_t *)s;
    out->len = n;
    return RP_OK;
}

rp_status rp_proto_encode_verdict(const rp_verdict *v, rp_encoding enc, rp_proto_buf *out) {
    if (!rp_verdict_valid(v) || out == NULL) return RP_ERR_INVALID;
    rp_proto_buf_cleanup(out);
    if ((int)enc < 0 || enc >= RP_ENC_COUNT_) return RP_ERR_INVALID;
    rp_vtext t[5];
    const char *src[5] = {v->object, v->queue, v->project, v->unit, v->detail};
    rp_status st = RP_OK;
    size_t made = 0;
    for (; made < 5 && st == RP_OK; made++) {
        if (!rp_vtext_of(&t[made], src[made]))
            st = RP_ERR_NOMEM;
        else if (t[made].n > rp_proto_reply_limits.max_string)
            st = RP_ERR_TOO_LARGE;
    }
    if (st == RP_OK)
        st = enc == RP_ENC_MSGPACK ? rp_verdict_msgpack(v, t, out) : rp_verdict_jsonb(v, out);
    for (size_t i = 0; i < made; i++) free(t[i].owned);
    if (st == RP_OK && out->len > rp_proto_reply_limits.max_body) {
        rp_proto_buf_cleanup(out);
        st = RP_ERR_TOO_LARGE;
    }
    return st;
}

rp_status rp_proto_report_json_text(const rp_report *report, bool pretty, char **out) {
    rp_proto_buf b;
    if (out == NULL || !rp_report_valid(report)) return RP_ERR_INVALID;
    json_t *t = rp_proto_report_json(report);
    if (t == NULL) return RP_ERR_NOMEM;
    rp_proto_buf_init(&b);
    rp_status st = rp__json_write(t, pretty ? JSON_INDENT(2) : JSON_COMPACT, &b);
    json_decref(t);
    if (st != RP_OK) return st;
    *out = (char *)b.ptr;
    return RP_OK;
}

/* ---- reading a reply ---------------------------------------------------- */

rp_status rp_proto_reply_unwrap(const json_t *reply, rp_proto_reply_view *view,
                                rp_proto_error *err) {
    if (err != NULL) rp_proto_error_init(err);
    if (view == NULL) return rp__err_set(err, RP_ERR_INVALID, "no view");
    memset(view, 0, sizeof *view);
    if (reply == NULL || !json_is_object(reply))
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "the reply must be a map, got %s",
                           reply == NULL ? "nothing" : rp__type_name(reply));
    const json_t *v = json_object_get(reply, "v");
    if (v == NULL || !json_is_integer(v) || json_integer_value(v) != RP_PROTO_VERSION)
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "the reply's field \"v\" must be the integer %d",
                           RP_PROTO_VERSION);
    const json_t *op = json_object_get(reply, "op");
    if (op == NULL || !(json_is_string(op) || json_is_null(op)))
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "the reply's field \"op\" must be a string or null");
    const json_t *ok = json_object_get(reply, "ok");
    if (ok == NULL || !json_is_boolean(ok))
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "the reply's field \"ok\" must be a bool");
    view->op = json_is_string(op) ? json_string_value(op) : NULL;
    view->ok = json_is_true(ok);
    if (view->ok) {
        const json_t *result = json_object_get(reply, "result");
        if (result == NULL || !json_is_object(result))
            return rp__err_set(err, RP_ERR_BAD_REQUEST, "the reply's field \"result\" must be a map");
        view->result = result;
        return RP_OK;
    }
    const json_t *e = json_object_get(reply, "error");
    const json_t *code = e != NULL ? json_object_get(e, "code") : NULL;
    const json_t *msg = e != NULL ? json_object_get(e, "message") : NULL;
    rp_status parsed;
    if (e == NULL || !json_is_object(e) || code == NULL || !json_is_string(code) ||
        !rp_proto_error_code_parse(json_string_value(code), &parsed) || msg == NULL ||
        !json_is_string(msg))
        return rp__err_set(err, RP_ERR_BAD_REQUEST,
                           "the reply's field \"error\" must be a map with a known \"code\" and a string \"message\"");
    view->code = json_string_value(code);
    view->message = json_string_value(msg);
    return RP_OK;
}
