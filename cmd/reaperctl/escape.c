#include "escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_utf8.h"

char *rp_ctl_escaped(const char *s) {
    if (s == NULL) s = "-";
    size_t len = strlen(s);
    /* At most 10 bytes out ("\u{10FFFF}") for each byte in. */
    char *out = malloc(len * 10 + 1);
    if (out == NULL) return NULL;
    static const char hex[] = "0123456789abcdef";
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = rp_utf8_next((const uint8_t *)s + i, len - i, &cp);
        if (n == 0) { /* not UTF-8: the byte itself */
            uint8_t b = (uint8_t)s[i++];
            out[w++] = '\\';
            out[w++] = 'x';
            out[w++] = hex[b >> 4];
            out[w++] = hex[b & 15];
            continue;
        }
        i += n;
        if (cp == '\n' || cp == '\r' || cp == '\t') {
            out[w++] = '\\';
            out[w++] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
        } else if (cp < 0x100 && rp_utf8_is_control(cp)) {
            out[w++] = '\\';
            out[w++] = 'x';
            out[w++] = hex[cp >> 4];
            out[w++] = hex[cp & 15];
        } else if (rp_utf8_is_control(cp)) {
            w += (size_t)snprintf(out + w, 11, "\\u{%04x}", (unsigned)cp);
        } else {
            memcpy(out + w, s + i - n, n);
            w += n;
        }
    }
    out[w] = '\0';
    return out;
}

void rp_ctl_fputs(FILE *f, const char *s) {
    char *e = rp_ctl_escaped(s);
    fputs(e ? e : "?", f);
    free(e);
}
