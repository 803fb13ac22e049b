#include "rp_text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rp_status rp_text_vformat(char **out, const char *fmt, va_list ap) {
    *out = NULL;
    /* One pass into the stack for the usual text (a verdict's detail, a
     * gate's question); a second only for a longer one. */
    char small[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) return RP_ERR_INVALID;
    char *s = malloc((size_t)n + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    if ((size_t)n < sizeof small) {
        memcpy(s, small, (size_t)n + 1);
    } else if (vsnprintf(s, (size_t)n + 1, fmt, ap) != n) {
        free(s);
        return RP_ERR_INVALID;
    }
    *out = s;
    return RP_OK;
}

rp_status rp_text_format(char **out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rp_status st = rp_text_vformat(out, fmt, ap);
    va_end(ap);
    return st;
}

size_t rp_text_i64(int64_t v, char buf[RP_TEXT_I64_BUF]) {
    char tmp[RP_TEXT_I64_BUF];
    char *e = tmp + sizeof tmp, *p = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) *--p = '-';
    size_t n = (size_t)(e - p);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n;
}

rp_status rp_text_join(char **out, const char *const *parts, size_t n) {
    *out = NULL;
    size_t len[16];
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(parts[i]);
        if (i < sizeof len / sizeof len[0]) len[i] = l;
        if (l > SIZE_MAX - 1 - total) return RP_ERR_NOMEM;
        total += l;
    }
    char *s = malloc(total + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = i < sizeof len / sizeof len[0] ? len[i] : strlen(parts[i]);
        memcpy(s + w, parts[i], l);
        w += l;
    }
    s[w] = '\0';
    *out = s;
    return RP_OK;
}

void rp_text_buf_printf(rp_text_buf *b, const char *fmt, ...) {
    if (b->nomem) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->nomem = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->nomem = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}
