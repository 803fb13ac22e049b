/* The port fillers that compose more than one backend (ports.h). */
#include "ports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_control.h"
#include "rp_amqp_open.h"
#include "rp_amqp_restore.h"
#include "rp_pg_jobs.h"
#include "rp_pg_store.h"

/* ---- the doctor's probes: AMQP, the management API, PostgreSQL --------------- */

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

/* ---- the control part's store port ------------------------------------------ */

static const rp_config *rp_css_config(void *self) {
    return ((rp_control_store_src *)self)->runner->cfg;
}

static rp_status rp_css_ready(void *self) {
    char err[256];
    return rp_pg_conn_ensure(((rp_control_store_src *)self)->runner->conn, err, sizeof err) ==
                   RP_OK
               ? RP_OK
               : RP_ERR_UNAVAILABLE;
}

static void rp_css_reap(void *self, rp_pass_request *req) {
    rp_pass_runner_run(((rp_control_store_src *)self)->runner, req);
}

static const rp_gate_port *rp_css_gates(void *self) {
    return &((rp_control_store_src *)self)->runner->ports.gates;
}

static void rp_css_set_claim_seconds(void *self, int64_t seconds) {
    rp_pg_store_set_claim_seconds(((rp_control_store_src *)self)->runner->store, seconds);
}

static void rp_css_gate_look(void *self, rp_gate_look_port *out) {
    rp_pg_gate_look_port(((rp_control_store_src *)self)->runner->store, out);
}

static void rp_css_jobs(void *self, rp_jobs_port *out) {
    rp_pg_jobs_port(((rp_control_store_src *)self)->runner->store, out);
}

static const char *rp_css_claimer(void *self) {
    return rp_pg_store_claimer(((rp_control_store_src *)self)->runner->store);
}

static bool rp_css_kept_refusal(void *self, const char *props_json, char *why, size_t n) {
    RP_UNUSED(self);
    return rp_amqp_restore_refusal(props_json, why, n);
}

static bool rp_css_vhost_is_ours(void *self, const rp_config *cfg, const char *vhost) {
    RP_UNUSED(self);
    return rp_amqp_url_vhost_is(cfg->broker.url, vhost);
}

struct rp_control_doctor {
    rp_doctor_probes probes;
};

static rp_control_doctor *rp_css_doctor_new(void *self) {
    RP_UNUSED(self);
    return calloc(1, sizeof(rp_control_doctor));
}

static void rp_css_doctor_free(void *self, rp_control_doctor *d) {
    RP_UNUSED(self);
    free(d);
}

static void rp_css_doctor_run(void *self, rp_control_doctor *d, const rp_config *cfg) {
    rp_control_store_src *src = self;
    rp_mgmt_broker *b = src->runner->broker;
    rp_doctor_probe_all(cfg, *src->broker_password, b != NULL ? rp_mgmt_broker_bridge(b) : NULL,
                        "the daemon has no management API client", &d->probes);
}

static const rp_doctor_facts *rp_css_doctor_facts(void *self, const rp_control_doctor *d) {
    RP_UNUSED(self);
    return &d->probes.facts;
}

void rp_control_store_fill(rp_control_store_src *src, rp_control_store_port *out) {
    *out = (rp_control_store_port){
        .self = src,
        .config = rp_css_config,
        .ready = rp_css_ready,
        .reap = rp_css_reap,
        .gates = rp_css_gates,
        .set_claim_seconds = rp_css_set_claim_seconds,
        .gate_look = rp_css_gate_look,
        .jobs = rp_css_jobs,
        .claimer = rp_css_claimer,
        .kept_refusal = rp_css_kept_refusal,
        .vhost_is_ours = rp_css_vhost_is_ours,
        .doctor_new = rp_css_doctor_new,
        .doctor_free = rp_css_doctor_free,
        .doctor_run = rp_css_doctor_run,
        .doctor_facts = rp_css_doctor_facts,
    };
}
