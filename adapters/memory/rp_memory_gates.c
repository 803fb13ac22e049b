/* The memory adapter's gate port. */
#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"

static bool rp_gate_wanted(const rp_gate *g, const rp_gate_query *q) {
    if (q->state == RP_GATE_STATE_OPEN && g->answered) return false;
    if (q->state == RP_GATE_STATE_ANSWERED && !g->answered) return false;
    if (q->project && (g->project == NULL || strcmp(g->project, q->project) != 0)) return false;
    return true;
}

static rp_status rp_gate_copy(rp_gate *dst, const rp_gate *src) {
    *dst = *src;
    bool ok = true;
    dst->project = rp__mem_strdup(src->project, &ok);
    dst->question = rp__mem_strdup(src->question, &ok);
    dst->answered_by = rp__mem_strdup(src->answered_by, &ok);
    dst->queue = rp__mem_strdup(src->queue, &ok);
    dst->origin_queue = rp__mem_strdup(src->origin_queue, &ok);
    dst->reason = rp__mem_strdup(src->reason, &ok);
    dst->claimed_by = rp__mem_strdup(src->claimed_by, &ok);
    if (!ok) {
        rp_gate_cleanup(dst);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

static rp_status rp_list(void *self, const rp_gate_query *q, rp_gate **gates, size_t *n) {
    rp_memory *m = self;
    *gates = NULL;
    *n = 0;
    rp_status st = rp__mem_enter(m, RP_MEM_LIST_GATES);
    if (st != RP_OK) return st;
    if (q->limit < 1 || q->limit > 1000) return RP_ERR_INVALID;
    size_t cap = q->limit < m->n_gates ? q->limit : m->n_gates;
    if (cap == 0) return RP_OK;
    rp_gate *out = calloc(cap, sizeof *out);
    if (out == NULL) return RP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = m->n_gates; i-- > 0 && k < cap;) { /* newest first */
        if (!rp_gate_wanted(&m->gates[i], q)) continue;
        st = rp_gate_copy(&out[k], &m->gates[i]);
        if (st != RP_OK) {
            for (size_t j = 0; j < k; j++) rp_gate_cleanup(&out[j]);
            free(out);
            return st;
        }
        k++;
    }
    if (k == 0) {
        free(out);
        out = NULL;
    }
    *gates = out;
    *n = k;
    return RP_OK;
}

static rp_outcome rp_outcome_of(rp_choice c) {
    switch (c) {
    case RP_CHOICE_RETRY: return RP_OUTCOME_RETRIED;
    case RP_CHOICE_REPLAY: return RP_OUTCOME_REPLAYED;
    case RP_CHOICE_DISMISS:
    default: return RP_OUTCOME_DISMISSED;
    }
}

static rp_status rp_answer(void *self, int64_t gate_id, rp_choice choice, const char *by,
                           const char *note, rp_answer_result *out) {
    RP_UNUSED(note); /* the memory ledger keeps no payload */
    rp_memory *m = self;
    memset(out, 0, sizeof *out);
    m->write_calls++;
    rp_status st = rp__mem_enter(m, RP_MEM_ANSWER);
    if (st != RP_OK) return st;
    rp_gate *g = NULL;
    for (size_t i = 0; i < m->n_gates; i++)
        if (m->gates[i].id == gate_id) g = &m->gates[i];
    if (g == NULL) return RP_ERR_NOT_FOUND;
    out->kind = g->kind;
    if (g->answered) {
        out->outcome = RP_OUTCOME_ALREADY_ANSWERED;
        out->choice = g->answer;
        return RP_OK;
    }
    if (!rp_gate_accepts(g->kind, choice)) return RP_ERR_CONFLICT;
    bool ok = true;
    char *who = rp__mem_strdup(by, &ok);
    if (!ok) return RP_ERR_NOMEM;
    /* The GateAnswered ledger row (its verdict left empty: the memory
     * ledger keeps verdicts, and a gate answer has none). */
    rp_verdict none;
    rp_verdict_init(&none);
    rp_event_ref ev = {0};
    st = rp__mem_append(m, &none, &ev);
    char *kind = st == RP_OK ? strdup(RP_LEDGER_GATE_ANSWERED) : NULL;
    if (kind == NULL) {
        free(who);
        return st != RP_OK ? st : RP_ERR_NOMEM;
    }
    free(m->ledger[m->n_ledger - 1].kind);
    m->ledger[m->n_ledger - 1].kind = kind;
    g->answered = true;
    g->answer = choice;
    g->answered_by = who;
    g->answered_at = m->now;
    rp_mem_job *j = rp__mem_find_job(m, g->job_id);
    if (j != NULL) {
        if (choice == RP_CHOICE_RETRY) {
            j->state = RP_JOB_READY;
            j->run_after = m->now;
        } else if (choice == RP_CHOICE_DISMISS) {
            j->state = RP_JOB_FAILED;
        } else {
            j->state = RP_JOB_SUCCEEDED;
        }
    }
    out->outcome = rp_outcome_of(choice);
    out->choice = choice;
    out->committed = true;
    out->event = ev;
    out->job_id = g->job_id;
    return RP_OK;
}

void rp__mem_gate_port(rp_memory *m, rp_gate_port *out) {
    out->self = m;
    out->list = rp_list;
    out->answer = rp_answer;
}
