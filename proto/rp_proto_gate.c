/* The `gate` op's reply (SCHEMA.md section 4 `gate`, 5.6): one gate looked
 * inside. */
#include <stdlib.h>
#include <string.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

/* A stored JSON text as the tree it is; a text that does not parse (it
 * never should: the store keeps jsonb) is shown as the string it is. */
static json_t *rp_stored_json(const char *text) {
    if (text == NULL) return json_null();
    json_t *t = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    return t != NULL ? t : rp__json_string(text);
}

static json_t *rp_dead_letter_json(const rp_gate_look *l) {
    if (!l->has_dead_letter) return json_null();
    json_t *body = json_object(), *t = json_object();
    bool ok = body != NULL && t != NULL &&
              rp__set(body, "size", json_integer(l->body_size)) &&
              rp__set(body, "truncated", json_boolean(l->body_truncated)) &&
              rp__set(body, "offset", json_integer(l->window_offset)) &&
              rp__set(body, "length", json_integer(l->window_len)) &&
              rp__set(body, "base64", json_string(l->window_base64 ? l->window_base64 : ""));
    ok = ok && rp__set(t, "vhost", rp__json_string(l->vhost)) &&
         rp__set(t, "queue", rp__json_string(l->gate.queue)) &&
         rp__set(t, "origin_queue", rp__json_string(l->gate.origin_queue)) &&
         rp__set(t, "reason", rp__json_string(l->gate.reason)) &&
         rp__set(t, "first_death_at", rp__time_json(l->has_first_death ? l->first_death_at : 0)) &&
         rp__set(t, "parked_at", rp__time_json(l->parked_at)) &&
         rp__set(t, "properties", rp_stored_json(l->properties_json)) &&
         rp__set(t, "headers", rp_stored_json(l->headers_json)) &&
         rp__set(t, "body", json_incref(body));
    json_decref(body);
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

rp_status rp_proto_encode_gate_reply(const rp_gate_look *l, const char *why_not, rp_encoding enc,
                                     rp_proto_buf *out) {
    if (l == NULL || (int)l->job_state < 0 ||
        l->job_state >= RP_JOB_STATE_COUNT_)
        return RP_ERR_INVALID;
    json_t *job = json_object(), *replay = json_object(), *t = json_object();
    bool ok = job != NULL && replay != NULL && t != NULL &&
              rp__set(job, "id", json_integer(l->gate.job_id)) &&
              rp__set(job, "kind", rp__json_string(l->job_kind)) &&
              rp__set(job, "state", json_string(rp_job_state_string(l->job_state))) &&
              rp__set(job, "attempts", json_integer(l->attempts)) &&
              rp__set(job, "max_attempts", json_integer(l->max_attempts)) &&
              rp__set(replay, "possible", json_boolean(why_not == NULL)) &&
              rp__set(replay, "why", rp__json_string(why_not));
    ok = ok && rp__set(t, "gate", rp_proto_gate_json(&l->gate)) &&
         rp__set(t, "job", json_incref(job)) && rp__set(t, "dead_letter", rp_dead_letter_json(l)) &&
         rp__set(t, "replay", json_incref(replay));
    json_decref(job);
    json_decref(replay);
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_GATE, t, enc, out);
}
