/* The dead letter behind a gate, and the backfill's record of quorum
 * dead-letter queues it has read (rp_pg_replay.h). Plain parameterised SQL
 * (not prepared: these run once per replay or per queue). */
#include "rp_pg_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

/* Expands {s} in text with the quoted schema (*out: free()). */
static rp_status rp_sql(rp_pg_store *s, const char *text, char **out) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    char *qs = c ? PQescapeIdentifier(c, s->schema, strlen(s->schema)) : NULL;
    if (qs == NULL) return RP_ERR_NOMEM;
    rp__pg_subst sub = {qs, "''", "''", "''"};
    rp_status st = rp__pg_sql_expand(text, &sub, out);
    PQfreemem(qs);
    return st;
}

static char *rp_dupz(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    char *c = strdup(s);
    if (c == NULL) *ok = false;
    return c;
}

void rp_pg_replay_row_cleanup(rp_pg_replay_row *r) {
    free(r->origin_queue);
    free(r->vhost);
    free(r->queue);
    free(r->body);
    free(r->headers_json);
    free(r->properties_json);
    memset(r, 0, sizeof *r);
}

rp_status rp_pg_replay_lock(rp_pg_store *s, int64_t gate_id, const char *by,
                            rp_pg_replay_row *out) {
    memset(out, 0, sizeof *out);
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "replay_lock");
    if (st != RP_OK) return st;
    char *sql = NULL;
    st = rp_sql(s,
                "SELECT g.kind, g.answer, dl.identity IS NOT NULL, dl.origin_queue, "
                "j.payload->>'vhost', dl.queue, dl.body, dl.body_truncated, dl.headers::text, "
                "dl.properties::text, g.claimed_by, "
                "floor(extract(epoch FROM g.claimed_at) * 1000)::int8, "
                "floor(extract(epoch FROM now()) * 1000)::int8 "
                "FROM {s}.gate g JOIN {s}.job j ON j.id = g.job_id "
                "LEFT JOIN {s}.dead_letter dl ON dl.gate_id = g.id WHERE g.id = $1::int8 "
                "FOR UPDATE OF g",
                &sql);
    if (st != RP_OK) return st;
    char id[24];
    const char *vals[] = {rp__pg_itoa(gate_id, id)};
    rp__pg_cmd k[2] = {{.stmt = -1, .sql = "BEGIN"},
                       {.stmt = -1, .sql = sql, .n = 1, .values = vals}};
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, k, 2, res, "replay_lock", NULL);
    free(sql);
    if (st != RP_OK) return st;
    PGresult *r = res[1];
    if (PQntuples(r) != 1) {
        rp__pg_clear(res, 2);
        rp_status rst = rp__pg_rollback(s, "replay_lock");
        return rst == RP_OK ? RP_ERR_NOT_FOUND : rst;
    }
    bool ok = rp_gate_kind_parse(PQgetvalue(r, 0, 0), &out->kind);
    out->answered = !rp__pg_null(r, 0, 1);
    if (ok && out->answered) ok = rp_choice_parse(PQgetvalue(r, 0, 1), &out->answer);
    if (!ok) {
        rp__pg_clear(res, 2);
        rp_status rst = rp__pg_rollback(s, "replay_lock");
        return rst == RP_OK ? RP_ERR_INTERNAL : rst;
    }
    bool claimed = !rp__pg_null(r, 0, 10);
    if (claimed) snprintf(out->claimed_by, sizeof out->claimed_by, "%s", PQgetvalue(r, 0, 10));
    out->claimed_at = claimed ? rp__pg_i64(r, 0, 11) : 0;
    out->claim = rp_gate_claim_judge(claimed, out->claimed_at, rp__pg_i64(r, 0, 12),
                                     s->claim_seconds);
    out->has_dead_letter = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
    bool mem = true;
    if (out->has_dead_letter && !out->answered && !claimed) {
        out->origin_queue = rp_dupz(rp__pg_str(r, 0, 3), &mem);
        out->vhost = rp_dupz(rp__pg_str(r, 0, 4), &mem);
        out->queue = rp_dupz(rp__pg_str(r, 0, 5), &mem);
        size_t n = 0;
        unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 6), &n);
        if (b == NULL) {
            mem = false;
        } else {
            out->body = malloc(n ? n : 1);
            if (out->body == NULL) mem = false;
            else if (n) memcpy(out->body, b, n);
            out->body_len = n;
            PQfreemem(b);
        }
        out->body_truncated = strcmp(PQgetvalue(r, 0, 7), "t") == 0;
        out->headers_json = rp_dupz(rp__pg_str(r, 0, 8), &mem);
        out->properties_json = rp_dupz(rp__pg_str(r, 0, 9), &mem);
    }
    rp__pg_clear(res, 2);
    if (!mem) {
        rp_pg_replay_row_cleanup(out);
        rp_status rst = rp__pg_rollback(s, "replay_lock");
        return rst == RP_OK ? RP_ERR_NOMEM : rst;
    }
    if (out->answered || out->claim == RP_GATE_CLAIM_LIVE) {
        /* Nothing to change: the lock goes with the transaction. */
        return rp__pg_rollback(s, "replay_lock");
    }
    if (out->claim == RP_GATE_CLAIM_STALE) {
        /* Taken over and reported, not published again (rp_gate.h). */
        st = rp__pg_claim_take_over(s, gate_id, by, RP_CHOICE_REPLAY, &out->takeover_seq);
        if (st != RP_OK) return st;
        rp__pg_cmd c = {.stmt = -1, .sql = "COMMIT"};
        PGresult *cr = NULL;
        st = rp__pg_run(s, &c, 1, &cr, "replay_lock", NULL);
        if (st != RP_OK) return st;
        PQclear(cr);
        return RP_OK;
    }
    out->open = true;
    return RP_OK;
}

rp_status rp_pg_replay_claim_commit(rp_pg_store *s, int64_t gate_id, rp_time_ms *claimed_at) {
    *claimed_at = 0;
    char *sql = NULL;
    rp_status st = rp_sql(s,
                          "UPDATE {s}.gate SET claimed_by = $2::text, claimed_at = now() "
                          "WHERE id = $1::int8 AND answer IS NULL AND claimed_by IS NULL "
                          "RETURNING floor(extract(epoch FROM claimed_at) * 1000)::int8",
                          &sql);
    if (st != RP_OK) {
        if (rp__pg_rollback(s, "replay_claim") != RP_OK) {} /* closed: the lock went too */
        return st;
    }
    char id[24];
    const char *vals[] = {rp__pg_itoa(gate_id, id), s->claimer};
    rp__pg_cmd k[2] = {{.stmt = -1, .sql = sql, .n = 2, .values = vals},
                       {.stmt = -1, .sql = "COMMIT"}};
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, k, 2, res, "replay_claim", NULL);
    free(sql);
    if (st != RP_OK) return st;
    bool claimed = PQntuples(res[0]) == 1;
    if (claimed) *claimed_at = rp__pg_i64(res[0], 0, 0);
    rp__pg_clear(res, 2);
    /* Locked, open and unclaimed a moment ago in the same transaction. */
    return claimed ? RP_OK : RP_ERR_INTERNAL;
}

rp_status rp_pg_replay_claim_abandon(rp_pg_store *s) {
    return rp__pg_rollback(s, "replay_claim");
}

rp_status rp_pg_replay_release(rp_pg_store *s, int64_t gate_id, bool *released) {
    *released = false;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "replay_release");
    if (st != RP_OK) return st;
    char *sql = NULL;
    st = rp_sql(s,
                "UPDATE {s}.gate SET claimed_by = NULL, claimed_at = NULL "
                "WHERE id = $1::int8 AND claimed_by = $2::text",
                &sql);
    if (st != RP_OK) return st;
    char id[24];
    const char *vals[] = {rp__pg_itoa(gate_id, id), s->claimer};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 2, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "replay_release", NULL);
    free(sql);
    if (st != RP_OK) return st;
    *released = strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    return RP_OK;
}

rp_status rp_pg_backfill_was_read(rp_pg_store *s, const char *vhost, const char *queue,
                                  bool *read, int64_t *unread) {
    *read = false;
    *unread = -1;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "backfill_was_read");
    if (st != RP_OK) return st;
    char *sql = NULL;
    /* The first record (there is one per queue); 'unread' is absent from
     * records written before it was kept, and then unknown. */
    st = rp_sql(s,
                "SELECT CASE WHEN jsonb_typeof(payload->'unread') = 'number' "
                "THEN (payload->>'unread')::numeric::int8 ELSE -1 END "
                "FROM {s}.ledger WHERE kind = '" RP_PG_LEDGER_BACKFILL_READ "' "
                "AND payload->>'vhost' = $1::text AND payload->>'queue' = $2::text "
                "ORDER BY seq LIMIT 1",
                &sql);
    if (st != RP_OK) return st;
    const char *vals[] = {vhost, queue};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 2, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "backfill_was_read", NULL);
    free(sql);
    if (st != RP_OK) return st;
    *read = PQntuples(r) > 0;
    if (*read) {
        long long u = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        *unread = u < 0 ? -1 : (int64_t)u;
    }
    PQclear(r);
    return RP_OK;
}

rp_status rp_pg_backfill_mark_read(rp_pg_store *s, const char *vhost, const char *queue,
                                   size_t n, int64_t unread) {
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "backfill_mark_read");
    if (st != RP_OK) return st;
    char *sql = NULL;
    st = rp_sql(s,
                "INSERT INTO {s}.ledger (kind, project_id, payload) VALUES ('"
                RP_PG_LEDGER_BACKFILL_READ "', '" RP_PG_BUS_PROJECT "', "
                "jsonb_build_object('vhost', $1::text, 'queue', $2::text, 'read', $3::int8, "
                "'unread', $4::int8))",
                &sql);
    if (st != RP_OK) return st;
    char num[24], left[24];
    /* An unknown remainder is written as null. */
    const char *vals[] = {vhost, queue, rp__pg_itoa((int64_t)n, num),
                          unread < 0 ? NULL : rp__pg_itoa(unread, left)};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 4, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "backfill_mark_read", NULL);
    free(sql);
    if (st != RP_OK) return st;
    PQclear(r);
    return RP_OK;
}

rp_status rp__pg_claim_take_over(rp_pg_store *s, int64_t gate_id, const char *by,
                                 rp_choice choice, int64_t *seq) {
    *seq = 0;
    char *sql = NULL;
    /* The CTEs read the gate as it was (one snapshot): the event names the
     * claim that the update clears. */
    rp_status st = rp_sql(
        s,
        "WITH c AS (SELECT g.id, g.claimed_by, g.claimed_at, j.id AS job, j.project_id "
        "FROM {s}.gate g JOIN {s}.job j ON j.id = g.job_id "
        "WHERE g.id = $1::int8 AND g.claimed_by IS NOT NULL), "
        "u AS (UPDATE {s}.gate SET claimed_by = NULL, claimed_at = NULL FROM c "
        "WHERE gate.id = c.id RETURNING gate.id), "
        "ev AS (INSERT INTO {s}.ledger (kind, project_id, payload) SELECT '"
        RP_PG_LEDGER_CLAIM_TAKEN_OVER "', c.project_id, jsonb_build_object('gate', c.id, "
        "'job', c.job, 'claimed_by', c.claimed_by, 'claimed_at', c.claimed_at, 'by', $2::text, "
        "'choice', $3::text) FROM c RETURNING seq) "
        "SELECT (SELECT seq FROM ev), (SELECT count(*) FROM u)",
        &sql);
    if (st != RP_OK) {
        if (rp__pg_rollback(s, "claim_take_over") != RP_OK) {} /* closed: the lock went too */
        return st;
    }
    char id[24];
    const char *vals[] = {rp__pg_itoa(gate_id, id), by, rp_choice_string(choice)};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 3, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "claim_take_over", NULL);
    free(sql);
    if (st != RP_OK) return st;
    *seq = rp__pg_i64(r, 0, 0);
    PQclear(r);
    return RP_OK;
}

/* The advisory lock key of a queue's backfill read: per schema, vhost and
 * queue (a collision only makes two reads wait on each other). */
#define RP_BACKFILL_KEY                                                                  \
    "hashtextextended('reaper.backfill/' || $1::text || '/' || $2::text || '/' || "     \
    "$3::text, 0)"

rp_status rp_pg_backfill_lock(rp_pg_store *s, const char *vhost, const char *queue, bool *got) {
    *got = false;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "backfill_lock");
    if (st != RP_OK) return st;
    const char *vals[] = {s->schema, vhost, queue};
    rp__pg_cmd k = {.stmt = -1, .sql = "SELECT pg_try_advisory_lock(" RP_BACKFILL_KEY ")", .n = 3,
                    .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "backfill_lock", NULL);
    if (st != RP_OK) return st;
    *got = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return RP_OK;
}

rp_status rp_pg_backfill_unlock(rp_pg_store *s, const char *vhost, const char *queue) {
    rp_status st = rp__pg_enter(s, RP__PG_READ, "backfill_unlock");
    if (st != RP_OK) return st;
    const char *vals[] = {s->schema, vhost, queue};
    /* On a session that is not the one that locked (a reconnect), the lock
     * went with the old one: false, and nothing to do. */
    rp__pg_cmd k = {.stmt = -1,
                    .sql = "SELECT pg_advisory_unlock(" RP_BACKFILL_KEY ")",
                    .n = 3, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "backfill_unlock", NULL);
    if (st != RP_OK) return st;
    PQclear(r);
    return RP_OK;
}

/* ---- the replays part's store port ----------------------------------------------- */

static rp_status rp_rsp_ready(void *self) {
    rp_pg_replay_src *w = self;
    char err[256];
    return rp_pg_conn_ensure(w->conn, err, sizeof err) == RP_OK ? RP_OK : RP_ERR_UNAVAILABLE;
}

static const rp_config *rp_rsp_config(void *self) { return *((rp_pg_replay_src *)self)->cfg; }

static void rp_rsp_claim_seconds(rp_pg_replay_src *w) {
    rp_pg_store_set_claim_seconds(w->store, (*w->cfg)->control.replay_claim_seconds);
}

static rp_status rp_rsp_lock(void *self, int64_t gate, const char *by, rp_replay_row *out) {
    rp_pg_replay_src *w = self;
    memset(out, 0, sizeof *out);
    rp_rsp_claim_seconds(w);
    rp_pg_replay_row row;
    rp_status st = rp_pg_replay_lock(w->store, gate, by, &row);
    if (st != RP_OK) return st;
    *out = (rp_replay_row){
        .kind = row.kind,
        .answered = row.answered,
        .answer = row.answer,
        .claim = row.claim,
        .claimed_at = row.claimed_at,
        .has_dead_letter = row.has_dead_letter,
        .origin_queue = row.origin_queue,
        .vhost = row.vhost,
        .body = row.body,
        .body_len = row.body_len,
        .body_truncated = row.body_truncated,
        .headers_json = row.headers_json,
        .properties_json = row.properties_json,
    };
    memcpy(out->claimed_by, row.claimed_by, sizeof out->claimed_by);
    row.origin_queue = row.vhost = row.headers_json = row.properties_json = NULL;
    row.body = NULL;
    rp_pg_replay_row_cleanup(&row);
    return RP_OK;
}

static rp_status rp_rsp_claim(void *self, int64_t gate, rp_time_ms *at) {
    return rp_pg_replay_claim_commit(((rp_pg_replay_src *)self)->store, gate, at);
}

static rp_status rp_rsp_abandon(void *self) {
    return rp_pg_replay_claim_abandon(((rp_pg_replay_src *)self)->store);
}

static rp_status rp_rsp_release(void *self, int64_t gate, bool *released) {
    return rp_pg_replay_release(((rp_pg_replay_src *)self)->store, gate, released);
}

/* Fenced on this process's claim (rp_pg_store.h GATES); through the gate
 * port, so that the answer goes to the events feed like any other. */
static rp_status rp_rsp_settle(void *self, int64_t gate, const char *by, const char *note,
                               rp_answer_result *out) {
    rp_pg_replay_src *w = self;
    rp_rsp_claim_seconds(w);
    const rp_gate_port *g = w->gates;
    return g->answer(g->self, gate, RP_CHOICE_REPLAY, by, note, out);
}

/* The row of the port from the adapter's, its strings and body moved. */
static void rp_rsp_row_move(rp_pg_replay_row *row, rp_replay_row *out) {
    *out = (rp_replay_row){
        .kind = row->kind,
        .answered = row->answered,
        .answer = row->answer,
        .claim = row->claim,
        .claimed_at = row->claimed_at,
        .has_dead_letter = row->has_dead_letter,
        .origin_queue = row->origin_queue,
        .vhost = row->vhost,
        .body = row->body,
        .body_len = row->body_len,
        .body_truncated = row->body_truncated,
        .headers_json = row->headers_json,
        .properties_json = row->properties_json,
    };
    memcpy(out->claimed_by, row->claimed_by, sizeof out->claimed_by);
    row->origin_queue = row->vhost = row->headers_json = row->properties_json = NULL;
    row->body = NULL;
    rp_pg_replay_row_cleanup(row);
}

static rp_status rp_rsp_lock_many(void *self, const int64_t *gate, size_t n,
                                  const char *const *by, rp_replay_row *out, rp_status *sts) {
    rp_pg_replay_src *w = self;
    for (size_t i = 0; i < n; i++) memset(&out[i], 0, sizeof out[i]);
    rp_rsp_claim_seconds(w);
    rp_pg_replay_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (rows == NULL) return RP_ERR_NOMEM;
    rp_status st = rp_pg_replay_lock_many(w->store, gate, n, by, rows, sts);
    if (st == RP_OK)
        for (size_t i = 0; i < n; i++) rp_rsp_row_move(&rows[i], &out[i]);
    free(rows);
    return st;
}

static rp_status rp_rsp_claim_many(void *self, const int64_t *gate, size_t n, rp_time_ms *at,
                                   bool *claimed) {
    return rp_pg_replay_claim_many_commit(((rp_pg_replay_src *)self)->store, gate, n, at,
                                          claimed);
}

static rp_status rp_rsp_settle_many(void *self, const int64_t *gate, size_t n,
                                    const char *const *by, const char *const *note,
                                    rp_answer_result *out, rp_status *sts) {
    rp_pg_replay_src *w = self;
    rp_rsp_claim_seconds(w);
    return rp_pg_replay_settle_many(w->store, w->publisher, gate, n, by, note, out, sts);
}

void rp_pg_replay_store_port(rp_pg_replay_src *src, rp_replay_store_port *out) {
    *out = (rp_replay_store_port){
        .self = src,
        .ready = rp_rsp_ready,
        .config = rp_rsp_config,
        .lock = rp_rsp_lock,
        .claim = rp_rsp_claim,
        .abandon = rp_rsp_abandon,
        .release = rp_rsp_release,
        .settle = rp_rsp_settle,
        .lock_many = rp_rsp_lock_many,
        .claim_many = rp_rsp_claim_many,
        .settle_many = rp_rsp_settle_many,
    };
}
