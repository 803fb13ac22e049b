#include "once.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_runner.h"
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
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, dry_run);
    req.progress = rp_once_progress;
    req.should_stop = rp_once_should_stop;
    if (project != NULL && (req.project = strdup(project)) == NULL) {
        RP_ERROR("out of memory", NULL);
        rp_pass_request_cleanup(&req);
        rp_pass_runner_cleanup(&runner);
        rp_mgmt_loop_free(mloop);
        return 1;
    }
    rp_pass_runner_run(&runner, &req);
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
    rp_mgmt_loop_free(mloop);
    return rc;
}
