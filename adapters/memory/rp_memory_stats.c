/* The stats store port over the memory store (rp_memory_stats.h). */
#include "rp_memory_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"

static bool rp_same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static const rp_mem_job *rp_job_by_id(const rp_memory *m, int64_t id) {
    for (size_t i = 0; i < m->n_jobs; i++)
        if (m->jobs[i].id == id) return &m->jobs[i];
    return NULL;
}

/* Claimable at the store's clock; *since when it became so. */
static bool rp_claimable(const rp_memory *m, const rp_mem_job *j, rp_time_ms *since) {
    if (j->state != RP_JOB_READY || j->run_after > m->now) return false;
    *since = j->run_after;
    if (j->depends_on == 0) return true;
    const rp_mem_job *d = rp_job_by_id(m, j->depends_on);
    if (d == NULL || d->state != RP_JOB_SUCCEEDED) return false;
    if (d->finished_known && d->finished_at > *since) *since = d->finished_at;
    return true;
}

static int rp_cmp_count(const void *a, const void *b) {
    const rp_stats_kind_count *x = a, *y = b;
    int c = strcmp(x->row.project, y->row.project);
    return c ? c : strcmp(x->row.kind, y->row.kind);
}

static rp_status rp_kinds(void *self, rp_time_ms now, int64_t window_seconds,
                          rp_stats_kind_count **rows, size_t *n) {
    rp_memory *m = self;
    (void)now; /* the store's own clock decides what is claimable */
    *rows = NULL;
    *n = 0;
    if (window_seconds < 0) return RP_ERR_INVALID;
    rp_stats_kind_count *out = m->n_jobs ? calloc(m->n_jobs, sizeof *out) : NULL;
    if (m->n_jobs && out == NULL) return RP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < m->n_jobs; i++) {
        const rp_mem_job *j = &m->jobs[i];
        rp_time_ms since = 0;
        bool waiting = rp_claimable(m, j, &since), active = j->state == RP_JOB_LEASED;
        if (!waiting && !active) continue;
        size_t g = 0;
        while (g < k && !(rp_same(out[g].row.project, j->project) && rp_same(out[g].row.kind, j->kind)))
            g++;
        if (g == k) {
            out[k].row.project = strdup(j->project);
            out[k].row.kind = strdup(j->kind);
            k++;
            if (out[g].row.project == NULL || out[g].row.kind == NULL) {
                rp_stats_kind_counts_free(out, k);
                return RP_ERR_NOMEM;
            }
        }
        rp_stats_kind_count *c = &out[g];
        if (active) c->row.active++;
        if (waiting) {
            c->row.waiting++;
            if (!c->oldest_known || since < c->oldest_since) c->oldest_since = since;
            c->oldest_known = true;
        }
    }
    if (k > 1) qsort(out, k, sizeof *out, rp_cmp_count);
    if (k == 0) {
        free(out);
        out = NULL;
    }
    *rows = out;
    *n = k;
    return RP_OK;
}

static rp_status rp_rates(void *self, const char *vhost, const char *name, rp_time_ms now,
                          int64_t window_seconds, rp_queue_rates *out) {
    (void)self;
    (void)now;
    *out = (rp_queue_rates){0};
    if (vhost == NULL || name == NULL || window_seconds < 0) return RP_ERR_INVALID;
    return RP_OK;
}

static rp_status rp_sightings(void *self, rp_stats_sighting **rows, size_t *n) {
    rp_memory *m = self;
    *rows = NULL;
    *n = 0;
    rp_status st = rp__mem_enter(m, RP_MEM_LIST_SIGHTINGS);
    if (st != RP_OK) return st;
    rp_stats_sighting *out = m->n_sightings ? calloc(m->n_sightings, sizeof *out) : NULL;
    if (m->n_sightings && out == NULL) return RP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < m->n_sightings; i++) {
        const rp_sighting_row *s = &m->sightings[i];
        if (rp_stats_flag_of(s->condition) == 0) continue;
        rp_stats_sighting *o = &out[k++];
        o->key = strdup(s->key);
        bool ok = o->key != NULL;
        const char *job = strstr(s->key, "|job:");
        int64_t id = 0;
        if (ok && job && sscanf(job + 5, "%" SCNd64, &id) == 1) {
            const rp_mem_job *j = rp_job_by_id(m, id);
            if (j) {
                o->project = strdup(j->project);
                o->kind = strdup(j->kind);
                ok = o->project && o->kind;
            }
        }
        if (!ok) {
            rp_stats_sightings_free(out, k);
            return RP_ERR_NOMEM;
        }
    }
    if (k == 0) {
        free(out);
        out = NULL;
    }
    *rows = out;
    *n = k;
    return RP_OK;
}

void rp_memory_stats_port(rp_memory *m, rp_stats_store_port *out) {
    *out = (rp_stats_store_port){
        .self = m, .kinds = rp_kinds, .queue_rates = rp_rates, .sightings = rp_sightings};
}
