/* The control part's transport port over the AMQP session
 * (rp_amqp_control_port.h). */
#include "rp_amqp_control_port.h"

#include <stdlib.h>
#include <string.h>

#include "rp_amqp_control.h"
#include "rp_amqp_open.h"
#include "rp_amqp_restore.h"

static bool rp_acp_connected(void *self) {
    return *((rp_amqp_control_src *)self)->publisher != NULL;
}

typedef struct rp_acp_pending {
    rp_control_replied_fn done;
    void *arg;
} rp_acp_pending;

static void rp_acp_replied(void *arg, rp_publish_outcome outcome) {
    rp_acp_pending p = *(rp_acp_pending *)arg;
    free(arg);
    rp_control_reply_fate fate = RP_CONTROL_REPLY_LOST;
    if (outcome == RP_PUBLISH_CONFIRMED) fate = RP_CONTROL_REPLY_CONFIRMED;
    else if (outcome == RP_PUBLISH_RETURNED || outcome == RP_PUBLISH_NACKED)
        fate = RP_CONTROL_REPLY_UNDELIVERED;
    p.done(p.arg, fate, rp_publish_outcome_string(outcome));
}

static rp_status rp_acp_reply(void *self, const char *reply_to, const char *content_type,
                              const char *own_user, const char *correlation_id, rp_bytes body,
                              rp_control_replied_fn done, void *arg) {
    rp_amqp_control_src *src = self;
    if (*src->publisher == NULL) return RP_ERR_UNAVAILABLE;
    rp_acp_pending *p = malloc(sizeof *p);
    if (p == NULL) return RP_ERR_NOMEM;
    *p = (rp_acp_pending){done, arg};
    rp_status st = rp_amqp_control_reply(*src->publisher, reply_to, content_type, own_user,
                                         correlation_id, body, rp_acp_replied, p);
    if (st != RP_OK) free(p);
    return st;
}

static void rp_acp_ack(void *self, unsigned generation, uint64_t tag) {
    rp_amqp_control_src *src = self;
    if (*src->session != NULL) (void)rp_amqp_session_ack(*src->session, generation, tag);
}

static bool rp_acp_own_user(void *self, const rp_config *cfg, char *buf, size_t n) {
    RP_UNUSED(self);
    return rp_amqp_url_user(cfg->broker.url, buf, n);
}

void rp_amqp_control_transport_port(rp_amqp_control_src *src, rp_control_transport_port *out) {
    *out = (rp_control_transport_port){
        .self = src,
        .connected = rp_acp_connected,
        .reply = rp_acp_reply,
        .ack = rp_acp_ack,
        .own_user = rp_acp_own_user,
    };
}

/* ---- the control part's store port: its AMQP facts ------------------------------ */

static bool rp_css_kept_refusal(void *self, const char *props_json, char *why, size_t n) {
    RP_UNUSED(self);
    return rp_amqp_restore_refusal(props_json, why, n);
}

static bool rp_css_vhost_is_ours(void *self, const rp_config *cfg, const char *vhost) {
    RP_UNUSED(self);
    for (size_t i = 0; i < cfg->broker.vhosts.n; i++)
        if (strcmp(cfg->broker.vhosts.items[i], vhost) == 0) return true;
    return rp_amqp_url_vhost_is(cfg->broker.url, vhost);
}

void rp_amqp_control_store_facts(rp_control_store_port *out) {
    out->kept_refusal = rp_css_kept_refusal;
    out->vhost_is_ours = rp_css_vhost_is_ours;
}
