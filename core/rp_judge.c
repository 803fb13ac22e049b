#include "rp_judge.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"

void rp_thresholds_default(rp_thresholds *t) {
    t->lease_grace_seconds = 0;
    t->stale_ready_seconds = 900;
    t->dead_letter_min_depth = 1;
    t->consumer_timeout_seconds = 21600;
    t->delivery_limit = 20;
    t->held_ceiling_seconds = 3600;
    t->held_evict_factor = 0;
    t->waiting_depth_threshold = 10;
    t->queue_depth_threshold = 10000;
    t->wedged_seconds = 900;
    t->wedged_checks = 3;
    t->divergence_window_seconds = 86400;
    t->divergence_ratio = 2;
    t->divergence_min_waiting = 50;
    t->wedge_restart = false;
    t->wedge_restart_max = 3;
    t->wedge_restart_window_seconds = 1800;
}

bool rp_judge_lease_expired(rp_time_ms now, rp_time_ms lease_expires_at, int64_t grace_seconds) {
    return rp__sat_sub(now, lease_expires_at) > rp__s_to_ms(grace_seconds);
}

bool rp_judge_age_stale(int64_t age_ms, int64_t stale_ready_seconds) {
    return age_ms >= 0 && age_ms >= rp__s_to_ms(stale_ready_seconds);
}

double rp__judge_seconds(int64_t ms) { return (double)ms / 1000.0; }

rp_status rp__judge_fill(rp_verdict *v, const rp__judged *j, char *object, const char *queue,
                         const char *project, char *detail) {
    rp_verdict_init(v);
    v->object = object;
    v->detail = detail;
    v->condition = j->condition;
    v->action = j->action;
    v->source = j->source;
    v->measured = j->measured;
    v->threshold = j->threshold;
    v->trusted = j->trusted;
    if (object == NULL || detail == NULL || rp_verdict_set_queue(v, queue) != RP_OK ||
        rp_verdict_set_project(v, project) != RP_OK || rp_verdict_set_unit(v, j->unit) != RP_OK) {
        rp_verdict_cleanup(v);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

static const char *rp_or(const char *s, const char *dflt) { return s ? s : dflt; }

rp_status rp_judge_held_job(const rp_held_job *job, const rp_thresholds *t, rp_time_ms now,
                            rp_verdict *out) {
    rp_verdict_init(out);
    if (job == NULL || t == NULL) return RP_ERR_INVALID;
    if (job->state != RP_JOB_LEASED || !job->lease_expires_known) return RP_OK;
    if (!rp_judge_lease_expired(now, job->lease_expires_at, t->lease_grace_seconds)) return RP_OK;

    int64_t past_ms = rp__sat_sub(now, job->lease_expires_at);
    bool poison = job->attempts >= job->max_attempts;
    rp__judged j = {
        .source = RP_SOURCE_JOB_QUEUE,
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_job(job->id, &object);
    if (st != RP_OK) return st;
    const char *holder = rp_or(job->lease_owner, "an unknown holder");
    if (poison) {
        j.condition = RP_COND_POISON;
        j.action = RP_ACTION_PARKED;
        j.measured = job->attempts;
        j.threshold = job->max_attempts;
        j.unit = "attempts";
        st = rp_text_format(&detail,
                            "job %" PRId64 " (kind %s, project %s) held by %s is %.3f s past its "
                            "lease deadline after %" PRId32 " of %" PRId32
                            " attempts: parked for a person (gate delivery_exhausted, one "
                            "attempt refunded)",
                            job->id, rp_or(job->kind, "?"), rp_or(job->project, "?"), holder,
                            rp__judge_seconds(past_ms), job->attempts, job->max_attempts);
    } else {
        j.condition = RP_COND_LEASE_EXPIRED;
        j.action = RP_ACTION_REQUEUED;
        j.measured = rp__judge_seconds(past_ms);
        j.threshold = t->lease_grace_seconds;
        j.unit = "seconds";
        st = rp_text_format(&detail,
                            "job %" PRId64 " (kind %s, project %s) held by %s is %.3f s past its "
                            "lease deadline, over the grace of %" PRId64 " s, after %" PRId32
                            " of %" PRId32 " attempts: requeued",
                            job->id, rp_or(job->kind, "?"), rp_or(job->project, "?"), holder,
                            rp__judge_seconds(past_ms), t->lease_grace_seconds, job->attempts,
                            job->max_attempts);
    }
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, job->kind, job->project, detail);
}

rp_status rp_judge_claimable(const rp_claimable_job *job, const rp_thresholds *t,
                             rp_time_ms now, rp_verdict *out) {
    rp_verdict_init(out);
    if (job == NULL || t == NULL) return RP_ERR_INVALID;
    rp_time_ms since = job->run_after;
    bool by_dependency = false;
    if (job->dependency_finished_known && job->dependency_finished_at > since) {
        since = job->dependency_finished_at;
        by_dependency = true;
    }
    int64_t age_ms = rp__sat_sub(now, since);
    if (!rp_judge_age_stale(age_ms, t->stale_ready_seconds)) return RP_OK;

    rp__judged j = {
        .condition = RP_COND_STALE_READY,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_JOB_QUEUE,
        .measured = rp__judge_seconds(age_ms),
        .threshold = t->stale_ready_seconds,
        .unit = "seconds",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_job(job->job_id, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "the oldest claimable job of project %s, job %" PRId64
                        " (kind %s), has waited %.3f s since %s, at or over the threshold of "
                        "%" PRId64 " s: surfaced, nothing moved",
                        rp_or(job->project, "?"), job->job_id, rp_or(job->kind, "?"),
                        rp__judge_seconds(age_ms),
                        by_dependency ? "its dependency finished" : "its run_after",
                        t->stale_ready_seconds);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, job->kind, job->project, detail);
}

/* The threshold and unit a condition is measured against, for verdicts that
 * carry no measurement of their own (a cleared sighting). */
static void rp_condition_scale(rp_condition c, const rp_thresholds *t, int64_t *threshold,
                               const char **unit) {
    switch (c) {
    case RP_COND_HUNG_HANDLER:
        *threshold = t->consumer_timeout_seconds;
        *unit = "seconds";
        return;
    case RP_COND_LEASE_EXPIRED:
        *threshold = t->lease_grace_seconds;
        *unit = "seconds";
        return;
    case RP_COND_STALE_READY:
        *threshold = t->stale_ready_seconds;
        *unit = "seconds";
        return;
    case RP_COND_DEAD_LETTER:
        *threshold = t->dead_letter_min_depth;
        *unit = "messages";
        return;
    case RP_COND_POISON:
        *threshold = t->delivery_limit;
        *unit = "attempts";
        return;
    case RP_COND_STALLED:
        *threshold = t->held_ceiling_seconds;
        *unit = "seconds";
        return;
    case RP_COND_WAITING_DEPTH:
        /* A kind subject counts jobs, a queue subject messages (below). */
        *threshold = t->waiting_depth_threshold;
        *unit = "jobs";
        return;
    case RP_COND_WEDGED:
        *threshold = t->wedged_seconds;
        *unit = "seconds";
        return;
    case RP_COND_DIVERGENT:
        /* A kind subject counts jobs, a queue subject messages (below). */
        *threshold = t->divergence_min_waiting;
        *unit = "jobs";
        return;
    case RP_COND_HOLDER_GONE:
    default:
        *threshold = 0;
        *unit = "messages";
        return;
    }
}

rp_status rp_judge_cleared(const rp_sighting_row *s, const rp_thresholds *t, rp_verdict *out) {
    rp_verdict_init(out);
    if (s == NULL || t == NULL) return RP_ERR_INVALID;
    rp_sighting_key_parts parts;
    if (!rp_sighting_key_split(s->key, &parts)) return RP_ERR_INVALID;

    rp__judged j = {
        .condition = parts.condition,
        .action = RP_ACTION_CLEARED,
        .source = parts.source,
        .measured = -1,
        .trusted = true,
    };
    rp_condition_scale(parts.condition, t, &j.threshold, &j.unit);
    if (parts.condition == RP_COND_WAITING_DEPTH && parts.source == RP_SOURCE_BROKER) {
        j.threshold = t->queue_depth_threshold;
        j.unit = "messages";
    }
    if (parts.condition == RP_COND_DIVERGENT && parts.source == RP_SOURCE_BROKER)
        j.unit = "messages";

    char *vhost = NULL, *queue = NULL, *project = NULL, *object = NULL, *detail = NULL;
    rp_status st = RP_OK;
    if (rp_object_queue_split(parts.subject, &vhost, &queue) != RP_OK) {
        vhost = queue = NULL;
        static const char pfx[] = "project:";
        if (rp_object_kind_split(parts.subject, &project, &queue) == RP_OK) {
            /* kind:<project>:<kind>: project and kind (as the queue) */
        } else if (strncmp(parts.subject, pfx, sizeof pfx - 1) == 0) {
            project = strdup(parts.subject + sizeof pfx - 1);
            if (project == NULL) st = RP_ERR_NOMEM;
        }
    }
    if (st == RP_OK) {
        object = strdup(parts.subject);
        if (object == NULL) st = RP_ERR_NOMEM;
    }
    if (st == RP_OK)
        st = rp_text_format(&detail,
                            "%s on %s, open since ledger event %" PRId64
                            ", is no longer seen by a pass that read the %s whole: cleared",
                            rp_condition_string(parts.condition), parts.subject, s->opened_seq,
                            parts.source == RP_SOURCE_BROKER ? "broker" : "job table");
    if (st == RP_OK) {
        st = rp__judge_fill(out, &j, object, queue, project, detail);
        object = detail = NULL;
    }
    free(object);
    free(detail);
    free(vhost);
    free(queue);
    free(project);
    return st;
}
