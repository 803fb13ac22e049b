/*
 * The dead-letter tap's backends (tap_ports.h): one adapter per port.
 */
#include "tap_ports.h"

#include <stdlib.h>

#include "rp_amqp_tap_port.h"
#include "rp_mgmt_dlx.h"
#include "rp_pg_park_batch.h"
#include "rp_pg_store.h"

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
