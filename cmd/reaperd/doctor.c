/* reaperd --doctor and the doctor probes (doctor.h). */
#include "doctor.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "worker.h"

/* Each probe's own bound: a doctor answers in seconds, not a pass's time. */
#define RP_DOCTOR_TIMEOUT_MS 5000

void rp_doctor_probe_all(const rp_config *cfg, const char *password, rp_mgmt_bridge *bridge,
                         const char *mgmt_why, rp_doctor_probes *p) {
    rp_doctor_facts *f = &p->facts;
    rp_doctor_facts_init(f);
    f->broker_url = cfg->broker.url;
    f->management_url = cfg->broker.management_url;
    f->dsn = cfg->store.dsn;
    f->schema = cfg->store.schema;
    f->tap_queue = cfg->broker.tap_queue;
    f->consumer_timeout_seconds = cfg->reap.consumer_timeout_seconds;
    rp_mgmt_http_params hp;
    bool url_ok = rp_broker_http_params(cfg, password, &p->keep, &hp) == RP_OK;
    if (url_ok) {
        f->user = p->keep.user;
        f->vhost = p->keep.vhost;
    }

    /* AMQP. */
    if (url_ok) {
        rp_amqp_open_opts o = {
            .url = cfg->broker.url,
            .password = password,
            .ca_file = cfg->broker.tls.ca_file,
            .cert_file = cfg->broker.tls.cert_file,
            .key_file = cfg->broker.tls.key_file,
            .verify_peer = cfg->broker.tls.verify_peer,
            .connect_timeout_ms = RP_DOCTOR_TIMEOUT_MS,
            .rpc_timeout_ms = RP_DOCTOR_TIMEOUT_MS,
            .connection_name = "reaper doctor",
        };
        f->amqp = rp_amqp_doctor_probe(&o, p->amqp_why, sizeof p->amqp_why);
        f->amqp_why = p->amqp_why;
    }

    /* The management API. */
    if (bridge == NULL || !url_ok) {
        snprintf(p->mgmt_why, sizeof p->mgmt_why, "%s",
                 !url_ok ? "broker.url does not parse" : mgmt_why ? mgmt_why : "no client");
        f->mgmt_why = p->mgmt_why;
    } else {
        rp_mgmt_broker_options bo = {.request_timeout_ms = RP_DOCTOR_TIMEOUT_MS};
        rp_mgmt_broker *b = rp_mgmt_broker_new(bridge, &bo);
        if (b == NULL) {
            snprintf(p->mgmt_why, sizeof p->mgmt_why, "out of memory");
            f->mgmt_why = p->mgmt_why;
        } else {
            const char *skip[] = {cfg->broker.control_queue};
            rp_mgmt_dlx_options o = {
                .vhost = p->keep.vhost,
                .tap_queue = cfg->broker.tap_queue,
                .owned_pattern = cfg->reap.owned_queue_pattern.code,
                .skip = skip,
                .n_skip = 1,
                .dry_run = true,
            };
            rp_mgmt_doctor_probe(b, &o, &p->mgmt, f);
            rp_mgmt_broker_free(b);
        }
    }

    /* The store. */
    rp_pg_session s = {
        .schema = cfg->store.schema,
        .statement_timeout_ms = RP_DOCTOR_TIMEOUT_MS,
        .lock_timeout_ms = (int)cfg->store.lock_timeout_ms,
        .idle_in_transaction_timeout_ms = (int)cfg->store.idle_in_transaction_timeout_ms,
        .tcp_user_timeout_ms = (int)cfg->store.tcp_user_timeout_ms,
    };
    rp_pg_doctor_probe(cfg->store.dsn, RP_DOCTOR_TIMEOUT_MS / 1000, &s, &p->pg, f);
}

/* ---- reaperd --doctor ---------------------------------------------------------- */

typedef struct rp_doctor_cli_run {
    struct event_base *base;
    const rp_config *cfg;
    const char *password;
    rp_mgmt_bridge *bridge;
    const char *mgmt_why;
    rp_doctor_probes probes;
} rp_doctor_cli_run;

static void rp_doctor_cli_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_doctor_cli_run *r = job;
    rp_doctor_probe_all(r->cfg, r->password, r->bridge, r->mgmt_why, &r->probes);
}

static void rp_doctor_cli_done(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    event_base_loopbreak(((rp_doctor_cli_run *)job)->base);
}

int rp_doctor_cli(const rp_config *cfg, const char *password, bool json) {
    signal(SIGPIPE, SIG_IGN);
    rp_doctor_cli_run *r = calloc(1, sizeof *r);
    if (r == NULL || evthread_use_pthreads() != 0 || (r->base = event_base_new()) == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        free(r);
        return 1;
    }
    r->cfg = cfg;
    r->password = password;
    /* The management API's client on this loop, for the probe thread. */
    rp_mgmt_http_params hp;
    rp_broker_http_keep keep;
    const char *herr = NULL;
    if (rp_broker_http_params(cfg, password, &keep, &hp) == RP_OK) {
        hp.connect_timeout_ms = RP_DOCTOR_TIMEOUT_MS;
        rp_mgmt_http *http = rp_mgmt_http_new(r->base, &hp, &herr);
        if (http != NULL) r->bridge = rp_mgmt_bridge_new(r->base, http);
        else r->mgmt_why = herr;
    }
    int rc = 1;
    rp_worker *w = rp_worker_new(r->base, "doctor", NULL, NULL, 0);
    if (w == NULL || rp_worker_submit(w, rp_doctor_cli_work, rp_doctor_cli_done, r) != RP_OK) {
        RP_ERROR("cannot start the probe thread", NULL);
        if (w) rp_worker_free(w);
        goto out;
    }
    event_base_loop(r->base, EVLOOP_NO_EXIT_ON_EMPTY);
    if (r->bridge) rp_mgmt_bridge_close(r->bridge);
    rp_worker_free(w);

    rp_doctor_report rep;
    char *text = NULL;
    if (rp_doctor_judge(&r->probes.facts, &rep) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        goto out;
    }
    rp_status st = json ? rp_doctor_json(&rep, &text) : rp_doctor_text(&rep, &text);
    if (st != RP_OK) {
        RP_ERROR("out of memory", NULL);
        rp_doctor_report_cleanup(&rep);
        goto out;
    }
    fputs(text, stdout);
    if (json) fputc('\n', stdout);
    free(text);
    rc = rp_doctor_exit_code(&rep);
    if (fflush(stdout) != 0) rc = 1;
    rp_doctor_report_cleanup(&rep);
out:
    rp_mgmt_bridge_free(r->bridge);
    event_base_free(r->base);
    free(r);
    return rc;
}
