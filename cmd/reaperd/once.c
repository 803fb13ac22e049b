#include "once.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_runner.h"
#include "rp_amqp_blocking_publisher.h"
#include "rp_mgmt_loop.h"
#include "report_text.h"
#include "rp_log.h"
#include "rp_proto.h"

static volatile sig_atomic_t rp_once_stop;

static void rp_once_on_signal(int sig) {
    RP_UNUSED(sig);
    rp_once_stop = 1;
}

static bool rp_once_should_stop(void *arg) {
    RP_UNUSED(arg);
    return rp_once_stop != 0;
}

/* How long the end of the pass waits for the feed's confirms (and its one
 * retry) before it reports the rest as not published. */
#define RP_ONCE_FEED_FLUSH_MS 10000

/* The events feed of --once: a blocking publisher with confirms (there is
 * no loop here), connected on the first committed event. NULL when the
 * broker URL does not parse (the pass runs all the same; the ledger is the
 * record, and a note says the feed is off). */
static rp_amqp_blocking_publisher *rp_once_feed(const rp_config *cfg, const char *password,
                                                const char **err) {
    rp_amqp_params ap = {
        .url = cfg->broker.url,
        .password = password,
        .heartbeat_seconds = 0,
        .connect_timeout_ms = 5000,
        .connection_name = "reaperd --once",
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
    rp_encoding enc =
        cfg->broker.events_format == RP_EVENTS_FORMAT_JSON ? RP_ENC_JSON : RP_ENC_MSGPACK;
    return rp_amqp_blocking_publisher_new(&ap, cfg->broker.events_exchange, enc, err);
}

/* After the pass: waits for the feed's confirms, retries once what is
 * missing, and says in the report (a note) and the log (a warning) how
 * many committed events the exchange did not get. Never changes the exit
 * code: the ledger has every one of them. */
static rp_status rp_once_feed_finish(rp_amqp_blocking_publisher *feed, const rp_config *cfg,
                                     rp_report *report) {
    rp_amqp_feed_stats fs;
    (void)rp_amqp_blocking_publisher_flush(feed, RP_ONCE_FEED_FLUSH_MS, &fs);
    char n[24], ok[24], again[24];
    snprintf(n, sizeof n, "%zu", fs.events);
    snprintf(ok, sizeof ok, "%zu", fs.confirmed);
    snprintf(again, sizeof again, "%zu", fs.retried);
    if (fs.failed == 0) {
        if (fs.retried > 0)
            RP_INFO("ledger events published to the events exchange", "exchange",
                    cfg->broker.events_exchange, "events", n, "confirmed", ok, "retried", again,
                    "first_failure", fs.why, NULL);
        else if (fs.events > 0)
            RP_INFO("ledger events published to the events exchange", "exchange",
                    cfg->broker.events_exchange, "events", n, "confirmed", ok, "retried", again,
                    NULL);
        return RP_OK;
    }
    char failed[24], range[64], note[640];
    snprintf(failed, sizeof failed, "%zu", fs.failed);
    snprintf(range, sizeof range, "%" PRId64 "..%" PRId64, fs.first_failed_seq,
             fs.last_failed_seq);
    RP_WARN("ledger events committed but not published to the events exchange (the ledger "
            "has them)",
            "exchange", cfg->broker.events_exchange, "events", n, "not_published", failed,
            "seq", range, "reason", fs.why, NULL);
    snprintf(note, sizeof note,
             "events feed: %zu of %zu committed ledger events were not published to the events "
             "exchange %s (%s); the ledger has them (seq %s)",
             fs.failed, fs.events, cfg->broker.events_exchange, fs.why, range);
    return rp_report_add_note(report, note);
}

static void rp_once_progress(void *arg, const char *phase, size_t done) {
    RP_UNUSED(arg);
    char n[24];
    snprintf(n, sizeof n, "%zu", done);
    RP_INFO("pass progress", "phase", phase, "rows", n, NULL);
}

int rp_once_run(const rp_config *cfg, const char *password, const char *project, bool dry_run,
                bool json) {
    /* SIGINT/SIGTERM end the pass between rows, with what was done reported. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rp_once_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rp_pass_runner runner;
    if (rp_pass_runner_init(&runner, cfg) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        return 1;
    }
    /* The broker half over the management API, on a loop thread of its
     * own (this command has no loop). */
    rp_broker_http_keep keep;
    rp_mgmt_http_params hp;
    rp_mgmt_loop *mloop = NULL;
    const char *herr = NULL;
    if (rp_broker_http_params(cfg, password, &keep, &hp) != RP_OK ||
        (mloop = rp_mgmt_loop_new(&hp, &herr)) == NULL ||
        rp_pass_runner_attach_broker(&runner, rp_mgmt_loop_bridge(mloop), &keep) != RP_OK ||
        rp_pass_runner_attach_peek(&runner, password) != RP_OK) {
        RP_ERROR("cannot use the management API", "key", "broker.management_url", "reason",
                 herr ? herr : "out of memory", NULL);
        rp_mgmt_loop_free(mloop);
        rp_pass_runner_cleanup(&runner);
        return 1;
    }
    /* The events feed, for what the pass commits. A dry run commits
     * nothing and publishes nothing: it gets no publisher at all. */
    rp_amqp_blocking_publisher *feed = NULL;
    const char *ferr = NULL;
    if (!dry_run) {
        feed = rp_once_feed(cfg, password, &ferr);
        if (feed != NULL) {
            rp_publisher_port port;
            rp_amqp_blocking_publisher_port(feed, &port);
            rp_pass_runner_set_publisher(&runner, &port);
        } else {
            RP_WARN("the events feed is off for this pass", "key", "broker.url", "reason", ferr,
                    NULL);
        }
    }
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, dry_run);
    req.progress = rp_once_progress;
    req.should_stop = rp_once_should_stop;
    if (project != NULL && (req.project = strdup(project)) == NULL) {
        RP_ERROR("out of memory", NULL);
        rp_pass_request_cleanup(&req);
        rp_pass_runner_cleanup(&runner);
        rp_amqp_blocking_publisher_free(feed);
        rp_mgmt_loop_free(mloop);
        return 1;
    }
    rp_pass_runner_run(&runner, &req);
    if (feed != NULL && rp_once_feed_finish(feed, cfg, &req.report) != RP_OK)
        req.status = RP_ERR_NOMEM;
    int rc = (req.status == RP_OK && req.report.ok) ? 0 : 1;
    if (req.status != RP_OK)
        RP_ERROR("the pass stopped early", "status", rp_status_string(req.status), NULL);
    rp_report_log(&req.report, "once", req.duration_ms);
    if (json) {
        char *text = NULL;
        if (rp_proto_report_json_text(&req.report, false, &text) != RP_OK) {
            RP_ERROR("cannot encode the report", NULL);
            rc = 1;
        } else {
            fputs(text, stdout);
            fputc('\n', stdout);
            free(text);
        }
    } else {
        rp_report_print(stdout, &req.report, req.started_at, req.duration_ms);
    }
    if (fflush(stdout) != 0) rc = 1;
    rp_pass_request_cleanup(&req);
    rp_pass_runner_cleanup(&runner);
    rp_amqp_blocking_publisher_free(feed);
    rp_mgmt_loop_free(mloop);
    return rc;
}
