/* The control op stats (control_stats.h). */
#include "control_stats.h"

#include <stdio.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_stats.h"

void rp_ctl_stats_init(rp_ctl_stats *s) {
    memset(s, 0, sizeof *s);
    rp_stats_init(&s->stats);
}

void rp_ctl_stats_cleanup(rp_ctl_stats *s) { rp_stats_cleanup(&s->stats); }

void rp_ctl_stats_run(rp_pass_runner *r, rp_time_ms now, rp_ctl_stats *s) {
    rp_pass_options opt;
    rp_pass_runner_options(r->cfg, &opt);
    rp_stats_scope scope = {
        .owned_queue_pattern = opt.owned_queue_pattern,
        .dead_letter_queue_pattern = opt.dead_letter_queue_pattern,
        .own_queues = {opt.own_queues[0], opt.own_queues[1]},
        .window_seconds = opt.thresholds.divergence_window_seconds,
    };
    rp_stats_store_port store;
    rp_pg_stats_port(r->store, &store);
    /* No broker half attached: core says so in the reply's broker_note. */
    const rp_broker_port *broker = r->broker != NULL ? &r->ports.broker : NULL;
    s->st = rp_stats_collect(&store, broker, &scope, now, &s->stats);
}

rp_status rp_ctl_stats_reply(const rp_ctl_stats *s, const char *user, rp_encoding enc,
                             rp_proto_buf *buf, rp_status *est, char *msg, size_t n) {
    if (s->st != RP_OK) {
        snprintf(msg, n, "%s", rp_stats_refusal(s->st));
        return s->st == RP_ERR_NOMEM ? RP_ERR_INTERNAL : s->st;
    }
    char queues[24], kinds[24];
    snprintf(queues, sizeof queues, "%zu", s->stats.n_queues);
    snprintf(kinds, sizeof kinds, "%zu", s->stats.n_kinds);
    RP_INFO("stats read", "queues", queues, "kinds", kinds, "broker",
            s->stats.broker_read ? "read" : "not read", "user", user, NULL);
    *est = rp_proto_encode_stats_reply(&s->stats, enc, buf);
    return RP_OK;
}
