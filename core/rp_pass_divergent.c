/* Issue 18 item 3, the job table half of a pass: per (project, kind),
 * intake against completions over the window (rp_judge_divergent.h); and
 * the broker half: an owned work queue's publish and ack counters sampled
 * into the store, one store call per listed page (issue 19 item 5). */
#include <stdlib.h>

#include "rp_judge_divergent.h"
#include "rp_object.h"
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

bool rp__pass_divergent_sampled(const rp__pass *p, const char *subject) {
    return p->ports->store.sample_queue_counters != NULL &&
           !rp__strs_has(&p->divergent_unread, subject);
}

/* Whether the classified queue q has its counters sampled (an owned work
 * queue), and whether they can be read (counts and statistics known). */
static bool rp_samples(const rp_queue_facts *q) {
    return q->owned && !q->is_dead_letter_queue && q->type != RP_QUEUE_TYPE_STREAM;
}

static bool rp_readable(const rp_queue_facts *q) { return q->counts_known && q->stats_known; }

rp_status rp__pass_divergent_page(rp__pass *p, const rp_queue_facts *queues, size_t n,
                                  rp__sampled **out) {
    *out = NULL;
    const rp_store_port *s = &p->ports->store;
    if (p->targeted || n == 0 || s->sample_queue_counters == NULL ||
        s->sample_queue_counters_many == NULL)
        return RP_OK;
    rp__sampled *pre = calloc(n, sizeof *pre);
    rp_queue_counter_reading *rd = calloc(n, sizeof *rd);
    size_t *at = calloc(n, sizeof *at);
    rp_queue_rates *rates = calloc(n, sizeof *rates);
    rp_status st = pre && rd && at && rates ? RP_OK : RP_ERR_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n && st == RP_OK; i++) {
        if (queues[i].vhost == NULL || queues[i].name == NULL) continue;
        rp_queue_facts q = queues[i];
        st = rp__pass_classify_quiet(p, &q);
        if (st != RP_OK || !rp_samples(&q) || !rp_readable(&q)) continue;
        rd[m] = (rp_queue_counter_reading){
            .vhost = q.vhost,
            .name = q.name,
            .published_total = q.published_total,
            .acked_total = q.acked_total,
            .read_at = p->now,
            .window_seconds = p->opt->thresholds.divergence_window_seconds,
        };
        at[m++] = i;
    }
    if (st == RP_OK && m > 0) {
        rp_status sst = s->sample_queue_counters_many(s->self, rd, m, rates);
        for (size_t k = 0; k < m; k++) {
            pre[at[k]].tried = true;
            pre[at[k]].st = sst;
            pre[at[k]].rates = sst == RP_OK ? rates[k] : (rp_queue_rates){0};
        }
    }
    free(rd);
    free(at);
    free(rates);
    if (st != RP_OK || m == 0) {
        free(pre);
        return st;
    }
    *out = pre;
    return RP_OK;
}

rp_status rp__pass_divergent_queue(rp__pass *p, const rp_queue_facts *q, const rp__sampled *pre) {
    const rp_store_port *s = &p->ports->store;
    if (s->sample_queue_counters == NULL || !rp_samples(q)) return RP_OK;
    char *subject = NULL;
    rp_status st = rp_object_queue(q->vhost, q->name, &subject);
    if (st != RP_OK) return st;
    rp_queue_rates rates = {0};
    if (rp_readable(q)) {
        rp_queue_counter_reading r = {
            .vhost = q->vhost,
            .name = q->name,
            .published_total = q->published_total,
            .acked_total = q->acked_total,
            .read_at = p->now,
            .window_seconds = p->opt->thresholds.divergence_window_seconds,
        };
        rp_status sst;
        if (pre != NULL && pre->tried) { /* sampled with its page */
            sst = pre->st;
            rates = pre->rates;
        } else {
            sst = s->sample_queue_counters(s->self, &r, &rates);
        }
        if (sst != RP_OK) {
            rates.known = false;
            st = rp__pass_note(p, "queue %s on vhost %s: its publish and ack counters could not "
                                  "be recorded (%s); DIVERGENT not judged",
                               q->name, q->vhost, rp_status_string(sst));
        }
    }
    if (st == RP_OK && !rates.known) st = rp__strs_add(&p->divergent_unread, subject);
    free(subject);
    /* Issue 18 item 4, broker: when its ack counter last moved. */
    if (st == RP_OK) st = rp__pass_wedged_queue(p, q, &rates, rp_readable(q));
    if (st != RP_OK || !rates.known) return st;
    rp_verdict v;
    st = rp_judge_divergent_queue(q, &rates, &p->opt->thresholds, &v);
    if (st == RP_OK && v.condition != RP_COND_NONE) st = rp__pass_hold(p, q->vhost, q->name, &v);
    rp_verdict_cleanup(&v);
    return st;
}
