/* Issue 18 item 3's store side: intake, completions and claimable jobs per
 * (project, kind) over the window, and owned queues' publish and ack
 * counters sampled into queue_counter / queue_increment (migration 0009)
 * (DIVERGENT; rp_ports.h), one queue at a time or a listed page of them in
 * one round trip (issue 19 item 5). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_binarray.h"
#include "rp_pg_store_internal.h"

#define RP_PG_OID_INT8 20

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

static bool rp_reading_ok(const rp_queue_counter_reading *rd) {
    return rd->vhost != NULL && rd->name != NULL && rd->published_total >= 0 &&
           rd->acked_total >= 0 && rd->window_seconds >= 0;
}

/* An int8 in array_recv's element format (8 bytes, network order). */
static void rp_add_i64(rp_pg_binarray *a, int64_t v) {
    uint64_t u = (uint64_t)v;
    unsigned char b[8];
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(u >> (56 - 8 * k));
    rp_pg_binarray_add(a, b, sizeof b);
}

/* The columns of the n readings as binary arrays: vhosts, names,
 * published, acked. false when one cannot be built (no memory). */
static bool rp_columns(const rp_queue_counter_reading *rd, size_t n, rp_pg_binarray col[4]) {
    rp_pg_binarray_begin(&col[0], RP_PG_OID_TEXT, (uint32_t)n);
    rp_pg_binarray_begin(&col[1], RP_PG_OID_TEXT, (uint32_t)n);
    rp_pg_binarray_begin(&col[2], RP_PG_OID_INT8, (uint32_t)n);
    rp_pg_binarray_begin(&col[3], RP_PG_OID_INT8, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        rp_pg_binarray_add_str(&col[0], rd[i].vhost);
        rp_pg_binarray_add_str(&col[1], rd[i].name);
        rp_add_i64(&col[2], rd[i].published_total);
        rp_add_i64(&col[3], rd[i].acked_total);
    }
    for (int c = 0; c < 4; c++)
        if (!rp_pg_binarray_ok(&col[c])) return false;
    return true;
}

static rp_status rp_sample_queue_counters_many(void *self, const rp_queue_counter_reading *rd,
                                               size_t n, rp_queue_rates *out) {
    rp_pg_store *s = self;
    if (out != NULL && n > 0) memset(out, 0, n * sizeof *out);
    if (rd == NULL || out == NULL || n == 0 || n > (size_t)INT32_MAX) return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (!rp_reading_ok(&rd[i]) || rd[i].read_at != rd[0].read_at ||
            rd[i].window_seconds != rd[0].window_seconds)
            return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "sample_queue_counters");
    if (st != RP_OK) return st;
    rp_pg_binarray col[4];
    memset(col, 0, sizeof col);
    if (!rp_columns(rd, n, col)) {
        for (int c = 0; c < 4; c++) rp_pg_binarray_cleanup(&col[c]);
        return RP_ERR_NOMEM;
    }
    char at[24], window[24];
    const char *vals[] = {col[0].data,
                          col[1].data,
                          col[2].data,
                          col[3].data,
                          rp__pg_itoa(rd[0].read_at, at),
                          rp__pg_itoa(rd[0].window_seconds, window)};
    const int lengths[] = {(int)col[0].len, (int)col[1].len, (int)col[2].len, (int)col[3].len,
                           0, 0};
    const int formats[] = {1, 1, 1, 1, 0, 0};
    const char *prune[] = {vals[4], vals[5]};
    const char *sums[] = {vals[0], vals[1], vals[4], vals[5]};
    const int sums_len[] = {lengths[0], lengths[1], 0, 0};
    const int sums_fmt[] = {1, 1, 0, 0};
    rp__pg_cmd k[] = {
        {.stmt = RP__PG_COUNTER_FIRST_MANY, .n = 5, .values = vals, .lengths = lengths,
         .formats = formats},
        {.stmt = RP__PG_COUNTER_SAMPLE_MANY, .n = 5, .values = vals, .lengths = lengths,
         .formats = formats},
        {.stmt = RP__PG_COUNTER_PRUNE, .n = 2, .values = prune},
        {.stmt = RP__PG_COUNTER_SUMS_MANY, .n = 4, .values = sums, .lengths = sums_len,
         .formats = sums_fmt},
    };
    PGresult *r[4] = {NULL, NULL, NULL, NULL};
    /* One pipeline segment: one implicit transaction, one round trip. */
    st = rp__pg_run(s, k, 4, r, "sample_queue_counters", NULL);
    for (int c = 0; c < 4; c++) rp_pg_binarray_cleanup(&col[c]);
    if (st != RP_OK) return st;
    if (PQntuples(r[3]) != (int)n) {
        rp__pg_clear(r, 4);
        return RP_ERR_INTERNAL;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].known = true;
        out[i].published = rp__pg_i64(r[3], (int)i, 0);
        out[i].acked = rp__pg_i64(r[3], (int)i, 1);
        out[i].ack_known = !rp__pg_null(r[3], (int)i, 2);
        out[i].acked_at = out[i].ack_known ? rp__pg_i64(r[3], (int)i, 2) : 0;
    }
    /* A baseline inserted: the queue's first reading (its first occurrence
     * here; a second one finds the baseline, as one after the other). */
    for (int row = 0; row < PQntuples(r[0]); row++) {
        const char *vh = rp__pg_str(r[0], row, 0), *name = rp__pg_str(r[0], row, 1);
        for (size_t i = 0; vh && name && i < n; i++)
            if (strcmp(rd[i].vhost, vh) == 0 && strcmp(rd[i].name, name) == 0) {
                out[i].known = false;
                break;
            }
    }
    rp__pg_clear(r, 4);
    return RP_OK;
}

void rp__pg_fill_divergent(rp_store_port *out) {
    out->count_divergent = rp_count_divergent;
    out->sample_queue_counters = rp_sample_queue_counters;
    out->sample_queue_counters_many = rp_sample_queue_counters_many;
}
