/* Issue 18 item 3's store side: intake, completions and claimable jobs per
 * (project, kind) over the window (DIVERGENT; rp_ports.h). */
#include <stdlib.h>

#include "rp_pg_store_internal.h"

static void rp_forget_divergent(rp_pg_store *s) {
    PQclear(s->divergent_res);
    s->divergent_res = NULL;
    free(s->divergent_view);
    s->divergent_view = NULL;
}

static rp_status rp_count_divergent(void *self, const char *project, rp_time_ms now,
                                    int64_t window_seconds, int64_t more_than,
                                    rp_divergence_list *out) {
    rp_pg_store *s = self;
    out->groups = NULL;
    out->n = 0;
    rp_forget_divergent(s);
    if (window_seconds < 0) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "count_divergent");
    if (st != RP_OK) return st;
    char nowbuf[24], window[24], more[24];
    const char *vals[] = {project, rp__pg_itoa(now, nowbuf), rp__pg_itoa(window_seconds, window),
                          rp__pg_itoa(more_than, more)};
    rp__pg_cmd k = {.stmt = RP__PG_DIVERGENT, .n = 4, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "count_divergent", NULL);
    if (st != RP_OK) return st;
    int n = PQntuples(r);
    if (n == 0) {
        PQclear(r);
        return RP_OK;
    }
    rp_divergence_group *view = calloc((size_t)n, sizeof *view);
    if (view == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        view[i].project = rp__pg_str(r, i, 0);
        view[i].kind = rp__pg_str(r, i, 1);
        view[i].intake = rp__pg_i64(r, i, 2);
        view[i].completions = rp__pg_i64(r, i, 3);
        view[i].waiting = rp__pg_i64(r, i, 4);
    }
    s->divergent_res = r;
    s->divergent_view = view;
    out->groups = view;
    out->n = (size_t)n;
    return RP_OK;
}

void rp__pg_fill_divergent(rp_store_port *out) { out->count_divergent = rp_count_divergent; }
