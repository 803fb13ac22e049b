/* Replicas sweep a vhost one at a time (rp_sweep_turn.h). */
#include "rp_sweep_turn.h"

#include <string.h>

const char *rp_sweep_turn_string(rp_sweep_turn t) {
    switch (t) {
    case RP_SWEEP_TURN_TAKEN: return "taken";
    case RP_SWEEP_TURN_HELD: return "held";
    case RP_SWEEP_TURN_UNKNOWN: return "unknown";
    }
    return "?";
}

rp_pass_scope rp_sweep_turn_scope(rp_pass_scope wanted, rp_sweep_turn t) {
    if (wanted == RP_PASS_FULL && t == RP_SWEEP_TURN_HELD) return RP_PASS_LEASES;
    return wanted;
}

bool rp_sweep_turn_give_back(bool ok_status, bool read_all) { return !ok_status || !read_all; }

static int rp_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool rp_sweep_turn_vhost(const char *url, char *out, size_t n) {
    if (n == 0) return false;
    out[0] = '\0';
    const char *p = url ? strstr(url, "://") : NULL;
    p = p ? strchr(p + 3, '/') : NULL;
    if (p == NULL || p[1] == '\0' || p[1] == '?') {
        if (n < 2) return false;
        memcpy(out, "/", 2);
        return true;
    }
    size_t o = 0;
    for (p++; *p != '\0' && *p != '?'; p++) {
        char c = *p;
        if (c == '%') {
            int hi = rp_hex(p[1]), lo = hi < 0 ? -1 : rp_hex(p[2]);
            if (lo < 0) {
                out[0] = '\0';
                return false;
            }
            c = (char)(hi * 16 + lo);
            p += 2;
        }
        if (o + 1 >= n) {
            out[0] = '\0';
            return false;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return true;
}
