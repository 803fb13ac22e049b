/* The memory adapter's store port: jobs, leases, ledger, sightings. */
#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"

static void rp_lend_job(const rp_mem_job *j, rp_held_job *out) {
    out->id = j->id;
    out->project = j->project;
    out->kind = j->kind;
    out->state = j->state;
    out->attempts = j->attempts;
    out->max_attempts = j->max_attempts;
    out->lease_expires_known = j->lease_known;
    out->lease_expires_at = j->lease_expires_at;
    out->lease_owner = j->lease_owner;
}

/* Unlocks every row of the batch taken last, and forgets it. */
static void rp_end_batch(rp_memory *m) {
    for (size_t i = 0; i < m->n_lease_view; i++) {
        rp_mem_job *j = rp__mem_find_job(m, m->lease_view[i].id);
        if (j) j->locked = false;
    }
    m->n_lease_view = 0;
    m->lease_batch_locked = false;
}

/* Loose on purpose (rp_memory.h): every lease past its deadline, grace or
 * not, so that core's boundary is the one tested. */
static rp_status rp_take(void *self, const rp_lease_query *q, size_t limit, rp_lease_batch *out) {
    rp_memory *m = self;
    out->jobs = NULL;
    out->n = 0;
    rp_end_batch(m); /* a new take ends the batch before it */
    rp_status st = rp__mem_enter(m, RP_MEM_TAKE_LEASE);
    if (st != RP_OK) return st;
    if (limit < 1) return RP_ERR_INVALID;
    if (limit > m->cap_lease_view) {
        rp_held_job *v = realloc(m->lease_view, limit * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        m->lease_view = v;
        m->cap_lease_view = limit;
    }
    for (size_t i = 0; i < m->n_jobs && m->n_lease_view < limit; i++) {
        rp_mem_job *j = &m->jobs[i];
        if (j->id <= q->after_id || j->state != RP_JOB_LEASED || !j->lease_known) continue;
        if (j->lease_expires_at >= q->now || j->foreign_lock) continue;
        if (q->project && (j->project == NULL || strcmp(j->project, q->project) != 0)) continue;
        if (q->lock) j->locked = true;
        rp_lend_job(j, &m->lease_view[m->n_lease_view++]);
    }
    if (m->n_lease_view == 0) return RP_ERR_NOT_FOUND;
    m->lease_batch_locked = q->lock;
    out->jobs = m->lease_view;
    out->n = m->n_lease_view;
    return RP_OK;
}

static void rp_clear_lease(rp_mem_job *j) {
    free(j->lease_owner);
    j->lease_owner = NULL;
    j->lease_known = false;
    j->lease_expires_at = 0;
}

/* Whether job is a row of the batch taken last, as lent. */
static bool rp_in_batch(const rp_memory *m, const rp_held_job *job) {
    for (size_t i = 0; job && i < m->n_lease_view; i++)
        if (m->lease_view[i].id == job->id) return true;
    return false;
}

/* Moves one row as v says (the batch has committed). */
static rp_status rp_apply(rp_memory *m, rp_mem_job *j, const rp_verdict *v, rp_event_ref *event) {
    int64_t gate_id = 0;
    rp_status st = RP_OK;
    if (v->action == RP_ACTION_PARKED) {
        st = rp__mem_open_gate(m, RP_GATE_DELIVERY_EXHAUSTED, j->id, j->project,
                               "this job used all its attempts: retry it once more, or dismiss it?",
                               NULL, NULL, NULL, &gate_id);
        if (st != RP_OK) return st;
    }
    st = rp__mem_append(m, v, event);
    if (st != RP_OK) {
        if (gate_id) rp_gate_cleanup(&m->gates[--m->n_gates]);
        return st;
    }
    if (v->action == RP_ACTION_PARKED) {
        j->state = RP_JOB_AWAITING_HUMAN;
        if (j->attempts > 0) j->attempts--;
    } else {
        j->state = RP_JOB_READY;
    }
    rp_clear_lease(j);
    return RP_OK;
}

static rp_status rp_commit(void *self, rp_lease_move *moves, size_t n) {
    rp_memory *m = self;
    if (moves == NULL && n > 0) return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        moves[i].result = RP_ERR_CONFLICT;
        moves[i].event = (rp_event_ref){0};
    }
    if (!m->lease_batch_locked) {
        rp_end_batch(m);
        return RP_ERR_CONFLICT;
    }
    m->write_calls++;
    /* Each row in its "savepoint": judged first, applied at the commit. */
    rp_status st = RP_OK;
    for (size_t i = 0; i < n && st == RP_OK; i++) {
        rp_lease_move *mv = &moves[i];
        rp_mem_job *j = rp_in_batch(m, mv->job) ? rp__mem_find_job(m, mv->job->id) : NULL;
        if (j == NULL || !j->locked || j->state != RP_JOB_LEASED) continue; /* CONFLICT */
        if (mv->v == NULL ||
            (mv->v->action != RP_ACTION_REQUEUED && mv->v->action != RP_ACTION_PARKED)) {
            mv->result = RP_ERR_INVALID;
            continue;
        }
        rp_status rst = rp__mem_enter(m, RP_MEM_MOVE_LEASE);
        if (rst == RP_ERR_UNAVAILABLE) st = rst; /* the session is gone: the whole batch */
        else mv->result = rst;                   /* this row alone, rolled back */
    }
    if (st == RP_OK) st = rp__mem_enter(m, RP_MEM_COMMIT_LEASES);
    if (st != RP_OK) {
        for (size_t i = 0; i < n; i++) moves[i].result = st;
        rp_end_batch(m);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        rp_lease_move *mv = &moves[i];
        if (mv->result != RP_OK) continue;
        mv->result = rp_apply(m, rp__mem_find_job(m, mv->job->id), mv->v, &mv->event);
    }
    rp_end_batch(m);
    return RP_OK;
}

static rp_status rp_release(void *self) {
    rp_memory *m = self;
    if (m->lease_batch_locked) m->write_calls++;
    rp_end_batch(m);
    return rp__mem_enter(m, RP_MEM_RELEASE_LEASE);
}

static rp_status rp_list_claimable(void *self, const char *project, rp_time_ms now,
                                   rp_claimable_list *out) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_LIST_CLAIMABLE);
    if (st != RP_OK) return st;
    free(m->claim_view);
    m->claim_view = NULL;
    out->jobs = NULL;
    out->n = 0;
    if (m->n_jobs == 0) return RP_OK;
    rp_claimable_job *view = calloc(m->n_jobs, sizeof *view);
    if (view == NULL) return RP_ERR_NOMEM;
    rp_time_ms *since = calloc(m->n_jobs, sizeof *since);
    if (since == NULL) {
        free(view);
        return RP_ERR_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < m->n_jobs; i++) {
        const rp_mem_job *j = &m->jobs[i];
        if (j->state != RP_JOB_READY || j->run_after > now || j->project == NULL) continue;
        if (project && strcmp(j->project, project) != 0) continue;
        const rp_mem_job *dep = j->depends_on ? rp__mem_find_job(m, j->depends_on) : NULL;
        if (j->depends_on && (dep == NULL || dep->state != RP_JOB_SUCCEEDED)) continue;
        rp_claimable_job c = {
            .project = j->project,
            .job_id = j->id,
            .kind = j->kind,
            .run_after = j->run_after,
            .dependency_finished_known = dep != NULL && dep->finished_known,
            .dependency_finished_at = dep && dep->finished_known ? dep->finished_at : 0,
        };
        rp_time_ms s = c.run_after;
        if (c.dependency_finished_known && c.dependency_finished_at > s)
            s = c.dependency_finished_at;
        size_t k = 0;
        while (k < n && strcmp(view[k].project, j->project) != 0) k++;
        if (k == n) {
            view[n] = c;
            since[n++] = s;
        } else if (s < since[k]) { /* ids grow, so on a tie the lower id stays */
            view[k] = c;
            since[k] = s;
        }
    }
    free(since);
    m->claim_view = view;
    out->jobs = view;
    out->n = n;
    return RP_OK;
}

static rp_status rp_append_event(void *self, const rp_verdict *v, rp_event_ref *event) {
    rp_memory *m = self;
    m->write_calls++;
    rp_status st = rp__mem_enter(m, RP_MEM_APPEND_EVENT);
    return st != RP_OK ? st : rp__mem_append(m, v, event);
}

static size_t rp_find_sighting(const rp_memory *m, const char *key) {
    for (size_t i = 0; i < m->n_sightings; i++)
        if (strcmp(m->sightings[i].key, key) == 0) return i;
    return SIZE_MAX;
}

static rp_status rp_open_sighting(void *self, const char *key, const rp_verdict *v, bool *opened,
                                  rp_event_ref *event) {
    rp_memory *m = self;
    m->write_calls++;
    *opened = false;
    rp_status st = rp__mem_enter(m, RP_MEM_OPEN_SIGHTING);
    if (st != RP_OK) return st;
    if (rp_find_sighting(m, key) != SIZE_MAX) return RP_OK;
    st = rp__mem_grow((void **)&m->sightings, &m->cap_sightings, m->n_sightings,
                      sizeof *m->sightings);
    if (st != RP_OK) return st;
    char *k = strdup(key);
    if (k == NULL) return RP_ERR_NOMEM;
    rp_event_ref ev;
    st = rp__mem_append(m, v, &ev);
    if (st != RP_OK) {
        free(k);
        return st;
    }
    m->sightings[m->n_sightings++] = (rp_sighting_row){k, v->condition, ev.seq, ev.at};
    *opened = true;
    *event = ev;
    return RP_OK;
}

static rp_status rp_close_sighting(void *self, const char *key, const rp_verdict *v, bool *closed,
                                   rp_event_ref *event) {
    rp_memory *m = self;
    m->write_calls++;
    *closed = false;
    rp_status st = rp__mem_enter(m, RP_MEM_CLOSE_SIGHTING);
    if (st != RP_OK) return st;
    size_t i = rp_find_sighting(m, key);
    if (i == SIZE_MAX) return RP_OK;
    st = rp__mem_append(m, v, event);
    if (st != RP_OK) return st;
    free((char *)m->sightings[i].key);
    memmove(&m->sightings[i], &m->sightings[i + 1],
            (m->n_sightings - i - 1) * sizeof *m->sightings);
    m->n_sightings--;
    *closed = true;
    return RP_OK;
}

static rp_status rp_list_sightings(void *self, rp_sighting_list *out) {
    rp_memory *m = self;
    rp_status st = rp__mem_enter(m, RP_MEM_LIST_SIGHTINGS);
    if (st != RP_OK) return st;
    free(m->sighting_view);
    m->sighting_view = NULL;
    out->rows = NULL;
    out->n = 0;
    if (m->n_sightings == 0) return RP_OK;
    m->sighting_view = malloc(m->n_sightings * sizeof *m->sighting_view);
    if (m->sighting_view == NULL) return RP_ERR_NOMEM;
    memcpy(m->sighting_view, m->sightings, m->n_sightings * sizeof *m->sightings);
    out->rows = m->sighting_view;
    out->n = m->n_sightings;
    return RP_OK;
}

static rp_status rp_next_deadline(void *self, int64_t grace_seconds, rp_time_ms *at, bool *any) {
    rp_memory *m = self;
    *at = 0;
    *any = false;
    rp_status st = rp__mem_enter(m, RP_MEM_NEXT_DEADLINE);
    if (st != RP_OK) return st;
    /* Saturating, as core's arithmetic is: a corrupt deadline stays bounded. */
    int64_t grace_ms;
    if (__builtin_mul_overflow(grace_seconds, (int64_t)1000, &grace_ms))
        grace_ms = grace_seconds < 0 ? INT64_MIN : INT64_MAX;
    for (size_t i = 0; i < m->n_jobs; i++) {
        const rp_mem_job *j = &m->jobs[i];
        if (j->state != RP_JOB_LEASED || !j->lease_known) continue;
        rp_time_ms d;
        if (__builtin_add_overflow(j->lease_expires_at, grace_ms, &d))
            d = grace_ms > 0 ? INT64_MAX : INT64_MIN;
        if (!*any || d < *at) *at = d;
        *any = true;
    }
    return RP_OK;
}

void rp__mem_store_port(rp_memory *m, rp_store_port *out) {
    out->self = m;
    out->take_leases = rp_take;
    out->commit_leases = rp_commit;
    out->release_leases = rp_release;
    out->list_oldest_claimable = rp_list_claimable;
    out->append_event = rp_append_event;
    out->open_sighting = rp_open_sighting;
    out->close_sighting = rp_close_sighting;
    out->list_open_sightings = rp_list_sightings;
    out->next_lease_deadline = rp_next_deadline;
}
