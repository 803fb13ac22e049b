/* The job table half of a pass: lease reap, then stale ready (rp_pass.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"

#include "rp_object.h"
#include "rp_pass_internal.h"
#include "rp_publish.h"

/* The verdicts of one batch: the rows the judge moves, in id order. */
typedef struct rp_lease_judged {
    rp_verdict *verdicts;
    rp_lease_move *moves;
    size_t n;
} rp_lease_judged;

static void rp_lease_judged_cleanup(rp_lease_judged *j) {
    for (size_t i = 0; i < j->n; i++) rp_verdict_cleanup(&j->verdicts[i]);
    j->n = 0;
}

/* Records that the store failed: the lease reap stops here (the rest is
 * left for the next pass). Returns RP_OK to end the lease loop quietly, or
 * a failure that stops the pass. */
static rp_status rp_store_failed(rp__pass *p, const char *what, rp_status why) {
    p->store_whole = false;
    return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, what, why);
}

/* After the batch committed: the outcome of each move. Events are handed
 * to the publisher and verdicts reported only for the rows that moved. */
static rp_status rp_after_commit(rp__pass *p, rp_lease_judged *j) {
    rp_status st = RP_OK;
    for (size_t i = 0; i < j->n && st == RP_OK; i++) {
        rp_lease_move *m = &j->moves[i];
        if (m->result == RP_ERR_CONFLICT) {
            /* The row changed under the lock (or was never locked): nothing
             * was committed for it, and the next pass judges it afresh. */
            st = rp__pass_note(p, "job %" PRId64 " changed while it was being moved; left for "
                                  "the next pass", m->job->id);
        } else if (m->result != RP_OK) {
            /* This row failed (a constraint, a trigger) and was rolled back
             * to its savepoint alone: the others committed, and the next
             * pass tries it again. The row is named unreadable and the pass
             * is not ok (issue 18 item 5): a row reaper cannot move is not
             * a row it dealt with. */
            st = rp__pass_note(p, "job %" PRId64 " could not be moved (%s); left for the next "
                                  "pass", m->job->id, rp_status_string(m->result));
            char *object = NULL;
            if (st == RP_OK) st = rp_object_job(m->job->id, &object);
            if (st == RP_OK) st = rp__pass_unreadable_object(p, object);
            free(object);
        } else {
            st = rp_publish_event(p->ports, &m->event, &j->verdicts[i], p->report);
            if (st == RP_OK) st = rp_report_add_verdict(p->report, &j->verdicts[i]);
        }
    }
    return st;
}

/* Judges the batch's rows into j (only those to move). RP_OK, or
 * RP_ERR_NOMEM from the judge. */
static rp_status rp_judge_batch(rp__pass *p, const rp_lease_batch *b, rp_lease_judged *j) {
    for (size_t i = 0; i < b->n; i++) {
        rp_verdict *v = &j->verdicts[j->n];
        rp_status st = rp_judge_held_job(&b->jobs[i], &p->opt->thresholds, p->now, v);
        if (st != RP_OK) return st;
        if (v->condition == RP_COND_NONE) {
            rp_verdict_cleanup(v);
            continue;
        }
        j->moves[j->n] = (rp_lease_move){.job = &b->jobs[i], .v = v};
        j->n++;
    }
    return RP_OK;
}

/* One batch: take, judge, commit (or release in a dry run), then publish.
 * *done is set when there is no further row. Returns RP_OK to go on,
 * RP_ERR_UNAVAILABLE (after recording it) to end the lease loop, or a
 * failure that stops the pass. */
static rp_status rp_reap_batch(rp__pass *p, rp_lease_judged *j, int64_t *after, size_t *handled,
                               bool *done) {
    const rp_store_port *s = &p->ports->store;
    rp_lease_query q = {
        .now = p->now,
        .grace_seconds = p->opt->thresholds.lease_grace_seconds,
        .after_id = *after,
        .project = p->opt->project,
        .lock = !p->opt->dry_run,
    };
    rp_lease_batch b = {0};
    rp_status tst = s->take_leases(s->self, &q, p->opt->lease_batch_size, &b);
    if (tst == RP_ERR_NOT_FOUND) {
        *done = true;
        return RP_OK;
    }
    if (tst != RP_OK) {
        rp_status st = rp_store_failed(p, "taking expired leases", tst);
        return st == RP_OK ? RP_ERR_UNAVAILABLE : st;
    }
    /* Ids must grow, or the loop might never end; a batch larger than asked
     * would overrun the verdicts. */
    bool sane = b.n >= 1 && b.n <= p->opt->lease_batch_size && b.jobs != NULL;
    for (size_t i = 0; sane && i < b.n; i++)
        if (b.jobs[i].id <= (i == 0 ? *after : b.jobs[i - 1].id)) sane = false;
    if (!sane) {
        rp_status rst = s->release_leases(s->self);
        (void)rst; /* the adapter is already reported as broken */
        rp_status st = rp_store_failed(p, "taking expired leases", RP_ERR_INTERNAL);
        return st == RP_OK ? RP_ERR_UNAVAILABLE : st;
    }
    *after = b.jobs[b.n - 1].id;
    *handled += b.n;

    rp_status st = rp_judge_batch(p, &b, j);
    if (st != RP_OK || j->n == 0 || p->opt->dry_run) {
        /* The judge's failure (no memory) stops the pass; a batch with
         * nothing to move, or a dry run, changes nothing. */
        rp_status rst = s->release_leases(s->self);
        if (st == RP_OK && p->opt->dry_run)
            for (size_t i = 0; i < j->n && st == RP_OK; i++)
                st = rp_report_add_verdict(p->report, &j->verdicts[i]);
        if (st == RP_OK && rst != RP_OK) {
            st = rp_store_failed(p, "releasing leases", rst);
            if (st == RP_OK) st = RP_ERR_UNAVAILABLE;
        }
        return st;
    }
    rp_status cst = s->commit_leases(s->self, j->moves, j->n);
    if (cst != RP_OK) {
        /* Nothing of the batch committed: nothing is published. */
        st = rp_store_failed(p, "moving expired leases", cst);
        return st == RP_OK ? RP_ERR_UNAVAILABLE : st;
    }
    return rp_after_commit(p, j);
}

static rp_status rp_reap_leases(rp__pass *p) {
    size_t cap = p->opt->lease_batch_size;
    rp_lease_judged j = {
        .verdicts = calloc(cap, sizeof *j.verdicts),
        .moves = calloc(cap, sizeof *j.moves),
    };
    rp_status st = RP_OK;
    if (j.verdicts == NULL || j.moves == NULL) st = RP_ERR_NOMEM;
    int64_t after = 0;
    size_t handled = 0;
    size_t told = 0; /* progress said for this many rows */
    bool done = false;
    while (st == RP_OK && !done) {
        if (p->opt->should_stop && p->opt->should_stop(p->opt->stop_arg)) {
            p->store_whole = false;
            st = rp__pass_note(p, "job_queue: the lease reap stopped early (shutting down) "
                                  "after %zu rows; the rest is left for the next pass", handled);
            break;
        }
        if (p->opt->progress && handled / RP_PASS_PROGRESS_EVERY > told / RP_PASS_PROGRESS_EVERY) {
            p->opt->progress(p->opt->progress_arg, "lease reap", handled);
            told = handled;
        }
        st = rp_reap_batch(p, &j, &after, &handled, &done);
        rp_lease_judged_cleanup(&j);
    }
    free(j.verdicts);
    free(j.moves);
    return st == RP_ERR_UNAVAILABLE ? RP_OK : st;
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

/* Evicts one stalled job (v: STALLED / REQUEUED), or reports what a dry
 * run would. Consumes *v. Not a sighting: the job's STALLED sighting, if
 * one is open, is cleared by this pass (the job is no longer seen held). */
static rp_status rp_evict(rp__pass *p, const rp_long_held_job *job, rp_verdict *v) {
    const rp_store_port *s = &p->ports->store;
    rp_status st = RP_OK;
    if (p->opt->dry_run) {
        st = rp_report_add_verdict(p->report, v);
    } else if (s->evict_held == NULL) {
        st = rp__pass_note(p, "job %" PRId64 " is past its eviction but this store cannot "
                              "evict; left held", job->id);
    } else {
        rp_event_ref ev = {0};
        rp_status est = s->evict_held(s->self, job, v, &ev);
        if (est == RP_ERR_CONFLICT) {
            st = rp__pass_note(p, "job %" PRId64 " changed while it was being evicted; left "
                                  "for the next pass", job->id);
        } else if (est != RP_OK) {
            st = rp_store_failed(p, "evicting a stalled job", est);
        } else {
            st = rp_publish_event(p->ports, &ev, v, p->report);
            if (st == RP_OK) st = rp_report_add_verdict(p->report, v);
        }
    }
    rp_verdict_cleanup(v);
    return st;
}

/* The most rows one pass judges for STALLED; past it the pass says so and
 * clears no STALLED sighting. */
#define RP_PASS_LONG_HELD_MAX 1000

/* Held too long while still heartbeating (issue 18 item 1, job table). */
static rp_status rp_stalled(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    if (s->list_long_held == NULL) return RP_OK;
    const rp_thresholds *t = &p->opt->thresholds;
    rp_long_held_query q = {
        .now = p->now,
        .claimed_before = rp__sat_sub(p->now, rp__s_to_ms(t->held_ceiling_seconds)),
        .grace_seconds = t->lease_grace_seconds,
        .project = p->opt->project,
        .limit = RP_PASS_LONG_HELD_MAX,
    };
    rp_long_held_list list = {0};
    rp_status lst = s->list_long_held(s->self, &q, &list);
    if (lst != RP_OK) {
        p->store_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "listing long-held jobs", lst);
    }
    /* The list is lent until the next store call: judge (and copy what an
     * eviction fences on) first, then act. */
    rp_verdict *vs = list.n ? calloc(list.n, sizeof *vs) : NULL;
    rp_long_held_job *jobs = list.n ? calloc(list.n, sizeof *jobs) : NULL;
    char **owners = list.n ? calloc(list.n, sizeof *owners) : NULL;
    rp_status st = RP_OK;
    if (list.n && (vs == NULL || jobs == NULL || owners == NULL)) st = RP_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < list.n && st == RP_OK; i++) {
        st = rp_judge_long_held(&list.jobs[i], t, p->now, &vs[n]);
        if (st != RP_OK || vs[n].condition == RP_COND_NONE) {
            rp_verdict_cleanup(&vs[n]);
            continue;
        }
        jobs[n] = list.jobs[i];
        jobs[n].project = jobs[n].kind = NULL; /* the verdict holds them */
        if (list.jobs[i].lease_owner != NULL) {
            owners[n] = strdup(list.jobs[i].lease_owner);
            if (owners[n] == NULL) st = RP_ERR_NOMEM;
        }
        jobs[n].lease_owner = owners[n];
        n++;
    }
    bool whole = list.n < RP_PASS_LONG_HELD_MAX;
    for (size_t i = 0; i < n; i++) {
        if (st != RP_OK) rp_verdict_cleanup(&vs[i]);
        else if (vs[i].action == RP_ACTION_REQUEUED) st = rp_evict(p, &jobs[i], &vs[i]);
        else st = rp__pass_surface(p, &vs[i]);
        free(owners[i]);
    }
    free(vs);
    free(jobs);
    free(owners);
    if (st == RP_OK && !whole)
        st = rp__pass_note(p, "job_queue: more than %d jobs are held past the ceiling; the "
                              "longest held were judged, and no STALLED sighting is cleared",
                           RP_PASS_LONG_HELD_MAX - 1);
    if (st == RP_OK) p->stalled_read = whole;
    return st;
}

/* Waiting depth (issue 18 item 2, job table). */
static rp_status rp_waiting(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    if (s->count_waiting == NULL) return RP_OK;
    rp_waiting_list list = {0};
    rp_status lst = s->count_waiting(s->self, p->opt->project, p->now,
                                     p->opt->thresholds.waiting_depth_threshold, &list);
    if (lst != RP_OK) {
        p->store_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "counting waiting jobs", lst);
    }
    rp_verdict *vs = list.n ? calloc(list.n, sizeof *vs) : NULL;
    if (list.n && vs == NULL) return RP_ERR_NOMEM;
    size_t n = 0;
    rp_status st = RP_OK;
    for (size_t i = 0; i < list.n && st == RP_OK; i++) {
        st = rp_judge_waiting(&list.groups[i], &p->opt->thresholds, &vs[n]);
        if (st == RP_ERR_INVALID) { /* a group without a project or kind */
            rp_verdict_cleanup(&vs[n]);
            st = rp__pass_note(p, "job_queue: a waiting group without a project or kind was "
                                  "counted; left alone");
            continue;
        }
        if (st == RP_OK && vs[n].condition != RP_COND_NONE) n++;
        else rp_verdict_cleanup(&vs[n]);
    }
    for (size_t i = 0; i < n; i++) {
        if (st == RP_OK) st = rp__pass_surface(p, &vs[i]);
        else rp_verdict_cleanup(&vs[i]);
    }
    free(vs);
    if (st == RP_OK) p->waiting_read = true;
    return st;
}

rp_status rp__pass_leases(rp__pass *p) { return rp_reap_leases(p); }

rp_status rp__pass_store(rp__pass *p) {
    rp_status st = rp_reap_leases(p);
    if (st == RP_OK) st = rp_stale_ready(p);
    if (st == RP_OK) st = rp_stalled(p);
    if (st == RP_OK) st = rp_waiting(p);
    if (st == RP_OK) st = rp__pass_wedged(p);
    if (st == RP_OK) st = rp__pass_divergent_store(p);
    return st;
}
