/* The PostgreSQL store: life cycle, the session (connect, prepare, forget),
 * the pipeline every statement goes through, error mapping, and the clock
 * port (rp_pg_store.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rp_clock.h"
#include "rp_log.h"
#include "rp_pg_store_internal.h"
#include "rp_text.h"

rp_pg_store *rp_pg_store_new(rp_pg_conn *conn, const char *schema) {
    if (conn == NULL || schema == NULL || *schema == '\0') return NULL;
    rp_pg_store *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->schema = strdup(schema);
    if (s->schema == NULL) {
        free(s);
        return NULL;
    }
    s->conn = conn;
    s->timeout_ms = RP_PG_STORE_TIMEOUT_MS;
    snprintf(s->claimer, sizeof s->claimer, "%s", rp_pg_instance_id());
    s->claim_seconds = RP_PG_CLAIM_SECONDS;
    return s;
}

static char rp_instance[160];
static pthread_once_t rp_instance_once = PTHREAD_ONCE_INIT;

static void rp_instance_init(void) {
    char host[128] = "";
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    long long ms = (long long)rp_clock_wall_ms();
    snprintf(rp_instance, sizeof rp_instance, "%.100s:%ld:%lld", host, (long)getpid(), ms);
}

const char *rp_pg_instance_id(void) {
    (void)pthread_once(&rp_instance_once, rp_instance_init);
    return rp_instance;
}

void rp_pg_store_set_claimer(rp_pg_store *s, const char *claimer) {
    if (s != NULL && claimer != NULL) snprintf(s->claimer, sizeof s->claimer, "%s", claimer);
}

const char *rp_pg_store_claimer(const rp_pg_store *s) { return s->claimer; }

void rp_pg_store_set_claim_seconds(rp_pg_store *s, int64_t seconds) {
    if (s != NULL) s->claim_seconds = seconds;
}

static void rp_free_lent(rp_pg_store *s) {
    PQclear(s->held_res);
    s->held_res = NULL;
    free(s->taken.rows);
    free(s->taken.view);
    s->taken.rows = NULL;
    s->taken.view = NULL;
    s->taken.n = s->taken.cap = 0;
    PQclear(s->claim_res);
    s->claim_res = NULL;
    free(s->claim_view);
    s->claim_view = NULL;
    PQclear(s->sight_res);
    s->sight_res = NULL;
    free(s->sight_view);
    s->sight_view = NULL;
    rp__pg_lent_forget(&s->held_long);
    rp__pg_lent_forget(&s->waiting);
    rp__pg_lent_forget(&s->wedge);
    rp__pg_lent_forget(&s->divergent);
}

void rp_pg_store_free(rp_pg_store *s) {
    if (s == NULL) return;
    /* A taken row's transaction must not outlive the store on a connection
     * the caller keeps using. */
    if (s->taken.locked && rp_pg_conn_is_up(s->conn) &&
        rp_pg_conn_generation(s->conn) == s->gen) {
        rp_status st = rp__pg_rollback(s, "free");
        (void)st; /* on failure the connection was closed, which ends it too */
    }
    rp_free_lent(s);
    free(s->schema);
    free(s);
}

void rp_pg_store_set_timeout(rp_pg_store *s, int timeout_ms) {
    s->timeout_ms = timeout_ms >= 1 ? timeout_ms : 1;
}

/* ---- small helpers ---- */

const char *rp__pg_itoa(int64_t v, char buf[24]) {
    rp_text_i64(v, buf);
    return buf;
}

bool rp__pg_null(const PGresult *r, int row, int col) { return PQgetisnull(r, row, col) != 0; }

int64_t rp__pg_i64(const PGresult *r, int row, int col) {
    if (PQgetisnull(r, row, col)) return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

const char *rp__pg_str(const PGresult *r, int row, int col) {
    if (PQgetisnull(r, row, col)) return NULL;
    return PQgetvalue(r, row, col);
}

void rp__pg_clear(PGresult **res, size_t n) {
    for (size_t i = 0; i < n; i++) {
        PQclear(res[i]);
        res[i] = NULL;
    }
}

void rp__pg_forget_row(rp_pg_store *s) {
    s->taken.active = false;
    s->taken.locked = false;
}

/* The session is gone or unusable: close it so that nothing of it (an
 * open transaction, a half-read pipeline) is ever reused; the next call
 * connects afresh and prepares again. */
static void rp_lose_session(rp_pg_store *s) {
    rp_pg_conn_close(s->conn);
    s->pending = 0;
    rp__pg_forget_row(s);
    s->ready = false;
}

void rp__pg_lose_session(rp_pg_store *s) { rp_lose_session(s); }

/* ---- errors ---- */

static rp_status rp_map_sqlstate(PGconn *c, const char *code) {
    if (c == NULL || PQstatus(c) != CONNECTION_OK) return RP_ERR_UNAVAILABLE;
    if (code == NULL || strlen(code) != 5) return RP_ERR_INTERNAL;
    if (strncmp(code, "08", 2) == 0 || strncmp(code, "53", 2) == 0) return RP_ERR_UNAVAILABLE;
    /* Shutdown, cancel and statement_timeout (57014), and lock_timeout
     * (55P03): the store cannot do it now, not "this row is bad". A park
     * that waited store.lock_timeout_ms behind someone's lock is held and
     * tried again with backoff, like a store that went away; as a
     * per-message failure it was held until the next reconnect instead. */
    if (strcmp(code, "57P01") == 0 || strcmp(code, "57P02") == 0 ||
        strcmp(code, "57P03") == 0 || strcmp(code, "57014") == 0 || strcmp(code, "55P03") == 0)
        return RP_ERR_UNAVAILABLE;
    if (strncmp(code, "40", 2) == 0) return RP_ERR_CONFLICT;
    return RP_ERR_INTERNAL;
}

static void rp_log_failure(const char *op, const char *what, const char *code, const char *msg) {
    char line[400];
    rp_pg_error_line(msg, line, sizeof line);
    RP_WARN("store statement failed", "op", op, "step", what, "sqlstate",
            code && *code ? code : "-", "error", line, NULL);
}

/* ---- the pipeline ---- */

typedef enum rp_wait_result { RP_WAIT_OK = 0, RP_WAIT_TIMEOUT, RP_WAIT_BROKEN } rp_wait_result;

/* Polls the socket until ev is ready or the deadline passes. */
static rp_wait_result rp_poll(PGconn *c, short ev, int64_t deadline) {
    int fd = PQsocket(c);
    if (fd < 0) return RP_WAIT_BROKEN;
    for (;;) {
        int64_t left = deadline - rp_clock_mono_ms();
        if (left <= 0) return RP_WAIT_TIMEOUT;
        struct pollfd p = {.fd = fd, .events = ev};
        int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0) return RP_WAIT_OK;
        if (r < 0 && errno != EINTR) return RP_WAIT_BROKEN;
    }
}

/* Sends what libpq has buffered. */
static rp_wait_result rp_flush(PGconn *c, int64_t deadline) {
    for (;;) {
        int r = PQflush(c);
        if (r == 0) return RP_WAIT_OK;
        if (r < 0) return RP_WAIT_BROKEN;
        rp_wait_result w = rp_poll(c, POLLOUT | POLLIN, deadline);
        if (w != RP_WAIT_OK) return w;
        /* Reading keeps the server from blocking on a full socket. */
        if (!PQconsumeInput(c)) return RP_WAIT_BROKEN;
    }
}

/* The next result, waiting no later than the deadline. *got NULL is a
 * legitimate answer (the end of one query's results). */
static rp_wait_result rp_next(PGconn *c, int64_t deadline, PGresult **got) {
    *got = NULL;
    while (PQisBusy(c)) {
        if (PQstatus(c) != CONNECTION_OK) return RP_WAIT_BROKEN;
        rp_wait_result w = rp_poll(c, POLLIN, deadline);
        if (w != RP_WAIT_OK) return w;
        if (!PQconsumeInput(c)) return RP_WAIT_BROKEN;
    }
    *got = PQgetResult(c);
    return RP_WAIT_OK;
}

static bool rp_ok_status(ExecStatusType t) {
    return t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK;
}

/* Sends n commands and their sync into the session's pipeline (entering
 * pipeline mode when nothing is outstanding) and flushes, without reading.
 * RP_OK, or RP_ERR_UNAVAILABLE when the session broke (closed; whatever was
 * outstanding is lost with it). */
rp_status rp__pg_send(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, const char *op) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    int64_t deadline = rp_clock_mono_ms() + s->timeout_ms;
    const char *broke = NULL;
    rp_wait_result w = RP_WAIT_OK;
    if (c == NULL || PQstatus(c) != CONNECTION_OK) {
        broke = "not connected";
        goto lost;
    }
    if (s->pending > 0 && s->pending_gen != rp_pg_conn_generation(s->conn)) {
        broke = "a new session under an open pipeline";
        goto lost;
    }
    if (s->pending == 0 && (PQsetnonblocking(c, 1) != 0 || PQenterPipelineMode(c) != 1)) {
        broke = "cannot enter pipeline mode";
        goto lost;
    }
    for (size_t i = 0; i < n; i++) {
        const rp__pg_cmd *k = &cmds[i];
        int ok = k->stmt >= 0 ? PQsendQueryPrepared(c, s->names[k->stmt], k->n, k->values,
                                                    k->lengths, k->formats, 0)
                              : PQsendQueryParams(c, k->sql, k->n, NULL, k->values, k->lengths,
                                                  k->formats, 0);
        if (!ok) {
            broke = "send";
            goto lost;
        }
    }
    if (!PQpipelineSync(c)) {
        broke = "sync";
        goto lost;
    }
    s->pending++;
    s->pending_gen = rp_pg_conn_generation(s->conn);
    if ((w = rp_flush(c, deadline)) != RP_WAIT_OK) {
        broke = "flush";
        goto lost;
    }
    return RP_OK;
lost: {
    char line[300];
    rp_pg_error_line(c ? PQerrorMessage(c) : "not connected", line, sizeof line);
    RP_WARN("store connection lost", "op", op, "step", broke,
            "error", w == RP_WAIT_TIMEOUT ? "timed out" : line, NULL);
    rp_lose_session(s);
    return RP_ERR_UNAVAILABLE;
}
}

/* rp__pg_recv, or with keep the raw results (rp__pg_run_each). */
static rp_status rp_recv(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                         const char *op, char code[6], bool keep) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    int64_t deadline = rp_clock_mono_ms() + s->timeout_ms;
    for (size_t i = 0; i < n; i++) res[i] = NULL;
    code[0] = '\0';
    const char *broke = NULL;
    rp_wait_result w = RP_WAIT_OK;
    /* Nothing outstanding: the session that held it was lost (and logged). */
    if (s->pending == 0 || c == NULL || PQstatus(c) != CONNECTION_OK ||
        s->pending_gen != rp_pg_conn_generation(s->conn)) {
        s->pending = 0;
        return RP_ERR_UNAVAILABLE;
    }

    /* Each command gives its result(s) and a NULL; then the sync. */
    PGresult *failed = NULL;
    for (size_t i = 0; i < n; i++) {
        PGresult *r = NULL;
        if ((w = rp_next(c, deadline, &r)) != RP_WAIT_OK || r == NULL) {
            PQclear(r);
            broke = "read";
            goto lost_clear;
        }
        ExecStatusType t = PQresultStatus(r);
        if (!rp_ok_status(t) && failed == NULL && t != PGRES_PIPELINE_ABORTED) failed = r;
        res[i] = r;
        for (;;) {
            PGresult *extra = NULL;
            if ((w = rp_next(c, deadline, &extra)) != RP_WAIT_OK) {
                broke = "read";
                goto lost_clear;
            }
            if (extra == NULL) break;
            PQclear(extra);
        }
    }
    PGresult *sync = NULL;
    if ((w = rp_next(c, deadline, &sync)) != RP_WAIT_OK || sync == NULL ||
        PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
        PQclear(sync);
        broke = "read sync";
        goto lost_clear;
    }
    PQclear(sync);
    if (--s->pending == 0 && (PQexitPipelineMode(c) != 1 || PQsetnonblocking(c, 0) != 0)) {
        broke = "cannot leave pipeline mode";
        goto lost_clear;
    }

    bool all_ok = true;
    for (size_t i = 0; i < n; i++)
        if (!rp_ok_status(PQresultStatus(res[i]))) all_ok = false;
    if (all_ok || keep) return RP_OK;
    rp_status st = RP_ERR_INTERNAL;
    if (failed != NULL) {
        const char *sqlstate = PQresultErrorField(failed, PG_DIAG_SQLSTATE);
        snprintf(code, 6, "%s", sqlstate ? sqlstate : "");
        size_t at = 0;
        while (at < n && res[at] != failed) at++;
        const rp__pg_cmd *k = &cmds[at < n ? at : 0];
        rp_log_failure(op, k->stmt >= 0 ? rp__pg_sql[k->stmt].name : k->sql, code,
                       PQresultErrorMessage(failed));
        st = rp_map_sqlstate(c, sqlstate);
        /* A prepared statement that vanished (DEALLOCATE by someone else):
         * prepare again on the next call. */
        if (sqlstate && strcmp(sqlstate, "26000") == 0) s->ready = false;
    }
    rp__pg_clear(res, n);
    if (st == RP_ERR_UNAVAILABLE) rp_lose_session(s);
    return st;

lost_clear:
    rp__pg_clear(res, n);
    {
        char line[300];
        rp_pg_error_line(PQerrorMessage(c), line, sizeof line);
        RP_WARN("store connection lost", "op", op, "step", broke,
                "error", w == RP_WAIT_TIMEOUT ? "timed out" : line, NULL);
    }
    rp_lose_session(s);
    return RP_ERR_UNAVAILABLE;
}

rp_status rp__pg_recv(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                      const char *op, char code[6]) {
    return rp_recv(s, cmds, n, res, op, code, false);
}

static rp_status rp_pipeline(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                             const char *op, char code[6], bool keep);

rp_status rp__pg_run_each(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                          const char *op) {
    char code[6];
    return rp_pipeline(s, cmds, n, res, op, code, true);
}

rp_status rp__pg_failure(rp_pg_store *s, const PGresult *r, const char *op, const char *step,
                         char code[6]) {
    const char *sqlstate = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(code, 6, "%s", sqlstate ? sqlstate : "");
    rp_log_failure(op, step, code, PQresultErrorMessage(r));
    if (sqlstate && strcmp(sqlstate, "26000") == 0) s->ready = false;
    rp_status st = rp_map_sqlstate(rp_pg_conn_handle(s->conn), sqlstate);
    if (st == RP_ERR_UNAVAILABLE) rp_lose_session(s);
    return st;
}

/* Sends and reads one pipeline. Returns RP_OK when every command succeeded
 * (res filled), RP_ERR_UNAVAILABLE when the session broke or timed out
 * (closed, res empty), or the mapped status of the first failed command
 * (res empty; the failure logged, code set). keep: rp_recv's, as
 * rp__pg_run_each needs it. */
static rp_status rp_pipeline(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                             const char *op, char code[6], bool keep) {
    for (size_t i = 0; i < n; i++) res[i] = NULL;
    code[0] = '\0';
    if (s->pending > 0) {
        /* A caller that left segments unread (rp__pg_send): a bug, but
         * never read their results as this one's. */
        RP_ERROR("store pipeline used while results are outstanding", "op", op, NULL);
        rp_lose_session(s);
        return RP_ERR_UNAVAILABLE;
    }
    rp_status st = rp__pg_send(s, cmds, n, op);
    if (st != RP_OK) return st;
    return rp_recv(s, cmds, n, res, op, code, keep);
}

void rp__pg_lent_forget(rp__pg_lent *l) {
    PQclear(l->res);
    free(l->view);
    *l = (rp__pg_lent){0};
}

rp_status rp__pg_lend(rp_pg_store *s, rp__pg_lent *l, const rp__pg_cmd *k, const char *op,
                      size_t elem, PGresult **r, void **view, int *n) {
    *r = NULL;
    *view = NULL;
    *n = 0;
    rp__pg_lent_forget(l);
    rp_status st = rp__pg_enter(s, RP__PG_READ, op);
    if (st != RP_OK) return st;
    PGresult *res = NULL;
    if ((st = rp__pg_run(s, k, 1, &res, op, NULL)) != RP_OK) return st;
    int rows = PQntuples(res);
    if (rows == 0) {
        PQclear(res);
        return RP_OK;
    }
    void *v = calloc((size_t)rows, elem);
    if (v == NULL) {
        PQclear(res);
        return RP_ERR_NOMEM;
    }
    *l = (rp__pg_lent){res, v};
    *r = res;
    *view = v;
    *n = rows;
    return RP_OK;
}

rp_status rp__pg_run(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                     const char *op, char sqlstate[6]) {
    char code[6];
    rp_status st = rp_pipeline(s, cmds, n, res, op, code, false);
    if (sqlstate) memcpy(sqlstate, code, 6);
    if (st == RP_OK || st == RP_ERR_UNAVAILABLE) return st;
    /* A failed command may have left a transaction open or aborted: end it,
     * so that nothing later runs inside it. */
    PGconn *c = rp_pg_conn_handle(s->conn);
    if (c && PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) {
        rp_status rst = rp__pg_rollback(s, op);
        if (rst == RP_ERR_UNAVAILABLE) return rst;
    }
    rp__pg_forget_row(s);
    return st;
}

rp_status rp__pg_rollback(rp_pg_store *s, const char *op) {
    rp__pg_forget_row(s);
    PGconn *c = rp_pg_conn_handle(s->conn);
    if (c == NULL || PQstatus(c) != CONNECTION_OK) return RP_ERR_UNAVAILABLE;
    if (PQtransactionStatus(c) == PQTRANS_IDLE) return RP_OK;
    rp__pg_cmd k = {.stmt = -1, .sql = "ROLLBACK"};
    PGresult *r = NULL;
    char code[6];
    rp_status st = rp_pipeline(s, &k, 1, &r, op, code, false);
    PQclear(r);
    if (st != RP_OK && st != RP_ERR_UNAVAILABLE) {
        /* A ROLLBACK that fails leaves the session in a state nobody can
         * reason about: start afresh. */
        rp_lose_session(s);
        st = RP_ERR_UNAVAILABLE;
    }
    return st;
}

/* ---- the session ---- */

/* Plans made for every execution, never a cached generic plan. A daemon
 * keeps its session for days, and a generic plan is made once (after five
 * executions) from the table as it is then and kept until something
 * invalidates it: made while the job table was empty, it scans the whole
 * table for every row once a burst of expired leases arrives (measured here:
 * 278 rows/s instead of about 3,000; POSTGRES.md's trap). A custom plan
 * costs a little planning per statement and always sees the table's
 * current size. The one exception is the lease reap's row transaction,
 * which runs its statements once per row and caches their plans with
 * sequential scans ruled out (RP__PG_LEASE_PLANS in rp_pg_sql.c): about
 * 2,900 rows/s here instead of about 2,400 with a planning per statement,
 * and the same on a table that grew under the session. */
#define RP_PG_PLAN_MODE "force_custom_plan"

/* The session's settings: the plan mode above, and no JIT compilation.
 * Every statement here is short; JIT pays off only for long analytic
 * queries, and its compile time (measured: 270 ms) dwarfs these (1-3 ms)
 * whenever the planner's cost estimate crosses jit_above_cost, which a
 * large table makes it do. */
#define RP_PG_SESSION_SETTINGS                                                  \
    "SELECT set_config('plan_cache_mode', '" RP_PG_PLAN_MODE "', false), " \
    "set_config('jit', 'off', false)"

/* The session's settings as sent: with the heap hint (rp__pg_store_keep_heap)
 * one more column, a text of that many bytes made and dropped by the
 * server. Into buf (cap bytes). */
static const char *rp_session_sql(const rp_pg_store *s, char *buf, size_t cap) {
    if (s->keep_heap_bytes == 0) return RP_PG_SESSION_SETTINGS;
    snprintf(buf, cap, "%s, length(repeat('x', %zu))", RP_PG_SESSION_SETTINGS,
             s->keep_heap_bytes);
    return buf;
}

void rp__pg_store_keep_heap(rp_pg_store *s, size_t bytes) {
    if (s != NULL) s->keep_heap_bytes = bytes;
}

/* Statement names carry a process-wide number, so that two stores on one
 * connection, or a second attempt after a failed one, never collide with
 * names the session already holds. */
static unsigned long rp_name_serial;

rp_status rp__pg_schema_sql(rp_pg_store *s, const char *text, char **out) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    char *qs = c ? PQescapeIdentifier(c, s->schema, strlen(s->schema)) : NULL;
    if (qs == NULL) return RP_ERR_NOMEM;
    rp__pg_subst sub = {qs, NULL, NULL, NULL};
    rp_status st = rp__pg_sql_expand(text, &sub, out);
    PQfreemem(qs);
    return st;
}

static rp_status rp_prepare(rp_pg_store *s) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    char *qs = PQescapeIdentifier(c, s->schema, strlen(s->schema));
    if (qs == NULL) return RP_ERR_NOMEM;
    /* The identity sequences, as the database names them. */
    size_t tl = strlen(qs) + 16;
    char *tables = malloc(3 * tl);
    if (tables == NULL) {
        PQfreemem(qs);
        return RP_ERR_NOMEM;
    }
    snprintf(tables, tl, "%s.ledger", qs);
    snprintf(tables + tl, tl, "%s.job", qs);
    snprintf(tables + 2 * tl, tl, "%s.gate", qs);
    const char *vals[] = {tables, tables + tl, tables + 2 * tl};
    rp__pg_cmd seqs = {.stmt = -1,
                       .sql = "SELECT pg_get_serial_sequence($1, 'seq'), "
                              "pg_get_serial_sequence($2, 'id'), pg_get_serial_sequence($3, 'id')",
                       .n = 3,
                       .values = vals};
    PGresult *r = NULL;
    rp_status st = rp__pg_run(s, &seqs, 1, &r, "prepare", NULL);
    free(tables);
    if (st != RP_OK) {
        PQfreemem(qs);
        RP_WARN("store statements cannot be prepared; is the schema migrated?", "schema",
                s->schema, NULL);
        return st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL;
    }
    char *lit[3] = {NULL, NULL, NULL};
    bool ok = PQntuples(r) == 1;
    for (int i = 0; ok && i < 3; i++) {
        const char *name = rp__pg_str(r, 0, i);
        if (name == NULL) ok = false;
        else if ((lit[i] = PQescapeLiteral(c, name, strlen(name))) == NULL) ok = false;
    }
    PQclear(r);
    rp__pg_subst sub = {qs, lit[0], lit[1], lit[2]};
    char *text[RP__PG_STMT_COUNT_] = {NULL};
    unsigned long serial = __atomic_add_fetch(&rp_name_serial, 1, __ATOMIC_RELAXED);
    for (int i = 0; ok && i < RP__PG_STMT_COUNT_; i++) {
        snprintf(s->names[i], sizeof s->names[i], "rp_pg_%lu_%s", serial, rp__pg_sql[i].name);
        if (rp__pg_sql_expand(rp__pg_sql[i].text, &sub, &text[i]) != RP_OK) ok = false;
    }
    for (int i = 0; i < 3; i++)
        if (lit[i]) PQfreemem(lit[i]);
    PQfreemem(qs);
    if (!ok) {
        for (int i = 0; i < RP__PG_STMT_COUNT_; i++) free(text[i]);
        return RP_ERR_INTERNAL;
    }

    /* The session's settings and every statement in one pipeline: one
     * round trip per session. */
    int64_t deadline = rp_clock_mono_ms() + s->timeout_ms;
    const char *broke = NULL;
    if (PQsetnonblocking(c, 1) != 0 || PQenterPipelineMode(c) != 1) broke = "pipeline";
    char settings[sizeof RP_PG_SESSION_SETTINGS + 64];
    if (!broke && !PQsendQueryParams(c, rp_session_sql(s, settings, sizeof settings), 0, NULL,
                                     NULL, NULL, NULL, 0))
        broke = "send";
    for (int i = 0; !broke && i < RP__PG_STMT_COUNT_; i++)
        if (!PQsendPrepare(c, s->names[i], text[i], 0, NULL)) broke = "send";
    for (int i = 0; i < RP__PG_STMT_COUNT_; i++) free(text[i]);
    if (!broke && !PQpipelineSync(c)) broke = "sync";
    if (!broke && rp_flush(c, deadline) != RP_WAIT_OK) broke = "flush";
    const char *failed = NULL;
    char code[6] = "";
    char why[300] = "";
    for (int i = -1; !broke && i < RP__PG_STMT_COUNT_; i++) {
        PGresult *pr = NULL;
        if (rp_next(c, deadline, &pr) != RP_WAIT_OK || pr == NULL) {
            PQclear(pr);
            broke = "read";
            break;
        }
        ExecStatusType t = PQresultStatus(pr);
        if (!rp_ok_status(t) && t != PGRES_PIPELINE_ABORTED && failed == NULL) {
            failed = i < 0 ? "session settings" : rp__pg_sql[i].name;
            const char *sqlstate = PQresultErrorField(pr, PG_DIAG_SQLSTATE);
            snprintf(code, sizeof code, "%s", sqlstate ? sqlstate : "");
            rp_pg_error_line(PQresultErrorMessage(pr), why, sizeof why);
        }
        PQclear(pr);
        PGresult *end = NULL;
        if (rp_next(c, deadline, &end) != RP_WAIT_OK || end != NULL) {
            PQclear(end);
            broke = "read";
        }
    }
    PGresult *sync = NULL;
    if (!broke && (rp_next(c, deadline, &sync) != RP_WAIT_OK || sync == NULL ||
                   PQresultStatus(sync) != PGRES_PIPELINE_SYNC))
        broke = "read sync";
    PQclear(sync);
    if (!broke && (PQexitPipelineMode(c) != 1 || PQsetnonblocking(c, 0) != 0))
        broke = "pipeline";
    if (broke) {
        RP_WARN("store connection lost", "op", "prepare", "step", broke, NULL);
        rp_lose_session(s);
        return RP_ERR_UNAVAILABLE;
    }
    if (failed) {
        rp_log_failure("prepare", failed, code, why);
        rp_status st2 = rp_map_sqlstate(c, code);
        if (st2 == RP_ERR_UNAVAILABLE) rp_lose_session(s);
        return st2 == RP_ERR_UNAVAILABLE ? st2 : RP_ERR_INTERNAL;
    }
    s->ready = true;
    return RP_OK;
}

rp_status rp__pg_enter(rp_pg_store *s, rp__pg_mode mode, const char *op) {
    char err[300];
    if (rp_pg_conn_ensure(s->conn, err, sizeof err) != RP_OK) {
        RP_WARN("store unreachable", "op", op, "error", err, NULL);
        rp__pg_forget_row(s);
        s->ready = false;
        return RP_ERR_UNAVAILABLE;
    }
    unsigned long gen = rp_pg_conn_generation(s->conn);
    if (gen != s->gen) {
        /* A new session: the old one's transaction, locks and prepared
         * statements died with it. */
        rp__pg_forget_row(s);
        s->ready = false;
        s->gen = gen;
    }
    PGconn *c = rp_pg_conn_handle(s->conn);
    if (s->taken.locked && mode == RP__PG_WRITE) {
        RP_WARN("a taken row's transaction was still open; rolled back", "op", op, NULL);
        rp_status st = rp__pg_rollback(s, op);
        if (st != RP_OK) return st;
    }
    if (!s->taken.locked && PQtransactionStatus(c) != PQTRANS_IDLE) {
        /* Not ours to continue (another user of the connection left it
         * open, or a previous failure did): never run inside it. */
        rp_status st = rp__pg_rollback(s, op);
        if (st != RP_OK) return st;
    }
    if (!s->ready) return rp_prepare(s);
    return RP_OK;
}

/* ---- the clock ---- */

/* The database's time, so that expiry is judged by the same clock that the
 * workers' leases were written with (now() in their UPDATEs). Only when the
 * store cannot be reached does it fall back to the system clock: the pass
 * then finds the store unreadable anyway and moves nothing by that time,
 * and the broker half, which compares with broker timestamps, still gets a
 * sensible time. */
static rp_time_ms rp_now_ms(void *self) {
    rp_pg_store *s = self;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "now");
    if (st == RP_OK) {
        rp__pg_cmd k = {.stmt = RP__PG_NOW};
        PGresult *r = NULL;
        st = rp__pg_run(s, &k, 1, &r, "now", NULL);
        if (st == RP_OK && PQntuples(r) == 1 && !rp__pg_null(r, 0, 0)) {
            rp_time_ms t = rp__pg_i64(r, 0, 0);
            PQclear(r);
            if (s->clock_fell_back) RP_INFO("store clock readable again", NULL);
            s->clock_fell_back = false;
            return t;
        }
        PQclear(r);
    }
    if (!s->clock_fell_back)
        RP_WARN("store clock unreadable; using the system clock", "status",
                rp_status_string(st != RP_OK ? st : RP_ERR_INTERNAL), NULL);
    s->clock_fell_back = true;
    return rp_clock_wall_ms();
}

/* ---- the ports ---- */

void rp_pg_store_port(rp_pg_store *s, rp_store_port *out) {
    memset(out, 0, sizeof *out);
    out->self = s;
    rp__pg_fill_lease(out);
    rp__pg_fill_ready(out);
    rp__pg_fill_runbook(out);
    rp__pg_fill_wedged(out);
    rp__pg_fill_divergent(out);
    rp__pg_fill_sighting(out);
    rp__pg_fill_sweep_turn(out);
}

void rp_pg_gate_port(rp_pg_store *s, rp_gate_port *out) {
    memset(out, 0, sizeof *out);
    out->self = s;
    rp__pg_fill_gates(out);
}

void rp_pg_clock_port(rp_pg_store *s, rp_clock_port *out) {
    out->self = s;
    out->now_ms = rp_now_ms;
}

void rp_pg_dead_letter_port(rp_pg_store *s, rp_dead_letter_port *out) {
    memset(out, 0, sizeof *out);
    out->self = s;
    rp__pg_fill_park(out);
}

void rp_pg_store_ports(rp_pg_store *s, rp_ports *ports) {
    rp_pg_store_port(s, &ports->store);
    rp_pg_gate_port(s, &ports->gates);
    rp_pg_clock_port(s, &ports->clock);
    rp_pg_dead_letter_port(s, &ports->dead_letters);
}
