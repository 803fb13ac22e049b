/*
 * rp_config_problems.c - the list of configuration problems, and the small
 * text helpers the config files share (quoting, edit distance, a growing
 * buffer).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_config.h"
#include "rp_config_internal.h"

void rp_config_problems_init(rp_config_problems *p) { memset(p, 0, sizeof *p); }

void rp_config_problems_cleanup(rp_config_problems *p) {
    if (p == NULL) return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].key);
        free(p->items[i].where);
        free(p->items[i].message);
    }
    free(p->items);
    memset(p, 0, sizeof *p);
}

size_t rp_config_problems_count(const rp_config_problems *p) {
    return p ? p->n + p->omitted : 0;
}

void rp_config_problems_move(rp_config_problems *to, rp_config_problems *from) {
    if (to == NULL || from == NULL || to == from) return;
    for (size_t i = 0; i < from->n; i++) {
        rp_config_problem *pr = &from->items[i];
        bool kept = false;
        if (to->n < RP_CONFIG_PROBLEMS_MAX) {
            if (to->n == to->cap) {
                size_t ncap = to->cap ? to->cap * 2 : 8;
                rp_config_problem *items = realloc(to->items, ncap * sizeof *items);
                if (items != NULL) {
                    to->items = items;
                    to->cap = ncap;
                }
            }
            if (to->n < to->cap) {
                to->items[to->n++] = *pr;
                kept = true;
            } else {
                to->nomem = true;
            }
        } else {
            to->omitted++;
        }
        if (!kept) {
            free(pr->key);
            free(pr->where);
            free(pr->message);
        }
    }
    to->omitted += from->omitted;
    to->nomem = to->nomem || from->nomem;
    free(from->items);
    memset(from, 0, sizeof *from);
}

static void rp_problems_vadd(rp_config_problems *p, const char *key, const char *where,
                             const char *fmt, va_list ap) RP_PRINTF(4, 0);
static void rp_problems_vadd(rp_config_problems *p, const char *key, const char *where,
                             const char *fmt, va_list ap) {
    if (p == NULL) return;
    if (p->n >= RP_CONFIG_PROBLEMS_MAX) {
        p->omitted++;
        return;
    }
    if (p->n == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 8;
        rp_config_problem *items = realloc(p->items, ncap * sizeof *items);
        if (items == NULL) {
            p->nomem = true;
            return;
        }
        p->items = items;
        p->cap = ncap;
    }
    char text[1024];
    vsnprintf(text, sizeof text, fmt, ap);

    rp__cfg_buf msg = {0};
    if (where != NULL && where[0] != '\0') rp__cfg_buf_printf(&msg, "%s: ", where);
    if (key != NULL) rp__cfg_buf_printf(&msg, "%s: ", key);
    rp__cfg_buf_add(&msg, text, strlen(text));

    rp_config_problem *pr = &p->items[p->n];
    pr->key = key ? strdup(key) : NULL;
    pr->where = where && where[0] ? strdup(where) : NULL;
    pr->message = msg.s;
    if (msg.nomem || msg.s == NULL || (key && pr->key == NULL) ||
        (where && where[0] && pr->where == NULL)) {
        free(pr->key);
        free(pr->where);
        free(pr->message);
        p->nomem = true;
        return;
    }
    p->n++;
}

void rp_config_problems_add(rp_config_problems *p, const char *key, const char *where,
                            const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rp_problems_vadd(p, key, where, fmt, ap);
    va_end(ap);
}

void rp__cfg_problem_at(rp_config_problems *p, const rp_config *cfg, rp_config_key_id id,
                        rp_config_origin origin, const char *fmt, ...) {
    char where[512];
    rp_config_where(cfg, id, origin, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    rp_problems_vadd(p, rp_config_key_name(id), where, fmt, ap);
    va_end(ap);
}

void rp__cfg_problem(rp_config_problems *p, const rp_config *cfg, rp_config_key_id id,
                     const char *fmt, ...) {
    char where[512];
    rp_config_where(cfg, id, cfg->origin[id], where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    rp_problems_vadd(p, rp_config_key_name(id), where, fmt, ap);
    va_end(ap);
}

static const char *rp_quote(const char *text, size_t len, char *buf, size_t cap, bool raw) {
    static const char hex[] = "0123456789abcdef";
    const char q = raw ? '\'' : '"';
    size_t o = 0;
    const size_t shown_max = 60;
    if (cap < 8) {
        if (cap) buf[0] = '\0';
        return buf;
    }
    buf[o++] = q;
    size_t i = 0;
    for (; i < len && i < shown_max; i++) {
        unsigned char c = (unsigned char)text[i];
        char esc[5];
        size_t el;
        if (!raw && (c == '"' || c == '\\')) {
            esc[0] = '\\';
            esc[1] = (char)c;
            el = 2;
        } else if (c < 0x20 || c == 0x7f) {
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[c >> 4];
            esc[3] = hex[c & 15];
            el = 4;
        } else {
            esc[0] = (char)c;
            el = 1;
        }
        if (o + el + 5 > cap) break; /* room for ...", NUL */
        memcpy(buf + o, esc, el);
        o += el;
    }
    if (i < len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = q;
    buf[o] = '\0';
    return buf;
}

const char *rp__cfg_quote(const char *text, size_t len, char *buf, size_t cap) {
    return rp_quote(text, len, buf, cap, false);
}

const char *rp__cfg_quote_pattern(const char *text, size_t len, char *buf, size_t cap) {
    return rp_quote(text, len, buf, cap, true);
}

size_t rp__cfg_distance(const char *a, size_t alen, const char *b, size_t blen,
                        size_t limit) {
    enum { MAXL = 96 };
    if (alen > MAXL || blen > MAXL) return limit + 1;
    size_t diff = alen > blen ? alen - blen : blen - alen;
    if (diff > limit) return limit + 1;
    /* Three rows of the optimal-string-alignment table. */
    size_t r0[MAXL + 1], r1[MAXL + 1], r2[MAXL + 1];
    size_t *pp = r0, *prev = r1, *cur = r2;
    for (size_t j = 0; j <= blen; j++) prev[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        cur[0] = i;
        size_t row_min = cur[0];
        for (size_t j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t v = prev[j] + 1;
            if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
            if (prev[j - 1] + cost < v) v = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            cur[j] = v;
            if (v < row_min) row_min = v;
        }
        if (row_min > limit) return limit + 1;
        size_t *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[blen] > limit ? limit + 1 : prev[blen];
}

size_t rp__cfg_utf8_next(const unsigned char *s, size_t len, uint32_t *cp) {
    if (len == 0) return 0;
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 2, v = c & 0x1fu, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, v = c & 0x0fu, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, v = c & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (len < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return n;
}

bool rp__cfg_utf8_valid(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t n = rp__cfg_utf8_next(u + i, len - i, &cp);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

void rp__cfg_buf_add(rp__cfg_buf *b, const char *text, size_t len) {
    if (b->nomem) return;
    if (b->len + len + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 256;
        while (ncap < b->len + len + 1) ncap *= 2;
        char *s = realloc(b->s, ncap);
        if (s == NULL) {
            b->nomem = true;
            return;
        }
        b->s = s;
        b->cap = ncap;
    }
    memcpy(b->s + b->len, text, len);
    b->len += len;
    b->s[b->len] = '\0';
}

void rp__cfg_buf_printf(rp__cfg_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->nomem = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        rp__cfg_buf_add(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big == NULL) {
        b->nomem = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rp__cfg_buf_add(b, big, (size_t)n);
    free(big);
}
