/* The stats store port over PostgreSQL (rp_pg_stats.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_pg_stats.h"
#include "rp_pg_store_internal.h"

#define RP_TS(p) "to_timestamp(" p "::int8 / 1000.0)"
#define RP_MS(x) "floor(extract(epoch FROM " x ") * 1000)::int8"
/* $1 now (ms), $2 window seconds: the window's start. */
#define RP_SINCE RP_TS("$1") " - $2::int8 * interval '1 second'"
#define RP_CLAIMABLE                                                                            \
    "(j.state = 'ready' AND j.run_after <= " RP_TS("$1")                                       \
    " AND (j.depends_on IS NULL OR d.state = 'succeeded'))"

/* The four arms of the WHERE are each one index (the partial indexes of
 * ready and of leased rows, job_by_created, job_succeeded_by_time), so the
 * planner ORs four bitmap scans: written as state IN (...) it reads the
 * whole table (300,000 old rows: 200 ms against 0.3 ms). */
static const char rp_sql_kinds[] =
    "SELECT j.project_id, j.kind, count(*) FILTER (WHERE " RP_CLAIMABLE "), "
    "count(*) FILTER (WHERE j.state = 'leased'), "
    "count(*) FILTER (WHERE j.created_at >= " RP_SINCE "), "
    "count(*) FILTER (WHERE j.succeeded_at >= " RP_SINCE "), "
    RP_MS("min(greatest(j.run_after, j.created_at, d.finished_at)) FILTER (WHERE " RP_CLAIMABLE ")")
    " FROM {s}.job j LEFT JOIN {s}.job d ON d.id = j.depends_on "
    "WHERE j.state = 'ready' OR j.state = 'leased' OR j.created_at >= " RP_SINCE " "
    "OR j.succeeded_at >= " RP_SINCE " "
    "GROUP BY j.project_id, j.kind ORDER BY j.project_id, j.kind";
/* $1 now (ms), $2 window seconds, $3 vhost, $4 queue. */
static const char rp_sql_rates[] =
    "SELECT EXISTS (SELECT 1 FROM {s}.queue_counter WHERE vhost = $3::text AND queue = $4::text), "
    "(SELECT coalesce(sum(published), 0)::int8 FROM {s}.queue_increment "
    "WHERE vhost = $3::text AND queue = $4::text AND at >= " RP_SINCE "), "
    "(SELECT coalesce(sum(acked), 0)::int8 FROM {s}.queue_increment "
    "WHERE vhost = $3::text AND queue = $4::text AND at >= " RP_SINCE ")";
/* A job subject's job joined by its id (the key's digits, checked first). */
static const char rp_sql_sightings[] =
    "SELECT s.key, j.project_id, j.kind FROM {s}.sighting s LEFT JOIN {s}.job j ON j.id = "
    "CASE WHEN s.key ~ '^job_queue\\|[A-Z_]+\\|job:[0-9]{1,18}$' "
    "THEN substring(s.key FROM 'job:([0-9]+)$')::int8 END "
    "WHERE s.condition IN ('STALLED', 'WEDGED', 'DIVERGENT', 'WAITING_DEPTH') ORDER BY s.key";


/* Enters the store, runs one statement (text with {s}) and returns its
 * result in *r (PQclear). */
static rp_status rp_read(rp_pg_store *s, const char *text, int n, const char *const *vals,
                         const char *op, PGresult **r) {
    rp_status st = rp__pg_enter(s, RP__PG_READ, op);
    if (st != RP_OK) return st;
    char *sql = NULL;
    if ((st = rp__pg_schema_sql(s, text, &sql)) != RP_OK) return st;
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = n, .values = vals};
    st = rp__pg_run(s, &k, 1, r, op, NULL);
    free(sql);
    return st;
}

static char *rp_dup(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    char *c = strdup(s);
    if (c == NULL) *ok = false;
    return c;
}

static rp_status rp_kinds(void *self, rp_time_ms now, int64_t window_seconds,
                          rp_stats_kind_count **rows, size_t *n) {
    rp_pg_store *s = self;
    *rows = NULL;
    *n = 0;
    if (window_seconds < 0) return RP_ERR_INVALID;
    char nowb[24], win[24];
    const char *vals[] = {rp__pg_itoa(now, nowb), rp__pg_itoa(window_seconds, win)};
    PGresult *r = NULL;
    rp_status st = rp_read(s, rp_sql_kinds, 2, vals, "stats_kinds", &r);
    if (st != RP_OK) return st;
    int m = PQntuples(r);
    rp_stats_kind_count *out = m > 0 ? calloc((size_t)m, sizeof *out) : NULL;
    if (m > 0 && out == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    bool ok = true;
    for (int i = 0; i < m; i++) {
        rp_stats_kind *k = &out[i].row;
        k->project = rp_dup(rp__pg_str(r, i, 0), &ok);
        k->kind = rp_dup(rp__pg_str(r, i, 1), &ok);
        k->waiting = rp__pg_i64(r, i, 2);
        k->active = rp__pg_i64(r, i, 3);
        k->intake = rp__pg_i64(r, i, 4);
        k->drained = rp__pg_i64(r, i, 5);
        out[i].oldest_known = !rp__pg_null(r, i, 6);
        out[i].oldest_since = rp__pg_i64(r, i, 6);
    }
    PQclear(r);
    if (!ok) {
        rp_stats_kind_counts_free(out, (size_t)m);
        return RP_ERR_NOMEM;
    }
    *rows = out;
    *n = (size_t)m;
    return RP_OK;
}

static rp_status rp_rates(void *self, const char *vhost, const char *name, rp_time_ms now,
                          int64_t window_seconds, rp_queue_rates *out) {
    rp_pg_store *s = self;
    *out = (rp_queue_rates){0};
    if (vhost == NULL || name == NULL || window_seconds < 0) return RP_ERR_INVALID;
    char nowb[24], win[24];
    const char *vals[] = {rp__pg_itoa(now, nowb), rp__pg_itoa(window_seconds, win), vhost, name};
    PGresult *r = NULL;
    rp_status st = rp_read(s, rp_sql_rates, 4, vals, "stats_queue_rates", &r);
    if (st != RP_OK) return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return RP_ERR_INTERNAL;
    }
    out->known = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    out->published = rp__pg_i64(r, 0, 1);
    out->acked = rp__pg_i64(r, 0, 2);
    PQclear(r);
    return RP_OK;
}

static rp_status rp_sightings(void *self, rp_stats_sighting **rows, size_t *n) {
    rp_pg_store *s = self;
    *rows = NULL;
    *n = 0;
    PGresult *r = NULL;
    rp_status st = rp_read(s, rp_sql_sightings, 0, NULL, "stats_sightings", &r);
    if (st != RP_OK) return st;
    int m = PQntuples(r);
    rp_stats_sighting *out = m > 0 ? calloc((size_t)m, sizeof *out) : NULL;
    if (m > 0 && out == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    bool ok = true;
    for (int i = 0; i < m; i++) {
        out[i].key = rp_dup(rp__pg_str(r, i, 0), &ok);
        out[i].project = rp_dup(rp__pg_str(r, i, 1), &ok);
        out[i].kind = rp_dup(rp__pg_str(r, i, 2), &ok);
    }
    PQclear(r);
    if (!ok) {
        rp_stats_sightings_free(out, (size_t)m);
        return RP_ERR_NOMEM;
    }
    *rows = out;
    *n = (size_t)m;
    return RP_OK;
}

void rp_pg_stats_port(rp_pg_store *s, rp_stats_store_port *out) {
    *out = (rp_stats_store_port){
        .self = s, .kinds = rp_kinds, .queue_rates = rp_rates, .sightings = rp_sightings};
}
