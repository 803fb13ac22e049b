/* The memory adapter's gate port. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_memory_internal.h"
#include "rp_untrusted.h"

static bool rp_str_is(const char *have, const char *want) {
    return want == NULL || (have != NULL && strcmp(have, want) == 0);
}

/* Whether g matches q's filters (q->after aside); origin and reason as
 * stored: rendered (rp_untrusted.h). */
static bool rp_gate_wanted(const rp_memory *m, const rp_gate *g, const rp_gate_query *q,
                           const char *origin, const char *reason) {
    if (q->state == RP_GATE_STATE_OPEN && g->answered) return false;
    if (q->state == RP_GATE_STATE_ANSWERED && !g->answered) return false;
    if (q->has_kind && g->kind != q->kind) return false;
    if (q->older_than_ms > 0 && g->created_at > m->now - q->older_than_ms) return false;
    return rp_str_is(g->project, q->project) && rp_str_is(g->queue, q->queue) &&
           rp_str_is(g->origin_queue, origin) && rp_str_is(g->reason, reason);
}

/* s rendered as the store keeps untrusted values, or NULL for NULL. */
static rp_status rp_shown(const char *s, char **out) {
    *out = NULL;
    if (s == NULL) return RP_OK;
    return rp_untrusted_render((rp_bytes){(const uint8_t *)s, strlen(s)}, out);
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
    dst->vhost = rp__mem_strdup(src->vhost, &ok);
    if (!ok) {
        rp_gate_cleanup(dst);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

static rp_status rp_list(void *self, const rp_gate_query *q, rp_gate **gates, size_t *n,
                         rp_gate_page *page) {
    rp_memory *m = self;
    *gates = NULL;
    *n = 0;
    if (page != NULL) *page = (rp_gate_page){0};
    rp_status st = rp__mem_enter(m, RP_MEM_LIST_GATES);
    if (st != RP_OK) return st;
    if (q->limit < 1 || q->limit > 1000 || q->older_than_ms < 0 || q->after < 0)
        return RP_ERR_INVALID;
    char *origin = NULL, *reason = NULL;
    if (rp_shown(q->origin, &origin) != RP_OK || rp_shown(q->reason, &reason) != RP_OK) {
        free(origin);
        return RP_ERR_NOMEM;
    }
    size_t cap = q->limit < m->n_gates ? q->limit : m->n_gates;
    rp_gate *out = cap > 0 ? calloc(cap, sizeof *out) : NULL;
    if (cap > 0 && out == NULL) {
        free(origin);
        free(reason);
        return RP_ERR_NOMEM;
    }
    size_t k = 0;
    int64_t total = 0, next = 0;
    for (size_t i = m->n_gates; i-- > 0;) { /* newest first */
        const rp_gate *g = &m->gates[i];
        if (!rp_gate_wanted(m, g, q, origin, reason)) continue;
        total++;
        if (q->after > 0 && g->id >= q->after) continue;
        if (k == cap) {
            if (next == 0) next = out[k - 1].id; /* one more matches below the page */
            continue;
        }
        st = rp_gate_copy(&out[k], g);
        if (st != RP_OK) {
            for (size_t j = 0; j < k; j++) rp_gate_cleanup(&out[j]);
            free(out);
            free(origin);
            free(reason);
            return st;
        }
        k++;
    }
    free(origin);
    free(reason);
    if (k == 0) {
        free(out);
        out = NULL;
    }
    *gates = out;
    *n = k;
    /* Counted as the store counts (rp_gate.h): exact up to the cap. */
    if (page != NULL)
        *page = (rp_gate_page){.total = total > RP_GATE_TOTAL_CAP ? RP_GATE_TOTAL_CAP : total,
                               .next_after = next,
                               .total_capped = total > RP_GATE_TOTAL_CAP};
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
    snprintf(out->vhost, sizeof out->vhost, "%s", g->vhost ? g->vhost : "");
    return RP_OK;
}

void rp__mem_gate_port(rp_memory *m, rp_gate_port *out) {
    out->self = m;
    out->list = rp_list;
    out->answer = rp_answer;
}
