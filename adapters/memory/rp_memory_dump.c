/* The memory adapter's canonical dump of its whole state (rp_memory.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_memory_internal.h"

static const char *rp_s(const char *s) { return s ? s : "(null)"; }

static void rp_dump_verdict(FILE *f, const rp_verdict *v) {
    fprintf(f, "  verdict object=%s queue=%s project=%s condition=%s measured=%.6f "
               "threshold=%" PRId64 " unit=%s action=%s source=%s trusted=%d\n  detail=%s\n",
            rp_s(v->object), rp_s(v->queue), rp_s(v->project), rp_condition_string(v->condition),
            v->measured, v->threshold, rp_s(v->unit), rp_action_string(v->action),
            rp_source_string(v->source), (int)v->trusted, rp_s(v->detail));
}

static void rp_dump_bytes(FILE *f, const char *name, rp_opt_str s) {
    fprintf(f, " %s=", name);
    if (!s.present) {
        fputs("(absent)", f);
        return;
    }
    for (size_t i = 0; i < s.value.len; i++) fprintf(f, "%02x", s.value.ptr[i]);
}

rp_status rp_memory_dump(const rp_memory *m, char **out) {
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) return RP_ERR_NOMEM;
    for (size_t i = 0; i < m->n_jobs; i++) {
        const rp_mem_job *j = &m->jobs[i];
        fprintf(f, "job %" PRId64 " project=%s kind=%s state=%s attempts=%" PRId32 "/%" PRId32
                   " owner=%s lease=%d:%" PRId64 " run_after=%" PRId64 " depends_on=%" PRId64
                   " finished=%d:%" PRId64 " locked=%d\n",
                j->id, rp_s(j->project), rp_s(j->kind), rp_job_state_string(j->state),
                j->attempts, j->max_attempts, rp_s(j->lease_owner), (int)j->lease_known,
                j->lease_expires_at, j->run_after, j->depends_on, (int)j->finished_known,
                j->finished_at, (int)j->locked);
    }
    for (size_t i = 0; i < m->n_ledger; i++) {
        fprintf(f, "ledger %" PRId64 " at=%" PRId64 " kind=%s\n", m->ledger[i].seq,
                m->ledger[i].at, rp_s(m->ledger[i].kind));
        rp_dump_verdict(f, &m->ledger[i].verdict);
    }
    for (size_t i = 0; i < m->n_published; i++) {
        fprintf(f, "published %" PRId64 " at=%" PRId64 " kind=%s\n", m->published[i].seq,
                m->published[i].at, rp_s(m->published[i].kind));
        rp_dump_verdict(f, &m->published[i].verdict);
    }
    for (size_t i = 0; i < m->n_sightings; i++)
        fprintf(f, "sighting %s condition=%s seq=%" PRId64 " at=%" PRId64 "\n",
                m->sightings[i].key, rp_condition_string(m->sightings[i].condition),
                m->sightings[i].opened_seq, m->sightings[i].opened_at);
    for (size_t i = 0; i < m->n_gates; i++) {
        const rp_gate *g = &m->gates[i];
        fprintf(f, "gate %" PRId64 " job=%" PRId64 " kind=%s project=%s answered=%d answer=%s "
                   "by=%s at=%" PRId64 " created=%" PRId64 " queue=%s origin=%s reason=%s\n"
                   "  question=%s\n",
                g->id, g->job_id, rp_gate_kind_string(g->kind), rp_s(g->project), (int)g->answered,
                g->answered ? rp_choice_string(g->answer) : "-", rp_s(g->answered_by),
                g->answered_at, g->created_at, rp_s(g->queue), rp_s(g->origin_queue),
                rp_s(g->reason), rp_s(g->question));
    }
    for (size_t i = 0; i < m->n_parked; i++) {
        const rp_mem_parked *p = &m->parked[i];
        fprintf(f, "parked %s death=%s occurrence=%d job=%" PRId64 " gate=%" PRId64
                   " at=%s:%s origin=%s reason=%s "
                   "first_death=%d:%" PRId64 " body_len=%zu truncated=%d parked_at=%" PRId64 "\n",
                p->identity, rp_s(p->death), p->occurrence, p->job_id, p->gate_id, rp_s(p->vhost), rp_s(p->queue),
                rp_s(p->origin_queue), rp_s(p->reason), (int)p->first_death_known,
                p->first_death_at, p->body_len, (int)p->body_truncated, p->parked_at);
    }
    for (size_t i = 0; i < m->n_queues; i++) {
        const rp_queue_facts *q = &m->queues[i].facts;
        fprintf(f, "queue %s:%s type=%s counts=%d ready=%" PRId64 " unacked=%" PRId64
                   " consumers=%d:%" PRId64 " head=%d:%" PRId64 " timeout=%d\n",
                q->vhost, q->name, rp_queue_type_string(q->type), (int)q->counts_known, q->ready, q->unacked,
                (int)q->consumers_known, q->consumers, (int)q->head_timestamp_known,
                q->head_timestamp, (int)m->queues[i].timeout_set);
    }
    for (size_t i = 0; i < m->n_dls; i++) {
        const rp__mem_dl *d = &m->dls[i];
        fprintf(f, "dead_letter_message %s:%s", d->vhost, d->queue);
        rp_dump_bytes(f, "message_id", d->msg.headers.message_id);
        rp_dump_bytes(f, "body", (rp_opt_str){true, d->msg.body});
        fprintf(f, " x_death=%zu\n", d->msg.headers.n_x_death);
    }
    if (fclose(f) != 0 || buf == NULL) {
        free(buf);
        return RP_ERR_NOMEM;
    }
    *out = buf;
    return RP_OK;
}
