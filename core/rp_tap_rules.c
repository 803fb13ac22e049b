/*
 * The dead-letter tap's decisions beside its batching (rp_tap_rules.h).
 */
#include "rp_tap_rules.h"

rp_tap_bind_outcome rp_tap_bind_judge(rp_status st, const rp_tap_bind_stats *s) {
    /* A tap queue not declared yet is not a failure: the connection
     * declares it and asks for a reconcile then. */
    if (st == RP_OK && s->tap_missing) return RP_TAP_BIND_TAP_MISSING;
    if (st != RP_OK || s->failed > 0) return RP_TAP_BIND_FAILED;
    if (s->added > 0 || s->removed > 0) return RP_TAP_BIND_CHANGED;
    return RP_TAP_BIND_IN_PLACE;
}

bool rp_tap_bind_in_place(rp_tap_bind_outcome o) {
    return o == RP_TAP_BIND_CHANGED || o == RP_TAP_BIND_IN_PLACE;
}

bool rp_tap_stored_partial(bool body_cut, bool lossless, size_t headers_dropped) {
    return body_cut || !lossless || headers_dropped > 0;
}

size_t rp_tap_death_entries(size_t parsed, size_t unparsed) {
    return unparsed > 0 ? parsed + unparsed : 0;
}
