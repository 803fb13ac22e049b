/* The gate port: list gates newest first; answer one, settled once under
 * its row lock, with its job change and ledger event in one transaction
 * (rp_pg_store.h). An answer that commits reports its GateAnswered event
 * (seq, at, job, kind) for the caller's publisher (rp_ports.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_store_internal.h"
#include "rp_gate_look.h"
#include "rp_untrusted.h"

static char *rp_dup(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    char *c = strdup(s);
    if (c == NULL) *ok = false;
    return c;
}

/* claim_seconds: the bound past which a claim is stale (rp_gate.h);
 * vhost_col: the column of the gate's vhost (migration 0015), after the
 * statement's others. */
static rp_status rp_gate_from_row(const PGresult *r, int i, int64_t claim_seconds, int vhost_col,
                                  rp_gate *g) {
    rp_gate_init(g);
    g->id = rp__pg_i64(r, i, 0);
    g->job_id = rp__pg_i64(r, i, 1);
    if (!rp_gate_kind_parse(PQgetvalue(r, i, 2), &g->kind)) return RP_ERR_INTERNAL;
    bool ok = true;
    g->project = rp_dup(rp__pg_str(r, i, 3), &ok);
    g->question = rp_dup(rp__pg_str(r, i, 4), &ok);
    g->answered = !rp__pg_null(r, i, 5);
    if (g->answered && !rp_choice_parse(PQgetvalue(r, i, 5), &g->answer)) {
        rp_gate_cleanup(g);
        return RP_ERR_INTERNAL;
    }
    g->answered_by = rp_dup(rp__pg_str(r, i, 6), &ok);
    g->answered_at = rp__pg_i64(r, i, 7);
    g->created_at = rp__pg_i64(r, i, 8);
    g->queue = rp_dup(rp__pg_str(r, i, 9), &ok);
    g->origin_queue = rp_dup(rp__pg_str(r, i, 10), &ok);
    g->reason = rp_dup(rp__pg_str(r, i, 11), &ok);
    g->vhost = rp_dup(rp__pg_str(r, i, vhost_col), &ok);
    if (!rp__pg_null(r, i, 12)) {
        g->claimed_by = rp_dup(PQgetvalue(r, i, 12), &ok);
        g->claimed_at = rp__pg_i64(r, i, 13);
        g->claim = rp_gate_claim_judge(true, g->claimed_at, rp__pg_i64(r, i, 14), claim_seconds);
    }
    if (!ok) {
        rp_gate_cleanup(g);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

static rp_status rp_list_query(rp_pg_store *s, const rp_gate_query *q, const char *origin,
                               const char *reason, rp_gate **gates, size_t *n, rp_gate_page *page);

static rp_status rp_list(void *self, const rp_gate_query *q, rp_gate **gates, size_t *n,
                         rp_gate_page *page) {
    rp_pg_store *s = self;
    *gates = NULL;
    *n = 0;
    if (page != NULL) *page = (rp_gate_page){0};
    if (q == NULL || q->limit < 1 || q->limit > 1000 || (int)q->state < 0 ||
        q->state >= RP_GATE_STATE_COUNT_ || q->older_than_ms < 0 || q->after < 0 ||
        (q->has_kind && ((int)q->kind < 0 || q->kind >= RP_GATE_KIND_COUNT_)))
        return RP_ERR_INVALID;
    /* origin and reason are kept rendered (rp_untrusted.h): so is the filter. */
    char *origin = NULL, *reason = NULL;
    if ((q->origin != NULL &&
         rp_untrusted_render((rp_bytes){(const uint8_t *)q->origin, strlen(q->origin)}, &origin) !=
             RP_OK) ||
        (q->reason != NULL &&
         rp_untrusted_render((rp_bytes){(const uint8_t *)q->reason, strlen(q->reason)}, &reason) !=
             RP_OK)) {
        free(origin);
        return RP_ERR_NOMEM;
    }
    rp_status st = rp_list_query(s, q, origin, reason, gates, n, page);
    free(origin);
    free(reason);
    return st;
}

static rp_status rp_list_query(rp_pg_store *s, const rp_gate_query *q, const char *origin,
                               const char *reason, rp_gate **gates, size_t *n, rp_gate_page *page) {
    rp_status st = rp__pg_enter(s, RP__PG_READ, "list_gates");
    if (st != RP_OK) return st;
    char limit[24], older[24], after[24];
    const char *vals[] = {rp_gate_state_string(q->state),
                          q->project,
                          rp__pg_itoa((int64_t)q->limit, limit),
                          q->has_kind ? rp_gate_kind_string(q->kind) : NULL,
                          q->queue,
                          origin,
                          reason,
                          q->older_than_ms > 0 ? rp__pg_itoa(q->older_than_ms, older) : NULL,
                          q->after > 0 ? rp__pg_itoa(q->after, after) : NULL};
    rp__pg_cmd k = {.stmt = RP__PG_GATES, .n = 9, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "list_gates", NULL);
    if (st != RP_OK) return st;
    int rows = PQntuples(r);
    /* Every row carries the count (up to the cap + 1); an empty page is
     * one row of NULLs; a row past the limit says a next page exists. */
    int64_t total = rows > 0 ? rp__pg_i64(r, 0, 15) : 0;
    if (rows == 1 && rp__pg_null(r, 0, 0)) rows = 0;
    bool more = rows > (int)q->limit;
    if (more) rows = (int)q->limit;
    rp_gate *out = rows > 0 ? calloc((size_t)rows, sizeof *out) : NULL;
    if (rows > 0 && out == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    for (int i = 0; i < rows; i++) {
        st = rp_gate_from_row(r, i, s->claim_seconds, 16, &out[i]);
        if (st != RP_OK) {
            for (int j = 0; j < i; j++) rp_gate_cleanup(&out[j]);
            free(out);
            PQclear(r);
            return st;
        }
    }
    PQclear(r);
    *gates = out;
    *n = (size_t)rows;
    if (page != NULL)
        *page = (rp_gate_page){.total = total > RP_GATE_TOTAL_CAP ? RP_GATE_TOTAL_CAP : total,
                               .next_after = more ? out[rows - 1].id : 0,
                               .total_capped = total > RP_GATE_TOTAL_CAP};
    return RP_OK;
}

static rp_outcome rp_outcome_of(rp_choice c) {
    switch (c) {
    case RP_CHOICE_RETRY: return RP_OUTCOME_RETRIED;
    case RP_CHOICE_REPLAY: return RP_OUTCOME_REPLAYED;
    case RP_CHOICE_DISMISS:
    default: return RP_OUTCOME_DISMISSED;
    }
}

/* Ends the gate's transaction without a change and returns st. */
static rp_status rp_settle_nothing(rp_pg_store *s, rp_status st) {
    rp_status rst = rp__pg_rollback(s, "answer_gate");
    return rst == RP_OK ? st : rst;
}

static rp_status rp_answer(void *self, int64_t gate_id, rp_choice choice, const char *by,
                           const char *note, rp_answer_result *out) {
    rp_pg_store *s = self;
    if ((int)choice < 0 || choice >= RP_CHOICE_COUNT_) return RP_ERR_INVALID;
    memset(out, 0, sizeof *out);
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "answer_gate");
    if (st != RP_OK) return st;

    /* 1. Lock the gate: two answers at once are settled one after the
     * other, and the second sees the first. */
    char id[24];
    const char *lock_vals[] = {rp__pg_itoa(gate_id, id)};
    rp__pg_cmd lock[2] = {
        {.stmt = -1, .sql = "BEGIN"},
        {.stmt = RP__PG_GATE_LOCK, .n = 1, .values = lock_vals},
    };
    PGresult *res[2] = {NULL, NULL};
    st = rp__pg_run(s, lock, 2, res, "answer_gate", NULL);
    if (st != RP_OK) return st;
    PGresult *r = res[1];
    if (PQntuples(r) != 1) {
        rp__pg_clear(res, 2);
        return rp_settle_nothing(s, RP_ERR_NOT_FOUND);
    }
    rp_gate_kind kind;
    bool kind_ok = rp_gate_kind_parse(PQgetvalue(r, 0, 0), &kind);
    bool answered = !rp__pg_null(r, 0, 1);
    rp_choice first = RP_CHOICE_DISMISS;
    bool first_ok = !answered || rp_choice_parse(PQgetvalue(r, 0, 1), &first);
    bool claimed = !rp__pg_null(r, 0, 2);
    bool mine = claimed && strcmp(PQgetvalue(r, 0, 2), s->claimer) == 0;
    if (claimed) snprintf(out->claimed_by, sizeof out->claimed_by, "%s", PQgetvalue(r, 0, 2));
    out->claimed_at = claimed ? rp__pg_i64(r, 0, 3) : 0;
    rp_gate_claim_state claim =
        rp_gate_claim_judge(claimed, out->claimed_at, rp__pg_i64(r, 0, 4), s->claim_seconds);
    rp__pg_clear(res, 2);
    if (!kind_ok || !first_ok) return rp_settle_nothing(s, RP_ERR_INTERNAL);
    out->kind = kind;
    if (answered) {
        out->outcome = RP_OUTCOME_ALREADY_ANSWERED;
        out->choice = first;
        return rp_settle_nothing(s, RP_OK);
    }
    if (!rp_gate_accepts(kind, choice)) return rp_settle_nothing(s, RP_ERR_CONFLICT);
    /* A replay's claim (rp_gate.h). A replay is settled by its claimer
     * only (fenced: a claim taken over, or another's, settles nothing); any
     * other answer waits while the claim is live and takes a stale one
     * over, saying so. */
    if (choice == RP_CHOICE_REPLAY ? claimed && !mine : claim == RP_GATE_CLAIM_LIVE) {
        out->claim = claim == RP_GATE_CLAIM_NONE ? RP_GATE_CLAIM_LIVE : claim;
        return rp_settle_nothing(s, RP_ERR_BUSY);
    }
    if (choice != RP_CHOICE_REPLAY && claim == RP_GATE_CLAIM_STALE) {
        int64_t seq = 0;
        st = rp__pg_claim_take_over(s, gate_id, by, choice, &seq);
        if (st != RP_OK) return st;
        out->claim = RP_GATE_CLAIM_STALE;
        char at[24];
        RP_WARN("a stale replay claim on a gate was taken over: its message may have been "
                "published once already", "gate", id, "claimed_by", out->claimed_by,
                "claimed_at_ms", rp__pg_itoa(out->claimed_at, at), "choice",
                rp_choice_string(choice), NULL);
    }

    /* 2. Answer, change the job, append the event, commit: one round trip. */
    rp_outcome outcome = rp_outcome_of(choice);
    const char *vals[] = {id, rp_choice_string(choice), by, rp_outcome_string(outcome), note};
    rp__pg_cmd apply[2] = {
        {.stmt = RP__PG_GATE_ANSWER, .n = 5, .values = vals},
        {.stmt = -1, .sql = "COMMIT"},
    };
    st = rp__pg_run(s, apply, 2, res, "answer_gate", NULL);
    if (st != RP_OK) return st;
    bool done = PQntuples(res[0]) == 1 && !rp__pg_null(res[0], 0, 1);
    rp_event_ref ev = {0};
    int64_t job_id = 0;
    if (done) {
        /* The committed event, for the caller to hand to the publisher. */
        ev.seq = rp__pg_i64(res[0], 0, 1);
        ev.at = rp__pg_i64(res[0], 0, 2);
        job_id = rp__pg_i64(res[0], 0, 3);
        snprintf(out->vhost, sizeof out->vhost, "%s",
                 rp__pg_null(res[0], 0, 4) ? "" : PQgetvalue(res[0], 0, 4));
    }
    rp__pg_clear(res, 2);
    if (!done) {
        /* Locked and open a moment ago, so this cannot be; committed
         * nothing of note if it were (no row matched). */
        RP_WARN("gate answer changed nothing", "gate", id, NULL);
        return RP_ERR_INTERNAL;
    }
    out->outcome = outcome;
    out->choice = choice;
    out->committed = true;
    out->event = ev;
    out->job_id = job_id;
    return RP_OK;
}

void rp__pg_fill_gates(rp_gate_port *out) {
    out->list = rp_list;
    out->answer = rp_answer;
}

/* ---- looking inside one gate (rp_gate_look.h) ------------------------------ */

static rp_status rp_look(void *self, int64_t gate, int64_t offset, size_t len, rp_gate_look *out) {
    rp_pg_store *s = self;
    if (out == NULL || offset < 0 || len < 1 || len > RP_GATE_LOOK_WINDOW_MAX)
        return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "look_gate");
    if (st != RP_OK) return st;
    char idb[24], offb[24], lenb[24];
    /* No stored body is longer than RP_PG_DL_BODY_MAX: a window past it is
     * empty, and the statement's offset stays an int. */
    int64_t from = offset > (int64_t)RP_PG_DL_BODY_MAX ? (int64_t)RP_PG_DL_BODY_MAX : offset;
    const char *vals[] = {rp__pg_itoa(gate, idb), rp__pg_itoa(from, offb),
                          rp__pg_itoa((int64_t)len, lenb)};
    rp__pg_cmd k = {.stmt = RP__PG_GATE_LOOK, .n = 3, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "look_gate", NULL);
    if (st != RP_OK) return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return RP_ERR_NOT_FOUND;
    }
    rp_gate_look l;
    rp_gate_look_init(&l);
    st = rp_gate_from_row(r, 0, s->claim_seconds, 29, &l.gate);
    if (st == RP_OK && !rp_job_state_parse(PQgetvalue(r, 0, 15), &l.job_state)) st = RP_ERR_INTERNAL;
    if (st == RP_OK) {
        bool ok = true;
        l.job_kind = rp_dup(rp__pg_str(r, 0, 16), &ok);
        l.attempts = (int32_t)rp__pg_i64(r, 0, 17);
        l.max_attempts = (int32_t)rp__pg_i64(r, 0, 18);
        l.vhost = rp_dup(rp__pg_str(r, 0, 19), &ok);
        l.has_dead_letter = strcmp(PQgetvalue(r, 0, 20), "t") == 0;
        if (l.has_dead_letter) {
            l.has_first_death = !rp__pg_null(r, 0, 21);
            l.first_death_at = rp__pg_i64(r, 0, 21);
            l.parked_at = rp__pg_i64(r, 0, 22);
            l.headers_json = rp_dup(rp__pg_str(r, 0, 23), &ok);
            l.properties_json = rp_dup(rp__pg_str(r, 0, 24), &ok);
            l.body_size = rp__pg_i64(r, 0, 25);
            l.body_truncated = strcmp(PQgetvalue(r, 0, 26), "t") == 0;
            l.window_offset = offset;
            l.window_base64 = rp_dup(rp__pg_str(r, 0, 27), &ok);
            l.window_len = rp__pg_i64(r, 0, 28);
        }
        if (!ok) st = RP_ERR_NOMEM;
    }
    PQclear(r);
    if (st != RP_OK) {
        rp_gate_look_cleanup(&l);
        return st;
    }
    *out = l;
    return RP_OK;
}

void rp_pg_gate_look_port(rp_pg_store *s, rp_gate_look_port *out) {
    *out = (rp_gate_look_port){.self = s, .look = rp_look};
}
