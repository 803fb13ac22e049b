/* Issue 18 item 7's stats rows (rp_stats.h). */
#include "rp_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_object.h"
#include "rp_sighting.h"

static const rp_stats_flag rp_flags[RP_STATS_FLAG_COUNT] = {
    RP_STATS_STALLED, RP_STATS_WEDGED, RP_STATS_DIVERGENT, RP_STATS_WAITING_DEPTH};

rp_stats_flag rp_stats_flag_at(size_t i) {
    return i < RP_STATS_FLAG_COUNT ? rp_flags[i] : (rp_stats_flag)0;
}

const char *rp_stats_flag_string(rp_stats_flag f) {
    switch (f) {
    case RP_STATS_STALLED: return "STALLED";
    case RP_STATS_WEDGED: return "WEDGED";
    case RP_STATS_DIVERGENT: return "DIVERGENT";
    case RP_STATS_WAITING_DEPTH: return "WAITING_DEPTH";
    default: return "unknown";
    }
}

unsigned rp_stats_flag_of(rp_condition c) {
    switch (c) {
    case RP_COND_STALLED: return RP_STATS_STALLED;
    case RP_COND_WEDGED: return RP_STATS_WEDGED;
    case RP_COND_DIVERGENT: return RP_STATS_DIVERGENT;
    case RP_COND_WAITING_DEPTH: return RP_STATS_WAITING_DEPTH;
    default: return 0;
    }
}

int64_t rp_stats_age_ms(rp_time_ms now, rp_time_ms since) {
    return since >= now ? 0 : rp__sat_sub(now, since);
}

void rp_stats_init(rp_stats *s) { memset(s, 0, sizeof *s); }

static void rp_queue_cleanup(rp_stats_queue *q) {
    free(q->vhost);
    free(q->name);
}

static void rp_kind_cleanup(rp_stats_kind *k) {
    free(k->project);
    free(k->kind);
}

void rp_stats_cleanup(rp_stats *s) {
    if (s == NULL) return;
    for (size_t i = 0; i < s->n_queues; i++) rp_queue_cleanup(&s->queues[i]);
    for (size_t i = 0; i < s->n_kinds; i++) rp_kind_cleanup(&s->kinds[i]);
    free(s->queues);
    free(s->kinds);
    free(s->broker_note);
    memset(s, 0, sizeof *s);
}

void rp_stats_kind_counts_free(rp_stats_kind_count *rows, size_t n) {
    for (size_t i = 0; rows && i < n; i++) rp_kind_cleanup(&rows[i].row);
    free(rows);
}

void rp_stats_sightings_free(rp_stats_sighting *rows, size_t n) {
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].key);
        free(rows[i].project);
        free(rows[i].kind);
    }
    free(rows);
}

const char *rp_stats_refusal(rp_status st) {
    switch (st) {
    case RP_ERR_UNAVAILABLE: return "the store cannot be reached; try again";
    case RP_ERR_NOMEM: return "out of memory";
    default: return "reading the stats failed";
    }
}

/* ---- flags ------------------------------------------------------------------ */

static bool rp_same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Flags the rows one sighting names (rp_stats.h). */
static rp_status rp_flag_one(rp_stats *s, const rp_stats_sighting *g) {
    rp_sighting_key_parts k;
    if (g->key == NULL || !rp_sighting_key_split(g->key, &k)) return RP_OK;
    unsigned flag = rp_stats_flag_of(k.condition);
    if (flag == 0) return RP_OK;
    if (k.source == RP_SOURCE_BROKER) {
        char *vhost = NULL, *name = NULL;
        rp_status st = rp_object_queue_split(k.subject, &vhost, &name);
        if (st == RP_ERR_NOMEM) return st;
        for (size_t i = 0; st == RP_OK && i < s->n_queues; i++)
            if (rp_same(s->queues[i].vhost, vhost) && rp_same(s->queues[i].name, name))
                s->queues[i].flags |= flag;
        free(vhost);
        free(name);
        return RP_OK;
    }
    if (strncmp(k.subject, "job:", 4) == 0) {
        for (size_t i = 0; i < s->n_kinds; i++)
            if (rp_same(s->kinds[i].project, g->project) && rp_same(s->kinds[i].kind, g->kind))
                s->kinds[i].flags |= flag;
        return RP_OK;
    }
    char *project = NULL, *kind = NULL;
    rp_status st = rp_object_kind_split(k.subject, &project, &kind);
    if (st == RP_ERR_NOMEM) return st;
    for (size_t i = 0; st == RP_OK && i < s->n_kinds; i++)
        if (rp_same(s->kinds[i].project, project) && rp_same(s->kinds[i].kind, kind))
            s->kinds[i].flags |= flag;
    free(project);
    free(kind);
    return RP_OK;
}

rp_status rp_stats_assemble(rp_stats *s, const rp_stats_sighting *sightings, size_t n) {
    if (s == NULL || (n > 0 && sightings == NULL)) return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        rp_status st = rp_flag_one(s, &sightings[i]);
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

/* ---- the queues ------------------------------------------------------------- */

static bool rp_is_own(const rp_stats_scope *sc, const char *name) {
    for (size_t i = 0; i < RP_ARRAY_LEN(sc->own_queues); i++)
        if (rp_same(sc->own_queues[i], name)) return true;
    return false;
}

/* An owned work queue: not reaper's own, not a dead-letter queue, owned by
 * the pattern. A name that cannot be matched is not (as a pass leaves it). */
static rp_status rp_owned_work(const rp_stats_scope *sc, const char *name, bool *yes) {
    *yes = false;
    if (name == NULL || rp_is_own(sc, name)) return RP_OK;
    bool dlq = false, owned = false;
    rp_status st = rp_match_name(sc->dead_letter_queue_pattern, name, &dlq);
    if (st == RP_OK && !dlq) st = rp_match_name(sc->owned_queue_pattern, name, &owned);
    if (st == RP_ERR_NOMEM) return st;
    *yes = st == RP_OK && !dlq && owned;
    return RP_OK;
}

static rp_status rp_add_queue(rp_stats *s, size_t *cap, const rp_queue_facts *q, rp_time_ms now) {
    if (s->n_queues == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        rp_stats_queue *g = realloc(s->queues, c * sizeof *g);
        if (g == NULL) return RP_ERR_NOMEM;
        s->queues = g;
        *cap = c;
    }
    rp_stats_queue *r = &s->queues[s->n_queues];
    memset(r, 0, sizeof *r);
    r->vhost = strdup(q->vhost);
    r->name = strdup(q->name);
    if (r->vhost == NULL || r->name == NULL) {
        rp_queue_cleanup(r);
        return RP_ERR_NOMEM;
    }
    r->counts_known = q->counts_known;
    r->ready = q->counts_known ? rp__nonneg(q->ready) : 0;
    r->unacked = q->counts_known ? rp__nonneg(q->unacked) : 0;
    r->consumers_known = q->consumers_known;
    r->consumers = q->consumers_known ? rp__nonneg(q->consumers) : 0;
    if (q->counts_known && r->ready > 0 && q->head_timestamp_known) {
        r->age_known = true;
        r->oldest_waiting_ms = rp_stats_age_ms(now, rp__s_to_ms(q->head_timestamp));
    }
    s->n_queues++;
    return RP_OK;
}

static int rp_cmp_queue(const void *a, const void *b) {
    const rp_stats_queue *x = a, *y = b;
    int c = strcmp(x->vhost, y->vhost);
    return c ? c : strcmp(x->name, y->name);
}

/* Every owned work queue of the broker into s->queues; a listing that
 * fails leaves none and says why in broker_note. */
static rp_status rp_read_queues(rp_stats *s, const rp_broker_port *b, const rp_stats_scope *sc,
                                rp_time_ms now) {
    char note[200];
    if (b == NULL || b->list_queues == NULL) {
        s->broker_note = strdup("this reaperd does not inspect the broker (no management API "
                                "client)");
        return s->broker_note ? RP_OK : RP_ERR_NOMEM;
    }
    size_t cap = 0;
    rp_status st = RP_OK;
    for (size_t page = 1;; page++) {
        rp_queue_page pg = {0};
        rp_status lst = b->list_queues(b->self, page, &pg);
        if (lst != RP_OK) {
            snprintf(note, sizeof note,
                     "the broker's queues could not be listed (%s); only the job table is shown",
                     rp_status_string(lst));
            for (size_t i = 0; i < s->n_queues; i++) rp_queue_cleanup(&s->queues[i]);
            free(s->queues);
            s->queues = NULL;
            s->n_queues = 0;
            s->broker_note = strdup(note);
            return s->broker_note ? RP_OK : RP_ERR_NOMEM;
        }
        for (size_t i = 0; st == RP_OK && i < pg.n; i++) {
            bool yes = false;
            st = rp_owned_work(sc, pg.queues[i].name, &yes);
            if (st == RP_OK && yes && pg.queues[i].vhost != NULL)
                st = rp_add_queue(s, &cap, &pg.queues[i], now);
        }
        if (st != RP_OK) return st;
        if (pg.last || pg.n == 0) break;
    }
    if (s->n_queues > 1) qsort(s->queues, s->n_queues, sizeof *s->queues, rp_cmp_queue);
    s->broker_read = true;
    return RP_OK;
}

rp_status rp_stats_collect(const rp_stats_store_port *store, const rp_broker_port *broker,
                           const rp_stats_scope *scope, rp_time_ms now, rp_stats *out) {
    if (store == NULL || scope == NULL || out == NULL || store->kinds == NULL ||
        store->queue_rates == NULL || store->sightings == NULL)
        return RP_ERR_INVALID;
    rp_stats s;
    rp_stats_init(&s);
    s.window_seconds = scope->window_seconds;

    /* 1. The job table's (project, kind)s: each count's row moves into s. */
    rp_stats_kind_count *counts = NULL;
    size_t n = 0;
    rp_status st = store->kinds(store->self, now, scope->window_seconds, &counts, &n);
    if (st != RP_OK) return st;
    if (n > 0 && (s.kinds = calloc(n, sizeof *s.kinds)) == NULL) {
        rp_stats_kind_counts_free(counts, n);
        return RP_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        s.kinds[i] = counts[i].row;
        memset(&counts[i].row, 0, sizeof counts[i].row);
        s.kinds[i].flags = 0;
        s.kinds[i].age_known = counts[i].oldest_known && s.kinds[i].waiting > 0;
        s.kinds[i].oldest_waiting_ms =
            s.kinds[i].age_known ? rp_stats_age_ms(now, counts[i].oldest_since) : 0;
    }
    s.n_kinds = n;
    rp_stats_kind_counts_free(counts, n);
    size_t max = scope->max_rows ? scope->max_rows : RP_STATS_ROWS_MAX;
    for (; s.n_kinds > max; s.n_kinds--, s.kinds_omitted++) rp_kind_cleanup(&s.kinds[s.n_kinds - 1]);

    /* 2. The owned queues, each with its rates over the window. */
    st = rp_read_queues(&s, broker, scope, now);
    for (; st == RP_OK && s.n_queues > max; s.n_queues--, s.queues_omitted++)
        rp_queue_cleanup(&s.queues[s.n_queues - 1]);
    for (size_t i = 0; st == RP_OK && i < s.n_queues; i++) {
        rp_stats_queue *q = &s.queues[i];
        rp_queue_rates r = {0};
        rp_status rst = store->queue_rates(store->self, q->vhost, q->name, now,
                                           scope->window_seconds, &r);
        if (rst == RP_ERR_NOMEM) st = rst;
        else if (rst == RP_OK && r.known) {
            q->rates_known = true;
            q->intake = rp__nonneg(r.published);
            q->drained = rp__nonneg(r.acked);
        }
    }

    /* 3. The flags. */
    rp_stats_sighting *g = NULL;
    size_t ng = 0;
    if (st == RP_OK) st = store->sightings(store->self, &g, &ng);
    if (st == RP_OK) st = rp_stats_assemble(&s, g, ng);
    rp_stats_sightings_free(g, ng);
    if (st != RP_OK) {
        rp_stats_cleanup(&s);
        return st;
    }
    *out = s;
    return RP_OK;
}
