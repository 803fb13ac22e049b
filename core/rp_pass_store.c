/* The job table half of a pass: lease reap, then stale ready (rp_pass.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "rp_pass_internal.h"
#include "rp_publish.h"

/* Moves one judged lease, or in a dry run reports what would move. Returns
 * RP_OK to go on, RP_ERR_UNAVAILABLE (after recording it) to stop the lease
 * loop, or a failure that stops the pass. */
static rp_status rp_move(rp__pass *p, const rp_held_job *job, rp_verdict *v) {
    const rp_store_port *s = &p->ports->store;
    if (p->opt->dry_run) {
        rp_status rst = s->release_lease(s->self, job);
        rp_status st = rp_report_add_verdict(p->report, v);
        if (st == RP_OK && rst != RP_OK) {
            p->store_whole = false;
            st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "releasing a lease", rst);
            if (st == RP_OK) st = RP_ERR_UNAVAILABLE;
        }
        return st;
    }
    rp_event_ref ev = {0};
    rp_status mst = s->move_lease(s->self, job, v, &ev);
    if (mst == RP_ERR_CONFLICT) {
        /* The row changed under the lock (or was never locked): nothing was
         * committed, and the next pass judges it afresh. */
        return rp__pass_note(p, "job %" PRId64 " changed while it was being moved; left for the "
                                "next pass", job->id);
    }
    if (mst == RP_ERR_UNAVAILABLE) {
        p->store_whole = false;
        rp_status st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "moving an expired lease", mst);
        return st == RP_OK ? RP_ERR_UNAVAILABLE : st;
    }
    if (mst != RP_OK) {
        /* This row failed (a constraint, a trigger) and was rolled back
         * alone: the others go on, and the next pass tries it again. */
        return rp__pass_note(p, "job %" PRId64 " could not be moved (%s); left for the next pass",
                             job->id, rp_status_string(mst));
    }
    rp_status st = rp_publish_event(p->ports, &ev, v, p->report);
    if (st == RP_OK) st = rp_report_add_verdict(p->report, v);
    return st;
}

static rp_status rp_reap_leases(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    int64_t after = 0;
    size_t handled = 0;
    for (;;) {
        if (p->opt->should_stop && p->opt->should_stop(p->opt->stop_arg)) {
            p->store_whole = false;
            return rp__pass_note(p, "job_queue: the lease reap stopped early (shutting down) "
                                    "after %zu rows; the rest is left for the next pass", handled);
        }
        if (p->opt->progress && handled > 0 && handled % RP_PASS_PROGRESS_EVERY == 0)
            p->opt->progress(p->opt->progress_arg, "lease reap", handled);
        handled++;
        rp_lease_query q = {
            .now = p->now,
            .grace_seconds = p->opt->thresholds.lease_grace_seconds,
            .after_id = after,
            .project = p->opt->project,
            .lock = !p->opt->dry_run,
        };
        rp_held_job job = {0};
        rp_status tst = s->take_expired_lease(s->self, &q, &job);
        if (tst == RP_ERR_NOT_FOUND) return RP_OK;
        if (tst != RP_OK) {
            p->store_whole = false;
            return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "taking an expired lease", tst);
        }
        if (job.id <= after) {
            /* Ids must grow, or the loop might never end. */
            rp_status rst = s->release_lease(s->self, &job);
            (void)rst; /* the adapter is already reported as broken */
            p->store_whole = false;
            return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "taking an expired lease",
                                       RP_ERR_INTERNAL);
        }
        after = job.id;

        rp_verdict v;
        rp_status st = rp_judge_held_job(&job, &p->opt->thresholds, p->now, &v);
        if (st == RP_OK && v.condition == RP_COND_NONE) {
            rp_status rst = s->release_lease(s->self, &job);
            if (rst != RP_OK) {
                p->store_whole = false;
                st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "releasing a lease", rst);
                if (st == RP_OK) st = RP_ERR_UNAVAILABLE;
            }
        } else if (st == RP_OK) {
            st = rp_move(p, &job, &v);
        } else {
            rp_status rst = s->release_lease(s->self, &job);
            (void)rst; /* the judge's failure (no memory) is what stops the pass */
        }
        rp_verdict_cleanup(&v);
        if (st == RP_ERR_UNAVAILABLE) return RP_OK;
        if (st != RP_OK) return st;
    }
}

static rp_status rp_stale_ready(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    rp_claimable_list list = {0};
    rp_status lst = s->list_oldest_claimable(s->self, p->opt->project, p->now, &list);
    if (lst != RP_OK) {
        p->store_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "listing claimable jobs", lst);
    }
    /* The list is lent until the next store call, and surfacing calls the
     * store: judge everything first, then surface. */
    rp_verdict *stale = list.n ? calloc(list.n, sizeof *stale) : NULL;
    if (list.n && stale == NULL) return RP_ERR_NOMEM;
    size_t n = 0;
    rp_status st = RP_OK;
    for (size_t i = 0; i < list.n && st == RP_OK; i++) {
        st = rp_judge_claimable(&list.jobs[i], &p->opt->thresholds, p->now, &stale[n]);
        if (st == RP_OK && stale[n].condition != RP_COND_NONE) n++;
        else rp_verdict_cleanup(&stale[n]);
    }
    for (size_t i = 0; i < n; i++) {
        if (st == RP_OK) st = rp__pass_surface(p, &stale[i]);
        else rp_verdict_cleanup(&stale[i]);
    }
    free(stale);
    return st;
}

rp_status rp__pass_leases(rp__pass *p) { return rp_reap_leases(p); }

rp_status rp__pass_store(rp__pass *p) {
    rp_status st = rp_reap_leases(p);
    if (st == RP_OK) st = rp_stale_ready(p);
    return st;
}
