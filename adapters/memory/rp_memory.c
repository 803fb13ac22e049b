/* The memory adapter's store: life cycle, clock, failure injection, shared
 * helpers and inspection (rp_memory.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"

rp_status rp__mem_grow(void **items, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return RP_OK;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*items, ncap * elem);
    if (p == NULL) return RP_ERR_NOMEM;
    *items = p;
    *cap = ncap;
    return RP_OK;
}

char *rp__mem_strdup(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    char *c = strdup(s);
    if (c == NULL) *ok = false;
    return c;
}

rp_status rp__mem_enter(rp_memory *m, rp_memory_op op) {
    rp__mem_fail *f = &m->fail[op];
    f->calls++;
    if (!f->armed) return RP_OK;
    if (f->after > 0) {
        f->after--;
        return RP_OK;
    }
    if (f->once) f->armed = false;
    return f->st;
}

static rp_time_ms rp_mem_now(void *self) { return ((rp_memory *)self)->now; }

rp_memory *rp_memory_new(void) {
    rp_memory *m = calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    m->page_size = 100;
    m->next_job_id = 1;
    m->next_seq = 1;
    m->next_gate_id = 1;
    return m;
}

void rp__mem_job_cleanup(rp_mem_job *j) {
    free(j->project);
    free(j->kind);
    free(j->lease_owner);
    memset(j, 0, sizeof *j);
}

void rp__mem_event_cleanup(rp_mem_event *e) {
    free(e->kind);
    rp_verdict_cleanup(&e->verdict);
    memset(e, 0, sizeof *e);
}

void rp__mem_queue_cleanup(rp__mem_queue *q) {
    free(q->vhost);
    free(q->name);
    free(q->dlx_name);
    free(q->dlx_routing_key);
    free(q->timeout_origin);
    memset(q, 0, sizeof *q);
}

void rp__mem_dl_cleanup(rp__mem_dl *d) {
    free(d->vhost);
    free(d->queue);
    free(d->message_id);
    free(d->first_queue);
    free(d->first_reason);
    free(d->body);
    if (d->entry_bytes)
        for (size_t i = 0; i < 2 * d->msg.headers.n_x_death; i++) free(d->entry_bytes[i]);
    free(d->entry_bytes);
    free(d->x_death);
    memset(d, 0, sizeof *d);
}

void rp__mem_parked_cleanup(rp_mem_parked *p) {
    free(p->identity);
    free(p->death);
    free(p->vhost);
    free(p->queue);
    free(p->origin_queue);
    free(p->reason);
    free(p->body);
    memset(p, 0, sizeof *p);
}

void rp_memory_free(rp_memory *m) {
    if (m == NULL) return;
    for (size_t i = 0; i < m->n_jobs; i++) rp__mem_job_cleanup(&m->jobs[i]);
    free(m->jobs);
    for (size_t i = 0; i < m->n_ledger; i++) rp__mem_event_cleanup(&m->ledger[i]);
    free(m->ledger);
    for (size_t i = 0; i < m->n_published; i++) rp__mem_event_cleanup(&m->published[i]);
    free(m->published);
    for (size_t i = 0; i < m->n_sightings; i++) free((char *)m->sightings[i].key);
    free(m->sightings);
    for (size_t i = 0; i < m->n_gates; i++) rp_gate_cleanup(&m->gates[i]);
    free(m->gates);
    for (size_t i = 0; i < m->n_parked; i++) rp__mem_parked_cleanup(&m->parked[i]);
    free(m->parked);
    for (size_t i = 0; i < m->n_queues; i++) rp__mem_queue_cleanup(&m->queues[i]);
    free(m->queues);
    for (size_t i = 0; i < m->n_dls; i++) rp__mem_dl_cleanup(&m->dls[i]);
    free(m->dls);
    free(m->page_view);
    free(m->claim_view);
    free(m->lease_view);
    free(m->sighting_view);
    free(m->peek_view);
    free(m);
}

void rp_memory_ports(rp_memory *m, rp_ports *out) {
    memset(out, 0, sizeof *out);
    rp__mem_store_port(m, &out->store);
    rp__mem_broker_port(m, &out->broker);
    rp__mem_dead_letter_port(m, &out->dead_letters);
    rp__mem_gate_port(m, &out->gates);
    rp__mem_publisher_port(m, &out->publisher);
    out->clock.self = m;
    out->clock.now_ms = rp_mem_now;
}

void rp_memory_set_now(rp_memory *m, rp_time_ms now) { m->now = now; }
void rp_memory_set_page_size(rp_memory *m, size_t n) { m->page_size = n ? n : 1; }

void rp_memory_fail(rp_memory *m, rp_memory_op op, rp_status st, size_t after) {
    rp__mem_fail *f = &m->fail[op];
    f->armed = st != RP_OK;
    f->once = false;
    f->st = st;
    f->after = after;
}

void rp_memory_fail_once(rp_memory *m, rp_memory_op op, rp_status st, size_t after) {
    rp_memory_fail(m, op, st, after);
    m->fail[op].once = true;
}

size_t rp_memory_calls(const rp_memory *m, rp_memory_op op) { return m->fail[op].calls; }
size_t rp_memory_write_calls(const rp_memory *m) { return m->write_calls; }

rp_mem_job *rp__mem_find_job(rp_memory *m, int64_t id) {
    for (size_t i = 0; i < m->n_jobs; i++)
        if (m->jobs[i].id == id) return &m->jobs[i];
    return NULL;
}

rp_status rp__mem_append(rp_memory *m, const rp_verdict *v, rp_event_ref *ev) {
    rp_status st =
        rp__mem_grow((void **)&m->ledger, &m->cap_ledger, m->n_ledger, sizeof *m->ledger);
    if (st != RP_OK) return st;
    rp_mem_event *e = &m->ledger[m->n_ledger];
    memset(e, 0, sizeof *e);
    e->kind = strdup(RP_LEDGER_QUEUE_REAPED);
    if (e->kind == NULL) return RP_ERR_NOMEM;
    st = rp_verdict_copy(&e->verdict, v);
    if (st != RP_OK) {
        free(e->kind);
        return st;
    }
    e->seq = m->next_seq++;
    e->at = m->now;
    m->n_ledger++;
    if (ev) {
        ev->seq = e->seq;
        ev->at = e->at;
    }
    return RP_OK;
}

rp_status rp__mem_open_gate(rp_memory *m, rp_gate_kind kind, int64_t job_id, const char *project,
                            const char *question, const char *queue, const char *origin,
                            const char *reason, int64_t *id) {
    rp_status st = rp__mem_grow((void **)&m->gates, &m->cap_gates, m->n_gates, sizeof *m->gates);
    if (st != RP_OK) return st;
    rp_gate *g = &m->gates[m->n_gates];
    rp_gate_init(g);
    bool ok = true;
    g->kind = kind;
    g->job_id = job_id;
    g->project = rp__mem_strdup(project, &ok);
    g->question = rp__mem_strdup(question, &ok);
    g->queue = rp__mem_strdup(queue, &ok);
    g->origin_queue = rp__mem_strdup(origin, &ok);
    g->reason = rp__mem_strdup(reason, &ok);
    g->created_at = m->now;
    if (!ok) {
        rp_gate_cleanup(g);
        return RP_ERR_NOMEM;
    }
    g->id = m->next_gate_id++;
    m->n_gates++;
    *id = g->id;
    return RP_OK;
}

/* ---- Seeding ---- */

rp_status rp_memory_add_job(rp_memory *m, const rp_mem_job *spec, int64_t *id) {
    rp_status st = rp__mem_grow((void **)&m->jobs, &m->cap_jobs, m->n_jobs, sizeof *m->jobs);
    if (st != RP_OK) return st;
    rp_mem_job j = *spec;
    bool ok = true;
    j.project = rp__mem_strdup(spec->project, &ok);
    j.kind = rp__mem_strdup(spec->kind, &ok);
    j.lease_owner = rp__mem_strdup(spec->lease_owner, &ok);
    j.locked = false;
    j.foreign_lock = false;
    if (!ok) {
        rp__mem_job_cleanup(&j);
        return RP_ERR_NOMEM;
    }
    j.id = m->next_job_id++;
    m->jobs[m->n_jobs++] = j;
    if (id) *id = j.id;
    return RP_OK;
}

rp_status rp_memory_lock_job(rp_memory *m, int64_t id, bool locked) {
    rp_mem_job *j = rp__mem_find_job(m, id);
    if (j == NULL) return RP_ERR_NOT_FOUND;
    j->foreign_lock = locked;
    return RP_OK;
}

rp_status rp_memory_add_sighting(rp_memory *m, const char *key, rp_condition c) {
    rp_status st = rp__mem_grow((void **)&m->sightings, &m->cap_sightings, m->n_sightings,
                                sizeof *m->sightings);
    if (st != RP_OK) return st;
    char *k = strdup(key);
    if (k == NULL) return RP_ERR_NOMEM;
    m->sightings[m->n_sightings++] = (rp_sighting_row){k, c, 0, m->now};
    return RP_OK;
}

/* ---- Inspection ---- */

const rp_mem_job *rp_memory_job(const rp_memory *m, int64_t id) {
    return rp__mem_find_job((rp_memory *)m, id);
}
size_t rp_memory_n_jobs(const rp_memory *m) { return m->n_jobs; }
size_t rp_memory_n_ledger(const rp_memory *m) { return m->n_ledger; }
const rp_mem_event *rp_memory_ledger(const rp_memory *m, size_t i) {
    return i < m->n_ledger ? &m->ledger[i] : NULL;
}
size_t rp_memory_n_published(const rp_memory *m) { return m->n_published; }
const rp_mem_event *rp_memory_published(const rp_memory *m, size_t i) {
    return i < m->n_published ? &m->published[i] : NULL;
}
size_t rp_memory_n_sightings(const rp_memory *m) { return m->n_sightings; }
const rp_sighting_row *rp_memory_sighting(const rp_memory *m, const char *key) {
    for (size_t i = 0; i < m->n_sightings; i++)
        if (strcmp(m->sightings[i].key, key) == 0) return &m->sightings[i];
    return NULL;
}
size_t rp_memory_n_gates(const rp_memory *m) { return m->n_gates; }
const rp_gate *rp_memory_gate(const rp_memory *m, size_t i) {
    return i < m->n_gates ? &m->gates[i] : NULL;
}
size_t rp_memory_n_parked(const rp_memory *m) { return m->n_parked; }
const rp_mem_parked *rp_memory_parked(const rp_memory *m, size_t i) {
    return i < m->n_parked ? &m->parked[i] : NULL;
}
