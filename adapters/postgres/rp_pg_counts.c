/* Counts for the daemon's metrics (rp_pg_store.h): the open gates by kind.
 * Read only; runs inside a taken row's transaction if one is open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

rp_status rp_pg_store_count_open_gates(rp_pg_store *s, int64_t by_kind[RP_GATE_KIND_COUNT_]) {
    for (int i = 0; i < RP_GATE_KIND_COUNT_; i++) by_kind[i] = 0;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "count_open_gates");
    if (st != RP_OK) return st;
    PGconn *c = rp_pg_conn_handle(s->conn);
    char *qs = PQescapeIdentifier(c, s->schema, strlen(s->schema));
    if (qs == NULL) return RP_ERR_NOMEM;
    static const char fmt[] =
        "SELECT kind, count(*) FROM %s.gate WHERE answer IS NULL GROUP BY kind";
    size_t n = sizeof fmt + strlen(qs);
    char *sql = malloc(n);
    if (sql == NULL) {
        PQfreemem(qs);
        return RP_ERR_NOMEM;
    }
    snprintf(sql, n, fmt, qs);
    PQfreemem(qs);
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 0};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "count_open_gates", NULL);
    free(sql);
    if (st != RP_OK) return st;
    for (int i = 0; i < PQntuples(r); i++) {
        rp_gate_kind kind;
        if (rp_gate_kind_parse(PQgetvalue(r, i, 0), &kind)) by_kind[kind] = rp__pg_i64(r, i, 1);
    }
    PQclear(r);
    return RP_OK;
}
