/* The taps of broker.vhosts in the gauges and /readyz (rp_observe_vhost_taps.h). */
#include "rp_observe_vhost_taps.h"

#include <stdio.h>

void rp_observe_vhost_taps_gauges(const rp_observe_deps *deps, int64_t *held, bool *paused) {
    rp_observe_tap t;
    for (size_t i = 0; deps->vhost_tap != NULL && deps->vhost_tap(deps->vhost_tap_arg, i, &t);
         i++) {
        if (t.held_bytes > 0 && *held <= INT64_MAX - t.held_bytes) *held += t.held_bytes;
        if (t.paused) *paused = true;
    }
}

bool rp_observe_vhost_taps_ready(const rp_observe_deps *deps, char *why, size_t cap) {
    rp_observe_tap t;
    for (size_t i = 0; deps->vhost_tap != NULL && deps->vhost_tap(deps->vhost_tap_arg, i, &t);
         i++) {
        if (t.ready) continue;
        snprintf(why, cap, "dead-letter tap of vhost %s down or not bound yet",
                 t.vhost ? t.vhost : "?");
        return false;
    }
    return true;
}
