/* Answer sets' replies (SCHEMA.md section 4 `answer_many`, `answer_set`). */
#include <stdlib.h>
#include <string.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

static bool rp_row_valid(const rp_answer_set_row *r) {
    return r != NULL && (int)r->state >= 0 && r->state < RP_ANSWER_SET_STATE_COUNT_ &&
           (int)r->choice >= 0 && r->choice < RP_CHOICE_COUNT_;
}

static json_t *rp_str_or_null(const char *s) {
    return s != NULL && s[0] != '\0' ? rp__json_string(s) : json_null();
}

json_t *rp_proto_answer_set_json(const rp_answer_set_row *r) {
    if (!rp_row_valid(r)) return NULL;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "id", json_integer(r->id)) &&
              rp__set(t, "choice", json_string(rp_choice_string(r->choice))) &&
              rp__set(t, "rate", json_integer(r->rate)) &&
              rp__set(t, "state", json_string(rp_answer_set_state_string(r->state))) &&
              rp__set(t, "requested_by", rp__json_string(r->requested_by)) &&
              rp__set(t, "note", rp_str_or_null(r->note)) &&
              rp__set(t, "total", json_integer(r->total)) &&
              rp__set(t, "answered", json_integer(r->answered)) &&
              rp__set(t, "failed", json_integer(r->failed)) &&
              rp__set(t, "pending", json_integer(r->pending)) &&
              rp__set(t, "stop_reason", rp_str_or_null(r->stop_reason)) &&
              rp__set(t, "running_on", rp_str_or_null(r->owner)) &&
              rp__set(t, "created_at", rp__time_json(r->created_at)) &&
              rp__set(t, "updated_at", rp__time_json(r->updated_at)) &&
              rp__set(t, "finished_at", rp__time_json(r->finished_at));
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

rp_status rp_proto_encode_answer_many_reply(const rp_answer_set_made *m, bool dry_run,
                                            rp_choice choice, int rate, rp_encoding enc,
                                            rp_proto_buf *out) {
    if (m == NULL || (m->n_queues > 0 && m->queues == NULL) || (int)choice < 0 ||
        choice >= RP_CHOICE_COUNT_)
        return RP_ERR_INVALID;
    json_t *t = json_object(), *a = json_array();
    bool ok = t != NULL && a != NULL;
    for (size_t i = 0; ok && i < m->n_queues; i++) {
        json_t *q = json_object();
        ok = q != NULL && rp__set(q, "queue", rp__json_string(m->queues[i].queue)) &&
             rp__set(q, "count", json_integer(m->queues[i].count)) &&
             json_array_append_new(a, q) == 0;
        if (!ok) json_decref(q);
    }
    ok = ok && rp__set(t, "job", m->id > 0 ? json_integer(m->id) : json_null()) &&
         rp__set(t, "dry_run", json_boolean(dry_run)) &&
         rp__set(t, "choice", json_string(rp_choice_string(choice))) &&
         rp__set(t, "rate", json_integer(rate)) && rp__set(t, "total", json_integer(m->total)) &&
         rp__set(t, "skipped", json_integer(m->skipped)) && rp__set(t, "queues", json_incref(a)) &&
         rp__set(t, "other_queues", json_integer(m->other_queues));
    json_decref(a);
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_ANSWER_MANY, t, enc, out);
}

rp_status rp_proto_encode_answer_set_reply(const rp_answer_set_row *row, bool cancelled,
                                           rp_encoding enc, rp_proto_buf *out) {
    if (!rp_row_valid(row)) return RP_ERR_INVALID;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "job", rp_proto_answer_set_json(row)) &&
              rp__set(t, "cancelled", json_boolean(cancelled));
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_ANSWER_SET, t, enc, out);
}
