/* The broker-event part's backends from the daemon's pass runner
 * (runner_port.h). */
#include "runner_port.h"

#include <stdlib.h>

#include "pass_runner.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_policy.h"
#include "rp_pg_conn.h"

struct rp_runner_set {
    bool with_store;
    rp_pass_runner runner;  /* with_store: the store session and its client */
    rp_mgmt_broker *broker; /* without: the client alone */
    rp_ports ports;         /* without: the broker port alone */
};

static rp_runner_set *rp_rs_open(void *self, const rp_config *cfg, bool with_store,
                                 const rp_publisher_port *publisher) {
    rp_runner_backends *b = self;
    if (b->mgmt == NULL) return NULL;
    rp_runner_set *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->with_store = with_store;
    if (!with_store) {
        s->broker = rp_mgmt_broker_new(b->mgmt, NULL);
        if (s->broker == NULL) {
            free(s);
            return NULL;
        }
        rp_mgmt_broker_port(s->broker, &s->ports.broker);
        return s;
    }
    if (rp_pass_runner_init(&s->runner, cfg) != RP_OK) {
        free(s);
        return NULL;
    }
    if (rp_pass_runner_attach_broker(&s->runner, b->mgmt, b->keep) != RP_OK) {
        rp_pass_runner_cleanup(&s->runner);
        free(s);
        return NULL;
    }
    /* As given, not wrapped (the event checks answer no gate). */
    if (publisher != NULL) s->runner.ports.publisher = *publisher;
    return s;
}

static const rp_ports *rp_rs_ports(void *self, rp_runner_set *s) {
    (void)self;
    return s->with_store ? &s->runner.ports : &s->ports;
}

static rp_status rp_rs_connect(void *self, rp_runner_set *s, char *err, size_t n) {
    (void)self;
    if (!s->with_store) return RP_ERR_INVALID;
    return rp_pg_conn_ensure(s->runner.conn, err, n);
}

static void rp_rs_pass_options(void *self, const rp_config *cfg, rp_pass_options *opt) {
    (void)self;
    rp_pass_runner_options(cfg, opt);
}

static rp_mgmt_broker *rp_rs_broker(rp_runner_set *s) {
    return s->with_store ? s->runner.broker : s->broker;
}

static rp_status rp_rs_list(void *self, rp_runner_set *s, size_t page, rp_queue_page *out) {
    (void)self;
    return rp_mgmt_broker_list(rp_rs_broker(s), page, "name,vhost,type,consumers", out);
}

static const char *rp_rs_last_error(void *self, rp_runner_set *s) {
    (void)self;
    return rp_mgmt_broker_last_error(rp_rs_broker(s));
}

static rp_status rp_rs_reconcile(void *self, rp_runner_set *s, const rp_config *cfg,
                                 rp_report *report, rp_pass_policy_stats *stats) {
    rp_runner_backends *b = self;
    rp_mgmt_policy_options popt;
    rp_broker_policy_options(cfg, b->keep, false, &popt);
    return rp_mgmt_policy_reconcile_core(rp_rs_broker(s), &popt, report, stats);
}

static void rp_rs_close(void *self, rp_runner_set *s) {
    (void)self;
    if (s == NULL) return;
    if (s->with_store) rp_pass_runner_cleanup(&s->runner);
    else rp_mgmt_broker_free(s->broker);
    free(s);
}

void rp_runner_port_fill(rp_runner_backends *b, rp_runner_port *out) {
    *out = (rp_runner_port){
        .self = b,
        .open = rp_rs_open,
        .ports = rp_rs_ports,
        .connect = rp_rs_connect,
        .pass_options = rp_rs_pass_options,
        .list_queues = rp_rs_list,
        .last_error = rp_rs_last_error,
        .reconcile = rp_rs_reconcile,
        .close = rp_rs_close,
    };
}
