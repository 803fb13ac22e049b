/*
 * rp_observe_vhost_taps.h - the taps of broker.vhosts' other vhosts in the
 * tap gauges and /readyz (issue #19 item 1), over rp_observe_deps.vhost_tap:
 * their held bytes summed with the tap's, paused when any one is, and not
 * ready while one is not, the reason naming the first such vhost.
 *
 * Loop thread. Ownership: deps borrowed for the call.
 */
#ifndef RP_OBSERVE_VHOST_TAPS_H
#define RP_OBSERVE_VHOST_TAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_observe.h"

/* Adds each vhost tap's held bytes to *held and its pause to *paused. */
void rp_observe_vhost_taps_gauges(const rp_observe_deps *deps, int64_t *held, bool *paused);
/* true when every vhost tap is ready (or there is none); else false with
 * why (cap bytes) "dead-letter tap of vhost <name> down or not bound
 * yet". */
bool rp_observe_vhost_taps_ready(const rp_observe_deps *deps, char *why, size_t cap);

#endif
