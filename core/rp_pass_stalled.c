/* Issue 18 item 1, the broker half of STALLED in a full pass: the
 * channels that hold unacknowledged messages sampled into the process's
 * memory (rp_stalled_broker.h), STALLED surfaced on the owned queues they
 * consume from. */
#include <stdlib.h>
#include <string.h>

#include "rp_object.h"
#include "rp_pass_internal.h"
#include "rp_stalled_broker.h"

/* Whether vhost/name is an owned work queue (the listing's
 * classification: not a dead-letter queue, not one of reaper's own). */
static rp_status rp_owned_work(rp__pass *p, const char *vhost, const char *name, bool *yes) {
    rp_queue_facts q = {0};
    q.vhost = vhost;
    q.name = name;
    rp_status st = rp__pass_classify(p, &q);
    *yes = st == RP_OK && q.owned && !q.is_dead_letter_queue && !q.reapers_own;
    return st;
}

/* Longest hold first, so that the verdict surfaced on a queue held by
 * several stalled channels names the one stalled longest. */
typedef struct rp__by_hold {
    size_t i;
    int64_t held_ms;
} rp__by_hold;

static int rp_cmp_hold(const void *a, const void *b) {
    const rp__by_hold *x = a, *y = b;
    if (x->held_ms != y->held_ms) return x->held_ms > y->held_ms ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

rp_status rp__pass_stalled_broker(rp__pass *p) {
    const rp_broker_port *b = &p->ports->broker;
    rp_stall_memory *mem = p->opt->stall_memory;
    if (b->list_channels == NULL || mem == NULL) return RP_OK;
    if (p->opt->should_stop && p->opt->should_stop(p->opt->stop_arg)) return RP_OK;
    rp_channel_list list = {0};
    rp_status lst = b->list_channels(b->self, &list);
    if (lst == RP_ERR_NOMEM) return lst;
    if (lst == RP_ERR_FORBIDDEN) {
        rp_stall_memory_forget(mem);
        return rp__pass_note(p, "broker: STALLED not judged on channels: the management user "
                                "cannot see every user's channels (it needs the monitoring or "
                                "administrator tag)");
    }
    if (lst != RP_OK) {
        rp_stall_memory_forget(mem);
        return rp__pass_unreadable(p, RP_SOURCE_BROKER, "listing channels", lst);
    }
    rp_channel_hold *holds = list.n ? calloc(list.n, sizeof *holds) : NULL;
    rp__by_hold *order = list.n ? calloc(list.n, sizeof *order) : NULL;
    if (list.n && (holds == NULL || order == NULL)) {
        free(holds);
        free(order);
        return RP_ERR_NOMEM;
    }
    rp_status st = rp_stall_memory_update(mem, &list, p->now,
                                          p->opt->thresholds.held_ceiling_seconds, holds);
    if (st == RP_ERR_INVALID) {
        rp_stall_memory_forget(mem);
        st = rp__pass_note(p, "broker: a channel without a name was listed; STALLED not judged "
                              "on channels");
        goto out;
    }
    if (st != RP_OK) goto out;
    for (size_t i = 0; i < list.n; i++) order[i] = (rp__by_hold){i, holds[i].held_ms};
    if (list.n > 1) qsort(order, list.n, sizeof *order, rp_cmp_hold);
    size_t unsure = 0;
    for (size_t k = 0; k < list.n && st == RP_OK; k++) {
        const rp_channel_sample *c = &list.channels[order[k].i];
        const rp_channel_hold *h = &holds[order[k].i];
        if (h->state != RP_HOLD_STALLED && h->state != RP_HOLD_UNSURE) continue;
        if (c->vhost == NULL) continue;
        bool counted = false;
        for (size_t q = 0; q < c->n_queues && st == RP_OK; q++) {
            bool owned = false;
            if (c->queues[q] == NULL) continue;
            st = rp_owned_work(p, c->vhost, c->queues[q], &owned);
            if (st != RP_OK || !owned) continue;
            if (h->state == RP_HOLD_UNSURE) {
                /* Its hold may have begun before this process watched:
                 * what another replica surfaced on the queue stays. */
                char *subject = NULL;
                st = rp_object_queue(c->vhost, c->queues[q], &subject);
                if (st == RP_OK) st = rp__strs_add(&p->stall_unsure, subject);
                free(subject);
                if (!counted) unsure++;
                counted = true;
                continue;
            }
            rp_verdict v;
            st = rp_judge_stalled_channel(c, c->queues[q], h, &p->opt->thresholds, &v);
            if (st == RP_OK && v.condition != RP_COND_NONE) st = rp__pass_surface(p, &v);
            else rp_verdict_cleanup(&v);
        }
    }
    if (st == RP_OK && unsure > 0)
        st = rp__pass_note(p, "broker: %zu channel(s) holding unacknowledged messages of owned "
                              "queues were already holding when this process first saw them, "
                              "less than reap.held_ceiling_seconds ago: STALLED is judged on "
                              "them once they have been watched that long (what is open on "
                              "their queues stays open meanwhile)",
                           unsure);
    if (st == RP_OK) p->stall_broker_read = true;
out:
    free(holds);
    free(order);
    return st;
}
