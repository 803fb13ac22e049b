/* Stale ready: the oldest claimable job of every project, in one query
 * (rp_pg_store.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

static rp_status rp_list_claimable(void *self, const char *project, rp_time_ms now,
                                   rp_claimable_list *out) {
    rp_pg_store *s = self;
    out->jobs = NULL;
    out->n = 0;
    PQclear(s->claim_res);
    s->claim_res = NULL;
    free(s->claim_view);
    s->claim_view = NULL;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "list_oldest_claimable");
    if (st != RP_OK) return st;
    char nowbuf[24];
    const char *vals[] = {project, rp__pg_itoa(now, nowbuf)};
    rp__pg_cmd k = {.stmt = RP__PG_CLAIMABLE, .n = 2, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "list_oldest_claimable", NULL);
    if (st != RP_OK) return st;
    int n = PQntuples(r);
    if (n == 0) {
        PQclear(r);
        return RP_OK;
    }
    rp_claimable_job *view = calloc((size_t)n, sizeof *view);
    if (view == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        view[i].project = rp__pg_str(r, i, 0);
        view[i].job_id = rp__pg_i64(r, i, 1);
        view[i].kind = rp__pg_str(r, i, 2);
        view[i].run_after = rp__pg_i64(r, i, 3);
        view[i].dependency_finished_known = strcmp(PQgetvalue(r, i, 4), "t") == 0;
        view[i].dependency_finished_at = rp__pg_i64(r, i, 5);
    }
    s->claim_res = r;
    s->claim_view = view;
    out->jobs = view;
    out->n = (size_t)n;
    return RP_OK;
}

void rp__pg_fill_ready(rp_store_port *out) { out->list_oldest_claimable = rp_list_claimable; }
