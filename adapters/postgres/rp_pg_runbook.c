/* Issue 18's store side: jobs held past the ceiling (STALLED), claimable
 * jobs per (project, kind) (WAITING_DEPTH), and the fenced eviction of a
 * stalled job (rp_ports.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

static rp_status rp_list_long_held(void *self, const rp_long_held_query *q,
                                   rp_long_held_list *out) {
    rp_pg_store *s = self;
    out->jobs = NULL;
    out->n = 0;
    if (q == NULL || q->limit < 1) return RP_ERR_INVALID;
    char before[24], now[24], grace[24], limit[24];
    const char *vals[] = {rp__pg_itoa(q->claimed_before, before), rp__pg_itoa(q->now, now),
                          rp__pg_itoa(q->grace_seconds, grace), q->project,
                          rp__pg_itoa((int64_t)q->limit, limit)};
    rp__pg_cmd k = {.stmt = RP__PG_LONG_HELD, .n = 5, .values = vals};
    PGresult *r;
    rp_long_held_job *view;
    int n;
    rp_status st = rp__pg_lend(s, &s->held_long, &k, "list_long_held", sizeof *view, &r,
                               (void **)&view, &n);
    if (st != RP_OK || n == 0) return st;
    for (int i = 0; i < n; i++) {
        view[i].id = rp__pg_i64(r, i, 0);
        view[i].project = rp__pg_str(r, i, 1);
        view[i].kind = rp__pg_str(r, i, 2);
        view[i].state = RP_JOB_LEASED;
        view[i].lease_owner = rp__pg_null(r, i, 3) ? NULL : rp__pg_str(r, i, 3);
        view[i].lease_expires_known = strcmp(PQgetvalue(r, i, 4), "t") == 0;
        view[i].lease_expires_at = rp__pg_i64(r, i, 5);
        view[i].claimed_known = !rp__pg_null(r, i, 6);
        view[i].claimed_at = rp__pg_i64(r, i, 6);
    }
    out->jobs = view;
    out->n = (size_t)n;
    return RP_OK;
}

static rp_status rp_count_waiting(void *self, const char *project, rp_time_ms now,
                                  int64_t more_than, rp_waiting_list *out) {
    rp_pg_store *s = self;
    out->groups = NULL;
    out->n = 0;
    char nowbuf[24], more[24];
    const char *vals[] = {project, rp__pg_itoa(now, nowbuf), rp__pg_itoa(more_than, more)};
    rp__pg_cmd k = {.stmt = RP__PG_WAITING, .n = 3, .values = vals};
    PGresult *r;
    rp_waiting_group *view;
    int n;
    rp_status st = rp__pg_lend(s, &s->waiting, &k, "count_waiting", sizeof *view, &r,
                               (void **)&view, &n);
    if (st != RP_OK || n == 0) return st;
    for (int i = 0; i < n; i++) {
        view[i].project = rp__pg_str(r, i, 0);
        view[i].kind = rp__pg_str(r, i, 1);
        view[i].claimable = rp__pg_i64(r, i, 2);
    }
    out->groups = view;
    out->n = (size_t)n;
    return RP_OK;
}

static rp_status rp_evict_held(void *self, const rp_long_held_job *job, const rp_verdict *v,
                               rp_event_ref *event) {
    rp_pg_store *s = self;
    if (job == NULL || v == NULL || event == NULL || !job->claimed_known ||
        v->condition != RP_COND_STALLED || v->action != RP_ACTION_REQUEUED)
        return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "evict_held");
    if (st != RP_OK) return st;
    char *payload = NULL;
    if ((st = rp__pg_payload(v, &payload)) != RP_OK) return st;
    char id[24], claimed[24];
    const char *vals[] = {rp__pg_itoa(job->id, id), job->lease_owner,
                          rp__pg_itoa(job->claimed_at, claimed), payload};
    rp__pg_cmd k = {.stmt = RP__PG_EVICT_HELD, .n = 4, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "evict_held", NULL);
    free(payload);
    if (st != RP_OK) return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return RP_ERR_CONFLICT;
    }
    event->seq = rp__pg_i64(r, 0, 0);
    event->at = rp__pg_i64(r, 0, 1);
    PQclear(r);
    return RP_OK;
}

void rp__pg_fill_runbook(rp_store_port *out) {
    out->list_long_held = rp_list_long_held;
    out->count_waiting = rp_count_waiting;
    out->evict_held = rp_evict_held;
}
