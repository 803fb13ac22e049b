/* Issue 18 item 4's store side: the job table's wedge groups and the
 * consecutive-check counters of migration 0008 (rp_ports.h, rp_wedged.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_pg_binarray.h"
#include "rp_pg_store_internal.h"

static rp_status rp_list_wedge_groups(void *self, const char *project, rp_time_ms now,
                                      int64_t grace_seconds, rp_wedge_group_list *out) {
    rp_pg_store *s = self;
    out->groups = NULL;
    out->n = 0;
    char nowbuf[24], grace[24];
    const char *vals[] = {project, rp__pg_itoa(now, nowbuf), rp__pg_itoa(grace_seconds, grace)};
    rp__pg_cmd k = {.stmt = RP__PG_WEDGE_GROUPS, .n = 3, .values = vals};
    PGresult *r;
    rp_wedge_group *view;
    int n;
    rp_status st = rp__pg_lend(s, &s->wedge, &k, "list_wedge_groups", sizeof *view, &r,
                               (void **)&view, &n);
    if (st != RP_OK || n == 0) return st;
    for (int i = 0; i < n; i++) {
        view[i].project = rp__pg_str(r, i, 0);
        view[i].kind = rp__pg_str(r, i, 1);
        view[i].claimable = rp__pg_i64(r, i, 2);
        view[i].active = rp__pg_i64(r, i, 3);
        view[i].claimable_since = rp__pg_i64(r, i, 4);
        view[i].completed_known = !rp__pg_null(r, i, 5);
        view[i].last_completed_at = view[i].completed_known ? rp__pg_i64(r, i, 5) : 0;
    }
    out->groups = view;
    out->n = (size_t)n;
    return RP_OK;
}

static rp_status rp_count_wedge_checks(void *self, const char *scope, const char *const *wedged,
                                       size_t n, bool dry, int64_t *counts) {
    rp_pg_store *s = self;
    if (scope == NULL || (n > 0 && (wedged == NULL || counts == NULL)) || n > UINT32_MAX)
        return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (wedged[i] == NULL) return RP_ERR_INVALID;
        counts[i] = 1;
    }
    if (dry && n == 0) return RP_OK;
    rp_status st = rp__pg_enter(s, dry ? RP__PG_READ : RP__PG_WRITE, "count_wedge_checks");
    if (st != RP_OK) return st;
    /* The subjects as one text[]: binary when there are any, "{}" else. */
    rp_pg_binarray a = {0};
    const char *arr = "{}";
    int arrlen = 0, arrfmt = 0;
    if (n > 0) {
        rp_pg_binarray_begin(&a, RP_PG_OID_TEXT, (uint32_t)n);
        for (size_t i = 0; i < n; i++) rp_pg_binarray_add_str(&a, wedged[i]);
        if (!rp_pg_binarray_ok(&a)) {
            rp_pg_binarray_cleanup(&a);
            return RP_ERR_NOMEM;
        }
        arr = a.data;
        arrlen = (int)a.len;
        arrfmt = 1;
    }
    PGresult *r = NULL;
    if (dry) {
        const char *vals[] = {arr};
        const int lens[] = {arrlen}, fmts[] = {arrfmt};
        rp__pg_cmd k = {.stmt = RP__PG_WEDGE_PEEK, .n = 1, .values = vals, .lengths = lens,
                        .formats = fmts};
        st = rp__pg_run(s, &k, 1, &r, "count_wedge_checks", NULL);
    } else {
        const char *vals[] = {scope, arr};
        const int lens[] = {0, arrlen}, fmts[] = {0, arrfmt};
        rp__pg_cmd k = {.stmt = RP__PG_WEDGE_COUNT, .n = 2, .values = vals, .lengths = lens,
                        .formats = fmts};
        st = rp__pg_run(s, &k, 1, &r, "count_wedge_checks", NULL);
    }
    rp_pg_binarray_cleanup(&a);
    if (st != RP_OK) return st;
    for (int row = 0; row < PQntuples(r); row++) {
        const char *subject = rp__pg_str(r, row, 0);
        int64_t c = rp__pg_i64(r, row, 1);
        for (size_t i = 0; i < n; i++)
            if (strcmp(wedged[i], subject) == 0) counts[i] = dry ? c + 1 : c;
    }
    PQclear(r);
    return RP_OK;
}

/* ---- Issue 18 item 4's restart-loop breaker (migration 0010) ---------------- */

static rp_status rp_claim_wedge_restart(void *self, const char *subject, rp_time_ms now,
                                        rp_time_ms prune_before,
                                        rp_wedge_restart_decide_fn decide, void *arg,
                                        rp_wedge_restart_choice *choice, rp_verdict *v,
                                        rp_event_ref *event) {
    rp_pg_store *s = self;
    *choice = RP_WEDGE_RESTART_NONE;
    if (subject == NULL || decide == NULL || v == NULL || event == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "claim_wedge_restart");
    if (st != RP_OK) return st;
    /* 1. Lock the subject's row, prune, read its restarts: one round trip. */
    char nowbuf[24], prunebuf[24];
    const char *subj[] = {subject};
    const char *prune[] = {rp__pg_itoa(prune_before, prunebuf)};
    rp__pg_cmd lock[4] = {
        {.stmt = -1, .sql = "BEGIN"},
        {.stmt = RP__PG_WEDGE_RESTART_LOCK, .n = 1, .values = subj},
        {.stmt = RP__PG_WEDGE_RESTART_PRUNE, .n = 1, .values = prune},
        {.stmt = RP__PG_WEDGE_RESTART_LIST, .n = 1, .values = subj},
    };
    PGresult *res[4] = {NULL, NULL, NULL, NULL};
    st = rp__pg_run(s, lock, 4, res, "claim_wedge_restart", NULL);
    if (st != RP_OK) return st;
    if (PQntuples(res[1]) != 1) { /* no wedge counted (a healthy check reset it) */
        rp__pg_clear(res, 4);
        return rp__pg_rollback(s, "claim_wedge_restart");
    }
    bool looped = strcmp(PQgetvalue(res[1], 0, 0), "t") == 0;
    int n = PQntuples(res[3]);
    rp_time_ms *ats = n > 0 ? calloc((size_t)n, sizeof *ats) : NULL;
    if (n > 0 && ats == NULL) {
        rp__pg_clear(res, 4);
        rp_status rst = rp__pg_rollback(s, "claim_wedge_restart");
        return rst == RP_OK ? RP_ERR_NOMEM : rst;
    }
    for (int i = 0; i < n; i++) ats[i] = rp__pg_i64(res[3], i, 0);
    rp__pg_clear(res, 4);
    /* 2. Core decides. */
    rp_status dst = decide(arg, ats, (size_t)n, looped, choice, v);
    free(ats);
    if (dst != RP_OK || *choice == RP_WEDGE_RESTART_NONE) {
        if (dst != RP_OK) *choice = RP_WEDGE_RESTART_NONE;
        rp_status rst = rp__pg_rollback(s, "claim_wedge_restart");
        return dst != RP_OK ? dst : rst;
    }
    /* 3. The restart or the loop with its ledger event, committed. */
    char *payload = NULL;
    if ((st = rp__pg_payload(v, &payload)) != RP_OK) {
        *choice = RP_WEDGE_RESTART_NONE;
        rp_status rst = rp__pg_rollback(s, "claim_wedge_restart");
        return rst == RP_OK ? st : rst;
    }
    const char *add[] = {subject, rp__pg_itoa(now, nowbuf)};
    const char *ev[] = {v->project, payload};
    rp__pg_cmd apply[3] = {
        *choice == RP_WEDGE_RESTART_GO
            ? (rp__pg_cmd){.stmt = RP__PG_WEDGE_RESTART_ADD, .n = 2, .values = add}
            : (rp__pg_cmd){.stmt = RP__PG_WEDGE_RESTART_LOOP, .n = 1, .values = subj},
        {.stmt = RP__PG_APPEND, .n = 2, .values = ev},
        {.stmt = -1, .sql = "COMMIT"},
    };
    PGresult *out[3] = {NULL, NULL, NULL};
    st = rp__pg_run(s, apply, 3, out, "claim_wedge_restart", NULL);
    free(payload);
    if (st != RP_OK) {
        *choice = RP_WEDGE_RESTART_NONE;
        return st;
    }
    bool wrote = PQntuples(out[1]) == 1;
    if (wrote) {
        event->seq = rp__pg_i64(out[1], 0, 0);
        event->at = rp__pg_i64(out[1], 0, 1);
    }
    rp__pg_clear(out, 3);
    if (!wrote) {
        *choice = RP_WEDGE_RESTART_NONE;
        return RP_ERR_INTERNAL;
    }
    return RP_OK;
}

void rp__pg_fill_wedged(rp_store_port *out) {
    out->list_wedge_groups = rp_list_wedge_groups;
    out->count_wedge_checks = rp_count_wedge_checks;
    out->claim_wedge_restart = rp_claim_wedge_restart;
}
