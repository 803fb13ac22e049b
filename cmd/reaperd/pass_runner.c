#include "pass_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_text.h"
#include "rp_log.h"
#include "rp_pg_backfill.h"
#include "rp_pass_setup.h"
#include "rp_clock.h"

void rp_pass_runner_options(const rp_config *cfg, rp_pass_options *opt) {
    rp_pass_options_from_config(cfg, opt);
    opt->on_verdict = rp_verdict_log;
}

rp_status rp_pass_runner_init(rp_pass_runner *r, const rp_config *cfg) {
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->conn = rp_pg_conn_from_config(cfg, 5);
    if (r->conn == NULL) return RP_ERR_NOMEM;
    r->store = rp_pg_store_new(r->conn, cfg->store.schema);
    if (r->store == NULL) {
        rp_pg_conn_free(r->conn);
        r->conn = NULL;
        return RP_ERR_NOMEM;
    }
    rp_pg_store_ports(r->store, &r->ports);
    return RP_OK;
}

rp_status rp_pass_runner_attach_broker(rp_pass_runner *r, rp_mgmt_bridge *bridge,
                                       const rp_broker_http_keep *keep) {
    r->broker = rp_mgmt_broker_new(bridge, NULL);
    if (r->broker == NULL) return RP_ERR_NOMEM;
    r->broker_keep = keep;
    r->stall = rp_stall_memory_new();
    if (r->stall == NULL) return RP_ERR_NOMEM;
    rp_mgmt_broker_port(r->broker, &r->ports.broker);
    return RP_OK;
}

/* What the backfill's read has to say, logged as it always was. */
static void rp_backfill_news_log(void *arg, const rp_backfill_news *b) {
    (void)arg;
    char num[24], left[24];
    snprintf(num, sizeof num, "%zu", b->n);
    snprintf(left, sizeof left, "%lld", (long long)b->behind);
    switch (b->kind) {
    case RP_BACKFILL_READ_RECORDED:
        RP_INFO("backfill: quorum dead-letter queue read once", "queue", b->queue, "vhost",
                b->vhost, "messages", num, "behind", left, NULL);
        break;
    case RP_BACKFILL_PARK_FAILED:
        RP_WARN("backfill: a park of a quorum dead-letter queue's read failed; the read is not "
                "recorded, so a later pass reads the queue again", "queue", b->queue, "vhost",
                b->vhost, "messages", num, NULL);
        break;
    case RP_BACKFILL_RECORD_FAILED:
        RP_WARN("backfill: the read of a quorum dead-letter queue could not be recorded; a later "
                "pass reads it again", "queue", b->queue, "vhost", b->vhost, NULL);
        break;
    case RP_BACKFILL_UNLOCK_FAILED:
        RP_WARN("backfill: a queue's lock could not be released (it goes with the session)",
                "queue", b->queue, "vhost", b->vhost, NULL);
        break;
    case RP_BACKFILL_READ_FAILED:
        RP_WARN("backfill: cannot read a dead-letter queue", "queue", b->queue, "vhost",
                b->vhost, "reason", b->reason ? b->reason : "", NULL);
        break;
    default: break;
    }
}

rp_status rp_pass_runner_attach_peek(rp_pass_runner *r, const char *password) {
    const rp_config *cfg = r->cfg;
    rp_amqp_params ap;
    rp_amqp_params_from_config(cfg, password, &ap);
    r->peek = rp_amqp_peek_new(&ap);
    if (r->peek == NULL) return RP_ERR_NOMEM;
    rp_amqp_peek_set_header_cap(r->peek, (size_t)cfg->broker.tap_header_cap_bytes);
    rp_backfill_read_deps d = {.broker = &r->ports.broker, .on_news = rp_backfill_news_log};
    rp_amqp_peek_port(r->peek, &d.peek);
    rp_pg_backfill_port(r->store, &d.record);
    rp_pg_dead_letter_port(r->store, &d.store);
    r->backfill = rp_backfill_read_new(&d);
    if (r->backfill == NULL) {
        rp_amqp_peek_free(r->peek);
        r->peek = NULL;
        return RP_ERR_NOMEM;
    }
    rp_backfill_read_port(r->backfill, &r->ports.dead_letters);
    return RP_OK;
}

void rp_pass_runner_set_publisher(rp_pass_runner *r, const rp_publisher_port *publisher) {
    r->ports.publisher = *publisher;
    rp_gate_feed_wrap(&r->gate_feed, &r->ports);
}

void rp_pass_runner_cleanup(rp_pass_runner *r) {
    rp_backfill_read_free(r->backfill);
    rp_amqp_peek_free(r->peek);
    rp_mgmt_broker_free(r->broker);
    rp_stall_memory_free(r->stall);
    rp_pg_store_free(r->store);
    rp_pg_conn_free(r->conn);
    memset(r, 0, sizeof *r);
}

void rp_pass_request_init(rp_pass_request *req, rp_pass_scope scope, bool dry_run) {
    memset(req, 0, sizeof *req);
    req->scope = scope;
    req->dry_run = dry_run;
    rp_report_init(&req->report, dry_run);
}

void rp_pass_request_cleanup(rp_pass_request *req) {
    free(req->project);
    rp_report_cleanup(&req->report);
    memset(req, 0, sizeof *req);
}

void rp_pass_runner_run(rp_pass_runner *r, rp_pass_request *req) {
    const rp_config *cfg = r->cfg;
    int64_t t0 = rp_clock_mono_ms();
    rp_report_cleanup(&req->report);
    req->deadline_known = false;
    req->open_sightings = -1;
    char err[256] = "";
    if (rp_pg_conn_ensure(r->conn, err, sizeof err) != RP_OK) {
        /* The pass cannot read the job table at all: say so in the report
         * the way a pass would, so every caller handles one shape. */
        req->started_at = rp_clock_wall_ms();
        req->status = rp_pass_report_unreachable(&req->report, req->dry_run, err);
        req->duration_ms = rp_clock_mono_ms() - t0;
        return;
    }
    rp_pass_options opt;
    rp_pass_runner_options(cfg, &opt);
    opt.scope = req->scope;
    opt.dry_run = req->dry_run;
    opt.project = req->project;
    opt.progress = req->progress;
    opt.progress_arg = req->progress_arg;
    opt.should_stop = req->should_stop;
    opt.stop_arg = req->stop_arg;
    opt.stall_memory = r->stall;
    req->started_at = r->ports.clock.now_ms(r->ports.clock.self);
    req->clock_offset_ms = rp_clock_wall_ms() - req->started_at;
    if (r->backfill) rp_backfill_read_pass_begin(r->backfill, req->dry_run);
    req->status = rp_pass_run(&r->ports, &opt, &req->report);
    if (r->backfill) rp_backfill_read_pass_end(r->backfill);
    /* Policies (CONTRACT section 8): with every full pass over the broker.
     * A dry run reads them and writes nothing. */
    if (req->status == RP_OK && r->broker != NULL && req->scope == RP_PASS_FULL &&
        req->project == NULL) {
        rp_mgmt_policy_options popt;
        rp_broker_policy_options(cfg, r->broker_keep, req->dry_run, &popt);
        rp_mgmt_policy_stats stats;
        if (rp_mgmt_policy_reconcile(r->broker, &popt, &req->report, &stats) == RP_ERR_NOMEM)
            req->status = RP_ERR_NOMEM;
    }
    req->duration_ms = rp_clock_mono_ms() - t0;
    /* Stopping (SIGTERM): what follows serves the next pass; skip it. */
    if (req->should_stop && req->should_stop(req->stop_arg)) return;
    rp_sighting_list open = {0};
    if (r->ports.store.list_open_sightings(r->ports.store.self, &open) == RP_OK) {
        req->open_sightings = (int64_t)open.n;
        rp_sightings_by_condition(&open, req->open_by_condition);
    }
    if (r->ports.store.next_lease_deadline &&
        r->ports.store.next_lease_deadline(r->ports.store.self, cfg->reap.lease_grace_seconds,
                                           &req->deadline_at, &req->deadline_known) != RP_OK)
        req->deadline_known = false;
}
