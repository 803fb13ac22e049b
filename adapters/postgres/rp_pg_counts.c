/* Counts for the daemon's metrics (rp_pg_store.h): the open gates by kind
 * and the open sightings by condition. Read only; runs inside a taken row's
 * transaction if one is open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_gauges_port.h"
#include "rp_pg_store_internal.h"

/* Counts the rows of table (in the store's schema) matching where ("" for
 * all) by column, and puts each count at the index parse gives its name;
 * names parse does not know are left out. out[0..n) is zeroed first. With
 * age_ms (NULL: not asked), also how long ago the oldest row of each name
 * was created (created_at, on the database's clock), 0 where there is
 * none. */
static rp_status rp_count_by(rp_pg_store *s, const char *op, const char *column,
                             const char *table, const char *where, int64_t *out, size_t n,
                             bool (*parse)(const char *name, size_t *index), int64_t *age_ms) {
    for (size_t i = 0; i < n; i++) out[i] = 0;
    if (age_ms)
        for (size_t i = 0; i < n; i++) age_ms[i] = 0;
    rp_status st = rp__pg_enter(s, RP__PG_READ, op);
    if (st != RP_OK) return st;
    PGconn *c = rp_pg_conn_handle(s->conn);
    char *qs = PQescapeIdentifier(c, s->schema, strlen(s->schema));
    if (qs == NULL) return RP_ERR_NOMEM;
    static const char fmt[] = "SELECT %s, count(*)%s FROM %s.%s%s GROUP BY 1";
    const char *age = age_ms ? ", (extract(epoch FROM now() - min(created_at)) * 1000)::bigint"
                             : "";
    size_t len = sizeof fmt + strlen(column) + strlen(age) + strlen(qs) + strlen(table) +
                 strlen(where);
    char *sql = malloc(len);
    if (sql == NULL) {
        PQfreemem(qs);
        return RP_ERR_NOMEM;
    }
    snprintf(sql, len, fmt, column, age, qs, table, where);
    PQfreemem(qs);
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 0};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, op, NULL);
    free(sql);
    if (st != RP_OK) return st;
    for (int i = 0; i < PQntuples(r); i++) {
        size_t at;
        if (!parse(PQgetvalue(r, i, 0), &at) || at >= n) continue;
        out[at] = rp__pg_i64(r, i, 1);
        if (age_ms) age_ms[at] = rp__pg_i64(r, i, 2);
    }
    PQclear(r);
    return RP_OK;
}

static bool rp_gate_kind_at(const char *name, size_t *index) {
    rp_gate_kind kind;
    if (!rp_gate_kind_parse(name, &kind)) return false;
    *index = (size_t)kind;
    return true;
}

static bool rp_condition_at(const char *name, size_t *index) {
    rp_condition cond;
    if (!rp_condition_parse(name, &cond)) return false;
    *index = (size_t)cond;
    return true;
}

rp_status rp_pg_store_count_open_gates(rp_pg_store *s, int64_t by_kind[RP_GATE_KIND_COUNT_]) {
    return rp_count_by(s, "count_open_gates", "kind", "gate", " WHERE answer IS NULL", by_kind,
                       RP_GATE_KIND_COUNT_, rp_gate_kind_at, NULL);
}

rp_status rp_pg_store_count_open_gates_aged(rp_pg_store *s, int64_t by_kind[RP_GATE_KIND_COUNT_],
                                            int64_t oldest_age_ms[RP_GATE_KIND_COUNT_]) {
    return rp_count_by(s, "count_open_gates", "kind", "gate", " WHERE answer IS NULL", by_kind,
                       RP_GATE_KIND_COUNT_, rp_gate_kind_at, oldest_age_ms);
}

rp_status rp_pg_store_count_open_sightings(rp_pg_store *s,
                                           int64_t by_condition[RP_COND_COUNT_]) {
    return rp_count_by(s, "count_open_sightings", "condition", "sighting", "", by_condition,
                       RP_COND_COUNT_, rp_condition_at, NULL);
}

/* ---- the gauges port (rp_pg_store.h) ---------------------------------------- */

static bool rp_pg_gauges_store_up(void *self) {
    return rp_pg_conn_is_up((*(rp_pg_store *const *)self)->conn);
}

static rp_status rp_pg_gauges_gates(void *self, int64_t by_kind[RP_GATE_KIND_COUNT_],
                                    int64_t age_ms[RP_GATE_KIND_COUNT_]) {
    return rp_pg_store_count_open_gates_aged(*(rp_pg_store *const *)self, by_kind, age_ms);
}

static rp_status rp_pg_gauges_sightings(void *self, int64_t by_condition[RP_COND_COUNT_]) {
    return rp_pg_store_count_open_sightings(*(rp_pg_store *const *)self, by_condition);
}

void rp_pg_gauges_port(rp_pg_store *const *store, rp_gauges_port *out) {
    *out = (rp_gauges_port){.self = (void *)store,
                            .store_up = rp_pg_gauges_store_up,
                            .open_gates_aged = rp_pg_gauges_gates,
                            .open_sightings = rp_pg_gauges_sightings};
}
