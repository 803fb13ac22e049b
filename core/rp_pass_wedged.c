/* The job table's wedged queues (issue 18 item 4, rp_wedged.h): each
 * (project, kind) checked, the consecutive-check counters kept in the
 * store, WEDGED surfaced at reap.wedged_checks. */
#include <stdlib.h>
#include <string.h>

#include "rp_object.h"
#include "rp_pass_internal.h"

/* A wedged group copied out of the store's lent listing. */
typedef struct rp_wedged_one {
    rp_wedge_group g;
    char *project, *kind, *subject;
} rp_wedged_one;

rp_status rp__pass_wedged(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    if (s->list_wedge_groups == NULL || s->count_wedge_checks == NULL) return RP_OK;
    const rp_thresholds *t = &p->opt->thresholds;
    rp_wedge_group_list list = {0};
    rp_status lst = s->list_wedge_groups(s->self, p->opt->project, p->now,
                                         t->lease_grace_seconds, &list);
    if (lst != RP_OK) {
        p->store_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "listing wedge groups", lst);
    }
    /* The listing is lent until the next store call: copy the groups
     * wedged on this check first. */
    rp_wedged_one *w = list.n ? calloc(list.n, sizeof *w) : NULL;
    const char **subjects = list.n ? calloc(list.n, sizeof *subjects) : NULL;
    int64_t *counts = list.n ? calloc(list.n, sizeof *counts) : NULL;
    rp_status st = RP_OK;
    if (list.n && (w == NULL || subjects == NULL || counts == NULL)) st = RP_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < list.n && st == RP_OK; i++) {
        const rp_wedge_group *g = &list.groups[i];
        if (g->project == NULL || g->kind == NULL) {
            st = rp__pass_note(p, "job_queue: a wedge group without a project or kind was "
                                  "listed; left alone");
            continue;
        }
        if (!rp_judge_wedge_check(g, t, p->now)) continue;
        w[n].g = *g;
        w[n].project = strdup(g->project);
        w[n].kind = strdup(g->kind);
        if (w[n].project == NULL || w[n].kind == NULL) {
            free(w[n].project);
            free(w[n].kind);
            st = RP_ERR_NOMEM;
            break;
        }
        w[n].g.project = w[n].project;
        w[n].g.kind = w[n].kind;
        st = rp_object_kind(w[n].project, w[n].kind, &w[n].subject);
        subjects[n] = w[n].subject;
        n++;
    }
    /* The counters of the scope read: every kind, or this project's. */
    char *scope = NULL;
    if (st == RP_OK) {
        if (p->opt->project == NULL) {
            scope = strdup("kind:");
            if (scope == NULL) st = RP_ERR_NOMEM;
        } else {
            st = rp_object_kind(p->opt->project, "", &scope);
        }
    }
    bool counted = false;
    if (st == RP_OK) {
        rp_status cst = s->count_wedge_checks(s->self, scope, subjects, n, p->opt->dry_run,
                                              counts);
        if (cst != RP_OK) {
            p->store_whole = false;
            st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "counting wedged checks", cst);
        } else {
            p->wedged_read = counted = true;
        }
    }
    for (size_t i = 0; counted && i < n && st == RP_OK; i++) {
        rp_verdict v;
        st = rp_judge_wedged(&w[i].g, t, p->now, counts[i], &v);
        if (st == RP_OK && v.condition != RP_COND_NONE) st = rp__pass_surface(p, &v);
        else rp_verdict_cleanup(&v);
    }
    for (size_t i = 0; i < n; i++) {
        free(w[i].project);
        free(w[i].kind);
        free(w[i].subject);
    }
    free(scope);
    free(w);
    free(subjects);
    free(counts);
    return st;
}
