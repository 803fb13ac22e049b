/* The answer-set port over PostgreSQL (rp_pg_answer_set.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rp_log.h"
#include "rp_pg_answer_set.h"
#include "rp_pg_store_internal.h"
#include "rp_untrusted.h"

/* A time column as Unix ms; NULL for NULL. */
#define RP_MSA(x) "floor(extract(epoch FROM " x ") * 1000)::int8"

/* The open gates a set takes: $1 ids (int8[] or NULL), $2 project, $3
 * kind, $4 queue, $5 origin (rendered), $6 reason (rendered), $7 older
 * than ms, $8 choice. The dead letter's queue, origin and reason are read
 * from the gate row (copied there at park time, schema version 13), so
 * the freeze uses the open gates' partial indexes and joins no dead
 * letter. */
#define RP_SET_MATCH                                                                        \
    "SELECT g.id, coalesce(g.origin_queue, '') AS q FROM {s}.gate g "                       \
    "JOIN {s}.job j ON j.id = g.job_id "                                                    \
    "WHERE g.answer IS NULL AND $8::text = ANY (g.choices) "                                \
    "AND ($1::int8[] IS NULL OR g.id = ANY ($1::int8[])) "                                  \
    "AND ($2::text IS NULL OR j.project_id = $2::text) "                                    \
    "AND ($3::text IS NULL OR g.kind = $3::text) "                                          \
    "AND ($4::text IS NULL OR g.queue = $4::text) "                                         \
    "AND ($5::text IS NULL OR g.origin_queue = $5::text) "                                  \
    "AND ($6::text IS NULL OR g.reason = $6::text) "                                        \
    "AND ($7::int8 IS NULL OR g.created_at <= now() - $7::int8 * interval '1 millisecond')"

static const char rp_sql_queues[] = "SELECT q, count(*) FROM (" RP_SET_MATCH
                                    ") m GROUP BY q ORDER BY 2 DESC, 1";
/* $9 rate, $10 by, $11 note. */
static const char rp_sql_make[] =
    "WITH m AS (" RP_SET_MATCH "), "
    "s AS (INSERT INTO {s}.answer_set (choice, rate, requested_by, note, filters, total) "
    "SELECT $8::text, $9::int, $10::text, $11::text, jsonb_strip_nulls(jsonb_build_object("
    "'ids', $1::int8[], 'project', $2::text, 'kind', $3::text, 'queue', $4::text, "
    "'origin', $5::text, 'reason', $6::text, 'older_than_ms', $7::int8)), count(*) FROM m "
    "HAVING count(*) > 0 RETURNING id), "
    "i AS (INSERT INTO {s}.answer_set_item (set_id, gate_id) SELECT s.id, m.id FROM s, m) "
    "SELECT id FROM s";

#define RP_SET_COLS                                                                          \
    "a.id, a.choice, a.rate, a.state, a.requested_by, a.note, a.total, a.answered, a.failed, " \
    "a.stop_reason, a.owner, " RP_MSA("a.created_at") ", " RP_MSA("a.updated_at") ", "       \
    "coalesce(" RP_MSA("a.finished_at") ", 0)"

static const char rp_sql_get[] = "SELECT " RP_SET_COLS " FROM {s}.answer_set a WHERE a.id = $1::int8";
static const char rp_sql_cancel[] =
    "UPDATE {s}.answer_set a SET state = 'cancelled', stop_reason = 'cancelled by ' || $2::text, "
    "finished_at = now(), updated_at = now() WHERE a.id = $1::int8 AND a.state = 'running' "
    "RETURNING " RP_SET_COLS;
/* $1 owner, $2 lease ms. */
static const char rp_sql_take[] =
    "UPDATE {s}.answer_set a SET owner = $1::text, "
    "owner_until = now() + $2::int8 * interval '1 millisecond', updated_at = now() "
    "WHERE a.id = (SELECT id FROM {s}.answer_set WHERE state = 'running' AND (owner IS NULL "
    "OR owner_until < now() OR owner = $1::text) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) "
    "RETURNING " RP_SET_COLS;
/* $1 set, $2 owner: the fence, the set locked. */
static const char rp_sql_fence[] =
    "SELECT owner = $2::text FROM {s}.answer_set WHERE id = $1::int8 FOR UPDATE";
/* $1 set, $2 the marks as a JSON array of {"gate", "ok", "outcome",
 * "message"}: one statement for a step's marks (one parse and plan, not
 * one a gate). */
static const char rp_sql_mark[] =
    "UPDATE {s}.answer_set_item i SET state = CASE WHEN m.ok THEN 'answered' ELSE 'failed' END, "
    "outcome = m.outcome, message = m.message FROM jsonb_to_recordset($2::jsonb) "
    "AS m(gate int8, ok bool, outcome text, message text) "
    "WHERE i.set_id = $1::int8 AND i.gate_id = m.gate AND i.state = 'pending'";

/* The marks as rp_sql_mark's JSON text (*out: free()). */
static rp_status rp_marks_json(const rp_answer_set_mark *marks, size_t n, char **out) {
    json_t *a = json_array();
    if (a == NULL) return RP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:I,s:b,s:s?,s:s?}", "gate", (json_int_t)marks[i].gate, "ok",
                              marks[i].answered, "outcome", marks[i].outcome, "message",
                              marks[i].message);
        if (o == NULL || json_array_append_new(a, o) != 0) {
            /* (a message that is not UTF-8 cannot be packed: kept out) */
            if (o == NULL)
                o = json_pack("{s:I,s:b,s:s?}", "gate", (json_int_t)marks[i].gate, "ok",
                              marks[i].answered, "outcome", marks[i].outcome);
            if (o == NULL || json_array_append_new(a, o) != 0) {
                json_decref(a);
                return RP_ERR_NOMEM;
            }
        }
    }
    *out = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return *out != NULL ? RP_OK : RP_ERR_NOMEM;
}
/* $1 set, $2 lease ms. */
static const char rp_sql_renew[] =
    "UPDATE {s}.answer_set a SET "
    "answered = (SELECT count(*) FROM {s}.answer_set_item WHERE set_id = a.id AND state = 'answered'), "
    "failed = (SELECT count(*) FROM {s}.answer_set_item WHERE set_id = a.id AND state = 'failed'), "
    "owner_until = now() + $2::int8 * interval '1 millisecond', updated_at = now() "
    "WHERE a.id = $1::int8 RETURNING " RP_SET_COLS;
/* $1 set, $2 after, $3 limit. */
static const char rp_sql_next[] =
    "SELECT gate_id FROM {s}.answer_set_item WHERE set_id = $1::int8 AND state = 'pending' "
    "AND gate_id > $2::int8 ORDER BY gate_id LIMIT $3::int8";
/* $1 set, $2 owner, $3 state, $4 reason. */
static const char rp_sql_finish[] =
    "UPDATE {s}.answer_set SET state = CASE WHEN state = 'running' THEN $3::text ELSE state END, "
    "stop_reason = CASE WHEN state = 'running' AND $4::text IS NOT NULL THEN $4::text "
    "ELSE stop_reason END, "
    "finished_at = CASE WHEN state = 'running' AND $3::text <> 'running' THEN now() "
    "ELSE finished_at END, owner = NULL, owner_until = NULL, updated_at = now() "
    "WHERE id = $1::int8 AND owner = $2::text";


static void rp_copy(char *dst, size_t n, const char *src) {
    snprintf(dst, n, "%s", src != NULL ? src : "");
}

/* Row i of r (RP_SET_COLS from 0). */
static rp_status rp_row(const PGresult *r, int i, rp_answer_set_row *a) {
    memset(a, 0, sizeof *a);
    a->id = rp__pg_i64(r, i, 0);
    if (!rp_choice_parse(PQgetvalue(r, i, 1), &a->choice) ||
        !rp_answer_set_state_parse(PQgetvalue(r, i, 3), &a->state))
        return RP_ERR_INTERNAL;
    a->rate = (int)rp__pg_i64(r, i, 2);
    rp_copy(a->requested_by, sizeof a->requested_by, rp__pg_str(r, i, 4));
    rp_copy(a->note, sizeof a->note, rp__pg_str(r, i, 5));
    a->total = rp__pg_i64(r, i, 6);
    a->answered = rp__pg_i64(r, i, 7);
    a->failed = rp__pg_i64(r, i, 8);
    a->pending = a->total - a->answered - a->failed;
    rp_copy(a->stop_reason, sizeof a->stop_reason, rp__pg_str(r, i, 9));
    rp_copy(a->owner, sizeof a->owner, rp__pg_str(r, i, 10));
    a->created_at = rp__pg_i64(r, i, 11);
    a->updated_at = rp__pg_i64(r, i, 12);
    a->finished_at = rp__pg_i64(r, i, 13);
    return RP_OK;
}

/* The ids as an array literal "{1,2,3}" (heap), NULL when n is 0. */
static rp_status rp_ids_literal(const int64_t *ids, size_t n, char **out) {
    *out = NULL;
    if (n == 0) return RP_OK;
    char *b = malloc(n * 22 + 3);
    if (b == NULL) return RP_ERR_NOMEM;
    size_t o = 0;
    b[o++] = '{';
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(b + o, "%s%" PRId64, i > 0 ? "," : "", ids[i]);
    b[o++] = '}';
    b[o] = '\0';
    *out = b;
    return RP_OK;
}

static rp_status rp_render(const char *in, char **out) {
    *out = NULL;
    if (in == NULL) return RP_OK;
    return rp_untrusted_render((rp_bytes){(const uint8_t *)in, strlen(in)}, out);
}

static rp_status rp_create(void *self, const rp_answer_set_spec *spec, rp_answer_set_made *out) {
    rp_pg_store *s = self;
    if (spec == NULL || out == NULL || !rp_answer_set_choice_ok(spec->choice) || spec->rate < 1 ||
        spec->rate > RP_ANSWER_SET_RATE_MAX || spec->by == NULL ||
        (spec->q.has_kind && ((int)spec->q.kind < 0 || spec->q.kind >= RP_GATE_KIND_COUNT_)))
        return RP_ERR_INVALID;
    memset(out, 0, sizeof *out);
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "answer_set_create");
    if (st != RP_OK) return st;
    char *ids = NULL, *origin = NULL, *reason = NULL, *qsql = NULL, *msql = NULL;
    if ((st = rp_ids_literal(spec->ids, spec->n_ids, &ids)) != RP_OK ||
        (st = rp_render(spec->q.origin, &origin)) != RP_OK ||
        (st = rp_render(spec->q.reason, &reason)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_queues, &qsql)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_make, &msql)) != RP_OK)
        goto done;
    char older[24], rate[24];
    const char *vals[] = {ids,
                          spec->q.project,
                          spec->q.has_kind ? rp_gate_kind_string(spec->q.kind) : NULL,
                          spec->q.queue,
                          origin,
                          reason,
                          spec->q.older_than_ms > 0 ? rp__pg_itoa(spec->q.older_than_ms, older)
                                                    : NULL,
                          rp_choice_string(spec->choice),
                          rp__pg_itoa(spec->rate, rate),
                          spec->by,
                          spec->note};
    rp__pg_cmd k[4] = {
        {.stmt = -1, .sql = "BEGIN ISOLATION LEVEL REPEATABLE READ"},
        {.stmt = -1, .sql = qsql, .n = 8, .values = vals},
        {.stmt = -1, .sql = msql, .n = 11, .values = vals},
        {.stmt = -1, .sql = "COMMIT"},
    };
    /* A dry run reads the breakdown alone. */
    if (spec->dry_run) {
        k[1].sql = qsql;
        k[2] = (rp__pg_cmd){.stmt = -1, .sql = "COMMIT"};
    }
    size_t nk = spec->dry_run ? 3 : 4;
    PGresult *res[4] = {NULL, NULL, NULL, NULL};
    if ((st = rp__pg_run(s, k, nk, res, "answer_set_create", NULL)) != RP_OK) goto done;
    int rows = PQntuples(res[1]);
    size_t listed = rows < RP_ANSWER_SET_QUEUES_MAX ? (size_t)rows : RP_ANSWER_SET_QUEUES_MAX;
    if (listed > 0 && (out->queues = calloc(listed, sizeof *out->queues)) == NULL) st = RP_ERR_NOMEM;
    for (int i = 0; st == RP_OK && i < rows; i++) {
        int64_t c = rp__pg_i64(res[1], i, 1);
        out->total += c;
        if ((size_t)i >= listed) {
            out->other_queues += c;
            continue;
        }
        out->queues[i].count = c;
        if ((out->queues[i].queue = strdup(PQgetvalue(res[1], i, 0))) == NULL) st = RP_ERR_NOMEM;
        out->n_queues = (size_t)i + 1;
    }
    if (!spec->dry_run && st == RP_OK && PQntuples(res[2]) == 1) out->id = rp__pg_i64(res[2], 0, 0);
    if (spec->n_ids > 0) out->skipped = (int64_t)spec->n_ids - out->total;
    rp__pg_clear(res, nk);
    if (st == RP_OK && out->total == 0) st = RP_ERR_NOT_FOUND;
    if (st != RP_OK) rp_answer_set_made_cleanup(out);
done:
    free(ids);
    free(origin);
    free(reason);
    free(qsql);
    free(msql);
    return st;
}

/* Runs one statement of one set-row result (id in vals[0]). */
static rp_status rp_one_row(rp_pg_store *s, rp__pg_mode mode, const char *text, int n,
                            const char *const *vals, const char *op, rp_answer_set_row *out,
                            bool *found) {
    rp_status st = rp__pg_enter(s, mode, op);
    if (st != RP_OK) return st;
    char *sql = NULL;
    if ((st = rp__pg_schema_sql(s, text, &sql)) != RP_OK) return st;
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = n, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, op, NULL);
    free(sql);
    if (st != RP_OK) return st;
    *found = PQntuples(r) == 1;
    if (*found) st = rp_row(r, 0, out);
    PQclear(r);
    return st;
}

static rp_status rp_get(void *self, int64_t id, rp_answer_set_row *out) {
    char idb[24];
    const char *vals[] = {rp__pg_itoa(id, idb)};
    bool found = false;
    rp_status st = rp_one_row(self, RP__PG_READ, rp_sql_get, 1, vals, "answer_set_get", out, &found);
    return st == RP_OK && !found ? RP_ERR_NOT_FOUND : st;
}

static rp_status rp_cancel(void *self, int64_t id, const char *by, rp_answer_set_row *out) {
    char idb[24];
    const char *vals[] = {rp__pg_itoa(id, idb), by != NULL ? by : "?"};
    bool found = false;
    rp_status st =
        rp_one_row(self, RP__PG_WRITE, rp_sql_cancel, 2, vals, "answer_set_cancel", out, &found);
    if (st != RP_OK || found) return st;
    /* Not running: over already, or no such set. */
    st = rp_get(self, id, out);
    return st == RP_OK ? RP_ERR_CONFLICT : st;
}

static rp_status rp_take(void *self, const char *owner, int64_t lease_ms, rp_answer_set_row *out,
                         bool *found) {
    char lease[24];
    const char *vals[] = {owner, rp__pg_itoa(lease_ms, lease)};
    *found = false;
    return rp_one_row(self, RP__PG_WRITE, rp_sql_take, 2, vals, "answer_set_take", out, found);
}

static rp_status rp_step(void *self, int64_t id, const char *owner, int64_t lease_ms,
                         const rp_answer_set_mark *marks, size_t n_marks, int64_t after,
                         int64_t *ids, size_t max, size_t *n, rp_answer_set_row *out) {
    rp_pg_store *s = self;
    *n = 0;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "answer_set_step");
    if (st != RP_OK) return st;
    char *fence = NULL, *mark = NULL, *renew = NULL, *next = NULL, *mjson = NULL;
    rp__pg_cmd k[6];
    PGresult *res[6] = {NULL};
    size_t n_mk = n_marks > 0 ? 1 : 0; /* one statement for all the marks */
    size_t nk = n_mk + 5;
    if ((st = rp__pg_schema_sql(s, rp_sql_fence, &fence)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_mark, &mark)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_renew, &renew)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_next, &next)) != RP_OK ||
        (n_marks > 0 && (st = rp_marks_json(marks, n_marks, &mjson)) != RP_OK))
        goto done;
    char idb[24], lease[24], afterb[24], maxb[24];
    rp__pg_itoa(id, idb);
    const char *fvals[] = {idb, owner};
    const char *rvals[] = {idb, rp__pg_itoa(lease_ms, lease)};
    const char *nvals[] = {idb, rp__pg_itoa(after, afterb), rp__pg_itoa((int64_t)max, maxb)};
    k[0] = (rp__pg_cmd){.stmt = -1, .sql = "BEGIN"};
    k[1] = (rp__pg_cmd){.stmt = -1, .sql = fence, .n = 2, .values = fvals};
    /* Marks only under the fence: a set taken over meanwhile records
     * nothing of this runner's (the transaction is rolled back). */
    const char *mvals[] = {idb, mjson};
    if (n_mk) k[2] = (rp__pg_cmd){.stmt = -1, .sql = mark, .n = 2, .values = mvals};
    k[2 + n_mk] = (rp__pg_cmd){.stmt = -1, .sql = renew, .n = 2, .values = rvals};
    k[3 + n_mk] = (rp__pg_cmd){.stmt = -1, .sql = next, .n = 3, .values = nvals};
    k[4 + n_mk] = (rp__pg_cmd){.stmt = -1, .sql = "COMMIT"};
    /* The fence is read first, alone: the marks must not land when it fails. */
    PGresult *fr[2] = {NULL, NULL};
    st = rp__pg_run(s, k, 2, fr, "answer_set_step", NULL);
    if (st != RP_OK) goto done;
    bool mine = PQntuples(fr[1]) == 1 && strcmp(PQgetvalue(fr[1], 0, 0), "t") == 0;
    rp__pg_clear(fr, 2);
    if (!mine) {
        rp_status rst = rp__pg_rollback(s, "answer_set_step");
        st = rst == RP_OK ? RP_ERR_CONFLICT : rst;
        goto done;
    }
    st = rp__pg_run(s, k + 2, nk - 2, res, "answer_set_step", NULL);
    if (st != RP_OK) goto done;
    PGresult *rr = res[n_mk], *nr = res[n_mk + 1];
    if (PQntuples(rr) != 1) st = RP_ERR_INTERNAL;
    else st = rp_row(rr, 0, out);
    int rows = PQntuples(nr);
    for (int i = 0; st == RP_OK && i < rows && (size_t)i < max; i++) ids[(*n)++] = rp__pg_i64(nr, i, 0);
    rp__pg_clear(res, nk - 2);
done:
    free(fence);
    free(mark);
    free(renew);
    free(next);
    free(mjson);
    return st;
}

static rp_status rp_finish(void *self, int64_t id, const char *owner, rp_answer_set_state state,
                           const char *reason) {
    rp_pg_store *s = self;
    if ((int)state < 0 || state >= RP_ANSWER_SET_STATE_COUNT_) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "answer_set_finish");
    if (st != RP_OK) return st;
    char *sql = NULL;
    if ((st = rp__pg_schema_sql(s, rp_sql_finish, &sql)) != RP_OK) return st;
    char idb[24];
    const char *vals[] = {rp__pg_itoa(id, idb), owner, rp_answer_set_state_string(state), reason};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 4, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "answer_set_finish", NULL);
    free(sql);
    if (st == RP_OK) PQclear(r);
    return st;
}

void rp_pg_answer_set_port(rp_pg_store *s, rp_answer_set_port *out) {
    out->self = s;
    out->create = rp_create;
    out->get = rp_get;
    out->cancel = rp_cancel;
    out->take = rp_take;
    out->step = rp_step;
    out->finish = rp_finish;
}
