/* The taps of broker.vhosts (rp_vhost_taps.h). */
#include "rp_vhost_taps.h"

#include <stdlib.h>
#include <string.h>

#include "rp_events.h"
#include "rp_log.h"

typedef struct rp_vhost_tap {
    char *vhost;        /* the tap's deps.vhost points here */
    /* The tap's backends and the replays' publishing session logged in
     * to vhost (quiet: the tap's connection says what goes wrong with the
     * vhost), the port's. */
    rp_vhost_backends *backends;
    rp_tap *tap;
} rp_vhost_tap;

struct rp_vhost_taps {
    rp_vhost_tap *taps; /* never moved once made: hooks point into it */
    size_t n;
    rp_vhost_taps_port port;
    const rp_config *boot;  /* broker.url and broker.vhosts (restart-only) */
    /* The last vhost asked about (events come in runs of one vhost). */
    char last[RP_BEV_NAME_MAX];
    bool last_watched;
};

rp_vhost_taps *rp_vhost_taps_new(struct event_base *base, const rp_config *const *cfg,
                                 const rp_vhost_taps_port *port, const rp_tap_deps *tmpl,
                                 rp_events *events) {
    const rp_config_strlist *l = &(*cfg)->broker.vhosts;
    rp_vhost_taps *v = calloc(1, sizeof *v);
    if (v == NULL) return NULL;
    v->port = *port;
    v->boot = *cfg;
    v->taps = calloc(l->n ? l->n : 1, sizeof *v->taps);
    if (v->taps == NULL) {
        free(v);
        return NULL;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (port->url_vhost_is(port->self, (*cfg)->broker.url, l->items[i]))
            continue; /* the daemon's tap */
        rp_vhost_tap *t = &v->taps[v->n++];
        if ((t->vhost = strdup(l->items[i])) == NULL) goto fail;
        rp_tap_deps deps = *tmpl;
        deps.vhost = (const char *const *)&t->vhost;
        if ((t->backends = port->backends_new(port->self, base, &deps)) == NULL) goto fail;
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
    const rp_vhost_tap *t = &v->taps[i];
    bool up = v->port.replays_up == NULL || v->port.replays_up(v->port.self, t->backends);
    out->ready = up && rp_tap_bound(t->tap);
    return true;
}

bool rp_vhost_taps_watched(void *vpp, const char *vhost) {
    rp_vhost_taps *v = *(rp_vhost_taps **)vpp;
    if (v == NULL) return true; /* not made yet */
    if (v->last[0] != '\0' && strcmp(v->last, vhost) == 0) return v->last_watched;
    bool w = v->port.url_vhost_is(v->port.self, v->boot->broker.url, vhost);
    for (size_t i = 0; !w && i < v->boot->broker.vhosts.n; i++)
        w = strcmp(v->boot->broker.vhosts.items[i], vhost) == 0;
    if (strlen(vhost) < sizeof v->last) {
        memcpy(v->last, vhost, strlen(vhost) + 1);
        v->last_watched = w;
    }
    return w;
}

rp_status rp_vhost_taps_connect(rp_vhost_taps *v) {
    for (size_t i = 0; v != NULL && i < v->n; i++) {
        rp_vhost_tap *t = &v->taps[i];
        if (v->port.connect_tap(v->port.self, t->backends, t->tap, t->vhost) != RP_OK) {
            RP_ERROR("cannot start a vhost's tap connection", "vhost", t->vhost, NULL);
            return RP_ERR_INTERNAL;
        }
        const char *err = NULL;
        if (v->port.connect_replays(v->port.self, t->backends, t->vhost, &err) != RP_OK) {
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
        v->port.backends_free(v->port.self, v->taps[i].backends);
        rp_tap_free(v->taps[i].tap);
        free(v->taps[i].vhost);
    }
    free(v->taps);
    free(v);
}
