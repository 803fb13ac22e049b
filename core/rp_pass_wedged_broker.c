/* Issue 18 item 4, the broker half of a pass (rp_wedged_broker.h): owned
 * queues wedged on this check are kept while the listing runs; after it
 * their consecutive checks are counted in the store (migration 0008's
 * wedge_check, subjects "queue:<vhost>:<name>"), WEDGED is surfaced at
 * reap.wedged_checks, and the restart-loop breaker acts on each surfaced
 * queue when reap.wedge_restart is on. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_object.h"
#include "rp_pass_internal.h"
#include "rp_publish.h"

/* An owned queue wedged on this check: the facts judged (copies of the
 * names; every other string of the facts NULL) and its rates. */
typedef struct rp__wedge_cand {
    rp_queue_facts q;
    rp_queue_rates r;
    char *vhost, *name, *subject;
} rp__wedge_cand;

rp_status rp__pass_wedged_queue(rp__pass *p, const rp_queue_facts *q, const rp_queue_rates *rates,
                                bool sampled) {
    /* A targeted check counts nothing: the count is one per whole sweep. */
    if (p->targeted) return RP_OK;
    char *subject = NULL;
    rp_status st = rp_object_queue(q->vhost, q->name, &subject);
    if (st != RP_OK) return st;
    if (!sampled || !rates->ack_known) {
        st = rp__strs_add(&p->wedge_unread, subject);
        free(subject);
        return st;
    }
    if (!rp_judge_wedge_queue_check(q, rates, &p->opt->thresholds, p->now)) {
        free(subject);
        return RP_OK;
    }
    if (p->n_wedge_cands == p->cap_wedge_cands) {
        size_t cap = p->cap_wedge_cands ? p->cap_wedge_cands * 2 : 8;
        rp__wedge_cand *c = realloc(p->wedge_cands, cap * sizeof *c);
        if (c == NULL) {
            free(subject);
            return RP_ERR_NOMEM;
        }
        p->wedge_cands = c;
        p->cap_wedge_cands = cap;
    }
    rp__wedge_cand *c = &p->wedge_cands[p->n_wedge_cands];
    memset(c, 0, sizeof *c);
    c->vhost = strdup(q->vhost);
    c->name = strdup(q->name);
    c->subject = subject;
    if (c->vhost == NULL || c->name == NULL) {
        free(c->vhost);
        free(c->name);
        free(c->subject);
        return RP_ERR_NOMEM;
    }
    c->q = *q;
    c->q.vhost = c->vhost;
    c->q.name = c->name;
    c->q.dlx_name = NULL;
    c->q.dlx_routing_key = NULL;
    c->r = *rates;
    p->n_wedge_cands++;
    return RP_OK;
}

bool rp__pass_wedged_broker_judged(const rp__pass *p, const char *subject) {
    return p->wedged_broker_read && !rp__strs_has(&p->wedge_unread, subject);
}

void rp__pass_wedged_broker_cleanup(rp__pass *p) {
    for (size_t i = 0; i < p->n_wedge_cands; i++) {
        free(p->wedge_cands[i].vhost);
        free(p->wedge_cands[i].name);
        free(p->wedge_cands[i].subject);
    }
    free(p->wedge_cands);
    p->wedge_cands = NULL;
    p->n_wedge_cands = p->cap_wedge_cands = 0;
    rp__strs_cleanup(&p->wedge_unread);
}

/* What the store's claim asks core to decide on (claim_wedge_restart). */
typedef struct rp__restart_ask {
    const rp__pass *p;
    const rp__wedge_cand *c;
    const char *const *names;
    size_t n;
} rp__restart_ask;

static rp_status rp_decide(void *arg, const rp_time_ms *restarts, size_t n, bool looped,
                           rp_wedge_restart_choice *choice, rp_verdict *v) {
    const rp__restart_ask *a = arg;
    const rp_thresholds *t = &a->p->opt->thresholds;
    rp_wedge_restarts h;
    rp_wedge_restarts_from(restarts, n, looped, a->p->now, t->wedge_restart_window_seconds, &h);
    *choice = rp_wedge_restart_decide(&h, t, a->p->now);
    if (*choice == RP_WEDGE_RESTART_NONE) return RP_OK;
    rp_verdict_cleanup(v);
    return rp_judge_wedge_restart(a->c->vhost, a->c->name, *choice, &h, t, a->names, a->n, v);
}

/* Copies of the lent names (NULL entries dropped). */
static rp_status rp_copy_names(const rp_name_list *l, char ***out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (l->n == 0) return RP_OK;
    char **v = calloc(l->n, sizeof *v);
    if (v == NULL) return RP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->names == NULL || l->names[i] == NULL) continue;
        v[k] = strdup(l->names[i]);
        if (v[k] == NULL) {
            for (size_t j = 0; j < k; j++) free(v[j]);
            free(v);
            return RP_ERR_NOMEM;
        }
        k++;
    }
    *out = v;
    *n = k;
    return RP_OK;
}

/* The breaker on one queue surfaced WEDGED on this check. */
static rp_status rp_breaker(rp__pass *p, const rp__wedge_cand *c) {
    const rp_broker_port *b = &p->ports->broker;
    const rp_store_port *s = &p->ports->store;
    const rp_thresholds *t = &p->opt->thresholds;
    if (!t->wedge_restart || p->opt->dry_run) return RP_OK;
    if (b->consumer_connections == NULL || b->close_connection == NULL ||
        s->claim_wedge_restart == NULL)
        return rp__pass_note(p, "queue %s on vhost %s: wedged, but this pass cannot restart "
                                "its consumers (reap.wedge_restart)",
                             c->name, c->vhost);
    rp_name_list lent = {0};
    rp_status cst = b->consumer_connections(b->self, c->vhost, c->name, &lent);
    if (cst != RP_OK)
        return rp__pass_note(p, "queue %s on vhost %s: wedged, but its consumers' connections "
                                "could not be read (%s); not restarted",
                             c->name, c->vhost, rp_status_string(cst));
    char **names = NULL;
    size_t n = 0;
    rp_status st = rp_copy_names(&lent, &names, &n);
    if (st != RP_OK) return st;
    if (n == 0) {
        free(names);
        return rp__pass_note(p, "queue %s on vhost %s: wedged, but no consumer connection was "
                                "found to close; not restarted",
                             c->name, c->vhost);
    }
    rp__restart_ask ask = {p, c, (const char *const *)names, n};
    rp_wedge_restart_choice choice = RP_WEDGE_RESTART_NONE;
    rp_verdict v;
    rp_verdict_init(&v);
    rp_event_ref ev = {0};
    rp_time_ms prune = rp__sat_sub(p->now, rp__s_to_ms(t->wedge_restart_window_seconds));
    rp_status kst = s->claim_wedge_restart(s->self, c->subject, p->now, prune, rp_decide, &ask,
                                           &choice, &v, &ev);
    if (kst == RP_ERR_NOMEM) {
        st = kst;
    } else if (kst != RP_OK) {
        st = rp__pass_note(p, "queue %s on vhost %s: wedged, but its restart could not be "
                              "claimed in the store (%s); not restarted",
                           c->name, c->vhost, rp_status_string(kst));
    } else if (choice != RP_WEDGE_RESTART_NONE) {
        /* Committed with its ledger event: published and reported. */
        st = rp_publish_event(p->ports, &ev, &v, p->report);
        if (st == RP_OK) st = rp_report_add_verdict(p->report, &v);
    }
    if (st == RP_OK && kst == RP_OK && choice == RP_WEDGE_RESTART_GO) {
        char reason[300];
        snprintf(reason, sizeof reason,
                 "reaper: queue %.100s wedged (ready messages, no ack for %" PRId64
                 " s); reconnect and take work again",
                 c->name, t->wedged_seconds);
        for (size_t i = 0; i < n && st == RP_OK; i++) {
            rp_status dst = b->close_connection(b->self, names[i], reason);
            if (dst != RP_OK && dst != RP_ERR_NOT_FOUND)
                st = rp__pass_note(p, "queue %s on vhost %s: a consumer connection could not be "
                                      "closed (%s)",
                                   c->name, c->vhost, rp_status_string(dst));
        }
    }
    rp_verdict_cleanup(&v);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

rp_status rp__pass_wedged_broker(rp__pass *p) {
    const rp_store_port *s = &p->ports->store;
    if (p->targeted || s->count_wedge_checks == NULL || s->sample_queue_counters == NULL)
        return RP_OK;
    /* A listing not read whole counts nothing: the queues it missed would
     * have their counts reset. */
    if (!p->broker_whole) return RP_OK;
    size_t n = p->n_wedge_cands;
    const char **subjects = n ? calloc(n, sizeof *subjects) : NULL;
    int64_t *counts = n ? calloc(n, sizeof *counts) : NULL;
    rp_status st = RP_OK;
    if (n && (subjects == NULL || counts == NULL)) st = RP_ERR_NOMEM;
    for (size_t i = 0; i < n && st == RP_OK; i++) subjects[i] = p->wedge_cands[i].subject;
    if (st == RP_OK) {
        rp_status cst = s->count_wedge_checks(s->self, "queue:", subjects, n, p->opt->dry_run,
                                              counts);
        if (cst != RP_OK)
            st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "counting wedged checks of queues",
                                     cst);
        else
            p->wedged_broker_read = true;
    }
    for (size_t i = 0; p->wedged_broker_read && i < n && st == RP_OK; i++) {
        const rp__wedge_cand *c = &p->wedge_cands[i];
        rp_verdict v;
        st = rp_judge_wedged_queue(&c->q, &c->r, &p->opt->thresholds, p->now, counts[i], &v);
        if (st != RP_OK || v.condition == RP_COND_NONE) {
            rp_verdict_cleanup(&v);
            continue;
        }
        st = rp__pass_surface(p, &v);
        if (st == RP_OK) st = rp_breaker(p, c);
    }
    free(subjects);
    free(counts);
    return st;
}
