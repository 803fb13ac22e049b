/* The replays part's publish port over RabbitMQ (rp_amqp_replay_port.h). */
#include "rp_amqp_replay_port.h"

#include <stdlib.h>
#include <string.h>

#include "rp_amqp_control.h"
#include "rp_amqp_open.h"
#include "rp_amqp_restore.h"
#include "rp_amqp_session.h"

/* A vhost of broker.vhosts and its connection's publisher. */
typedef struct rp_arp_vhost {
    char *vhost;
    rp_amqp_publisher *const *publisher;
    const bool *up;
} rp_arp_vhost;

struct rp_amqp_replay_port {
    rp_amqp_publisher *const *publisher;
    const bool *up;
    const char *url;
    rp_arp_vhost *vhosts;
    size_t n_vhosts;
};

static const rp_arp_vhost *rp_arp_find(const rp_amqp_replay_port *p, const char *vhost) {
    for (size_t i = 0; vhost != NULL && i < p->n_vhosts; i++)
        if (strcmp(p->vhosts[i].vhost, vhost) == 0) return &p->vhosts[i];
    return NULL;
}

static rp_replay_msg *rp_arp_msg_new(void *self) {
    RP_UNUSED(self);
    return (rp_replay_msg *)(void *)rp_amqp_replay_msg_new();
}

static void rp_arp_msg_free(void *self, rp_replay_msg *m) {
    RP_UNUSED(self);
    rp_amqp_replay_msg_free((rp_amqp_replay_msg *)(void *)m);
}

static rp_status rp_arp_msg_restore(void *self, rp_replay_msg *m, const char *props_json,
                                    const char *headers_json, char *err, size_t errlen) {
    RP_UNUSED(self);
    return rp_amqp_replay_msg_restore((rp_amqp_replay_msg *)(void *)m, props_json, headers_json,
                                      err, errlen);
}

static void rp_arp_msg_peek(void *self, const rp_replay_msg *m, rp_bytes *user_id,
                            rp_bytes *expiration) {
    RP_UNUSED(self);
    rp_amqp_replay_msg_peek((const rp_amqp_replay_msg *)(const void *)m, user_id, expiration);
}

static void rp_arp_msg_strip(void *self, rp_replay_msg *m, rp_replay_strip s) {
    RP_UNUSED(self);
    rp_amqp_replay_msg_strip((rp_amqp_replay_msg *)(void *)m, s);
}

static bool rp_arp_kept_refusal(void *self, const char *props_json, char *why, size_t n) {
    RP_UNUSED(self);
    return rp_amqp_restore_refusal(props_json, why, n);
}

static bool rp_arp_vhost_is_ours(void *self, const char *vhost) {
    const rp_amqp_replay_port *p = self;
    return rp_amqp_url_vhost_is(p->url, vhost) || rp_arp_find(p, vhost) != NULL;
}

static bool rp_arp_own_user(void *self, char *buf, size_t n) {
    return rp_amqp_url_user(((rp_amqp_replay_port *)self)->url, buf, n);
}

typedef struct rp_arp_pending {
    rp_amqp_publisher *publisher;
    rp_replay_published_fn done;
    void *arg;
} rp_arp_pending;

static void rp_arp_published(void *arg, rp_publish_outcome outcome) {
    rp_arp_pending p = *(rp_arp_pending *)arg;
    free(arg);
    p.done(p.arg, rp_amqp_replay_outcome(outcome), rp_publish_outcome_string(outcome),
           outcome == RP_PUBLISH_REFUSED ? rp_amqp_publisher_refusal(p.publisher) : NULL);
}

static rp_status rp_arp_publish(void *self, const rp_replay_msg *m, const char *vhost,
                                const char *queue, rp_bytes body, rp_replay_published_fn done,
                                void *arg) {
    rp_amqp_replay_port *w = self;
    rp_amqp_publisher *pub = *w->publisher;
    bool up = *w->up;
    if (vhost != NULL && !rp_amqp_url_vhost_is(w->url, vhost)) {
        const rp_arp_vhost *v = rp_arp_find(w, vhost);
        if (v == NULL) return RP_ERR_UNAVAILABLE; /* the check refuses it first */
        pub = *v->publisher;
        up = *v->up;
    }
    if (!up || pub == NULL) return RP_ERR_UNAVAILABLE;
    rp_arp_pending *p = malloc(sizeof *p);
    if (p == NULL) return RP_ERR_NOMEM;
    *p = (rp_arp_pending){pub, done, arg};
    rp_status st = rp_amqp_replay_msg_publish(pub, (const rp_amqp_replay_msg *)(const void *)m,
                                              queue, body, rp_arp_published, p);
    if (st != RP_OK) free(p);
    return st;
}

rp_amqp_replay_port *rp_amqp_replay_port_new(rp_amqp_publisher *const *publisher,
                                             const bool *up, const char *url,
                                             rp_replay_publish_port *out) {
    rp_amqp_replay_port *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    *p = (rp_amqp_replay_port){publisher, up, url, NULL, 0};
    *out = (rp_replay_publish_port){
        .self = p,
        .msg_new = rp_arp_msg_new,
        .msg_free = rp_arp_msg_free,
        .msg_restore = rp_arp_msg_restore,
        .msg_peek = rp_arp_msg_peek,
        .msg_strip = rp_arp_msg_strip,
        .kept_refusal = rp_arp_kept_refusal,
        .vhost_is_ours = rp_arp_vhost_is_ours,
        .own_user = rp_arp_own_user,
        .publish = rp_arp_publish,
    };
    return p;
}

rp_status rp_amqp_replay_port_add_vhost(rp_amqp_replay_port *p, const char *vhost,
                                        rp_amqp_publisher *const *publisher, const bool *up) {
    rp_arp_vhost *v = realloc(p->vhosts, (p->n_vhosts + 1) * sizeof *v);
    if (v == NULL) return RP_ERR_NOMEM;
    p->vhosts = v;
    char *name = strdup(vhost);
    if (name == NULL) return RP_ERR_NOMEM;
    p->vhosts[p->n_vhosts++] = (rp_arp_vhost){name, publisher, up};
    return RP_OK;
}

void rp_amqp_replay_port_free(rp_amqp_replay_port *p) {
    if (p == NULL) return;
    for (size_t i = 0; i < p->n_vhosts; i++) free(p->vhosts[i].vhost);
    free(p->vhosts);
    free(p);
}

/* ---- a vhost's own publishing session ---------------------------------------- */

struct rp_amqp_replay_vhost {
    rp_amqp_session *session; /* quiet */
    rp_amqp_publisher *publisher;
    bool up;
};

static void rp_arv_on_up(void *arg, unsigned generation) {
    RP_UNUSED(generation);
    ((rp_amqp_replay_vhost *)arg)->up = true;
}

static void rp_arv_on_down(void *arg, bool was_up, const char *why) {
    RP_UNUSED(was_up);
    RP_UNUSED(why);
    ((rp_amqp_replay_vhost *)arg)->up = false;
}

rp_status rp_amqp_replay_vhost_start(rp_amqp_replay_port *p, struct event_base *base,
                                     const rp_amqp_params *params, const char *vhost,
                                     const char *events_exchange, rp_amqp_replay_vhost **out,
                                     const char **err) {
    rp_amqp_replay_vhost *v = *out = calloc(1, sizeof *v);
    if (v == NULL) return RP_ERR_INTERNAL;
    rp_amqp_params ap = *params;
    ap.vhost = vhost;
    rp_amqp_session_params sp = {
        .amqp = &ap,
        .events_exchange = events_exchange,
        .body_limit = 65536, /* it consumes nothing */
        .quiet = true,
    };
    rp_amqp_session_hooks sh = {.on_up = rp_arv_on_up, .on_down = rp_arv_on_down, .arg = v};
    if ((v->session = rp_amqp_session_new(base, &sp, &sh, err)) == NULL ||
        (v->publisher = rp_amqp_session_publisher(v->session)) == NULL ||
        rp_amqp_replay_port_add_vhost(p, vhost, &v->publisher, &v->up) != RP_OK ||
        rp_amqp_session_start(v->session) != RP_OK)
        return RP_ERR_INTERNAL;
    return RP_OK;
}

bool rp_amqp_replay_vhost_up(const rp_amqp_replay_vhost *v) { return v != NULL && v->up; }

void rp_amqp_replay_vhost_free(rp_amqp_replay_vhost *v) {
    if (v == NULL) return;
    rp_amqp_session_free(v->session);
    free(v);
}
