/*
 * rp_observe_vhost_taps.h - the taps of broker.vhosts' other vhosts in the
 * tap gauges and /readyz (issue #19 item 1), over rp_observe_deps.vhost_tap:
 * each tap's held bytes and pause as its vhost's series
 * (reaper_tap_held_bytes{vhost}, reaper_tap_paused{vhost}), and not ready
 * while one is not, the reason naming the first such vhost.
 *
 * Loop thread. Ownership: deps borrowed for the call.
 */
#ifndef RP_OBSERVE_VHOST_TAPS_H
#define RP_OBSERVE_VHOST_TAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_config.h"
#include "rp_observe.h"

/* Sets each vhost tap's gauges in deps->metrics under its vhost (a vhost
 * without a metrics slot: logged once, counted in the overflow slot). */
void rp_observe_vhost_taps_gauges(const rp_observe_deps *deps);
/* true when every vhost tap is ready (or there is none); else false with
 * why (cap bytes) "dead-letter tap of vhost <name> down or not bound
 * yet". */
/* Gives each watched vhost of cfg (broker.url's, then broker.vhosts') its
 * slot in m (rp_metrics_vhost_register), so that its series appear at 0
 * from the start; one that gets none is logged (its counts go to the
 * overflow slot). Loop thread, at start-up, before the taps and the feed
 * run. */
void rp_observe_vhosts_register(rp_metrics *m, const rp_config *cfg);
/* Logs that vhost has no metrics slot (a per-vhost hook of rp_metrics.h
 * returned true: the first such update). Any thread. */
void rp_observe_vhost_overflow(const char *vhost);
bool rp_observe_vhost_taps_ready(const rp_observe_deps *deps, char *why, size_t cap);

#endif
