/* The lease reap: take an expired lease (FOR UPDATE SKIP LOCKED, in a
 * transaction of its own), move it fenced with its ledger row in one
 * commit, or release it; and the next lease deadline (rp_pg_store.h). */
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

static rp_status rp_take(void *self, const rp_lease_query *q, rp_held_job *out) {
    rp_pg_store *s = self;
    memset(out, 0, sizeof *out);
    /* A new take ends whatever row was taken before (WRITE mode), and the
     * strings lent for that row go now. */
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "take_expired_lease");
    rp__pg_forget_row(s);
    PQclear(s->held_res);
    s->held_res = NULL;
    if (st != RP_OK) return st;

    char after[24], grace[24];
    const char *vals[] = {rp__pg_itoa(q->after_id, after),
                          rp__pg_itoa(rp_clamp_grace(q->grace_seconds), grace), q->project};
    /* BEGIN, the row transaction's plan settings and the SELECT in one
     * round trip. With a lock the transaction stays open until the move or
     * the release; without (a dry run), it ends in the same round trip. */
    rp__pg_cmd cmds[4] = {
        {.stmt = -1, .sql = "BEGIN"},
        {.stmt = RP__PG_LEASE_PLANS},
        {.stmt = q->lock ? RP__PG_TAKE_LOCK : RP__PG_TAKE_READ, .n = 3, .values = vals},
        {.stmt = -1, .sql = "ROLLBACK"},
    };
    size_t n = q->lock ? 3 : 4;
    PGresult *res[4] = {NULL, NULL, NULL, NULL};
    st = rp__pg_run(s, cmds, n, res, "take_expired_lease", NULL);
    if (st != RP_OK) return st;
    PGresult *r = res[2];
    res[2] = NULL;
    rp__pg_clear(res, n);
    if (PQntuples(r) == 0) {
        PQclear(r);
        if (!q->lock) return RP_ERR_NOT_FOUND;
        st = rp__pg_rollback(s, "take_expired_lease");
        return st == RP_OK ? RP_ERR_NOT_FOUND : st;
    }
    s->held_res = r;
    rp__pg_taken *t = &s->taken;
    t->active = true;
    t->locked = q->lock;
    t->id = rp__pg_i64(r, 0, 0);
    t->attempts = (int32_t)rp__pg_i64(r, 0, 3);
    t->owner = rp__pg_str(r, 0, 5);
    t->expires_known = !rp__pg_null(r, 0, 6);
    t->expires_ms = rp__pg_i64(r, 0, 6);
    t->expires_us = rp__pg_i64(r, 0, 7);

    out->id = t->id;
    out->project = rp__pg_str(r, 0, 1);
    out->kind = rp__pg_str(r, 0, 2);
    out->state = RP_JOB_LEASED;
    out->attempts = t->attempts;
    out->max_attempts = (int32_t)rp__pg_i64(r, 0, 4);
    out->lease_expires_known = t->expires_known;
    out->lease_expires_at = t->expires_ms;
    out->lease_owner = t->owner;
    return RP_OK;
}

static bool rp_same_str(const char *a, const char *b) {
    if (a == NULL || b == NULL) return a == b;
    return strcmp(a, b) == 0;
}

/* Whether core hands back the row that was taken, unchanged. */
static bool rp_is_taken(const rp__pg_taken *t, const rp_held_job *job) {
    return job != NULL && job->id == t->id && job->attempts == t->attempts &&
           job->lease_expires_known == t->expires_known &&
           (!t->expires_known || job->lease_expires_at == t->expires_ms) &&
           rp_same_str(job->lease_owner, t->owner);
}

/* Whether the session that took the row still holds its transaction. */
static bool rp_row_txn_alive(rp_pg_store *s) {
    PGconn *c = rp_pg_conn_handle(s->conn);
    return s->taken.active && s->taken.locked && c != NULL && PQstatus(c) == CONNECTION_OK &&
           rp_pg_conn_generation(s->conn) == s->gen && PQtransactionStatus(c) == PQTRANS_INTRANS;
}

static rp_status rp_move(void *self, const rp_held_job *job, const rp_verdict *v,
                         rp_event_ref *event) {
    rp_pg_store *s = self;
    if (!s->taken.active || !s->taken.locked) {
        /* Read without lock (a dry run) or never taken: nothing to move. */
        rp__pg_forget_row(s);
        return RP_ERR_CONFLICT;
    }
    if (!rp_row_txn_alive(s)) {
        /* The session that held the lock is gone (or its transaction is):
         * the lock went with it, and nothing was committed. */
        bool up = rp_pg_conn_is_up(s->conn);
        rp_status st = rp__pg_rollback(s, "move_lease");
        (void)st;
        return up ? RP_ERR_CONFLICT : RP_ERR_UNAVAILABLE;
    }
    rp_status st = RP_OK;
    if (!rp_is_taken(&s->taken, job)) {
        RP_WARN("move refused: the job is not the row that was taken", NULL);
        st = RP_ERR_CONFLICT;
    } else if (v == NULL || (v->action != RP_ACTION_REQUEUED && v->action != RP_ACTION_PARKED)) {
        st = RP_ERR_INVALID;
    }
    char *payload = NULL;
    if (st == RP_OK) st = rp__pg_payload(v, &payload);
    if (st != RP_OK) {
        rp_status rst = rp__pg_rollback(s, "move_lease");
        return rst == RP_ERR_UNAVAILABLE ? rst : st;
    }

    const rp__pg_taken *t = &s->taken;
    char id[24], attempts[24], us[24];
    /* The fence is the row as it was taken, to the microsecond. A row
     * taken with a NULL deadline is never expired, so never here; if it
     * were, "NULL = NULL" refuses the move, which is the safe side. */
    const char *vals[] = {rp__pg_itoa(t->id, id), t->owner, rp__pg_itoa(t->attempts, attempts),
                          t->expires_known ? rp__pg_itoa(t->expires_us, us) : NULL, payload};
    rp__pg_cmd cmds[2] = {
        {.stmt = v->action == RP_ACTION_PARKED ? RP__PG_MOVE_PARK : RP__PG_MOVE_REQUEUE,
         .n = 5,
         .values = vals},
        {.stmt = -1, .sql = "COMMIT"},
    };
    PGresult *res[2] = {NULL, NULL};
    char code[6] = "";
    int64_t job_id = t->id;
    st = rp__pg_run(s, cmds, 2, res, "move_lease", code);
    free(payload);
    rp__pg_forget_row(s); /* committed or rolled back: the transaction is over */
    if (st == RP_ERR_UNAVAILABLE) return st;
    if (st != RP_OK) {
        /* This row failed on its own (a trigger, a constraint, a
         * serialization failure): rolled back alone, logged with its
         * SQLSTATE; core notes it ("could not be moved") and goes on with
         * the next row. */
        char idbuf[24];
        RP_WARN("expired lease left as it is: its move failed", "job", rp__pg_itoa(job_id, idbuf),
                "sqlstate", code[0] ? code : "-", NULL);
        return RP_ERR_INTERNAL;
    }
    PGresult *r = res[0];
    rp_status out = RP_OK;
    if (PQntuples(r) != 1) {
        /* The fence refused: the row changed. The COMMIT ended a
         * transaction that changed nothing. */
        out = RP_ERR_CONFLICT;
    } else {
        event->seq = rp__pg_i64(r, 0, 0);
        event->at = rp__pg_i64(r, 0, 1);
    }
    rp__pg_clear(res, 2);
    return out;
}

static rp_status rp_release(void *self, const rp_held_job *job) {
    rp_pg_store *s = self;
    if (!s->taken.active) return RP_OK;
    if (!s->taken.locked) {
        rp__pg_forget_row(s);
        return RP_OK;
    }
    bool same = job != NULL && job->id == s->taken.id;
    if (!rp_row_txn_alive(s)) {
        /* Its session is gone, and the transaction with it. */
        bool up = rp_pg_conn_is_up(s->conn);
        rp_status st = rp__pg_rollback(s, "release_lease");
        (void)st;
        return up ? RP_OK : RP_ERR_UNAVAILABLE;
    }
    rp_status st = rp__pg_rollback(s, "release_lease");
    if (st != RP_OK) return st;
    return same ? RP_OK : RP_ERR_INVALID;
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
    out->take_expired_lease = rp_take;
    out->move_lease = rp_move;
    out->release_lease = rp_release;
    out->next_lease_deadline = rp_next_deadline;
}
