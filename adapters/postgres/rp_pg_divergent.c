/* Issue 18 item 3's store side: intake, completions and claimable jobs per
 * (project, kind) over the window, and owned queues' publish and ack
 * counters sampled into queue_counter / queue_increment (migration 0009)
 * (DIVERGENT; rp_ports.h). */
#include <stdlib.h>

#include "rp_pg_store_internal.h"

static rp_status rp_count_divergent(void *self, const char *project, rp_time_ms now,
                                    int64_t window_seconds, int64_t more_than,
                                    rp_divergence_list *out) {
    rp_pg_store *s = self;
    out->groups = NULL;
    out->n = 0;
    if (window_seconds < 0) return RP_ERR_INVALID;
    char nowbuf[24], window[24], more[24];
    const char *vals[] = {project, rp__pg_itoa(now, nowbuf), rp__pg_itoa(window_seconds, window),
                          rp__pg_itoa(more_than, more)};
    rp__pg_cmd k = {.stmt = RP__PG_DIVERGENT, .n = 4, .values = vals};
    PGresult *r;
    rp_divergence_group *view;
    int n;
    rp_status st = rp__pg_lend(s, &s->divergent, &k, "count_divergent", sizeof *view, &r,
                               (void **)&view, &n);
    if (st != RP_OK || n == 0) return st;
    for (int i = 0; i < n; i++) {
        view[i].project = rp__pg_str(r, i, 0);
        view[i].kind = rp__pg_str(r, i, 1);
        view[i].intake = rp__pg_i64(r, i, 2);
        view[i].completions = rp__pg_i64(r, i, 3);
        view[i].waiting = rp__pg_i64(r, i, 4);
    }
    out->groups = view;
    out->n = (size_t)n;
    return RP_OK;
}

static rp_status rp_sample_queue_counters(void *self, const rp_queue_counter_reading *rd,
                                          rp_queue_rates *out) {
    rp_pg_store *s = self;
    *out = (rp_queue_rates){0};
    if (rd == NULL || rd->vhost == NULL || rd->name == NULL || rd->published_total < 0 ||
        rd->acked_total < 0 || rd->window_seconds < 0)
        return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "sample_queue_counters");
    if (st != RP_OK) return st;
    char pub[24], ack[24], at[24], window[24];
    const char *vals[] = {rd->vhost, rd->name, rp__pg_itoa(rd->published_total, pub),
                          rp__pg_itoa(rd->acked_total, ack), rp__pg_itoa(rd->read_at, at),
                          rp__pg_itoa(rd->window_seconds, window)};
    const char *prune[] = {vals[4], vals[5]};
    const char *sums[] = {vals[0], vals[1], vals[4], vals[5]};
    rp__pg_cmd k[] = {
        {.stmt = RP__PG_COUNTER_FIRST, .n = 5, .values = vals},
        {.stmt = RP__PG_COUNTER_SAMPLE, .n = 5, .values = vals},
        {.stmt = RP__PG_COUNTER_PRUNE, .n = 2, .values = prune},
        {.stmt = RP__PG_COUNTER_SUMS, .n = 4, .values = sums},
    };
    PGresult *r[4] = {NULL, NULL, NULL, NULL};
    st = rp__pg_run(s, k, 4, r, "sample_queue_counters", NULL);
    if (st != RP_OK) return st;
    if (PQntuples(r[3]) != 1) {
        rp__pg_clear(r, 4);
        return RP_ERR_INTERNAL;
    }
    out->known = PQntuples(r[0]) == 0; /* no baseline inserted: read before */
    out->published = rp__pg_i64(r[3], 0, 0);
    out->acked = rp__pg_i64(r[3], 0, 1);
    out->ack_known = !rp__pg_null(r[3], 0, 2); /* migration 0010 */
    out->acked_at = out->ack_known ? rp__pg_i64(r[3], 0, 2) : 0;
    rp__pg_clear(r, 4);
    return RP_OK;
}

void rp__pg_fill_divergent(rp_store_port *out) {
    out->count_divergent = rp_count_divergent;
    out->sample_queue_counters = rp_sample_queue_counters;
}
