/* Core's peek and backfill-record ports in memory (rp_memory_backfill.h). */
#include "rp_memory_backfill.h"

#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"

/* What is known of one queue. */
typedef struct rp_mbf_queue {
    char *vhost, *queue;
    bool held_other;   /* another replica holds its lock */
    bool locked;       /* this session holds it */
    size_t records;
    size_t rec_n;
    int64_t rec_unread;
    size_t reads, delivered;
} rp_mbf_queue;

struct rp_memory_backfill {
    rp_memory *m;
    rp_mbf_queue *queues;
    size_t n_queues, cap_queues;
    rp_status fail[RP_MBF_OP_COUNT_];
    size_t calls[RP_MBF_OP_COUNT_];
    rp_dl_message *view;   /* what read lends */
    rp_dl_stored *stored;
    size_t cap_view;
};

rp_memory_backfill *rp_memory_backfill_new(rp_memory *m) {
    rp_memory_backfill *mb = calloc(1, sizeof *mb);
    if (mb == NULL) return NULL;
    mb->m = m;
    return mb;
}

void rp_memory_backfill_free(rp_memory_backfill *mb) {
    if (mb == NULL) return;
    for (size_t i = 0; i < mb->n_queues; i++) {
        free(mb->queues[i].vhost);
        free(mb->queues[i].queue);
    }
    free(mb->queues);
    free(mb->view);
    free(mb->stored);
    free(mb);
}

static rp_mbf_queue *rp_find(const rp_memory_backfill *mb, const char *vhost, const char *queue) {
    for (size_t i = 0; i < mb->n_queues; i++)
        if (strcmp(mb->queues[i].vhost, vhost) == 0 && strcmp(mb->queues[i].queue, queue) == 0)
            return &mb->queues[i];
    return NULL;
}

/* The queue's entry, made when missing; NULL when out of memory. */
static rp_mbf_queue *rp_entry(rp_memory_backfill *mb, const char *vhost, const char *queue) {
    rp_mbf_queue *q = rp_find(mb, vhost, queue);
    if (q != NULL) return q;
    if (rp__mem_grow((void **)&mb->queues, &mb->cap_queues, mb->n_queues, sizeof *mb->queues) !=
        RP_OK)
        return NULL;
    q = &mb->queues[mb->n_queues];
    memset(q, 0, sizeof *q);
    q->vhost = strdup(vhost);
    q->queue = strdup(queue);
    if (q->vhost == NULL || q->queue == NULL) {
        free(q->vhost);
        free(q->queue);
        return NULL;
    }
    mb->n_queues++;
    return q;
}

/* Counts a call of op; its injected failure (RP_OK: go on). */
static rp_status rp_enter(rp_memory_backfill *mb, rp_memory_backfill_op op) {
    mb->calls[op]++;
    return mb->fail[op];
}

void rp_memory_backfill_fail(rp_memory_backfill *mb, rp_memory_backfill_op op, rp_status st) {
    if ((int)op >= 0 && op < RP_MBF_OP_COUNT_) mb->fail[op] = st;
}

size_t rp_memory_backfill_calls(const rp_memory_backfill *mb, rp_memory_backfill_op op) {
    return (int)op >= 0 && op < RP_MBF_OP_COUNT_ ? mb->calls[op] : 0;
}

/* ---- the peek port -------------------------------------------------------- */

static rp_status rp_read(void *self, const char *vhost, const char *queue, size_t limit,
                         const rp_peek_past *past, const rp_dl_message **msgs, size_t *n,
                         size_t *read, int64_t *behind, char *err, size_t errlen) {
    rp_memory_backfill *mb = self;
    rp_memory *m = mb->m;
    *msgs = NULL;
    *n = 0;
    *read = 0;
    *behind = -1;
    if (errlen > 0) err[0] = '\0';
    rp_status st = rp_enter(mb, RP_MBF_READ);
    if (st != RP_OK) return st;
    rp_mbf_queue *q = rp_entry(mb, vhost, queue);
    if (q == NULL) return RP_ERR_NOMEM;
    if (m->n_dls > mb->cap_view) {
        rp_dl_message *v = realloc(mb->view, m->n_dls * sizeof *v);
        if (v != NULL) mb->view = v;
        rp_dl_stored *s = v ? realloc(mb->stored, m->n_dls * sizeof *s) : NULL;
        if (s != NULL) mb->stored = s;
        if (v == NULL || s == NULL) return RP_ERR_NOMEM;
        mb->cap_view = m->n_dls;
    }
    size_t read_max = past && past->pass_over && past->read_max > limit ? past->read_max : limit;
    size_t held = 0, k = 0, got = 0;
    for (size_t i = 0; i < m->n_dls; i++) {
        const rp__mem_dl *d = &m->dls[i];
        if (strcmp(d->vhost, vhost) != 0 || strcmp(d->queue, queue) != 0) continue;
        held++;
        if (k == limit || got == read_max) continue;
        got++;
        rp_dl_message probe = d->msg;
        probe.handle = NULL;
        if (past && past->pass_over && past->pass_over(past->arg, &probe)) continue;
        mb->stored[k] = (rp_dl_stored){NULL, NULL};
        mb->view[k] = d->msg;
        mb->view[k].handle = &mb->stored[k];
        k++;
    }
    q->reads++;
    q->delivered += got;
    *msgs = mb->view;
    *n = k;
    *read = got;
    *behind = (int64_t)(held - got);
    return RP_OK;
}

static void rp_close(void *self) {
    rp_memory_backfill *mb = self;
    (void)rp_enter(mb, RP_MBF_CLOSE);
}

void rp_memory_backfill_peek_port(rp_memory_backfill *mb, rp_peek_port *out) {
    out->self = mb;
    out->read = rp_read;
    out->close = rp_close;
}

/* ---- the record port ------------------------------------------------------ */

static rp_status rp_lock(void *self, const char *vhost, const char *queue, bool *got) {
    rp_memory_backfill *mb = self;
    *got = false;
    rp_status st = rp_enter(mb, RP_MBF_LOCK);
    if (st != RP_OK) return st;
    rp_mbf_queue *q = rp_entry(mb, vhost, queue);
    if (q == NULL) return RP_ERR_NOMEM;
    if (q->held_other) return RP_OK;
    q->locked = true;
    *got = true;
    return RP_OK;
}

static rp_status rp_unlock(void *self, const char *vhost, const char *queue) {
    rp_memory_backfill *mb = self;
    rp_status st = rp_enter(mb, RP_MBF_UNLOCK);
    if (st != RP_OK) return st;
    rp_mbf_queue *q = rp_find(mb, vhost, queue);
    if (q != NULL) q->locked = false;
    return RP_OK;
}

static rp_status rp_was_read(void *self, const char *vhost, const char *queue, bool *read,
                             int64_t *unread) {
    rp_memory_backfill *mb = self;
    *read = false;
    *unread = -1;
    rp_status st = rp_enter(mb, RP_MBF_WAS_READ);
    if (st != RP_OK) return st;
    const rp_mbf_queue *q = rp_find(mb, vhost, queue);
    if (q != NULL && q->records > 0) {
        *read = true;
        *unread = q->rec_unread;
    }
    return RP_OK;
}

static rp_status rp_mark_read(void *self, const char *vhost, const char *queue, size_t n,
                              int64_t unread) {
    rp_memory_backfill *mb = self;
    rp_status st = rp_enter(mb, RP_MBF_MARK_READ);
    if (st != RP_OK) return st;
    rp_mbf_queue *q = rp_entry(mb, vhost, queue);
    if (q == NULL) return RP_ERR_NOMEM;
    if (q->records++ == 0) {
        q->rec_n = n;
        q->rec_unread = unread;
    }
    return RP_OK;
}

void rp_memory_backfill_record_port(rp_memory_backfill *mb, rp_backfill_record_port *out) {
    out->self = mb;
    out->lock = rp_lock;
    out->unlock = rp_unlock;
    out->was_read = rp_was_read;
    out->mark_read = rp_mark_read;
}

/* ---- seeding and inspection ---------------------------------------------- */

rp_status rp_memory_backfill_hold(rp_memory_backfill *mb, const char *vhost, const char *queue,
                                  bool held) {
    rp_mbf_queue *q = rp_entry(mb, vhost, queue);
    if (q == NULL) return RP_ERR_NOMEM;
    q->held_other = held;
    return RP_OK;
}

bool rp_memory_backfill_locked(const rp_memory_backfill *mb, const char *vhost,
                               const char *queue) {
    const rp_mbf_queue *q = rp_find(mb, vhost, queue);
    return q != NULL && q->locked;
}

size_t rp_memory_backfill_records(const rp_memory_backfill *mb, const char *vhost,
                                  const char *queue, size_t *n, int64_t *unread) {
    const rp_mbf_queue *q = rp_find(mb, vhost, queue);
    if (q == NULL || q->records == 0) return 0;
    if (n) *n = q->rec_n;
    if (unread) *unread = q->rec_unread;
    return q->records;
}

size_t rp_memory_backfill_reads(const rp_memory_backfill *mb, const char *vhost,
                                const char *queue) {
    const rp_mbf_queue *q = rp_find(mb, vhost, queue);
    return q ? q->reads : 0;
}

size_t rp_memory_backfill_delivered(const rp_memory_backfill *mb, const char *vhost,
                                    const char *queue) {
    const rp_mbf_queue *q = rp_find(mb, vhost, queue);
    return q ? q->delivered : 0;
}
