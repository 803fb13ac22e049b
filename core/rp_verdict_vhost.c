/* The vhost a verdict is about (rp_verdict_vhost.h). */
#include "rp_verdict_vhost.h"

#include <string.h>

static int rp_hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* s[0..len) %XX-decoded into out (n bytes); false on a bad escape, a NUL
 * or no room. */
static bool rp_unescape(const char *s, size_t len, char *out, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= len) return false;
            int hi = rp_hexval(s[i + 1]), lo = rp_hexval(s[i + 2]);
            if (hi < 0 || lo < 0) return false;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (c == '\0' || o + 1 >= n) return false;
        out[o++] = c;
    }
    out[o] = '\0';
    return true;
}

bool rp_verdict_vhost(const rp_verdict *v, char *out, size_t n) {
    if (n == 0) return false;
    out[0] = '\0';
    const char *o = v != NULL ? v->object : NULL;
    if (o == NULL) return false;
    static const char q[] = "queue:", dl[] = "dead_letter:", id[] = "id:", sha[] = "sha256:";
    const char *start = NULL, *end = NULL;
    if (strncmp(o, q, sizeof q - 1) == 0) {
        start = o + sizeof q - 1;
        end = strchr(start, ':');
    } else if (strncmp(o, dl, sizeof dl - 1) == 0) {
        const char *ident = o + sizeof dl - 1;
        if (strncmp(ident, id, sizeof id - 1) == 0) start = ident + sizeof id - 1;
        else if (strncmp(ident, sha, sizeof sha - 1) == 0) start = ident + sizeof sha - 1;
        end = start ? strchr(start, '/') : NULL;
    }
    if (start == NULL || end == NULL) return false;
    if (!rp_unescape(start, (size_t)(end - start), out, n)) {
        out[0] = '\0';
        return false;
    }
    return true;
}
