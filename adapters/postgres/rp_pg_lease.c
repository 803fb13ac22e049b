/* The lease reap: take a batch of expired leases (FOR UPDATE SKIP LOCKED,
 * in a transaction of its own), move each row fenced with its ledger row
 * inside a savepoint of its own and commit the batch, or release it; and
 * the next lease deadline (rp_pg_store.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_store_internal.h"

/* The configuration allows at most a day of grace; clamp what reaches the
 * database so that its interval arithmetic can never overflow (an error
 * there would read as a broken store). */
static int64_t rp_clamp_grace(int64_t grace_seconds) {
    if (grace_seconds < 0) return 0;
    return grace_seconds > 86400 * 366 ? 86400 * 366 : grace_seconds;
}

/* Room for n rows in the batch's arrays. */
static rp_status rp_reserve(rp__pg_taken *t, size_t n) {
    if (n <= t->cap) return RP_OK;
    rp__pg_row *rows = realloc(t->rows, n * sizeof *rows);
    if (rows == NULL) return RP_ERR_NOMEM;
    t->rows = rows;
    rp_held_job *view = realloc(t->view, n * sizeof *view);
    if (view == NULL) return RP_ERR_NOMEM;
    t->view = view;
    t->cap = n;
    return RP_OK;
}

static rp_status rp_take(void *self, const rp_lease_query *q, size_t limit, rp_lease_batch *out) {
    rp_pg_store *s = self;
    memset(out, 0, sizeof *out);
    if (q == NULL || limit < 1 || limit > RP_PG_LEASE_BATCH_MAX) return RP_ERR_INVALID;
    /* A new take ends whatever batch was taken before (WRITE mode), and the
     * strings lent for it go now. */
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "take_leases");
    rp__pg_forget_row(s);
    PQclear(s->held_res);
    s->held_res = NULL;
    s->taken.n = 0;
    if (st != RP_OK) return st;
    if (rp_reserve(&s->taken, limit) != RP_OK) return RP_ERR_NOMEM;

    char after[24], grace[24], lim[24];
    const char *vals[] = {rp__pg_itoa(q->after_id, after),
                          rp__pg_itoa(rp_clamp_grace(q->grace_seconds), grace), q->project,
                          rp__pg_itoa((int64_t)limit, lim)};
    /* BEGIN, the batch transaction's plan settings and the SELECT in one
     * round trip. With a lock the transaction stays open until the commit
     * or the release; without (a dry run), it ends in the same round trip. */
    rp__pg_cmd cmds[4] = {
        {.stmt = -1, .sql = "BEGIN"},
        {.stmt = RP__PG_LEASE_PLANS},
        {.stmt = q->lock ? RP__PG_TAKE_LOCK : RP__PG_TAKE_READ, .n = 4, .values = vals},
        {.stmt = -1, .sql = "ROLLBACK"},
    };
    size_t n = q->lock ? 3 : 4;
    PGresult *res[4] = {NULL, NULL, NULL, NULL};
    st = rp__pg_run(s, cmds, n, res, "take_leases", NULL);
    if (st != RP_OK) return st;
    PGresult *r = res[2];
    res[2] = NULL;
    rp__pg_clear(res, n);
    int rows = PQntuples(r);
    if (rows <= 0 || (size_t)rows > limit) {
        PQclear(r);
        if (!q->lock) return RP_ERR_NOT_FOUND;
        st = rp__pg_rollback(s, "take_leases");
        if (st != RP_OK) return st;
        return rows <= 0 ? RP_ERR_NOT_FOUND : RP_ERR_INTERNAL;
    }
    s->held_res = r;
    rp__pg_taken *t = &s->taken;
    t->active = true;
    t->locked = q->lock;
    t->n = (size_t)rows;
    for (int i = 0; i < rows; i++) {
        rp__pg_row *w = &t->rows[i];
        w->id = rp__pg_i64(r, i, 0);
        w->attempts = (int32_t)rp__pg_i64(r, i, 3);
        w->owner = rp__pg_str(r, i, 5);
        w->expires_known = !rp__pg_null(r, i, 6);
        w->expires_ms = rp__pg_i64(r, i, 6);
        w->expires_us = rp__pg_i64(r, i, 7);
        t->view[i] = (rp_held_job){
            .id = w->id,
            .project = rp__pg_str(r, i, 1),
            .kind = rp__pg_str(r, i, 2),
            .state = RP_JOB_LEASED,
            .attempts = w->attempts,
            .max_attempts = (int32_t)rp__pg_i64(r, i, 4),
            .lease_expires_known = w->expires_known,
            .lease_expires_at = w->expires_ms,
            .lease_owner = w->owner,
        };
    }
    out->jobs = t->view;
    out->n = t->n;
    return RP_OK;
}

static bool rp_same_str(const char *a, const char *b) {
    if (a == NULL || b == NULL) return a == b;
    return strcmp(a, b) == 0;
}

/* The taken row that core hands back, unchanged; NULL when it is none. */
static const rp__pg_row *rp_find_taken(const rp__pg_taken *t, const rp_held_job *job) {
    if (job == NULL) return NULL;
    size_t lo = 0, hi = t->n; /* ids grow: a binary search */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].id < job->id) lo = mid + 1;
        else hi = mid;
    }
    if (lo == t->n) return NULL;
    const rp__pg_row *w = &t->rows[lo];
    bool same = w->id == job->id && job->attempts == w->attempts &&
                job->lease_expires_known == w->expires_known &&
                (!w->expires_known || job->lease_expires_at == w->expires_ms) &&
                rp_same_str(job->lease_owner, w->owner);
    return same ? w : NULL;
}

/* Whether the session that took the batch still holds its transaction. */
static bool rp_batch_txn_alive(rp_pg_store *s) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    PGTransactionStatusType ts = c ? PQtransactionStatus(c) : PQTRANS_UNKNOWN;
    return s->taken.active && s->taken.locked && c != NULL && PQstatus(c) == CONNECTION_OK &&
           rp_pg_conn_generation(s->conn) == s->gen &&
           (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR);
}

/* One move of the batch, ready to send: its fence and payload. */
typedef struct rp_move_cmd {
    size_t move;          /* index into the caller's moves */
    char id[24], attempts[24], us[24];
    const char *vals[5];
    char *payload;
} rp_move_cmd;

#define RP_SAVEPOINT_SQL "SAVEPOINT rp_lease_row"
#define RP_RELEASE_SQL "RELEASE SAVEPOINT rp_lease_row"
#define RP_BACK_SQL "ROLLBACK TO SAVEPOINT rp_lease_row"
#define RP_BATCH_SAVEPOINT_SQL "SAVEPOINT rp_lease_batch"
#define RP_BATCH_RELEASE_SQL "RELEASE SAVEPOINT rp_lease_batch"
#define RP_BATCH_BACK_SQL "ROLLBACK TO SAVEPOINT rp_lease_batch"

/* Sends, from mc[from], each move inside its savepoint and then COMMIT, in
 * one round trip. lead: the savepoint of what failed before (a row's, or
 * the whole batch's when batch_lead) to roll back to and release first. Fills the moves' results up to the first row that fails;
 * *failed_at is that row's index in mc (count when none failed) and
 * *committed whether the COMMIT ran and succeeded. RP_OK when the round
 * trip was read whole; RP_ERR_UNAVAILABLE, or the status of a failure
 * that is not a row's own (a savepoint, the COMMIT). */
static rp_status rp_commit_from(rp_pg_store *s, rp_move_cmd *mc, size_t count, size_t from,
                                bool lead, bool batch_lead, rp_lease_move *moves,
                                size_t *failed_at, bool *committed) {
    *failed_at = count;
    *committed = false;
    size_t nl = lead ? 2 : 0;
    size_t ncmd = nl + 3 * (count - from) + 1;
    rp__pg_cmd *k = calloc(ncmd, sizeof *k);
    PGresult **res = calloc(ncmd, sizeof *res);
    if (k == NULL || res == NULL) {
        free(k);
        free(res);
        return RP_ERR_NOMEM;
    }
    size_t at = 0;
    if (lead) {
        k[at++] = (rp__pg_cmd){.stmt = -1, .sql = batch_lead ? RP_BATCH_BACK_SQL : RP_BACK_SQL};
        k[at++] = (rp__pg_cmd){.stmt = -1,
                               .sql = batch_lead ? RP_BATCH_RELEASE_SQL : RP_RELEASE_SQL};
    }
    for (size_t i = from; i < count; i++) {
        const rp_verdict *v = moves[mc[i].move].v;
        k[at++] = (rp__pg_cmd){.stmt = -1, .sql = RP_SAVEPOINT_SQL};
        k[at++] = (rp__pg_cmd){
            .stmt = v->action == RP_ACTION_PARKED ? RP__PG_MOVE_PARK : RP__PG_MOVE_REQUEUE,
            .n = 5,
            .values = mc[i].vals};
        k[at++] = (rp__pg_cmd){.stmt = -1, .sql = RP_RELEASE_SQL};
    }
    k[at++] = (rp__pg_cmd){.stmt = -1, .sql = "COMMIT"};
    rp_status st = rp__pg_run_each(s, k, ncmd, res, "commit_leases");
    if (st != RP_OK) goto done;

    char code[6] = "";
    for (size_t c = 0; c < nl; c++) {
        if (PQresultStatus(res[c]) != PGRES_COMMAND_OK) {
            st = rp__pg_failure(s, res[c], "commit_leases", k[c].sql, code);
            goto done;
        }
    }
    for (size_t i = from; i < count; i++) {
        size_t c = nl + 3 * (i - from);
        rp_lease_move *m = &moves[mc[i].move];
        if (PQresultStatus(res[c]) != PGRES_COMMAND_OK) {
            /* The savepoint itself: not this row's fault. */
            st = rp__pg_failure(s, res[c], "commit_leases", RP_SAVEPOINT_SQL, code);
            goto done;
        }
        ExecStatusType mt = PQresultStatus(res[c + 1]);
        if (mt != PGRES_TUPLES_OK || PQresultStatus(res[c + 2]) != PGRES_COMMAND_OK) {
            const PGresult *bad = mt != PGRES_TUPLES_OK ? res[c + 1] : res[c + 2];
            st = rp__pg_failure(s, bad, "commit_leases",
                                mt != PGRES_TUPLES_OK ? "move" : RP_RELEASE_SQL, code);
            if (st == RP_ERR_UNAVAILABLE) goto done;
            /* This row failed on its own (a trigger, a constraint): it is
             * rolled back to its savepoint, the others go on. */
            char idbuf[24];
            RP_WARN("expired lease left as it is: its move failed and was rolled back alone",
                    "job", rp__pg_itoa(m->job->id, idbuf), "sqlstate", code[0] ? code : "-",
                    NULL);
            m->result = st == RP_ERR_CONFLICT ? RP_ERR_CONFLICT : RP_ERR_INTERNAL;
            *failed_at = i;
            st = RP_OK;
            goto done;
        }
        const PGresult *r = res[c + 1];
        if (PQntuples(r) != 1) {
            /* The fence refused: the row changed since it was taken. */
            m->result = RP_ERR_CONFLICT;
        } else {
            m->result = RP_OK;
            m->event.seq = rp__pg_i64(r, 0, 0);
            m->event.at = rp__pg_i64(r, 0, 1);
        }
    }
    if (PQresultStatus(res[ncmd - 1]) != PGRES_COMMAND_OK) {
        st = rp__pg_failure(s, res[ncmd - 1], "commit_leases", "COMMIT", code);
        goto done;
    }
    *committed = true;
done:
    rp__pg_clear(res, ncmd);
    free(res);
    free(k);
    return st;
}

/* A growing text buffer for the array literals of MOVE_BATCH. */
typedef struct rp_text_buf {
    char *p;
    size_t n, cap;
    bool oom;
} rp_text_buf;

static void rp_buf_add(rp_text_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* One element of an array literal: NULL, or the text double-quoted with
 * its backslashes and double quotes escaped (the array input syntax). */
static void rp_buf_elem(rp_text_buf *b, const char *v, bool first) {
    if (!first) rp_buf_add(b, ",", 1);
    if (v == NULL) {
        rp_buf_add(b, "NULL", 4);
        return;
    }
    rp_buf_add(b, "\"", 1);
    for (const char *q = v; *q; q++) {
        size_t run = strcspn(q, "\\\"");
        rp_buf_add(b, q, run);
        q += run;
        if (*q == '\0') break;
        rp_buf_add(b, "\\", 1);
        rp_buf_add(b, q, 1);
    }
    rp_buf_add(b, "\"", 1);
}

/* The first try: every move of the batch in one statement (MOVE_BATCH)
 * inside one savepoint, then COMMIT, in one round trip. *committed when it
 * committed (results filled); otherwise *row_failed when the statement
 * failed for a row's sake (a trigger, a constraint: the caller goes row by
 * row after rolling back to the batch's savepoint), or a status for a
 * failure that is not a row's. */
static rp_status rp_commit_whole(rp_pg_store *s, rp_move_cmd *mc, size_t count,
                                 rp_lease_move *moves, bool *committed, bool *row_failed) {
    *committed = false;
    *row_failed = false;
    rp_text_buf a[6] = {{0}};
    for (int c = 0; c < 6; c++) rp_buf_add(&a[c], "{", 1);
    for (size_t i = 0; i < count; i++) {
        const rp_move_cmd *m = &mc[i];
        bool first = i == 0;
        rp_buf_elem(&a[0], m->vals[0], first);
        rp_buf_elem(&a[1], m->vals[1], first);
        rp_buf_elem(&a[2], m->vals[2], first);
        rp_buf_elem(&a[3], m->vals[3], first);
        rp_buf_elem(&a[4], m->vals[4], first);
        rp_buf_elem(&a[5], moves[m->move].v->action == RP_ACTION_PARKED ? "t" : "f", first);
    }
    bool oom = false;
    for (int c = 0; c < 6; c++) {
        rp_buf_add(&a[c], "}", 1);
        oom = oom || a[c].oom;
    }
    rp_status st = RP_OK;
    if (oom) {
        st = RP_ERR_NOMEM;
        goto done;
    }
    const char *vals[6] = {a[0].p, a[1].p, a[2].p, a[3].p, a[4].p, a[5].p};
    rp__pg_cmd k[4] = {
        {.stmt = -1, .sql = RP_BATCH_SAVEPOINT_SQL},
        {.stmt = RP__PG_MOVE_BATCH, .n = 6, .values = vals},
        {.stmt = -1, .sql = RP_BATCH_RELEASE_SQL},
        {.stmt = -1, .sql = "COMMIT"},
    };
    PGresult *res[4] = {NULL, NULL, NULL, NULL};
    st = rp__pg_run_each(s, k, 4, res, "commit_leases");
    if (st != RP_OK) goto done;
    char code[6] = "";
    if (PQresultStatus(res[0]) != PGRES_COMMAND_OK) {
        st = rp__pg_failure(s, res[0], "commit_leases", RP_BATCH_SAVEPOINT_SQL, code);
    } else if (PQresultStatus(res[1]) != PGRES_TUPLES_OK) {
        st = rp__pg_failure(s, res[1], "commit_leases", "move_batch", code);
        if (st != RP_ERR_UNAVAILABLE) {
            /* A row failed the statement: row by row now, so that it alone
             * is rolled back. */
            *row_failed = true;
            st = RP_OK;
        }
    } else if (PQresultStatus(res[2]) != PGRES_COMMAND_OK) {
        st = rp__pg_failure(s, res[2], "commit_leases", RP_BATCH_RELEASE_SQL, code);
    } else if (PQresultStatus(res[3]) != PGRES_COMMAND_OK) {
        st = rp__pg_failure(s, res[3], "commit_leases", "COMMIT", code);
    } else {
        /* The rows that moved, in id order; the others were refused by
         * their fence (already RP_ERR_CONFLICT). */
        const PGresult *r = res[1];
        int rows = PQntuples(r);
        size_t i = 0;
        for (int j = 0; j < rows; j++) {
            int64_t id = rp__pg_i64(r, j, 0);
            while (i < count && moves[mc[i].move].job->id != id) i++;
            if (i == count) break; /* cannot be: ids come back in order */
            rp_lease_move *m = &moves[mc[i].move];
            m->result = RP_OK;
            m->event.seq = rp__pg_i64(r, j, 1);
            m->event.at = rp__pg_i64(r, j, 2);
        }
        *committed = true;
    }
    rp__pg_clear(res, 4);
done:
    for (int c = 0; c < 6; c++) free(a[c].p);
    return st;
}

static void rp_fail_all(rp_lease_move *moves, size_t n, rp_status st) {
    for (size_t i = 0; i < n; i++) {
        moves[i].result = st;
        moves[i].event = (rp_event_ref){0};
    }
}

static rp_status rp_commit(void *self, rp_lease_move *moves, size_t n) {
    rp_pg_store *s = self;
    if (moves == NULL && n > 0) return RP_ERR_INVALID;
    rp_fail_all(moves, n, RP_ERR_CONFLICT);
    if (!s->taken.active || !s->taken.locked) {
        /* Read without lock (a dry run) or never taken: nothing to move. */
        rp__pg_forget_row(s);
        return RP_ERR_CONFLICT;
    }
    if (!rp_batch_txn_alive(s)) {
        /* The session that held the locks is gone (or its transaction
         * is): the locks went with it, and nothing was committed. */
        bool up = rp_pg_conn_is_up(s->conn);
        rp_status st = rp__pg_rollback(s, "commit_leases");
        (void)st;
        st = up ? RP_ERR_CONFLICT : RP_ERR_UNAVAILABLE;
        rp_fail_all(moves, n, st);
        return st;
    }
    rp_status st = RP_OK;
    rp_move_cmd *mc = n ? calloc(n, sizeof *mc) : NULL;
    if (n && mc == NULL) st = RP_ERR_NOMEM;
    size_t count = 0;
    for (size_t i = 0; i < n && st == RP_OK; i++) {
        rp_lease_move *m = &moves[i];
        const rp__pg_row *w = rp_find_taken(&s->taken, m->job);
        if (w == NULL) {
            RP_WARN("move refused: the job is not a row of the batch taken", NULL);
            m->result = RP_ERR_CONFLICT;
            continue;
        }
        if (m->v == NULL ||
            (m->v->action != RP_ACTION_REQUEUED && m->v->action != RP_ACTION_PARKED)) {
            m->result = RP_ERR_INVALID;
            continue;
        }
        rp_move_cmd *c = &mc[count];
        rp_status pst = rp__pg_payload(m->v, &c->payload);
        if (pst != RP_OK) {
            m->result = pst;
            continue;
        }
        c->move = i;
        /* The fence is the row as it was taken, to the microsecond. A row
         * taken with a NULL deadline is never expired, so never here; if it
         * were, "NULL = NULL" refuses the move, which is the safe side. */
        c->vals[0] = rp__pg_itoa(w->id, c->id);
        c->vals[1] = w->owner;
        c->vals[2] = rp__pg_itoa(w->attempts, c->attempts);
        c->vals[3] = w->expires_known ? rp__pg_itoa(w->expires_us, c->us) : NULL;
        c->vals[4] = c->payload;
        count++;
    }
    /* First every move in one statement, in a savepoint of the batch's:
     * the usual case, one round trip. If a row fails it, that savepoint is
     * rolled back and each round trip then moves every row left, each in
     * a savepoint of its own, and commits; a row that fails is rolled back
     * to its savepoint at the start of the next round trip, which goes on
     * after it. */
    bool committed = false, row_failed = false;
    if (st == RP_OK) st = rp_commit_whole(s, mc, count, moves, &committed, &row_failed);
    size_t from = 0;
    bool lead = row_failed, batch_lead = row_failed;
    while (st == RP_OK && !committed) {
        size_t failed_at = count;
        st = rp_commit_from(s, mc, count, from, lead, batch_lead, moves, &failed_at,
                            &committed);
        if (st == RP_OK && !committed) {
            from = failed_at + 1;
            lead = true;
            batch_lead = false;
        }
    }
    for (size_t i = 0; i < count; i++) free(mc[i].payload);
    free(mc);
    if (st != RP_OK) {
        /* Nothing of the batch committed. */
        rp_status rst = rp__pg_rollback(s, "commit_leases");
        if (rst == RP_ERR_UNAVAILABLE) st = rst;
        rp_fail_all(moves, n, st);
    }
    rp__pg_forget_row(s); /* committed or rolled back: the transaction is over */
    return st;
}

static rp_status rp_release(void *self) {
    rp_pg_store *s = self;
    if (!s->taken.active) return RP_OK;
    if (!s->taken.locked) {
        rp__pg_forget_row(s);
        return RP_OK;
    }
    if (!rp_batch_txn_alive(s)) {
        /* Its session is gone, and the transaction with it. */
        bool up = rp_pg_conn_is_up(s->conn);
        rp_status st = rp__pg_rollback(s, "release_leases");
        (void)st;
        return up ? RP_OK : RP_ERR_UNAVAILABLE;
    }
    return rp__pg_rollback(s, "release_leases");
}

static rp_status rp_next_deadline(void *self, int64_t grace_seconds, rp_time_ms *at, bool *any) {
    rp_pg_store *s = self;
    *at = 0;
    *any = false;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "next_lease_deadline");
    if (st != RP_OK) return st;
    char grace[24];
    const char *vals[] = {rp__pg_itoa(rp_clamp_grace(grace_seconds), grace)};
    rp__pg_cmd k = {.stmt = RP__PG_NEXT_DEADLINE, .n = 1, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "next_lease_deadline", NULL);
    if (st != RP_OK) return st;
    if (PQntuples(r) == 1 && !rp__pg_null(r, 0, 0)) {
        *at = rp__pg_i64(r, 0, 0);
        *any = true;
    }
    PQclear(r);
    return RP_OK;
}

void rp__pg_fill_lease(rp_store_port *out) {
    out->take_leases = rp_take;
    out->commit_leases = rp_commit;
    out->release_leases = rp_release;
    out->next_lease_deadline = rp_next_deadline;
}
