/* The taps of broker.vhosts in the gauges and /readyz (rp_observe_vhost_taps.h). */
#include "rp_observe_vhost_taps.h"

#include <stdio.h>

#include "rp_log.h"
#include "rp_sweep_vhosts.h"

void rp_observe_vhosts_register(rp_metrics *m, const rp_config *cfg) {
    rp_sweep_vhosts w;
    rp_status st = rp_sweep_vhosts_watched(cfg, &w);
    if (st != RP_OK) {
        RP_WARN("the watched vhosts could not be listed for the metrics: their series are "
                "counted under vhost=\"\"",
                "status", rp_status_string(st), NULL);
        return;
    }
    for (size_t i = 0; i < w.n; i++) {
        st = rp_metrics_vhost_register(m, w.names[i]);
        if (st != RP_OK)
            RP_WARN("a watched vhost got no slot of its own in the metrics: its series are "
                    "counted under vhost=\"\"",
                    "vhost", w.names[i], "status", rp_status_string(st), NULL);
    }
    rp_sweep_vhosts_cleanup(&w);
}

void rp_observe_vhost_overflow(const char *vhost) {
    RP_WARN("a vhost has no slot of its own in the metrics: its series and those of any "
            "other such vhost are counted under vhost=\"\" (logged once)",
            "vhost", vhost ? vhost : "(none)", NULL);
}

void rp_observe_vhost_taps_gauges(const rp_observe_deps *deps) {
    rp_observe_tap t;
    for (size_t i = 0; deps->vhost_tap != NULL && deps->vhost_tap(deps->vhost_tap_arg, i, &t);
         i++)
        if (rp_metrics_set_tap(deps->metrics, t.vhost, t.held_bytes, t.paused))
            rp_observe_vhost_overflow(t.vhost);
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
