/* Issue 18's judges: a hold past its ceiling (STALLED) and more work
 * waiting than declared (WAITING_DEPTH), job table and broker (rp_judge.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "rp_arith.h"
#include "rp_judge.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"

static const char *rp_or(const char *s, const char *dflt) { return s ? s : dflt; }

bool rp_judge_held_stalled(int64_t held_ms, int64_t ceiling_seconds) {
    return held_ms >= 0 && held_ms >= rp__s_to_ms(ceiling_seconds);
}

bool rp_judge_held_evict(int64_t held_ms, int64_t ceiling_seconds, int64_t evict_factor) {
    if (evict_factor <= 0 || held_ms < 0) return false;
    return held_ms >= rp__s_to_ms(rp__sat_mul(ceiling_seconds, evict_factor));
}

rp_status rp_judge_long_held(const rp_long_held_job *job, const rp_thresholds *t,
                             rp_time_ms now, rp_verdict *out) {
    rp_verdict_init(out);
    if (job == NULL || t == NULL) return RP_ERR_INVALID;
    if (job->state != RP_JOB_LEASED || !job->claimed_known) return RP_OK;
    if (job->lease_expires_known &&
        rp_judge_lease_expired(now, job->lease_expires_at, t->lease_grace_seconds))
        return RP_OK; /* the lease reap's */
    int64_t held_ms = rp__sat_sub(now, job->claimed_at);
    if (!rp_judge_held_stalled(held_ms, t->held_ceiling_seconds)) return RP_OK;
    bool evict = rp_judge_held_evict(held_ms, t->held_ceiling_seconds, t->held_evict_factor);

    rp__judged j = {
        .condition = RP_COND_STALLED,
        .action = evict ? RP_ACTION_REQUEUED : RP_ACTION_SURFACED,
        .source = RP_SOURCE_JOB_QUEUE,
        .measured = rp__judge_seconds(held_ms),
        .threshold = evict ? rp__sat_mul(t->held_ceiling_seconds, t->held_evict_factor)
                           : t->held_ceiling_seconds,
        .unit = "seconds",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_job(job->id, &object);
    if (st != RP_OK) return st;
    const char *owner = rp_or(job->lease_owner, "an unknown owner");
    if (evict)
        st = rp_text_format(&detail,
                            "job %" PRId64 " (kind %s, project %s) has been held by %s for %.3f s, "
                            "still heartbeating, at or past %" PRId64 " x the ceiling of %" PRId64
                            " s: requeued (its owner's later settle fails its fence)",
                            job->id, rp_or(job->kind, "?"), rp_or(job->project, "?"), owner,
                            rp__judge_seconds(held_ms), t->held_evict_factor,
                            t->held_ceiling_seconds);
    else
        st = rp_text_format(&detail,
                            "job %" PRId64 " (kind %s, project %s) has been held by %s for %.3f s, "
                            "still heartbeating, at or past the ceiling of %" PRId64
                            " s: surfaced, nothing moved (reap.held_evict_factor requeues it)",
                            job->id, rp_or(job->kind, "?"), rp_or(job->project, "?"), owner,
                            rp__judge_seconds(held_ms), t->held_ceiling_seconds);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, job->kind, job->project, detail);
}

rp_status rp_judge_waiting(const rp_waiting_group *g, const rp_thresholds *t,
                           rp_verdict *out) {
    rp_verdict_init(out);
    if (g == NULL || t == NULL || g->project == NULL || g->kind == NULL) return RP_ERR_INVALID;
    if (g->claimable <= t->waiting_depth_threshold) return RP_OK;
    rp__judged j = {
        .condition = RP_COND_WAITING_DEPTH,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_JOB_QUEUE,
        .measured = (double)g->claimable,
        .threshold = t->waiting_depth_threshold,
        .unit = "jobs",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_kind(g->project, g->kind, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "%" PRId64 " claimable jobs of kind %s wait in project %s, above the "
                        "threshold of %" PRId64 ": surfaced, nothing moved; the fix is a cap "
                        "on admission (fewer jobs of this kind enqueued at once) or more workers",
                        g->claimable, g->kind, g->project, t->waiting_depth_threshold);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, g->kind, g->project, detail);
}

rp_status rp_judge_queue_depth(const rp_queue_facts *q, const rp_thresholds *t,
                               rp_verdict *out) {
    rp_verdict_init(out);
    if (q == NULL || t == NULL || q->vhost == NULL || q->name == NULL) return RP_ERR_INVALID;
    if (!q->owned || q->is_dead_letter_queue || q->type == RP_QUEUE_TYPE_STREAM ||
        !q->counts_known)
        return RP_OK;
    int64_t ready = rp__nonneg(q->ready);
    if (ready <= t->queue_depth_threshold) return RP_OK;
    rp__judged j = {
        .condition = RP_COND_WAITING_DEPTH,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = (double)ready,
        .threshold = t->queue_depth_threshold,
        .unit = "messages",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_queue(q->vhost, q->name, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "queue %s on vhost %s holds %" PRId64 " ready messages, above the "
                        "threshold of %" PRId64 ": surfaced, nothing moved; the fix is a cap "
                        "on admission (a max-length policy with overflow reject-publish, or "
                        "publishers that slow down) or more consumers",
                        q->name, q->vhost, ready, t->queue_depth_threshold);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, q->name, NULL, detail);
}
