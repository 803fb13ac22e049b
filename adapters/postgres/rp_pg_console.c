/* The browser console's store read (rp_pg_console.h). */
#include "rp_pg_console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

rp_status rp_pg_console_feed(rp_pg_store *s, int limit, char **json, size_t *len) {
    *json = NULL;
    *len = 0;
    if (limit < 1) limit = 1;
    if (limit > 500) limit = 500;
    static const char op[] = "console feed";
    rp_status st = rp__pg_enter(s, RP__PG_READ, op);
    if (st != RP_OK) return st;
    PGconn *c = rp_pg_conn_handle(s->conn);
    char *qs = PQescapeIdentifier(c, s->schema, strlen(s->schema));
    if (qs == NULL) return RP_ERR_NOMEM;
    /* One statement: both lists by their indexes (sighting's primary key
     * is small; the ledger walks its seq backwards, newest first), and the
     * open gates grouped over all of them from the gate rows alone (origin
     * and reason are copied onto the gate at park time, migration 0013):
     * an index-only scan of gate_open_by_queue, which holds every column
     * the groups need, no dead letter read (bench/REPORT.md, "the console's
     * groups": 0.5 s at 100,000 open gates with the dead letters joined). */
    static const char fmt[] =
        "WITH grp AS (SELECT g.kind, g.origin_queue AS origin, g.reason, count(*) AS n, "
        "min(g.created_at) AS oldest, max(g.created_at) AS newest "
        "FROM %s.gate g WHERE g.answer IS NULL GROUP BY 1, 2, 3) "
        "SELECT json_build_object("
        "'sightings', COALESCE((SELECT json_agg(json_build_object('key', key, 'condition', "
        "condition, 'opened_at', opened_at, 'opened_seq', opened_seq) ORDER BY opened_at DESC) "
        "FROM (SELECT * FROM %s.sighting ORDER BY opened_at DESC LIMIT 200) z), '[]'::json), "
        "'events', COALESCE((SELECT json_agg(json_build_object('seq', seq, 'at', at, 'kind', "
        "kind, 'project', project_id, 'payload', payload) ORDER BY seq DESC) "
        "FROM (SELECT * FROM %s.ledger ORDER BY seq DESC LIMIT %d) e), '[]'::json), "
        "'groups', COALESCE((SELECT json_agg(json_build_object('kind', kind, 'origin', origin, "
        "'reason', reason, 'count', n, 'oldest', oldest, 'newest', newest) "
        "ORDER BY n DESC, oldest, kind, origin, reason) "
        "FROM (SELECT * FROM grp ORDER BY n DESC, oldest, kind, origin, reason LIMIT %d) q), "
        "'[]'::json), "
        "'groups_total', (SELECT count(*) FROM grp), "
        "'open_gates', (SELECT COALESCE(sum(n), 0) FROM grp))::text";
    size_t cap = sizeof fmt + 3 * strlen(qs) + 32;
    char *sql = malloc(cap);
    if (sql == NULL) {
        PQfreemem(qs);
        return RP_ERR_NOMEM;
    }
    snprintf(sql, cap, fmt, qs, qs, qs, limit, RP_PG_CONSOLE_GROUPS);
    PQfreemem(qs);
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 0};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, op, NULL);
    free(sql);
    if (st != RP_OK) return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return RP_ERR_INTERNAL;
    }
    size_t n = (size_t)PQgetlength(r, 0, 0);
    *json = malloc(n + 1);
    if (*json == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    memcpy(*json, PQgetvalue(r, 0, 0), n);
    (*json)[n] = '\0';
    *len = n;
    PQclear(r);
    return RP_OK;
}

rp_status rp_pg_console_feed_hook(void *self, int limit, char **json, size_t *len) {
    return rp_pg_console_feed(*(rp_pg_store **)self, limit, json, len);
}
