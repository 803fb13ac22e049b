/* Issue 18 item 3, the job table half of a pass: per (project, kind),
 * intake against completions over the window (rp_judge_divergent.h). */
#include <stdlib.h>

#include "rp_judge_divergent.h"
#include "rp_pass_internal.h"

rp_status rp__pass_divergent_store(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    if (s->count_divergent == NULL) return RP_OK;
    const rp_thresholds *t = &p->opt->thresholds;
    rp_divergence_list list = {0};
    rp_status lst = s->count_divergent(s->self, p->opt->project, p->now,
                                       t->divergence_window_seconds, t->divergence_min_waiting,
                                       &list);
    if (lst != RP_OK) {
        p->store_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "counting intake and completions",
                                   lst);
    }
    /* The list is lent until the next store call, and surfacing calls the
     * store: judge everything first, then surface. */
    rp_verdict *vs = list.n ? calloc(list.n, sizeof *vs) : NULL;
    if (list.n && vs == NULL) return RP_ERR_NOMEM;
    size_t n = 0;
    rp_status st = RP_OK;
    for (size_t i = 0; i < list.n && st == RP_OK; i++) {
        st = rp_judge_divergent_kind(&list.groups[i], t, &vs[n]);
        if (st == RP_ERR_INVALID) { /* a group without a project or kind */
            rp_verdict_cleanup(&vs[n]);
            st = rp__pass_note(p, "job_queue: a divergence group without a project or kind "
                                  "was counted; left alone");
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
    if (st == RP_OK) p->divergent_read = true;
    return st;
}
