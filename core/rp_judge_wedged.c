/* Issue 18 item 4's judge: the wedged queue (rp_wedged.h). */
#include "rp_wedged.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_arith.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"

int64_t rp_wedge_quiet_ms(const rp_wedge_group *g, rp_time_ms now) {
    rp_time_ms since = g->claimable_since;
    if (g->completed_known && g->last_completed_at > since) since = g->last_completed_at;
    return rp__sat_sub(now, since);
}

bool rp_judge_wedge_check(const rp_wedge_group *g, const rp_thresholds *t, rp_time_ms now) {
    if (g == NULL || t == NULL) return false;
    if (g->claimable <= 0 || g->active > 0) return false;
    int64_t quiet = rp_wedge_quiet_ms(g, now);
    return quiet >= 0 && quiet >= rp__s_to_ms(t->wedged_seconds);
}

bool rp_judge_wedge_count(int64_t consecutive, const rp_thresholds *t) {
    return t != NULL && consecutive >= 1 && consecutive >= t->wedged_checks;
}

rp_status rp_judge_wedged(const rp_wedge_group *g, const rp_thresholds *t, rp_time_ms now,
                          int64_t consecutive, rp_verdict *out) {
    rp_verdict_init(out);
    if (g == NULL || t == NULL || g->project == NULL || g->kind == NULL) return RP_ERR_INVALID;
    if (!rp_judge_wedge_check(g, t, now) || !rp_judge_wedge_count(consecutive, t)) return RP_OK;
    int64_t quiet = rp_wedge_quiet_ms(g, now);
    rp__judged j = {
        .condition = RP_COND_WEDGED,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_JOB_QUEUE,
        .measured = rp__judge_seconds(quiet),
        .threshold = t->wedged_seconds,
        .unit = "seconds",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_kind(g->project, g->kind, &object);
    if (st != RP_OK) return st;
    char since[64];
    if (g->completed_known)
        snprintf(since, sizeof since, "the newest completion %.3f s ago",
                 rp__judge_seconds(rp__sat_sub(now, g->last_completed_at)));
    else
        snprintf(since, sizeof since, "no job of it ever succeeded");
    st = rp_text_format(&detail,
                        "%" PRId64 " claimable jobs of kind %s in project %s, none held by a "
                        "live lease, and none succeeded for %.3f s (%s), at or past %" PRId64
                        " s on %" PRId64 " consecutive checks: surfaced, nothing moved; its "
                        "workers' supervisors (job_queue.wedged.surfaced) should restart them",
                        g->claimable, g->kind, g->project, rp__judge_seconds(quiet), since,
                        t->wedged_seconds, consecutive);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, g->kind, g->project, detail);
}
