/* stats' reply (SCHEMA.md section 4 `stats`). */
#include "rp_proto.h"
#include "rp_proto_internal.h"

static json_t *rp_known(bool known, int64_t v) { return known ? json_integer(v) : json_null(); }

static json_t *rp_age(bool known, int64_t ms) {
    return known ? json_integer(ms < 0 ? 0 : ms / 1000) : json_null();
}

static json_t *rp_flags(unsigned flags) {
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < RP_STATS_FLAG_COUNT; i++) {
        rp_stats_flag f = rp_stats_flag_at(i);
        if ((flags & f) && json_array_append_new(a, json_string(rp_stats_flag_string(f))) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *rp_queue_json(const rp_stats_queue *q) {
    json_t *o = json_object();
    bool ok = o != NULL && rp__set(o, "vhost", rp__json_string(q->vhost)) &&
              rp__set(o, "queue", rp__json_string(q->name)) &&
              rp__set(o, "ready", rp_known(q->counts_known, q->ready)) &&
              rp__set(o, "unacked", rp_known(q->counts_known, q->unacked)) &&
              rp__set(o, "consumers", rp_known(q->consumers_known, q->consumers)) &&
              rp__set(o, "intake", rp_known(q->rates_known, q->intake)) &&
              rp__set(o, "drained", rp_known(q->rates_known, q->drained)) &&
              rp__set(o, "oldest_waiting_seconds", rp_age(q->age_known, q->oldest_waiting_ms)) &&
              rp__set(o, "flags", rp_flags(q->flags));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *rp_kind_json(const rp_stats_kind *k) {
    json_t *o = json_object();
    bool ok = o != NULL && rp__set(o, "project", rp__json_string(k->project)) &&
              rp__set(o, "kind", rp__json_string(k->kind)) &&
              rp__set(o, "waiting", json_integer(k->waiting)) &&
              rp__set(o, "active", json_integer(k->active)) &&
              rp__set(o, "intake", json_integer(k->intake)) &&
              rp__set(o, "drained", json_integer(k->drained)) &&
              rp__set(o, "oldest_waiting_seconds", rp_age(k->age_known, k->oldest_waiting_ms)) &&
              rp__set(o, "flags", rp_flags(k->flags));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

rp_status rp_proto_encode_stats_reply(const rp_stats *s, rp_encoding enc, rp_proto_buf *out) {
    if (s == NULL || (s->n_queues > 0 && s->queues == NULL) || (s->n_kinds > 0 && s->kinds == NULL))
        return RP_ERR_INVALID;
    for (size_t i = 0; i < s->n_queues; i++)
        if (s->queues[i].vhost == NULL || s->queues[i].name == NULL) return RP_ERR_INVALID;
    for (size_t i = 0; i < s->n_kinds; i++)
        if (s->kinds[i].project == NULL || s->kinds[i].kind == NULL) return RP_ERR_INVALID;
    json_t *t = json_object(), *qs = json_array(), *ks = json_array();
    bool ok = t != NULL && qs != NULL && ks != NULL;
    for (size_t i = 0; ok && i < s->n_queues; i++) {
        json_t *o = rp_queue_json(&s->queues[i]);
        ok = o != NULL && json_array_append_new(qs, o) == 0;
    }
    for (size_t i = 0; ok && i < s->n_kinds; i++) {
        json_t *o = rp_kind_json(&s->kinds[i]);
        ok = o != NULL && json_array_append_new(ks, o) == 0;
    }
    ok = ok && rp__set(t, "window_seconds", json_integer(s->window_seconds)) &&
         rp__set(t, "broker_note", s->broker_note ? rp__json_string(s->broker_note) : json_null()) &&
         rp__set(t, "queues", json_incref(qs)) && rp__set(t, "kinds", json_incref(ks)) &&
         rp__set(t, "queues_omitted", json_integer((json_int_t)s->queues_omitted)) &&
         rp__set(t, "kinds_omitted", json_integer((json_int_t)s->kinds_omitted));
    json_decref(qs);
    json_decref(ks);
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_STATS, t, enc, out);
}
