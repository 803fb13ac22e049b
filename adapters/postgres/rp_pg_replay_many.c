/* Replays of many gates with one commit each for the lock and claim and for
 * the settle (rp_pg_replay.h, "many"). Each gate is decided as the single
 * calls decide it (rp_pg_replay.c, rp_pg_gate.c's answer); only the
 * transaction is shared, so that a bulk answer pays one WAL flush per batch
 * instead of two per gate. */
#include "rp_pg_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_binarray.h"
#include "rp_pg_store_internal.h"
#include "rp_publish.h"

#define MS(x) "floor(extract(epoch FROM " x ") * 1000)::int8"

/* ids as a PostgreSQL array literal "{1,2,3}" (*out: free()). */
static rp_status rp_ids_literal(const int64_t *ids, size_t n, char **out) {
    size_t cap = n * 21 + 3, len = 0;
    char *b = malloc(cap);
    if (b == NULL) return RP_ERR_NOMEM;
    b[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(b + len, cap - len, "%s%lld", i ? "," : "", (long long)ids[i]);
    b[len++] = '}';
    b[len] = '\0';
    *out = b;
    return RP_OK;
}

/* The position of id among ids not yet found (sts still NOT_FOUND), or n. */
static size_t rp_find(const int64_t *ids, const rp_status *sts, size_t n, int64_t id) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id && sts[i] == RP_ERR_NOT_FOUND) return i;
    return n;
}

static char *rp_dupz(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    char *c = strdup(s);
    if (c == NULL) *ok = false;
    return c;
}

static void rp_rows_cleanup(rp_pg_replay_row *rows, size_t n) {
    for (size_t i = 0; i < n; i++) rp_pg_replay_row_cleanup(&rows[i]);
}

rp_status rp_pg_replay_lock_many(rp_pg_store *s, const int64_t *ids, size_t n,
                                 const char *const *by, rp_pg_replay_row *rows,
                                 rp_status *sts) {
    for (size_t i = 0; i < n; i++) {
        memset(&rows[i], 0, sizeof rows[i]);
        sts[i] = RP_ERR_NOT_FOUND;
    }
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "replay_lock_many");
    if (st != RP_OK) return st;
    char *sql = NULL, *arr = NULL;
    st = rp__pg_schema_sql(s,
                           "SELECT g.id, g.kind, g.answer, dl.identity IS NOT NULL, "
                           "dl.origin_queue, j.payload->>'vhost', dl.queue, dl.body, "
                           "dl.body_truncated, dl.headers::text, dl.properties::text, "
                           "g.claimed_by, " MS("g.claimed_at") ", " MS("now()") " "
                           "FROM {s}.gate g JOIN {s}.job j ON j.id = g.job_id "
                           "LEFT JOIN {s}.dead_letter dl ON dl.gate_id = g.id "
                           "WHERE g.id = ANY($1::int8[]) ORDER BY g.id FOR UPDATE OF g",
                           &sql);
    if (st == RP_OK) st = rp_ids_literal(ids, n, &arr);
    if (st != RP_OK) {
        free(sql);
        return st;
    }
    const char *vals[] = {arr};
    rp__pg_cmd k[2] = {{.stmt = -1, .sql = "BEGIN"},
                       {.stmt = -1, .sql = sql, .n = 1, .values = vals}};
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, k, 2, res, "replay_lock_many", NULL);
    free(sql);
    free(arr);
    if (st != RP_OK) return st;
    PGresult *r = res[1];
    bool mem = true;
    for (int t = 0; t < PQntuples(r); t++) {
        size_t i = rp_find(ids, sts, n, rp__pg_i64(r, t, 0));
        if (i == n) continue;
        rp_pg_replay_row *o = &rows[i];
        bool ok = rp_gate_kind_parse(PQgetvalue(r, t, 1), &o->kind);
        o->answered = !rp__pg_null(r, t, 2);
        if (ok && o->answered) ok = rp_choice_parse(PQgetvalue(r, t, 2), &o->answer);
        if (!ok) {
            sts[i] = RP_ERR_INTERNAL;
            continue;
        }
        bool claimed = !rp__pg_null(r, t, 11);
        if (claimed) snprintf(o->claimed_by, sizeof o->claimed_by, "%s", PQgetvalue(r, t, 11));
        o->claimed_at = claimed ? rp__pg_i64(r, t, 12) : 0;
        o->claim = rp_gate_claim_judge(claimed, o->claimed_at, rp__pg_i64(r, t, 13),
                                       s->claim_seconds);
        o->has_dead_letter = strcmp(PQgetvalue(r, t, 3), "t") == 0;
        if (o->has_dead_letter && !o->answered && !claimed) {
            o->origin_queue = rp_dupz(rp__pg_str(r, t, 4), &mem);
            o->vhost = rp_dupz(rp__pg_str(r, t, 5), &mem);
            o->queue = rp_dupz(rp__pg_str(r, t, 6), &mem);
            size_t bl = 0;
            unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, t, 7), &bl);
            if (b == NULL) {
                mem = false;
            } else {
                o->body = malloc(bl ? bl : 1);
                if (o->body == NULL) mem = false;
                else if (bl) memcpy(o->body, b, bl);
                o->body_len = bl;
                PQfreemem(b);
            }
            o->body_truncated = strcmp(PQgetvalue(r, t, 8), "t") == 0;
            o->headers_json = rp_dupz(rp__pg_str(r, t, 9), &mem);
            o->properties_json = rp_dupz(rp__pg_str(r, t, 10), &mem);
        }
        sts[i] = RP_OK;
    }
    rp__pg_clear(res, 2);
    if (!mem) {
        rp_rows_cleanup(rows, n);
        rp_status rst = rp__pg_rollback(s, "replay_lock_many");
        return rst == RP_OK ? RP_ERR_NOMEM : rst;
    }
    for (size_t i = 0; i < n; i++) {
        if (sts[i] != RP_OK || rows[i].answered) continue;
        if (rows[i].claim == RP_GATE_CLAIM_STALE) {
            /* Taken over and reported, not published again (rp_gate.h);
             * committed with the batch. */
            st = rp__pg_claim_take_over(s, ids[i], by[i], RP_CHOICE_REPLAY,
                                        &rows[i].takeover_seq);
            if (st != RP_OK) {
                rp_rows_cleanup(rows, n);
                return st;
            }
        } else if (rows[i].claim == RP_GATE_CLAIM_NONE) {
            rows[i].open = true;
        }
    }
    return RP_OK;
}

rp_status rp_pg_replay_claim_many_commit(rp_pg_store *s, const int64_t *ids, size_t n,
                                         rp_time_ms *at, bool *claimed) {
    for (size_t i = 0; i < n; i++) {
        at[i] = 0;
        claimed[i] = false;
    }
    if (n == 0) {
        rp__pg_cmd c = {.stmt = -1, .sql = "COMMIT"};
        PGresult *cr = NULL;
        rp_status st = rp__pg_run(s, &c, 1, &cr, "replay_claim_many", NULL);
        if (st == RP_OK) PQclear(cr);
        return st;
    }
    char *sql = NULL, *arr = NULL;
    rp_status st = rp__pg_schema_sql(s,
                                     "UPDATE {s}.gate SET claimed_by = $2::text, claimed_at = "
                                     "now() WHERE id = ANY($1::int8[]) AND answer IS NULL AND "
                                     "claimed_by IS NULL RETURNING id, " MS("claimed_at"),
                                     &sql);
    if (st == RP_OK) st = rp_ids_literal(ids, n, &arr);
    if (st != RP_OK) {
        free(sql);
        if (rp__pg_rollback(s, "replay_claim_many") != RP_OK) {} /* closed: the locks went too */
        return st;
    }
    const char *vals[] = {arr, s->claimer};
    rp__pg_cmd k[2] = {{.stmt = -1, .sql = sql, .n = 2, .values = vals},
                       {.stmt = -1, .sql = "COMMIT"}};
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, k, 2, res, "replay_claim_many", NULL);
    free(sql);
    free(arr);
    if (st != RP_OK) return st;
    for (int t = 0; t < PQntuples(res[0]); t++) {
        int64_t id = rp__pg_i64(res[0], t, 0);
        for (size_t i = 0; i < n; i++)
            if (ids[i] == id && !claimed[i]) {
                claimed[i] = true;
                at[i] = rp__pg_i64(res[0], t, 1);
                break;
            }
    }
    rp__pg_clear(res, 2);
    return RP_OK;
}

/* The settle of a batch of replays, one statement: each gate answered
 * replay (still open: answer IS NULL; the caller locked them and judged
 * each), its job succeeded, a GateAnswered event appended, as the gate
 * port's answer (rp_pg_sql.c, gate_answer) does for one gate. $1 gate ids
 * (int8[]), $2 answered_by and $3 the request's own "by" or NULL (text[],
 * binary, one per id), $4 the choice's and $5 the outcome's names. Rows:
 * gate, event seq, event at (ms), job. The per-gate statements it replaces
 * cost a parse, plan and CTE set-up each, about a millisecond of
 * PostgreSQL a gate (bench/REPORT.md). */
static const char rp_sql_settle[] =
    "WITH a AS (SELECT * FROM unnest($1::int8[], $2::text[], $3::text[]) AS a(id, by, note)), "
    "g AS (UPDATE {s}.gate SET answer = $4::text, answered_by = a.by, answered_at = now(), "
    "claimed_by = NULL, claimed_at = NULL FROM a WHERE gate.id = a.id AND gate.answer IS NULL "
    "RETURNING gate.id, gate.job_id, gate.kind, a.by, a.note, gate.vhost), "
    "j AS (UPDATE {s}.job SET state = 'succeeded', finished_at = now(), lease_owner = NULL, "
    "lease_expires_at = NULL, updated_at = now() FROM g WHERE job.id = g.job_id "
    "RETURNING job.id, job.project_id), "
    "ev AS (INSERT INTO {s}.ledger (kind, project_id, payload) "
    "SELECT 'GateAnswered', j.project_id, jsonb_build_object('gate', g.id, 'job', j.id, "
    "'kind', g.kind, 'choice', $4::text, 'outcome', $5::text, 'by', g.by) "
    "|| CASE WHEN g.note IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('note', g.note) END "
    "|| CASE WHEN g.vhost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('vhost', g.vhost) END "
    "FROM g JOIN j ON j.id = g.job_id ORDER BY g.id RETURNING seq, at, payload) "
    "SELECT (ev.payload->>'gate')::int8, ev.seq, " MS("ev.at") ", (ev.payload->>'job')::int8, "
    "ev.payload->>'vhost' FROM ev";

rp_status rp_pg_replay_settle_many(rp_pg_store *s, const rp_publisher_port *publisher,
                                   const int64_t *ids, size_t n, const char *const *by,
                                   const char *const *note, rp_answer_result *out,
                                   rp_status *sts) {
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        sts[i] = RP_ERR_NOT_FOUND;
    }
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "replay_settle_many");
    if (st != RP_OK) return st;
    char *sql = NULL, *arr = NULL;
    st = rp__pg_schema_sql(s,
                           "SELECT id, kind, answer, claimed_by, " MS("claimed_at") ", "
                           MS("now()") " FROM {s}.gate WHERE id = ANY($1::int8[]) "
                           "ORDER BY id FOR UPDATE",
                           &sql);
    if (st == RP_OK) st = rp_ids_literal(ids, n, &arr);
    if (st != RP_OK) {
        free(sql);
        return st;
    }
    const char *lvals[] = {arr};
    rp__pg_cmd lock[2] = {{.stmt = -1, .sql = "BEGIN"},
                          {.stmt = -1, .sql = sql, .n = 1, .values = lvals}};
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, lock, 2, res, "replay_settle_many", NULL);
    free(sql);
    free(arr);
    if (st != RP_OK) return st;
    /* Each gate decided as the gate port's answer decides a replay: an
     * answered gate gives its first answer, a claim not this process's
     * settles nothing (fenced). */
    bool *apply = calloc(n ? n : 1, sizeof *apply);
    if (apply == NULL) {
        rp__pg_clear(res, 2);
        rp_status rst = rp__pg_rollback(s, "replay_settle_many");
        return rst == RP_OK ? RP_ERR_NOMEM : rst;
    }
    size_t n_apply = 0;
    PGresult *r = res[1];
    for (int t = 0; t < PQntuples(r); t++) {
        size_t i = rp_find(ids, sts, n, rp__pg_i64(r, t, 0));
        if (i == n) continue;
        rp_answer_result *o = &out[i];
        rp_choice first = RP_CHOICE_DISMISS;
        bool answered = !rp__pg_null(r, t, 2);
        if (!rp_gate_kind_parse(PQgetvalue(r, t, 1), &o->kind) ||
            (answered && !rp_choice_parse(PQgetvalue(r, t, 2), &first))) {
            sts[i] = RP_ERR_INTERNAL;
            continue;
        }
        bool claimed = !rp__pg_null(r, t, 3);
        bool mine = claimed && strcmp(PQgetvalue(r, t, 3), s->claimer) == 0;
        if (claimed) snprintf(o->claimed_by, sizeof o->claimed_by, "%s", PQgetvalue(r, t, 3));
        o->claimed_at = claimed ? rp__pg_i64(r, t, 4) : 0;
        rp_gate_claim_state claim =
            rp_gate_claim_judge(claimed, o->claimed_at, rp__pg_i64(r, t, 5), s->claim_seconds);
        if (answered) {
            o->outcome = RP_OUTCOME_ALREADY_ANSWERED;
            o->choice = first;
            sts[i] = RP_OK;
        } else if (!rp_gate_accepts(o->kind, RP_CHOICE_REPLAY)) {
            sts[i] = RP_ERR_CONFLICT;
        } else if (claimed && !mine) {
            o->claim = claim == RP_GATE_CLAIM_NONE ? RP_GATE_CLAIM_LIVE : claim;
            sts[i] = RP_ERR_BUSY;
        } else {
            apply[i] = true;
            sts[i] = RP_ERR_INTERNAL; /* until its answer is read back */
            n_apply++;
        }
    }
    rp__pg_clear(res, 2);
    /* Answer them all, change their jobs, append their events, commit: one
     * statement and one round trip for the batch (rp_sql_settle). */
    int64_t *aid = calloc(n_apply + 1, sizeof *aid);
    rp_pg_binarray by_a = {0}, note_a = {0};
    char *ssql = NULL, *sarr = NULL;
    PGresult *ar[2] = {NULL, NULL};
    if (aid == NULL) {
        st = RP_ERR_NOMEM;
        rp_status rst = rp__pg_rollback(s, "replay_settle_many");
        if (rst != RP_OK) st = rst;
        goto out;
    }
    size_t m = 0;
    if (n_apply > 0) {
        rp_pg_binarray_begin(&by_a, RP_PG_OID_TEXT, (uint32_t)n_apply);
        rp_pg_binarray_begin(&note_a, RP_PG_OID_TEXT, (uint32_t)n_apply);
    }
    for (size_t i = 0; i < n; i++) {
        if (!apply[i]) continue;
        aid[m++] = ids[i];
        rp_pg_binarray_add_str(&by_a, by[i]);
        rp_pg_binarray_add_str(&note_a, note[i]);
    }
    if (m == 0) {
        rp__pg_cmd c = {.stmt = -1, .sql = "COMMIT"};
        st = rp__pg_run(s, &c, 1, ar, "replay_settle_many", NULL);
        if (st == RP_OK) PQclear(ar[0]);
        goto out;
    }
    st = rp__pg_schema_sql(s, rp_sql_settle, &ssql);
    if (st == RP_OK) st = rp_ids_literal(aid, m, &sarr);
    if (st == RP_OK && (!rp_pg_binarray_ok(&by_a) || !rp_pg_binarray_ok(&note_a)))
        st = RP_ERR_NOMEM;
    if (st != RP_OK) {
        rp_status rst = rp__pg_rollback(s, "replay_settle_many");
        if (rst != RP_OK) st = rst;
        goto out;
    }
    const char *svals[] = {sarr, by_a.data, note_a.data, rp_choice_string(RP_CHOICE_REPLAY),
                           rp_outcome_string(RP_OUTCOME_REPLAYED)};
    const int slens[] = {0, (int)by_a.len, (int)note_a.len, 0, 0};
    const int sfmts[] = {0, 1, 1, 0, 0};
    rp__pg_cmd cmds[2] = {{.stmt = -1, .sql = ssql, .n = 5, .values = svals, .lengths = slens,
                           .formats = sfmts},
                          {.stmt = -1, .sql = "COMMIT"}};
    st = rp__pg_run(s, cmds, 2, ar, "replay_settle_many", NULL);
    if (st != RP_OK) goto out;
    for (int t = 0; t < PQntuples(ar[0]); t++) {
        int64_t gid = rp__pg_i64(ar[0], t, 0);
        size_t i = 0;
        while (i < n && !(apply[i] && ids[i] == gid && sts[i] == RP_ERR_INTERNAL)) i++;
        if (i == n) continue;
        rp_answer_result *o = &out[i];
        o->event.seq = rp__pg_i64(ar[0], t, 1);
        o->event.at = rp__pg_i64(ar[0], t, 2);
        o->job_id = rp__pg_i64(ar[0], t, 3);
        const char *vhost = rp__pg_str(ar[0], t, 4); /* NULL: a gate without one */
        snprintf(o->vhost, sizeof o->vhost, "%s", vhost ? vhost : "");
        o->outcome = RP_OUTCOME_REPLAYED;
        o->choice = RP_CHOICE_REPLAY;
        o->committed = true;
        sts[i] = RP_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (apply[i] && sts[i] == RP_ERR_INTERNAL) {
            /* Locked and open a moment ago, so this cannot be. */
            char idb[24];
            RP_WARN("gate answer changed nothing", "gate", rp__pg_itoa(ids[i], idb), NULL);
        }
    rp__pg_clear(ar, 2);
    /* Committed: each answer goes where every answer goes (the events
     * feed); a feed that fails loses nothing of it. */
    if (publisher != NULL)
        for (size_t i = 0; i < n; i++)
            if (sts[i] == RP_OK && out[i].committed)
                (void)rp_publish_answer(publisher, ids[i], by[i], note[i], &out[i]);
out:
    free(apply);
    free(aid);
    free(ssql);
    free(sarr);
    rp_pg_binarray_cleanup(&by_a);
    rp_pg_binarray_cleanup(&note_a);
    return st;
}
