/* The port fillers that compose more than one backend (ports.h says what
 * each owns and on which thread it runs). */
#include "ports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_text.h"
#include "rp_amqp_control.h"
#include "rp_amqp_control_port.h"
#include "rp_amqp_doctor.h"
#include "rp_amqp_open.h"
#include "rp_amqp_replay_port.h"
#include "rp_amqp_tap_port.h"
#include "rp_clock.h"
#include "rp_control.h"
#include "rp_log.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_dlx.h"
#include "rp_pass_sequence.h"
#include "rp_pass_setup.h"
#include "rp_pg_backfill.h"
#include "rp_pg_conn.h"
#include "rp_pg_control_port.h"
#include "rp_pg_park_batch.h"
#include "rp_pg_replay.h"
#include "rp_pg_stats.h"
#include "rp_pg_store.h"
#include "rp_sweep_vhosts.h"

/* ==== the pass runner: the store thread's PostgreSQL, management API and peek ===== */

/* The backfill's read over a peek of its own (rp_pass_runner_open). */
static rp_status rp_pass_runner_peek(rp_pass_runner *r, const char *password) {
    rp_amqp_params ap;
    rp_amqp_params_from_config(r->cfg, password, &ap);
    if ((r->peek = rp_amqp_peek_new(&ap)) == NULL) return RP_ERR_NOMEM;
    rp_amqp_peek_set_header_cap(r->peek, (size_t)r->cfg->broker.tap_header_cap_bytes);
    rp_backfill_read_deps d = {.broker = &r->ports.broker, .on_news = rp_backfill_news_log};
    rp_amqp_peek_port(r->peek, &d.peek);
    rp_pg_backfill_port(r->store, &d.record);
    rp_pg_dead_letter_port(r->store, &d.store);
    if ((r->backfill = rp_backfill_read_new(&d)) == NULL) return RP_ERR_NOMEM;
    rp_backfill_read_port(r->backfill, &r->ports.dead_letters);
    return RP_OK;
}

rp_status rp_pass_runner_open(rp_pass_runner *r, const rp_config *cfg, rp_mgmt_bridge *bridge,
                              const rp_broker_http_keep *keep, bool peek, const char *password) {
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->broker_keep = keep;
    if ((r->conn = rp_pg_conn_from_config(cfg, 5)) == NULL ||
        (r->store = rp_pg_store_new(r->conn, cfg->store.schema)) == NULL)
        goto fail;
    rp_pg_store_ports(r->store, &r->ports);
    if ((r->broker = rp_mgmt_broker_new(bridge, NULL)) == NULL ||
        (r->stall = rp_stall_memory_new()) == NULL)
        goto fail;
    rp_mgmt_broker_port(r->broker, &r->ports.broker);
    if (peek && rp_pass_runner_peek(r, password) != RP_OK) goto fail;
    return RP_OK;
fail:
    rp_pass_runner_cleanup(r);
    return RP_ERR_NOMEM;
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

/* The pass-run port (core/rp_pass_run_port.h) over the runner: the
 * sequence itself is app/rp_pass_sequence.c's. */
static const rp_config *rp_prp_config(void *self) { return ((rp_pass_runner *)self)->cfg; }

static rp_status rp_prp_connect(void *self, char *err, size_t n) {
    return rp_pg_conn_ensure(((rp_pass_runner *)self)->conn, err, n);
}

static const rp_ports *rp_prp_ports(void *self) { return &((rp_pass_runner *)self)->ports; }

static rp_stall_memory *rp_prp_stall(void *self) { return ((rp_pass_runner *)self)->stall; }

static rp_backfill_read *rp_prp_backfill(void *self) {
    return ((rp_pass_runner *)self)->backfill;
}

static rp_status rp_prp_reconcile(void *self, const rp_config *cfg, bool dry_run,
                                  rp_queue_listing *listing, rp_report *report) {
    rp_pass_runner *r = self;
    return rp_broker_policy_reconcile(r->broker, cfg, r->broker_keep, dry_run, listing, report);
}

static void rp_prp_set_vhosts(void *self, const char *const *vhosts, size_t n) {
    rp_mgmt_broker_set_vhosts(((rp_pass_runner *)self)->broker, vhosts, n);
}

static bool rp_prp_probe(void *self, bool check, char *detail, size_t cap) {
    return rp_pg_conn_probe(((rp_pass_runner *)self)->conn, check, detail, cap);
}

void rp_pass_runner_port(rp_pass_runner *r, rp_pass_run_port *out) {
    *out = (rp_pass_run_port){
        .self = r,
        .config = rp_prp_config,
        .connect = rp_prp_connect,
        .probe = rp_prp_probe,
        .ports = rp_prp_ports,
        .stall_memory = rp_prp_stall,
        .backfill = rp_prp_backfill,
        .reconcile = r->broker != NULL ? rp_prp_reconcile : NULL,
        .set_vhosts = r->broker != NULL ? rp_prp_set_vhosts : NULL,
    };
}

void rp_pass_runner_run(rp_pass_runner *r, rp_pass_request *req) {
    rp_pass_run_port port;
    rp_pass_runner_port(r, &port);
    rp_pass_sequence_run(&port, req);
}

/* ==== the broker events' runner port (core/rp_runner_port.h) ================== */

struct rp_runner_set {
    bool with_store;
    rp_sweep_vhosts watched; /* what the broker lists (issue 19 item 1) */
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
    if (rp_sweep_vhosts_watched(cfg, &s->watched) == RP_ERR_NOMEM) {
        free(s);
        return NULL;
    }
    if (!with_store) {
        s->broker = rp_mgmt_broker_new(b->mgmt, NULL);
        if (s->broker == NULL) {
            rp_sweep_vhosts_cleanup(&s->watched);
            free(s);
            return NULL;
        }
        rp_mgmt_broker_port(s->broker, &s->ports.broker);
        rp_mgmt_broker_set_vhosts(s->broker, (const char *const *)s->watched.names, s->watched.n);
        return s;
    }
    if (rp_pass_runner_open(&s->runner, cfg, b->mgmt, b->keep, false, NULL) != RP_OK) {
        rp_sweep_vhosts_cleanup(&s->watched);
        free(s);
        return NULL;
    }
    rp_mgmt_broker_set_vhosts(s->runner.broker, (const char *const *)s->watched.names,
                              s->watched.n);
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
    rp_pass_sequence_options(cfg, opt);
}

static rp_mgmt_broker *rp_rs_broker(rp_runner_set *s) {
    return s->with_store ? s->runner.broker : s->broker;
}

static rp_status rp_rs_list(void *self, rp_runner_set *s, size_t page, rp_queue_page *out) {
    (void)self;
    return rp_broker_list_light(rp_rs_broker(s), page, out);
}

static const char *rp_rs_last_error(void *self, rp_runner_set *s) {
    (void)self;
    return rp_mgmt_broker_last_error(rp_rs_broker(s));
}

static rp_status rp_rs_reconcile(void *self, rp_runner_set *s, const rp_config *cfg,
                                 rp_report *report, rp_pass_policy_stats *stats) {
    return rp_broker_policy_reconcile_events(rp_rs_broker(s), cfg,
                                             ((rp_runner_backends *)self)->keep, report, stats);
}

static void rp_rs_close(void *self, rp_runner_set *s) {
    (void)self;
    if (s == NULL) return;
    if (s->with_store) rp_pass_runner_cleanup(&s->runner);
    else rp_mgmt_broker_free(s->broker);
    rp_sweep_vhosts_cleanup(&s->watched);
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

/* ==== the replays' store and publish ports (core/rp_replay_port.h) ============ */

struct rp_replay_wiring {
    rp_pg_replay_src store;    /* the store port's self */
    rp_amqp_replay_port *amqp; /* the publish port's self */
    rp_replay_publish_port publish;
};

rp_replay_wiring *rp_replay_wiring_new(rp_pass_runner *runner,
                                       rp_amqp_publisher *const *publisher,
                                       const bool *broker_up, const char *broker_url) {
    rp_replay_wiring *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->store = (rp_pg_replay_src){runner->conn, runner->store, &runner->cfg, &runner->ports.gates,
                                  &runner->ports.publisher};
    w->amqp = rp_amqp_replay_port_new(publisher, broker_up, broker_url, &w->publish);
    if (w->amqp == NULL) {
        free(w);
        return NULL;
    }
    return w;
}

void rp_replay_wiring_ports(rp_replay_wiring *w, rp_replay_store_port *store,
                            rp_replay_publish_port *publish) {
    rp_pg_replay_store_port(&w->store, store);
    *publish = w->publish;
}

void rp_replay_wiring_free(rp_replay_wiring *w) {
    if (w == NULL) return;
    rp_amqp_replay_port_free(w->amqp);
    free(w);
}

/* ==== the tap's consumer, store and bindings (core/rp_tap_port.h) ============= */

struct rp_tap_ports {
    rp_amqp_tap_port *consumer;
    rp_pg_park_sessions *sessions;
    rp_mgmt_broker *bind_broker; /* NULL: no management API */
    rp_tap_bind_port bind;
};

rp_tap_ports *rp_tap_ports_new(struct event_base *base, const rp_config *const *cfg,
                               rp_mgmt_bridge *mgmt, rp_tap_deps *deps) {
    rp_tap_ports *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    rp_pg_conn *conns[RP_PG_PARK_SESSIONS];
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++) conns[k] = rp_pg_conn_from_config(*cfg, 5);
    p->sessions = rp_pg_park_sessions_new(conns, (*cfg)->store.schema);
    if (mgmt != NULL) p->bind_broker = rp_mgmt_broker_new(mgmt, NULL);
    p->consumer = rp_amqp_tap_port_new(base, cfg, RP_PG_DL_BODY_MAX, &deps->consumer);
    if (p->sessions == NULL || p->consumer == NULL || (mgmt != NULL && p->bind_broker == NULL)) {
        rp_tap_ports_free(p);
        return NULL;
    }
    rp_pg_park_sessions_tap_port(p->sessions, &deps->store);
    if (p->bind_broker != NULL) rp_mgmt_dlx_tap_bind_port(p->bind_broker, &p->bind);
    deps->bind = p->bind_broker != NULL ? &p->bind : NULL;
    return p;
}

rp_status rp_tap_ports_connect(rp_tap_ports *p, rp_tap *t, const rp_amqp_params *params) {
    rp_amqp_tap_port_params(p->consumer, params);
    rp_status st = rp_tap_connect(t);
    rp_amqp_tap_port_params(p->consumer, NULL);
    return st;
}

void rp_tap_ports_free(rp_tap_ports *p) {
    if (p == NULL) return;
    rp_amqp_tap_port_free(p->consumer);
    rp_mgmt_broker_free(p->bind_broker);
    rp_pg_park_sessions_free(p->sessions);
    free(p);
}

/* ==== the taps of broker.vhosts' other vhosts (app/rp_vhost_taps.h) ========== */

struct rp_vhost_backends {
    rp_tap_ports *tap;
    rp_amqp_replay_vhost *replays; /* its publishing session */
};

static bool rp_vtp_url_vhost_is(void *self, const char *url, const char *vhost) {
    RP_UNUSED(self);
    return rp_amqp_url_vhost_is(url, vhost);
}

static rp_vhost_backends *rp_vtp_new(void *self, struct event_base *base, rp_tap_deps *deps) {
    rp_vhost_taps_src *src = self;
    rp_vhost_backends *b = calloc(1, sizeof *b);
    if (b != NULL && (b->tap = rp_tap_ports_new(base, src->cfg, src->mgmt, deps)) == NULL) {
        free(b);
        b = NULL;
    }
    return b;
}

static rp_status rp_vtp_connect_tap(void *self, rp_vhost_backends *b, rp_tap *t,
                                    const char *vhost) {
    rp_amqp_params p = ((rp_vhost_taps_src *)self)->params;
    p.vhost = vhost;
    return rp_tap_ports_connect(b->tap, t, &p);
}

static rp_status rp_vtp_connect_replays(void *self, rp_vhost_backends *b, const char *vhost,
                                        const char **err) {
    rp_vhost_taps_src *src = self;
    return rp_amqp_replay_vhost_start(src->replays->amqp, src->base, &src->params, vhost,
                                      (*src->cfg)->broker.events_exchange, &b->replays, err);
}

static bool rp_vtp_replays_up(void *self, const rp_vhost_backends *b) {
    RP_UNUSED(self);
    return rp_amqp_replay_vhost_up(b->replays);
}

static void rp_vtp_free(void *self, rp_vhost_backends *b) {
    RP_UNUSED(self);
    if (b == NULL) return;
    rp_amqp_replay_vhost_free(b->replays);
    rp_tap_ports_free(b->tap);
    free(b);
}

void rp_vhost_taps_port_fill(rp_vhost_taps_src *src, rp_vhost_taps_port *out) {
    *out = (rp_vhost_taps_port){.self = src,
                                .url_vhost_is = rp_vtp_url_vhost_is,
                                .backends_new = rp_vtp_new,
                                .connect_tap = rp_vtp_connect_tap,
                                .connect_replays = rp_vtp_connect_replays,
                                .replays_up = rp_vtp_replays_up,
                                .backends_free = rp_vtp_free};
}

/* ---- the doctor's probes: AMQP, the management API, PostgreSQL --------------- */

static bool rp_dp_identity(void *self, const rp_config *cfg, const char **user,
                           const char **vhost) {
    rp_doctor_probes *p = self;
    rp_mgmt_http_params hp;
    if (rp_broker_http_params(cfg, p->password, &p->keep, &hp) != RP_OK) return false;
    *user = p->keep.user;
    *vhost = p->keep.vhost;
    return true;
}

static rp_doctor_reach rp_dp_amqp(void *self, const rp_config *cfg, int timeout_ms, char *why,
                                  size_t n) {
    return rp_amqp_doctor_probe_config(cfg, ((rp_doctor_probes *)self)->password, timeout_ms, why,
                                       n);
}

static bool rp_dp_mgmt(void *self, const rp_config *cfg, int timeout_ms, rp_doctor_facts *f,
                       const char **why) {
    rp_doctor_probes *p = self;
    if (p->bridge == NULL) {
        *why = p->mgmt_why;
        return false;
    }
    return rp_mgmt_doctor_probe_config(p->bridge, cfg, p->keep.vhost, timeout_ms, &p->mgmt, f, why);
}

static void rp_dp_store(void *self, const rp_config *cfg, int timeout_ms, rp_doctor_facts *f) {
    rp_pg_doctor_probe_config(cfg, timeout_ms, &((rp_doctor_probes *)self)->pg, f);
}

void rp_doctor_probe_all(const rp_config *cfg, const char *password, rp_mgmt_bridge *bridge,
                         const char *mgmt_why, rp_doctor_probes *p) {
    p->password = password;
    p->bridge = bridge;
    p->mgmt_why = mgmt_why;
    rp_doctor_probe_port port = {.self = p,
                                 .identity = rp_dp_identity,
                                 .amqp = rp_dp_amqp,
                                 .mgmt = rp_dp_mgmt,
                                 .store = rp_dp_store};
    rp_doctor_probe_run(&port, cfg, &p->seen);
}

/* ---- the control part's store port ------------------------------------------ */

/* self is the src, whose first member is the PostgreSQL half's self. */
static void rp_css_reap(void *self, rp_pass_request *req) {
    rp_pass_runner_run(((rp_control_store_src *)self)->runner, req);
}

static void rp_css_stats(void *self, rp_control_stats_ports *out) {
    rp_pass_runner *r = ((rp_control_store_src *)self)->runner;
    rp_pg_stats_port(r->store, &out->store);
    /* No broker half attached: core says so in the reply's broker_note. */
    out->broker = r->broker != NULL ? &r->ports.broker : NULL;
    rp_clock_port_system(&out->clock);
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
    return &d->probes.seen.facts;
}

void rp_control_store_fill(rp_control_store_src *src, rp_control_store_port *out) {
    rp_pass_runner *r = src->runner;
    src->pg = (rp_pg_control_src){r->conn, r->store, &r->cfg, &r->ports.gates};
    *out = (rp_control_store_port){
        .reap = rp_css_reap,
        .stats = rp_css_stats,
        .doctor_new = rp_css_doctor_new,
        .doctor_free = rp_css_doctor_free,
        .doctor_run = rp_css_doctor_run,
        .doctor_facts = rp_css_doctor_facts,
    };
    rp_pg_control_store_port(&src->pg, out);
    rp_amqp_control_store_facts(out);
}
