/* The job triage port over PostgreSQL (rp_pg_jobs.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_jobs.h"
#include "rp_pg_store_internal.h"

/* A time column as Unix ms; NULL for NULL and for +-infinity. */
#define RP_MSF(x) "CASE WHEN isfinite(" x ") THEN floor(extract(epoch FROM " x ") * 1000)::int8 END"
#define RP_STR_(x) #x
#define RP_STR(x) RP_STR_(x)

/* The columns of an rp_job_row, in rp_row()'s order. */
#define RP_JOB_COLS                                                                           \
    "j.id, j.project_id, j.kind, j.state, j.attempts, j.max_attempts, j.lease_owner, " RP_MSF( \
        "j.lease_expires_at") ", " RP_MSF("j.run_after") ", j.depends_on, " RP_MSF(          \
        "j.finished_at") ", " RP_MSF("j.created_at") ", " RP_MSF("j.updated_at")
#define RP_JOB_NCOLS 13

/* The filters: $1 state or NULL, $2 project or NULL, $3 kind or NULL. */
#define RP_JOB_FILTER                                                                  \
    "($1::text IS NULL OR j.state = $1::text) AND ($2::text IS NULL OR j.project_id = $2::text) " \
    "AND ($3::text IS NULL OR j.kind = $3::text)"

/* $4 after, $5 limit + 1. */
static const char rp_sql_page[] = "SELECT " RP_JOB_COLS " FROM {s}.job j WHERE " RP_JOB_FILTER
                                  " AND j.id > $4::int8 ORDER BY j.id LIMIT $5::int8";
static const char rp_sql_count[] = "SELECT count(*) FROM {s}.job j WHERE " RP_JOB_FILTER;
/* $1 id. */
static const char rp_sql_get[] =
    "SELECT " RP_JOB_COLS ", left(j.payload::text, " RP_STR(RP_JOB_PAYLOAD_SHOWN)
    "), length(j.payload::text) > " RP_STR(RP_JOB_PAYLOAD_SHOWN) " FROM {s}.job j WHERE j.id = $1::int8";
/* $1 id: the row locked, as it is. */
static const char rp_sql_lock[] =
    "SELECT j.state, j.lease_owner FROM {s}.job j WHERE j.id = $1::int8 FOR UPDATE";
/* $1 id, $2 by, $3 reason, $4 the state it was in, $5 the owner it had. Runs
 * under rp_sql_lock's lock; fenced on the state all the same. */
static const char rp_sql_cancel[] =
    "WITH j AS (UPDATE {s}.job SET state = 'failed', lease_owner = NULL, "
    "lease_expires_at = NULL, finished_at = now(), updated_at = now() "
    "WHERE id = $1::int8 AND state IN ('ready', 'leased') RETURNING *), "
    "ev AS (INSERT INTO {s}.ledger (kind, project_id, payload) "
    "SELECT '" RP_LEDGER_JOB_CANCELLED "', j.project_id, jsonb_build_object('job', j.id, "
    "'project', j.project_id, 'kind', j.kind, 'from', $4::text, 'owner', $5::text, "
    "'by', $2::text, 'reason', $3::text) FROM j RETURNING seq) "
    "SELECT " RP_JOB_COLS ", (SELECT seq FROM ev) FROM j";


static char *rp_dup(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    char *c = strdup(s);
    if (c == NULL) *ok = false;
    return c;
}

/* Row i of r (columns RP_JOB_COLS from 0) into *j (initialised). */
static rp_status rp_row(const PGresult *r, int i, rp_job_row *j) {
    bool ok = true;
    j->id = rp__pg_i64(r, i, 0);
    j->project = rp_dup(rp__pg_str(r, i, 1), &ok);
    j->kind = rp_dup(rp__pg_str(r, i, 2), &ok);
    if (!rp_job_state_parse(PQgetvalue(r, i, 3), &j->state)) {
        rp_job_row_cleanup(j);
        return RP_ERR_INTERNAL;
    }
    j->attempts = (int32_t)rp__pg_i64(r, i, 4);
    j->max_attempts = (int32_t)rp__pg_i64(r, i, 5);
    j->lease_owner = rp_dup(rp__pg_str(r, i, 6), &ok);
    j->has_lease_expires = !rp__pg_null(r, i, 7);
    j->lease_expires_at = rp__pg_i64(r, i, 7);
    j->run_after = rp__pg_i64(r, i, 8);
    j->depends_on = rp__pg_i64(r, i, 9);
    j->has_finished = !rp__pg_null(r, i, 10);
    j->finished_at = rp__pg_i64(r, i, 10);
    j->created_at = rp__pg_i64(r, i, 11);
    j->updated_at = rp__pg_i64(r, i, 12);
    if (!ok) {
        rp_job_row_cleanup(j);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

static rp_status rp_list(void *self, const rp_job_query *q, rp_job_page *out) {
    rp_pg_store *s = self;
    if (q == NULL || out == NULL || q->limit < 1 || q->limit > 1000 || q->after < 0 ||
        (!q->any_state && ((int)q->state < 0 || q->state >= RP_JOB_STATE_COUNT_)))
        return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "list_jobs");
    if (st != RP_OK) return st;
    char *page_sql = NULL, *count_sql = NULL;
    if ((st = rp__pg_schema_sql(s, rp_sql_page, &page_sql)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_count, &count_sql)) != RP_OK) {
        free(page_sql);
        return st;
    }
    char after[24], limit[24];
    const char *vals[] = {q->any_state ? NULL : rp_job_state_string(q->state), q->project,
                          q->kind, rp__pg_itoa(q->after, after),
                          rp__pg_itoa((int64_t)q->limit + 1, limit)};
    rp__pg_cmd k[2] = {
        {.stmt = -1, .sql = page_sql, .n = 5, .values = vals},
        {.stmt = -1, .sql = count_sql, .n = 3, .values = vals},
    };
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, k, 2, res, "list_jobs", NULL);
    free(page_sql);
    free(count_sql);
    if (st != RP_OK) return st;
    int rows = PQntuples(res[0]);
    size_t n = (size_t)rows > q->limit ? q->limit : (size_t)rows;
    rp_job_page page;
    rp_job_page_init(&page);
    page.total = PQntuples(res[1]) == 1 ? rp__pg_i64(res[1], 0, 0) : 0;
    if (n > 0 && (page.jobs = calloc(n, sizeof *page.jobs)) == NULL) st = RP_ERR_NOMEM;
    for (size_t i = 0; st == RP_OK && i < n; i++) {
        st = rp_row(res[0], (int)i, &page.jobs[i]);
        if (st == RP_OK) page.n = i + 1;
    }
    if (st == RP_OK && (size_t)rows > q->limit) page.next_after = page.jobs[n - 1].id;
    rp__pg_clear(res, 2);
    if (st != RP_OK) {
        rp_job_page_cleanup(&page);
        return st;
    }
    *out = page;
    return RP_OK;
}

static rp_status rp_get(void *self, int64_t id, rp_job_row *out) {
    rp_pg_store *s = self;
    if (out == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "get_job");
    if (st != RP_OK) return st;
    char *sql = NULL;
    if ((st = rp__pg_schema_sql(s, rp_sql_get, &sql)) != RP_OK) return st;
    char idb[24];
    const char *vals[] = {rp__pg_itoa(id, idb)};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 1, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "get_job", NULL);
    free(sql);
    if (st != RP_OK) return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return RP_ERR_NOT_FOUND;
    }
    rp_job_row j;
    rp_job_row_init(&j);
    st = rp_row(r, 0, &j);
    if (st == RP_OK && !rp__pg_null(r, 0, RP_JOB_NCOLS)) {
        bool ok = true;
        j.payload = rp_dup(PQgetvalue(r, 0, RP_JOB_NCOLS), &ok);
        j.payload_truncated = strcmp(PQgetvalue(r, 0, RP_JOB_NCOLS + 1), "t") == 0;
        if (!ok) {
            rp_job_row_cleanup(&j);
            st = RP_ERR_NOMEM;
        }
    }
    PQclear(r);
    if (st == RP_OK) *out = j;
    return st;
}

/* Ends the cancel's transaction without a change and returns st. */
static rp_status rp_cancel_nothing(rp_pg_store *s, rp_status st) {
    rp_status rst = rp__pg_rollback(s, "cancel_job");
    return rst == RP_OK ? st : rst;
}

static rp_status rp_cancel(void *self, int64_t id, const char *by, const char *reason,
                           rp_job_cancel_result *out) {
    rp_pg_store *s = self;
    if (out == NULL || reason == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "cancel_job");
    if (st != RP_OK) return st;
    char *lock_sql = NULL, *cancel_sql = NULL;
    if ((st = rp__pg_schema_sql(s, rp_sql_lock, &lock_sql)) != RP_OK ||
        (st = rp__pg_schema_sql(s, rp_sql_cancel, &cancel_sql)) != RP_OK) {
        free(lock_sql);
        return st;
    }
    /* 1. Lock the row: a worker's update in flight finishes first, and
     * the state read is the one the cancel changes. */
    char idb[24];
    const char *lock_vals[] = {rp__pg_itoa(id, idb)};
    rp__pg_cmd lock[2] = {
        {.stmt = -1, .sql = "BEGIN"},
        {.stmt = -1, .sql = lock_sql, .n = 1, .values = lock_vals},
    };
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, lock, 2, res, "cancel_job", NULL);
    free(lock_sql);
    if (st != RP_OK) {
        free(cancel_sql);
        return st;
    }
    if (PQntuples(res[1]) != 1) {
        rp__pg_clear(res, 2);
        free(cancel_sql);
        return rp_cancel_nothing(s, RP_ERR_NOT_FOUND);
    }
    bool state_ok = rp_job_state_parse(PQgetvalue(res[1], 0, 0), &out->was);
    bool ok = true;
    out->was_owner = rp_dup(rp__pg_str(res[1], 0, 1), &ok);
    rp__pg_clear(res, 2);
    if (!state_ok || !ok) {
        free(cancel_sql);
        return rp_cancel_nothing(s, state_ok ? RP_ERR_NOMEM : RP_ERR_INTERNAL);
    }
    if (!rp_job_cancellable(out->was)) {
        free(cancel_sql);
        return rp_cancel_nothing(s, RP_ERR_CONFLICT);
    }

    /* 2. The change and its ledger event, then COMMIT: one round trip. */
    const char *vals[] = {idb, by, reason, rp_job_state_string(out->was), out->was_owner};
    rp__pg_cmd apply[2] = {
        {.stmt = -1, .sql = cancel_sql, .n = 5, .values = vals},
        {.stmt = -1, .sql = "COMMIT"},
    };
    st = rp__pg_run(s, apply, 2, res, "cancel_job", NULL);
    free(cancel_sql);
    if (st != RP_OK) return st;
    if (PQntuples(res[0]) != 1 || rp__pg_null(res[0], 0, RP_JOB_NCOLS)) {
        /* Locked and cancellable a moment ago, so this cannot be. */
        rp__pg_clear(res, 2);
        RP_WARN("job cancel changed nothing", "job", idb, NULL);
        return RP_ERR_INTERNAL;
    }
    st = rp_row(res[0], 0, &out->job);
    out->seq = rp__pg_i64(res[0], 0, RP_JOB_NCOLS);
    rp__pg_clear(res, 2);
    return st;
}

void rp_pg_jobs_port(rp_pg_store *s, rp_jobs_port *out) {
    out->self = s;
    out->list = rp_list;
    out->get = rp_get;
    out->cancel = rp_cancel;
}
