/* The taps of broker.vhosts (vhost_taps.h). */
#include "vhost_taps.h"

#include <stdlib.h>
#include <string.h>

#include "rp_amqp_control.h"
#include "rp_events.h"
#include "rp_log.h"

typedef struct rp_vhost_tap {
    char *vhost;        /* the tap's deps.vhost points here */
    rp_tap_ports *ports;
    rp_tap *tap;
    /* The replays' publishing session logged in to vhost (quiet: the
     * tap's connection says what goes wrong with the vhost). */
    rp_amqp_session *session;
    rp_amqp_publisher *publisher;
    bool up;
} rp_vhost_tap;

struct rp_vhost_taps {
    rp_vhost_tap *taps; /* never moved once made: hooks point into it */
    size_t n;
    struct event_base *base;
    const rp_config *boot;  /* broker.url and broker.vhosts (restart-only) */
    /* The last vhost asked about (events come in runs of one vhost). */
    char last[RP_BEV_NAME_MAX];
    bool last_watched;
};

rp_vhost_taps *rp_vhost_taps_new(struct event_base *base, const rp_config *const *cfg,
                                 rp_mgmt_bridge *mgmt, const rp_tap_deps *tmpl,
                                 rp_events *events) {
    const rp_config_strlist *l = &(*cfg)->broker.vhosts;
    rp_vhost_taps *v = calloc(1, sizeof *v);
    if (v == NULL) return NULL;
    v->base = base;
    v->boot = *cfg;
    v->taps = calloc(l->n ? l->n : 1, sizeof *v->taps);
    if (v->taps == NULL) {
        free(v);
        return NULL;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (rp_amqp_url_vhost_is((*cfg)->broker.url, l->items[i])) continue; /* the daemon's tap */
        rp_vhost_tap *t = &v->taps[v->n++];
        if ((t->vhost = strdup(l->items[i])) == NULL) goto fail;
        rp_tap_deps deps = *tmpl;
        deps.vhost = (const char *const *)&t->vhost;
        if ((t->ports = rp_tap_ports_new(base, cfg, mgmt, &deps)) == NULL) goto fail;
        if ((t->tap = rp_tap_new(base, &deps)) == NULL) goto fail;
        if (events != NULL && rp_events_add_queue_hook(events, rp_tap_queue_hook, &t->tap) != RP_OK)
            goto fail;
    }
    return v;
fail:
    rp_vhost_taps_stop(v);
    rp_vhost_taps_free(v);
    return NULL;
}

size_t rp_vhost_taps_count(const rp_vhost_taps *v) { return v ? v->n : 0; }

bool rp_vhost_taps_observe(void *vpp, size_t i, rp_observe_tap *out) {
    const rp_vhost_taps *v = *(rp_vhost_taps **)vpp;
    if (v == NULL || i >= v->n || v->taps[i].tap == NULL) return false;
    *out = (rp_observe_tap){.vhost = v->taps[i].vhost};
    rp_tap_gauges(v->taps[i].tap, &out->held_bytes, &out->paused);
    out->ready = v->taps[i].up && rp_tap_bound(v->taps[i].tap);
    return true;
}

bool rp_vhost_taps_watched(void *vpp, const char *vhost) {
    rp_vhost_taps *v = *(rp_vhost_taps **)vpp;
    if (v == NULL) return true; /* not made yet */
    if (v->last[0] != '\0' && strcmp(v->last, vhost) == 0) return v->last_watched;
    bool w = rp_amqp_url_vhost_is(v->boot->broker.url, vhost);
    for (size_t i = 0; !w && i < v->boot->broker.vhosts.n; i++)
        w = strcmp(v->boot->broker.vhosts.items[i], vhost) == 0;
    if (strlen(vhost) < sizeof v->last) {
        memcpy(v->last, vhost, strlen(vhost) + 1);
        v->last_watched = w;
    }
    return w;
}

static void rp_vt_on_up(void *arg, unsigned generation) {
    RP_UNUSED(generation);
    ((rp_vhost_tap *)arg)->up = true;
}

static void rp_vt_on_down(void *arg, bool was_up, const char *why) {
    RP_UNUSED(was_up);
    RP_UNUSED(why);
    ((rp_vhost_tap *)arg)->up = false;
}

rp_status rp_vhost_taps_connect(rp_vhost_taps *v, const rp_amqp_params *params,
                                const rp_config *cfg, rp_replay_wiring *replays) {
    for (size_t i = 0; v != NULL && i < v->n; i++) {
        rp_vhost_tap *t = &v->taps[i];
        rp_amqp_params p = *params;
        p.vhost = t->vhost;
        if (rp_tap_ports_connect(t->ports, t->tap, &p) != RP_OK) {
            RP_ERROR("cannot start a vhost's tap connection", "vhost", t->vhost, NULL);
            return RP_ERR_INTERNAL;
        }
        rp_amqp_session_params sp = {
            .amqp = &p,
            .events_exchange = cfg->broker.events_exchange,
            .body_limit = 65536, /* it consumes nothing */
            .quiet = true,
        };
        rp_amqp_session_hooks sh = {.on_up = rp_vt_on_up, .on_down = rp_vt_on_down, .arg = t};
        const char *err = NULL;
        if ((t->session = rp_amqp_session_new(v->base, &sp, &sh, &err)) ==
                NULL ||
            (t->publisher = rp_amqp_session_publisher(t->session)) == NULL ||
            rp_replay_wiring_add_vhost(replays, t->vhost, &t->publisher, &t->up) != RP_OK ||
            rp_amqp_session_start(t->session) != RP_OK) {
            RP_ERROR("cannot start a vhost's replay connection", "vhost", t->vhost, "reason",
                     err ? err : "out of memory", NULL);
            return RP_ERR_INTERNAL;
        }
        RP_INFO("watching a vhost of broker.vhosts", "vhost", v->taps[i].vhost, NULL);
    }
    return RP_OK;
}

void rp_vhost_taps_bind_soon(rp_vhost_taps *v) {
    for (size_t i = 0; v != NULL && i < v->n; i++) rp_tap_bind_soon(v->taps[i].tap);
}

void rp_vhost_taps_cancel(rp_vhost_taps *v) {
    for (size_t i = 0; v != NULL && i < v->n; i++)
        if (v->taps[i].tap) rp_tap_cancel(v->taps[i].tap);
}

bool rp_vhost_taps_busy(const rp_vhost_taps *v) {
    for (size_t i = 0; v != NULL && i < v->n; i++)
        if (v->taps[i].tap && rp_tap_busy(v->taps[i].tap)) return true;
    return false;
}

void rp_vhost_taps_stop(rp_vhost_taps *v) {
    for (size_t i = 0; v != NULL && i < v->n; i++)
        if (v->taps[i].tap) rp_tap_stop(v->taps[i].tap);
}

void rp_vhost_taps_free(rp_vhost_taps *v) {
    if (v == NULL) return;
    for (size_t i = 0; i < v->n; i++) {
        rp_amqp_session_free(v->taps[i].session);
        rp_tap_ports_free(v->taps[i].ports);
        rp_tap_free(v->taps[i].tap);
        free(v->taps[i].vhost);
    }
    free(v->taps);
    free(v);
}
