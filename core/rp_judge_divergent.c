/* Issue 18 item 3: intake that structurally exceeds drain (DIVERGENT),
 * job table and broker (rp_judge_divergent.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "rp_arith.h"
#include "rp_judge_divergent.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"

bool rp_judge_diverges(int64_t intake, int64_t completions, int64_t waiting, int64_t ratio,
                       int64_t min_waiting) {
    int64_t allowed = rp__sat_mul(rp__nonneg(ratio), rp__nonneg(completions));
    return rp__nonneg(intake) > allowed && rp__nonneg(waiting) > min_waiting;
}

rp_status rp_judge_divergent_kind(const rp_divergence_group *g, const rp_thresholds *t,
                                  rp_verdict *out) {
    rp_verdict_init(out);
    if (g == NULL || t == NULL || g->project == NULL || g->kind == NULL) return RP_ERR_INVALID;
    if (!rp_judge_diverges(g->intake, g->completions, g->waiting, t->divergence_ratio,
                           t->divergence_min_waiting))
        return RP_OK;
    int64_t intake = rp__nonneg(g->intake), done = rp__nonneg(g->completions);
    rp__judged j = {
        .condition = RP_COND_DIVERGENT,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_JOB_QUEUE,
        .measured = (double)intake,
        .threshold = rp__sat_mul(rp__nonneg(t->divergence_ratio), done),
        .unit = "jobs",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_kind(g->project, g->kind, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "%" PRId64 " jobs of kind %s were created in project %s over the last "
                        "%" PRId64 " s but only %" PRId64 " succeeded (intake above %" PRId64
                        " x completions) and %" PRId64 " are waiting (above %" PRId64
                        "): surfaced, nothing moved; the fix is more or faster workers, or a "
                        "cap on admission",
                        intake, g->kind, g->project, t->divergence_window_seconds, done,
                        t->divergence_ratio, rp__nonneg(g->waiting), t->divergence_min_waiting);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, g->kind, g->project, detail);
}

rp_status rp_judge_divergent_queue(const rp_queue_facts *q, const rp_queue_rates *r,
                                   const rp_thresholds *t, rp_verdict *out) {
    rp_verdict_init(out);
    if (q == NULL || r == NULL || t == NULL || q->vhost == NULL || q->name == NULL)
        return RP_ERR_INVALID;
    if (!q->owned || q->is_dead_letter_queue || q->type == RP_QUEUE_TYPE_STREAM ||
        !q->counts_known || !r->known)
        return RP_OK;
    int64_t ready = rp__nonneg(q->ready);
    if (!rp_judge_diverges(r->published, r->acked, ready, t->divergence_ratio,
                           t->divergence_min_waiting))
        return RP_OK;
    int64_t in = rp__nonneg(r->published), acked = rp__nonneg(r->acked);
    rp__judged j = {
        .condition = RP_COND_DIVERGENT,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = (double)in,
        .threshold = rp__sat_mul(rp__nonneg(t->divergence_ratio), acked),
        .unit = "messages",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_queue(q->vhost, q->name, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "queue %s on vhost %s took %" PRId64 " publishes over the last %" PRId64
                        " s but only %" PRId64 " acks (intake above %" PRId64
                        " x drain) and holds %" PRId64 " ready messages (above %" PRId64
                        "): surfaced, nothing moved; the fix is more or faster consumers, or "
                        "a cap on admission",
                        q->name, q->vhost, in, t->divergence_window_seconds, acked,
                        t->divergence_ratio, ready, t->divergence_min_waiting);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, q->name, NULL, detail);
}
