/* The dead-letter park: is_parked, and park in one statement, idempotent by
 * identity and death (rp_pg_store.h, rp_deadletter.h OCCURRENCE). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"
#include "rp_text.h"
#include "rp_untrusted.h"

/* Years 0001..9999, what a timestamptz surely holds: a first death outside
 * (the x-death time is the publisher's to write) is stored as unknown
 * rather than failing the park of that message for ever. */
#define RP_PG_MIN_UNIX_S (-62135596800LL)
#define RP_PG_MAX_UNIX_S (253402300799LL)

/* The park statement's parameters (rp_pg_sql.c). */
#define RP_PARK_NPARAMS 14

static rp_status rp_is_parked(void *self, const rp_dead_letter *facts, bool *parked) {
    rp_pg_store *s = self;
    *parked = false;
    if (facts == NULL || facts->identity == NULL || facts->death == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "is_parked");
    if (st != RP_OK) return st;
    const char *vals[] = {facts->identity, facts->death};
    rp__pg_cmd k = {.stmt = RP__PG_IS_PARKED, .n = 2, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "is_parked", NULL);
    if (st != RP_OK) return st;
    *parked = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return RP_OK;
}

/* The bus.dead_letter job's payload: where the message was found and what
 * it is, for the person and for a replay. */
static char *rp_job_payload(const char *vhost, const char *queue, const char *identity,
                            const char *origin, const char *reason) {
    json_t *o = json_object();
    if (o == NULL) return NULL;
    bool ok = json_object_set_new(o, "identity", json_string(identity)) == 0 &&
              json_object_set_new(o, "vhost", vhost ? json_string(vhost) : json_null()) == 0 &&
              json_object_set_new(o, "queue", json_string(queue)) == 0 &&
              json_object_set_new(o, "origin_queue", json_string(origin)) == 0 &&
              json_object_set_new(o, "reason", json_string(reason)) == 0;
    char *text = ok ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

typedef struct rp_park_text {
    char *origin, *reason, *shown_queue, *question, *job_payload, *ledger_payload;
} rp_park_text;

static void rp_park_text_cleanup(rp_park_text *t) {
    free(t->origin);
    free(t->reason);
    free(t->shown_queue);
    free(t->question);
    free(t->job_payload);
    free(t->ledger_payload);
}

static rp_status rp_park_text_build(rp_park_text *t, const char *vhost, const char *queue,
                                    const rp_dead_letter *facts, const rp_verdict *v) {
    rp_status st = rp_untrusted_render(
        (rp_bytes){(const uint8_t *)facts->origin_queue, facts->origin_queue_len}, &t->origin);
    if (st == RP_OK)
        st = rp_untrusted_render((rp_bytes){(const uint8_t *)facts->reason, facts->reason_len},
                                 &t->reason);
    if (st == RP_OK)
        st = rp_untrusted_render((rp_bytes){(const uint8_t *)queue, strlen(queue)},
                                 &t->shown_queue);
    if (st == RP_OK)
        st = rp_text_format(&t->question,
                            "A message that died on %s (reason %s) was found on dead-letter queue "
                            "%s and parked: replay it to the queue it died on, or dismiss it?",
                            t->origin, t->reason, t->shown_queue);
    if (st == RP_OK) {
        t->job_payload = rp_job_payload(vhost, queue, facts->identity, t->origin, t->reason);
        if (t->job_payload == NULL) st = RP_ERR_INVALID; /* or no memory; both refuse */
    }
    if (st == RP_OK) st = rp__pg_payload(v, &t->ledger_payload);
    return st;
}

static rp_status rp_park(void *self, const char *vhost, const char *queue, const rp_dl_message *msg,
                         const rp_dead_letter *facts, const rp_verdict *v, rp_park_result *out) {
    rp_pg_store *s = self;
    memset(out, 0, sizeof *out);
    if (queue == NULL || msg == NULL || facts == NULL || facts->identity == NULL ||
        facts->death == NULL || v == NULL ||
        (msg->body.len > 0 && msg->body.ptr == NULL))
        return RP_ERR_INVALID;
    rp_park_text t = {0};
    rp_status st = rp_park_text_build(&t, vhost, queue, facts, v);
    if (st == RP_OK) st = rp__pg_enter(s, RP__PG_WRITE, "park");
    if (st != RP_OK) {
        rp_park_text_cleanup(&t);
        return st;
    }

    const rp_pg_dl_handle *h = msg->handle;
    const char *headers = h && h->headers_json ? h->headers_json : "{}";
    const char *props = h && h->properties_json ? h->properties_json : "{}";
    size_t body_len = msg->body.len;
    bool truncated = msg->body_truncated;
    if (truncated || body_len > RP_PG_DL_BODY_MAX) {
        if (body_len > RP_PG_DL_BODY_MAX) body_len = RP_PG_DL_BODY_MAX;
        truncated = true;
    }
    char death[24];
    bool death_known = facts->first_death_known && facts->first_death_at >= RP_PG_MIN_UNIX_S &&
                       facts->first_death_at <= RP_PG_MAX_UNIX_S;
    /* An empty body still needs a non-NULL pointer: NULL would be SQL NULL. */
    const char *body = msg->body.len > 0 ? (const char *)msg->body.ptr : "";
    const char *vals[RP_PARK_NPARAMS] = {
        facts->identity, queue, t.origin, t.reason,
        death_known ? rp__pg_itoa(facts->first_death_at, death) : NULL,
        headers, props, body, truncated ? "t" : "f", RP_PG_BUS_PROJECT, t.job_payload,
        t.question, t.ledger_payload, facts->death,
    };
    int lengths[RP_PARK_NPARAMS] = {0};
    int formats[RP_PARK_NPARAMS] = {0};
    lengths[7] = (int)body_len;
    formats[7] = 1; /* the body travels as bytes, not text */
    rp__pg_cmd k = {.stmt = RP__PG_PARK, .n = RP_PARK_NPARAMS, .values = vals, .lengths = lengths,
                    .formats = formats};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "park", NULL);
    rp_park_text_cleanup(&t);
    if (st != RP_OK) return st;
    if (PQntuples(r) == 1) {
        out->parked = true;
        out->event.seq = rp__pg_i64(r, 0, 0);
        out->event.at = rp__pg_i64(r, 0, 1);
        out->job_id = rp__pg_i64(r, 0, 2);
        out->gate_id = rp__pg_i64(r, 0, 3);
    }
    PQclear(r);
    return RP_OK;
}

void rp__pg_fill_park(rp_dead_letter_port *out) {
    out->peek = NULL;
    out->is_parked = rp_is_parked;
    out->park = rp_park;
}

/* ---- the batch park (rp_pg_store.h) ----------------------------------------- */

/* The commands before the parks in a segment: the plan mode (set_config). */
#define RP_PARK_LEAD 1
/* The park's plan does not depend on the data (four inserts from
 * parameters, the conflict on the primary key, a join of two one-row
 * results): within this transaction its generic plan is made once for the
 * session and reused, instead of the session's custom plan planned for
 * every park (rp_pg_store.c's plan mode, there for statements whose plans
 * do depend on the table). Measured here: about 10% less PostgreSQL time
 * per park. Local: it ends with the transaction (set_config rather than SET
 * LOCAL, which warns outside an explicit block). */
#define RP_PARK_PLAN_SQL "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"

rp_status rp_pg_park_send(rp_pg_store *s, rp_pg_park_item *items, size_t n) {
    if (s == NULL || items == NULL || n == 0 || n > 100000) return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        const rp_pg_park_item *it = &items[i];
        memset(&items[i].result, 0, sizeof items[i].result);
        if (it->queue == NULL || it->msg == NULL || it->facts == NULL ||
            it->facts->identity == NULL || it->facts->death == NULL || it->v == NULL ||
            (it->msg->body.len > 0 && it->msg->body.ptr == NULL))
            return RP_ERR_INVALID;
    }
    rp_status st = RP_ERR_NOMEM;
    rp_park_text *t = calloc(n, sizeof *t);
    const char **vals = calloc(n * RP_PARK_NPARAMS, sizeof *vals);
    int *lengths = calloc(n * RP_PARK_NPARAMS, sizeof *lengths);
    int *formats = calloc(n * RP_PARK_NPARAMS, sizeof *formats);
    char (*death)[24] = calloc(n, sizeof *death);
    rp__pg_cmd *k = calloc(n + RP_PARK_LEAD, sizeof *k);
    if (!t || !vals || !lengths || !formats || !death || !k) goto done;
    st = RP_OK;
    for (size_t i = 0; i < n && st == RP_OK; i++) {
        const rp_pg_park_item *it = &items[i];
        st = rp_park_text_build(&t[i], it->vhost, it->queue, it->facts, it->v);
        if (st != RP_OK) break;
        const rp_pg_dl_handle *h = it->msg->handle;
        size_t body_len = it->msg->body.len;
        bool truncated = it->msg->body_truncated;
        if (truncated || body_len > RP_PG_DL_BODY_MAX) {
            if (body_len > RP_PG_DL_BODY_MAX) body_len = RP_PG_DL_BODY_MAX;
            truncated = true;
        }
        const rp_dead_letter *f = it->facts;
        bool death_known = f->first_death_known && f->first_death_at >= RP_PG_MIN_UNIX_S &&
                           f->first_death_at <= RP_PG_MAX_UNIX_S;
        const char **v = vals + i * RP_PARK_NPARAMS;
        v[0] = f->identity;
        v[1] = it->queue;
        v[2] = t[i].origin;
        v[3] = t[i].reason;
        v[4] = death_known ? rp__pg_itoa(f->first_death_at, death[i]) : NULL;
        v[5] = h && h->headers_json ? h->headers_json : "{}";
        v[6] = h && h->properties_json ? h->properties_json : "{}";
        v[7] = it->msg->body.len > 0 ? (const char *)it->msg->body.ptr : "";
        v[8] = truncated ? "t" : "f";
        v[9] = RP_PG_BUS_PROJECT;
        v[10] = t[i].job_payload;
        v[11] = t[i].question;
        v[12] = t[i].ledger_payload;
        v[13] = f->death;
        lengths[i * RP_PARK_NPARAMS + 7] = (int)body_len;
        formats[i * RP_PARK_NPARAMS + 7] = 1; /* the body travels as bytes */
        k[i + RP_PARK_LEAD] = (rp__pg_cmd){.stmt = RP__PG_PARK, .n = RP_PARK_NPARAMS, .values = v,
                                .lengths = lengths + i * RP_PARK_NPARAMS,
                                .formats = formats + i * RP_PARK_NPARAMS};
    }
    /* Nothing outstanding: a port call's usual start (connect, prepare).
     * Otherwise the session is the one the outstanding segments went on
     * (rp__pg_send refuses another). */
    if (st == RP_OK && s->pending == 0) st = rp__pg_enter(s, RP__PG_WRITE, "park_batch");
    if (st != RP_OK) goto done;
    /* No BEGIN: the segment is one implicit transaction, committed at its
     * sync (rp__pg_send), so that one that fails leaves the next alone. */
    k[0] = (rp__pg_cmd){.stmt = -1, .sql = RP_PARK_PLAN_SQL};
    /* libpq copies the values as it sends: nothing here need outlive this. */
    st = rp__pg_send(s, k, n + RP_PARK_LEAD, "park_batch");
done:
    for (size_t i = 0; t && i < n; i++) rp_park_text_cleanup(&t[i]);
    free(t);
    free(vals);
    free(lengths);
    free(formats);
    free(death);
    free(k);
    return st;
}

rp_status rp_pg_park_recv(rp_pg_store *s, rp_pg_park_item *items, size_t n) {
    if (s == NULL || items == NULL || n == 0 || n > 100000) return RP_ERR_INVALID;
    rp__pg_cmd *k = calloc(n + RP_PARK_LEAD, sizeof *k);
    PGresult **res = calloc(n + RP_PARK_LEAD, sizeof *res);
    if (k == NULL || res == NULL) {
        /* Its results must still be read, or every later call would read
         * them as its own: give the session up instead. */
        free(k);
        free(res);
        rp__pg_lose_session(s);
        return RP_ERR_UNAVAILABLE;
    }
    k[0] = (rp__pg_cmd){.stmt = -1, .sql = RP_PARK_PLAN_SQL};
    for (size_t i = 0; i < n; i++) k[i + RP_PARK_LEAD] = (rp__pg_cmd){.stmt = RP__PG_PARK};
    char code[6];
    rp_status st = rp__pg_recv(s, k, n + RP_PARK_LEAD, res, "park_batch", code);
    if (st == RP_OK) {
        for (size_t i = 0; i < n; i++) {
            PGresult *r = res[i + RP_PARK_LEAD];
            if (PQntuples(r) == 1) {
                rp_park_result *out = &items[i].result;
                out->parked = true;
                out->event.seq = rp__pg_i64(r, 0, 0);
                out->event.at = rp__pg_i64(r, 0, 1);
                out->job_id = rp__pg_i64(r, 0, 2);
                out->gate_id = rp__pg_i64(r, 0, 3);
            }
        }
        rp__pg_clear(res, n + RP_PARK_LEAD);
    }
    free(k);
    free(res);
    return st;
}

rp_status rp_pg_park_batch(rp_pg_store *s, rp_pg_park_item *items, size_t n) {
    if (s != NULL && s->pending > 0) return RP_ERR_INVALID;
    rp_status st = rp_pg_park_send(s, items, n);
    if (st == RP_OK) st = rp_pg_park_recv(s, items, n);
    return st;
}
