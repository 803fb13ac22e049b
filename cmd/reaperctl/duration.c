#include "duration.h"

#include <string.h>

bool rp_ctl_duration_parse(const char *s, int64_t *seconds) {
    if (s == NULL || *s < '0' || *s > '9') return false;
    int64_t n = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        n = n * 10 + (*s - '0');
        if (n > RP_CTL_DURATION_MAX_S) return false;
    }
    int64_t unit;
    switch (*s) {
    case '\0': unit = 1; break;
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return false;
    }
    if (*s != '\0' && s[1] != '\0') return false;
    if (n == 0 || n > RP_CTL_DURATION_MAX_S / unit) return false;
    *seconds = n * unit;
    return true;
}
