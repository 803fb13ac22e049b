/* The control op stats (proto/SCHEMA.md section 4; core/rp_stats.h): on
 * the store thread, core collects the rows (rp_stats_collect) through the
 * store port's stats readers (the job table, the queues' samples and the
 * open sightings; the broker port's queue listing when reaperd has a
 * management API client) with the configuration the runner holds; then,
 * on the loop, the count logged and the reply, or the refusal. */
#include <stdio.h>
#include <stdlib.h>

#include "rp_ctl_internal.h"
#include "rp_log.h"
#include "rp_pass_setup.h"
#include "rp_stats.h"

typedef struct rp_ctl_stats {
    rp_status st; /* the collect's status */
    rp_stats stats;
} rp_ctl_stats;

static void rp_ctl_stats_free(void *state) {
    rp_ctl_stats *s = state;
    if (s == NULL) return;
    rp_stats_cleanup(&s->stats);
    free(s);
}

static rp_status rp_ctl_stats_start(rp_ctl *c) {
    rp_ctl_stats *s = calloc(1, sizeof *s);
    if (s == NULL) {
        rp_ctl_error(c, "stats", RP_ERR_INTERNAL, "out of memory");
        return RP_OK;
    }
    rp_stats_init(&s->stats);
    c->state = s;
    c->state_free = rp_ctl_stats_free;
    return rp_ctl_store_job(c);
}

static void rp_ctl_stats_work(rp_ctl *c) {
    if (!rp_ctl_store_ready(c)) return;
    rp_ctl_stats *s = c->state;
    const rp_control_store_port *p = &c->k->deps.store;
    rp_pass_options opt;
    rp_pass_options_from_config(p->config(p->self), &opt);
    rp_stats_scope scope = {
        .owned_queue_pattern = opt.owned_queue_pattern,
        .dead_letter_queue_pattern = opt.dead_letter_queue_pattern,
        .own_queues = {opt.own_queues[0], opt.own_queues[1]},
        .window_seconds = opt.thresholds.divergence_window_seconds,
    };
    rp_control_stats_ports sp;
    p->stats(p->self, &sp);
    /* No broker port: core says so in the reply's broker_note. */
    s->st = rp_stats_collect(&sp.store, sp.broker, &scope, sp.clock.now_ms(sp.clock.self),
                             &s->stats);
    c->st = s->st;
}

static void rp_ctl_stats_done(rp_ctl *c) {
    rp_ctl_stats *s = c->state;
    if (c->st != RP_OK) {
        /* the store could not be reached, or the collect failed */
        rp_ctl_error(c, "stats", c->st == RP_ERR_NOMEM ? RP_ERR_INTERNAL : c->st,
                     rp_stats_refusal(c->st));
        return;
    }
    char queues[24], kinds[24];
    snprintf(queues, sizeof queues, "%zu", s->stats.n_queues);
    snprintf(kinds, sizeof kinds, "%zu", s->stats.n_kinds);
    RP_INFO("stats read", "queues", queues, "kinds", kinds, "broker",
            s->stats.broker_read ? "read" : "not read", "user", rp_ctl_user(c), NULL);
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_stats_reply(&s->stats, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_stats = {
    .op = RP_OP_STATS, .start = rp_ctl_stats_start, .work = rp_ctl_stats_work,
    .done = rp_ctl_stats_done};
