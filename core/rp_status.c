#include "rp_status.h"

#include "rp_common.h"

/* Indexed by -status. Keep in the enum's order: test_status checks it. */
static const char *const rp_status_names[] = {
    "ok",          "nomem",    "invalid",     "bad_request", "unknown_op",
    "forbidden",   "not_found", "conflict",   "unavailable", "internal",
    "config",      "io",       "too_large",   "timeout",     "closed",
    "busy",
};

_Static_assert(RP_ARRAY_LEN(rp_status_names) == -(int)RP_STATUS_MIN_,
               "rp_status_names must name every rp_status");

const char *rp_status_string(rp_status s) {
    int i = -(int)s;
    if (i < 0 || (size_t)i >= RP_ARRAY_LEN(rp_status_names))
        return "unknown_status";
    return rp_status_names[i];
}
