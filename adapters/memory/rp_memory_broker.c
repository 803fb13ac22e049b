/* The memory adapter's broker, dead-letter and publisher ports. */
#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"
#include "rp_untrusted.h"

static size_t rp_find_queue(const rp_memory *m, const char *vhost, const char *name) {
    for (size_t i = 0; i < m->n_queues; i++)
        if (strcmp(m->queues[i].vhost, vhost) == 0 && strcmp(m->queues[i].name, name) == 0)
            return i;
    return SIZE_MAX;
}

static rp_status rp_store_queue(rp_memory *m, const rp_queue_facts *q, bool replace) {
    if (q->vhost == NULL || q->name == NULL) return RP_ERR_INVALID;
    rp__mem_queue nq = {.facts = *q};
    bool ok = true;
    nq.vhost = rp__mem_strdup(q->vhost, &ok);
    nq.name = rp__mem_strdup(q->name, &ok);
    nq.dlx_name = q->dlx_name ? rp__mem_strdup(q->dlx_name, &ok) : NULL;
    nq.dlx_routing_key = q->dlx_routing_key ? rp__mem_strdup(q->dlx_routing_key, &ok) : NULL;
    if (!ok) {
        rp__mem_queue_cleanup(&nq);
        return RP_ERR_NOMEM;
    }
    nq.facts.vhost = nq.vhost;
    nq.facts.name = nq.name;
    nq.facts.dlx_name = nq.dlx_name;
    nq.facts.dlx_routing_key = nq.dlx_routing_key;
    nq.facts.owned = nq.facts.is_dead_letter_queue = false; /* the pass decides */
    size_t i = replace ? rp_find_queue(m, q->vhost, q->name) : SIZE_MAX;
    if (i != SIZE_MAX) {
        /* Keep its timeout: only the measurements are replaced. */
        nq.timeout_set = m->queues[i].timeout_set;
        nq.timeout = m->queues[i].timeout;
        nq.timeout_origin = m->queues[i].timeout_origin;
        nq.timeout.origin = nq.timeout_origin;
        m->queues[i].timeout_origin = NULL;
        rp__mem_queue_cleanup(&m->queues[i]);
        m->queues[i] = nq;
        return RP_OK;
    }
    rp_status st =
        rp__mem_grow((void **)&m->queues, &m->cap_queues, m->n_queues, sizeof *m->queues);
    if (st != RP_OK) {
        rp__mem_queue_cleanup(&nq);
        return st;
    }
    m->queues[m->n_queues++] = nq;
    return RP_OK;
}

rp_status rp_memory_put_queue(rp_memory *m, const rp_queue_facts *q) {
    return rp_store_queue(m, q, true);
}

rp_status rp_memory_append_queue(rp_memory *m, const rp_queue_facts *q) {
    return rp_store_queue(m, q, false);
}

rp_status rp_memory_remove_queue(rp_memory *m, const char *vhost, const char *name) {
    size_t i = rp_find_queue(m, vhost, name);
    if (i == SIZE_MAX) return RP_ERR_NOT_FOUND;
    rp__mem_queue_cleanup(&m->queues[i]);
    memmove(&m->queues[i], &m->queues[i + 1], (m->n_queues - i - 1) * sizeof *m->queues);
    m->n_queues--;
    return RP_OK;
}

rp_status rp_memory_set_timeout(rp_memory *m, const char *vhost, const char *name,
                                const rp_timeout_in_force *t) {
    size_t i = rp_find_queue(m, vhost, name);
    if (i == SIZE_MAX) return RP_ERR_NOT_FOUND;
    bool ok = true;
    char *origin = rp__mem_strdup(t->origin, &ok);
    if (!ok) return RP_ERR_NOMEM;
    rp__mem_queue *q = &m->queues[i];
    free(q->timeout_origin);
    q->timeout_origin = origin;
    q->timeout = *t;
    q->timeout.origin = origin;
    q->timeout_set = true;
    return RP_OK;
}

static rp_status rp_list_queues(void *self, size_t page, rp_queue_page *out) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_LIST_QUEUES);
    if (st != RP_OK) return st;
    if (page < 1) return RP_ERR_INVALID;
    size_t first = (page - 1) * m->page_size;
    size_t n = first >= m->n_queues ? 0 : m->n_queues - first;
    if (n > m->page_size) n = m->page_size;
    free(m->page_view);
    m->page_view = NULL;
    if (n) {
        m->page_view = malloc(n * sizeof *m->page_view);
        if (m->page_view == NULL) return RP_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) m->page_view[i] = m->queues[first + i].facts;
    }
    out->queues = m->page_view;
    out->n = n;
    out->last = first + n >= m->n_queues;
    return RP_OK;
}

static rp_status rp_get_queue(void *self, const char *vhost, const char *name,
                              rp_queue_facts *out) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_GET_QUEUE);
    if (st != RP_OK) return st;
    size_t i = rp_find_queue(m, vhost, name);
    if (i == SIZE_MAX) return RP_ERR_NOT_FOUND;
    *out = m->queues[i].facts;
    return RP_OK;
}

static rp_status rp_get_timeout(void *self, const char *vhost, const char *name,
                                rp_timeout_in_force *out) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_GET_TIMEOUT);
    if (st != RP_OK) return st;
    size_t i = rp_find_queue(m, vhost, name);
    if (i == SIZE_MAX) return RP_ERR_NOT_FOUND;
    if (m->queues[i].timeout_set) {
        *out = m->queues[i].timeout;
    } else {
        memset(out, 0, sizeof *out); /* nothing in force */
    }
    return RP_OK;
}

void rp__mem_broker_port(rp_memory *m, rp_broker_port *out) {
    out->self = m;
    out->list_queues = rp_list_queues;
    out->get_queue = rp_get_queue;
    out->get_timeout_in_force = rp_get_timeout;
}

/* ---- Dead letters ---- */

static uint8_t *rp_copy_opt(const rp_opt_str *s, bool *ok) {
    if (!s->present || s->value.len == 0) return NULL;
    uint8_t *c = malloc(s->value.len);
    if (c == NULL) {
        *ok = false;
        return NULL;
    }
    memcpy(c, s->value.ptr, s->value.len);
    return c;
}

/* Points dst at the copy (or at nothing when the copy is empty). */
static void rp_point(rp_opt_str *dst, const rp_opt_str *src, const uint8_t *copy) {
    dst->present = src->present;
    dst->value.ptr = copy;
    dst->value.len = src->present ? src->value.len : 0;
}

rp_status rp_memory_add_dead_letter(rp_memory *m, const char *vhost, const char *queue,
                                    const rp_dl_headers *h, rp_bytes body) {
    rp__mem_dl d = {0};
    bool ok = true;
    d.vhost = rp__mem_strdup(vhost, &ok);
    d.queue = rp__mem_strdup(queue, &ok);
    d.message_id = rp_copy_opt(&h->message_id, &ok);
    d.first_queue = rp_copy_opt(&h->first_death_queue, &ok);
    d.first_reason = rp_copy_opt(&h->first_death_reason, &ok);
    if (body.len) {
        d.body = malloc(body.len);
        if (d.body) memcpy(d.body, body.ptr, body.len);
        else ok = false;
    }
    rp_point(&d.msg.headers.message_id, &h->message_id, d.message_id);
    rp_point(&d.msg.headers.first_death_queue, &h->first_death_queue, d.first_queue);
    rp_point(&d.msg.headers.first_death_reason, &h->first_death_reason, d.first_reason);
    d.msg.body = (rp_bytes){d.body, body.len};
    if (ok && h->n_x_death) {
        d.x_death = calloc(h->n_x_death, sizeof *d.x_death);
        d.entry_bytes = calloc(2 * h->n_x_death, sizeof *d.entry_bytes);
        if (d.x_death == NULL || d.entry_bytes == NULL) ok = false;
        for (size_t i = 0; ok && i < h->n_x_death; i++) {
            const rp_xdeath *e = &h->x_death[i];
            d.entry_bytes[2 * i] = rp_copy_opt(&e->queue, &ok);
            d.entry_bytes[2 * i + 1] = rp_copy_opt(&e->reason, &ok);
            d.x_death[i] = *e;
            rp_point(&d.x_death[i].queue, &e->queue, d.entry_bytes[2 * i]);
            rp_point(&d.x_death[i].reason, &e->reason, d.entry_bytes[2 * i + 1]);
        }
        d.msg.headers.x_death = d.x_death;
        d.msg.headers.n_x_death = h->n_x_death;
    }
    rp_status st = ok ? rp__mem_grow((void **)&m->dls, &m->cap_dls, m->n_dls, sizeof *m->dls)
                      : RP_ERR_NOMEM;
    if (st != RP_OK) {
        rp__mem_dl_cleanup(&d);
        return st;
    }
    m->dls[m->n_dls++] = d;
    return RP_OK;
}

size_t rp_memory_purge_dead_letters(rp_memory *m, const char *vhost, const char *queue) {
    size_t kept = 0, removed = 0;
    for (size_t i = 0; i < m->n_dls; i++) {
        if (strcmp(m->dls[i].vhost, vhost) == 0 && strcmp(m->dls[i].queue, queue) == 0) {
            rp__mem_dl_cleanup(&m->dls[i]);
            removed++;
            continue;
        }
        m->dls[kept++] = m->dls[i];
    }
    m->n_dls = kept;
    return removed;
}

static rp_status rp_peek(void *self, const char *vhost, const char *queue, size_t limit,
                         rp_dl_batch *out) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_PEEK);
    if (st != RP_OK) return st;
    free(m->peek_view);
    m->peek_view = NULL;
    out->messages = NULL;
    out->n = 0;
    /* A queue that is read like a classic one: past the dead letters the
     * pass says are parked already (out->already, at most out->read_max
     * read in all), and what lies behind the read is left unread. */
    out->unread = 0;
    out->unread_at_most = false;
    out->unread_reason = RP_DL_UNREAD_NONE;
    if (m->n_dls == 0) return RP_OK;
    m->peek_view = malloc(m->n_dls * sizeof *m->peek_view);
    if (m->peek_view == NULL) return RP_ERR_NOMEM;
    size_t n = 0, held = 0, read = 0;
    size_t read_max = out->already && out->read_max > limit ? out->read_max : limit;
    for (size_t i = 0; i < m->n_dls; i++) {
        rp__mem_dl *d = &m->dls[i];
        if (strcmp(d->vhost, vhost) != 0 || strcmp(d->queue, queue) != 0) continue;
        held++;
        if (n == limit || read == read_max) continue;
        read++;
        rp_dl_message probe = d->msg;
        probe.handle = NULL;
        if (out->already && out->already(out->already_arg, &probe)) continue;
        m->peek_view[n] = d->msg;
        m->peek_view[n].handle = d;
        n++;
    }
    out->messages = m->peek_view;
    out->n = n;
    out->read = read;
    if (held > read) {
        out->unread = (int64_t)(held - read);
        out->unread_reason = RP_DL_UNREAD_PEEK_LIMIT;
    }
    return RP_OK;
}

/* Whether the gate gate_id is still open (a gate that is not there counts
 * as answered: nothing then waits on it). */
static bool rp_gate_open(const rp_memory *m, int64_t gate_id) {
    for (size_t i = 0; i < m->n_gates; i++)
        if (m->gates[i].id == gate_id) return !m->gates[i].answered;
    return false;
}

/* The lineage of a DEATH: its part before the '/' (rp_deadletter.h). */
static bool rp_same_lineage(const char *a, const char *b) {
    size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
    return la == lb && memcmp(a, b, la) == 0;
}

/* The OCCURRENCE rule of rp_deadletter.h, as the PostgreSQL park applies
 * it: false when this death is parked, or covered by the identity's latest
 * occurrence (same lineage, gate open). *occurrence: the next one's number. */
static bool rp_opens_occurrence(const rp_memory *m, const rp_dead_letter *facts,
                                int *occurrence) {
    const rp_mem_parked *latest = NULL;
    int n = 0;
    for (size_t i = 0; i < m->n_parked; i++) {
        const rp_mem_parked *p = &m->parked[i];
        if (strcmp(p->identity, facts->identity) != 0) continue;
        if (strcmp(p->death, facts->death) == 0) return false;
        n++;
        if (latest == NULL || p->occurrence >= latest->occurrence) latest = p;
    }
    *occurrence = n + 1;
    return latest == NULL || !rp_same_lineage(latest->death, facts->death) ||
           !rp_gate_open(m, latest->gate_id);
}

static rp_status rp_is_parked(void *self, const rp_dead_letter *facts, bool *parked) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_IS_PARKED);
    if (st != RP_OK) return st;
    if (facts == NULL || facts->identity == NULL || facts->death == NULL) return RP_ERR_INVALID;
    int occurrence;
    *parked = !rp_opens_occurrence(m, facts, &occurrence);
    return RP_OK;
}

static rp_status rp_park(void *self, const char *vhost, const char *queue, const rp_dl_message *msg,
                         const rp_dead_letter *facts, const rp_verdict *v, rp_park_result *out) {
    rp_memory *m = self;
    m->write_calls++;
    memset(out, 0, sizeof *out);
    rp_status st = rp__mem_enter(m, RP_MEM_PARK);
    if (st != RP_OK) return st;
    if (facts == NULL || facts->identity == NULL || facts->death == NULL) return RP_ERR_INVALID;
    int occurrence = 0;
    if (!rp_opens_occurrence(m, facts, &occurrence)) return RP_OK;
    st = rp__mem_grow((void **)&m->parked, &m->cap_parked, m->n_parked, sizeof *m->parked);
    if (st == RP_OK)
        st = rp__mem_grow((void **)&m->jobs, &m->cap_jobs, m->n_jobs, sizeof *m->jobs);
    if (st != RP_OK) return st;

    rp_mem_parked p = {0};
    bool ok = true;
    p.identity = rp__mem_strdup(facts->identity, &ok);
    p.death = rp__mem_strdup(facts->death, &ok);
    p.occurrence = occurrence;
    p.vhost = rp__mem_strdup(vhost, &ok);
    p.queue = rp__mem_strdup(queue, &ok);
    p.first_death_known = facts->first_death_known;
    p.first_death_at = facts->first_death_at;
    p.body_truncated = msg->body_truncated;
    p.parked_at = m->now;
    if (ok && msg->body.len) {
        p.body = malloc(msg->body.len);
        if (p.body) memcpy(p.body, msg->body.ptr, msg->body.len);
        else ok = false;
        p.body_len = msg->body.len;
    }
    if (!ok) st = RP_ERR_NOMEM;
    if (st == RP_OK)
        st = rp_untrusted_render(
            (rp_bytes){(const uint8_t *)facts->origin_queue, facts->origin_queue_len},
            &p.origin_queue);
    if (st == RP_OK)
        st = rp_untrusted_render((rp_bytes){(const uint8_t *)facts->reason, facts->reason_len},
                                 &p.reason);
    rp_mem_job job = {
        .project = "bus",
        .kind = "bus.dead_letter",
        .state = RP_JOB_AWAITING_HUMAN,
        .max_attempts = 7,
        .run_after = m->now,
    };
    int64_t job_id = 0, gate_id = 0;
    size_t n_gates = m->n_gates;
    if (st == RP_OK) st = rp_memory_add_job(m, &job, &job_id);
    if (st == RP_OK)
        st = rp__mem_open_gate(m, RP_GATE_BUS_DEAD_LETTERED, job_id, "bus",
                               "a message was dead-lettered: replay it, or dismiss it?", queue,
                               p.origin_queue, p.reason, &gate_id);
    if (st == RP_OK && vhost != NULL) {
        /* The gate says its dead letter's vhost (migration 0015). */
        rp_gate *g = &m->gates[m->n_gates - 1];
        if ((g->vhost = strdup(vhost)) == NULL) st = RP_ERR_NOMEM;
    }
    if (st == RP_OK) st = rp__mem_append(m, v, &out->event);
    if (st != RP_OK) {
        /* Roll back, as the one transaction would. */
        if (job_id) rp__mem_job_cleanup(&m->jobs[--m->n_jobs]);
        if (m->n_gates > n_gates) rp_gate_cleanup(&m->gates[--m->n_gates]);
        rp__mem_parked_cleanup(&p);
        memset(out, 0, sizeof *out);
        return st;
    }
    p.job_id = job_id;
    p.gate_id = gate_id;
    m->parked[m->n_parked++] = p;
    out->parked = true;
    out->job_id = job_id;
    out->gate_id = gate_id;
    return RP_OK;
}

void rp__mem_dead_letter_port(rp_memory *m, rp_dead_letter_port *out) {
    out->self = m;
    out->peek = rp_peek;
    out->is_parked = rp_is_parked;
    out->park = rp_park;
}

/* ---- Publisher ---- */

static rp_status rp_publish(void *self, const rp_ledger_event *ev) {
    rp_memory *m = self;
    m->write_calls++;
    rp_status st = rp__mem_enter(m, RP_MEM_PUBLISH);
    if (st != RP_OK) return st;
    st = rp__mem_grow((void **)&m->published, &m->cap_published, m->n_published,
                      sizeof *m->published);
    if (st != RP_OK) return st;
    rp_mem_event *e = &m->published[m->n_published];
    memset(e, 0, sizeof *e);
    e->kind = strdup(ev->kind ? ev->kind : "");
    if (e->kind == NULL) return RP_ERR_NOMEM;
    /* A GateAnswered event has no verdict: its copy stays empty. */
    rp_verdict_init(&e->verdict);
    st = ev->verdict ? rp_verdict_copy(&e->verdict, ev->verdict) : RP_OK;
    if (st != RP_OK) {
        free(e->kind);
        return st;
    }
    e->seq = ev->seq;
    e->at = ev->at;
    m->n_published++;
    return RP_OK;
}

void rp__mem_publisher_port(rp_memory *m, rp_publisher_port *out) {
    out->self = m;
    out->publish = rp_publish;
}
