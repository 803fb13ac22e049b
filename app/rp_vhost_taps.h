/*
 * rp_vhost_taps.h - the taps of the vhosts listed in broker.vhosts besides
 * broker.url's (issue #19 item 1): one tap part (rp_tap.h) per such
 * vhost, each over its own backends (rp_vhost_taps_port, filled by
 * cmd/reaperd/ports.c from the adapters): its own AMQP connection
 * logged in to that vhost (same user and password), its own tap queue
 * (broker.tap_queue in that vhost), its own park sessions and bindings. A
 * dead letter of vhost B is parked with B in its identity and rows, since
 * the tap's vhost is B. A vhost that does not exist, or that the user may
 * not use, fails that tap's connect: its connection logs the reason (the
 * peer names the vhost) and retries with backoff; the other taps and the
 * daemon's own session keep working.
 *
 * Ownership: the daemon owns the set; the template deps' pointers and the
 * port's self are borrowed (they must outlive the set). Stop order as one
 * tap's: rp_vhost_taps_stop (with rp_tap_stop), then rp_vhost_taps_free
 * (after the session, with rp_tap_free). Loop thread.
 */
#ifndef RP_APP_VHOST_TAPS_H
#define RP_APP_VHOST_TAPS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_broker_event.h"
#include "rp_config.h"
#include "rp_events.h"
#include "rp_observe.h"
#include "rp_status.h"
#include "rp_tap.h"

typedef struct rp_vhost_taps rp_vhost_taps;

/* One vhost's backends, the port's (opaque here). */
typedef struct rp_vhost_backends rp_vhost_backends;

/* The adapters' constructors for one vhost (cmd/reaperd/ports.c fills
 * it: reaper::app links no adapter). Loop thread. */
typedef struct rp_vhost_taps_port {
    void *self;
    /* Whether url (broker.url) names vhost. */
    bool (*url_vhost_is)(void *self, const char *url, const char *vhost);
    /* The tap's consumer, store and bindings for a tap of deps->vhost
     * (opening nothing yet): fills deps->consumer, deps->store and
     * deps->bind. NULL when out of memory. */
    rp_vhost_backends *(*backends_new)(void *self, struct event_base *base, rp_tap_deps *deps);
    /* Starts t's connection (the daemon's parameters) logged in to vhost.
     * RP_OK or the error (the caller logs). */
    rp_status (*connect_tap)(void *self, rp_vhost_backends *b, rp_tap *t, const char *vhost);
    /* Makes and starts a publishing session logged in to vhost for the
     * replays of the gates found there (added to the replays); *err: why
     * it could not (borrowed; NULL: out of memory). */
    rp_status (*connect_replays)(void *self, rp_vhost_backends *b, const char *vhost,
                                 const char **err);
    /* Whether b's publishing session in its vhost is up (the vhost can be
     * logged in to). NULL: only the tap's bindings say it is ready. */
    bool (*replays_up)(void *self, const rp_vhost_backends *b);
    /* Frees b (its session and the tap's backends); after rp_tap_stop.
     * NULL b: nothing. */
    void (*backends_free)(void *self, rp_vhost_backends *b);
} rp_vhost_taps_port;

/* A tap for each vhost of (*cfg)->broker.vhosts that is not url_vhost
 * (broker.url's own, which the daemon's tap watches). tmpl: the daemon
 * tap's deps (cfg, stopping, generation, up, metrics, feed); each tap gets
 * its own vhost and backends. Each tap's bindings are looked at again when
 * events adds a queue hook for its vhost. NULL when out of memory or a
 * thread cannot start. */
rp_vhost_taps *rp_vhost_taps_new(struct event_base *base, const rp_config *const *cfg,
                                 const rp_vhost_taps_port *port, const rp_tap_deps *tmpl,
                                 rp_events *events);
/* Whether vhost is watched: broker.url's or one of broker.vhosts (of the
 * configuration reaperd started with). For rp_events_deps.watched, vpp =
 * rp_vhost_taps ** (read at each call; NULL set: every vhost). Loop
 * thread. */
bool rp_vhost_taps_watched(void *vpp, const char *vhost);
/* rp_observe_deps.vhost_tap, vpp = rp_vhost_taps **: the i-th tap's
 * vhost, gauges and readiness (its vhost's publishing session up, the
 * port's replays_up, and its bindings in place). Loop thread. */
bool rp_vhost_taps_observe(void *vpp, size_t i, rp_observe_tap *out);
/* How many vhosts the set watches. */
size_t rp_vhost_taps_count(const rp_vhost_taps *v);
/* Starts each tap's connection (the port's connect_tap: the daemon's
 * parameters), logged in to the tap's vhost, and a publishing session in
 * that vhost for the replays of the gates found there (the port's
 * connect_replays). RP_ERR_INTERNAL when one cannot start (logged). */
rp_status rp_vhost_taps_connect(rp_vhost_taps *v) RP_MUSTCHECK;
/* rp_tap_bind_soon on each. NULL v: nothing. */
void rp_vhost_taps_bind_soon(rp_vhost_taps *v);
/* rp_tap_cancel on each (any thread). */
void rp_vhost_taps_cancel(rp_vhost_taps *v);
bool rp_vhost_taps_busy(const rp_vhost_taps *v);
void rp_vhost_taps_stop(rp_vhost_taps *v);
void rp_vhost_taps_free(rp_vhost_taps *v);

#endif
