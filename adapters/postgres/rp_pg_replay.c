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

rp_status rp_pg_replay_read(rp_pg_store *s, int64_t gate_id, rp_pg_replay_row *out) {
    memset(out, 0, sizeof *out);
    rp_status st = rp__pg_enter(s, RP__PG_READ, "replay_read");
    if (st != RP_OK) return st;
    char *sql = NULL;
    st = rp_sql(s,
                "SELECT g.kind, g.answer, dl.identity IS NOT NULL, dl.origin_queue, "
                "j.payload->>'vhost', dl.queue, dl.body, dl.body_truncated, dl.headers::text, "
                "dl.properties::text FROM {s}.gate g JOIN {s}.job j ON j.id = g.job_id "
                "LEFT JOIN {s}.dead_letter dl ON dl.gate_id = g.id WHERE g.id = $1::int8",
                &sql);
    if (st != RP_OK) return st;
    char id[24];
    const char *vals[] = {rp__pg_itoa(gate_id, id)};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 1, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "replay_read", NULL);
    free(sql);
    if (st != RP_OK) return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return RP_ERR_NOT_FOUND;
    }
    bool ok = rp_gate_kind_parse(PQgetvalue(r, 0, 0), &out->kind);
    out->answered = !rp__pg_null(r, 0, 1);
    if (ok && out->answered) ok = rp_choice_parse(PQgetvalue(r, 0, 1), &out->answer);
    if (!ok) {
        PQclear(r);
        return RP_ERR_INTERNAL;
    }
    out->has_dead_letter = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
    bool mem = true;
    if (out->has_dead_letter) {
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
    PQclear(r);
    if (!mem) {
        rp_pg_replay_row_cleanup(out);
        return RP_ERR_NOMEM;
    }
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
