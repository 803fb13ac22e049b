#include "table.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "rp_utf8.h"

struct rp_table {
    size_t ncols;
    size_t nrows, cap;      /* rows after the headings (row 0) */
    char **cells;           /* (nrows + 1) * ncols, shown form */
    size_t *chars;          /* each cell's width in characters */
};

/* The number of characters of s (a byte that is not UTF-8 counts as one). */
static size_t rp_chars(const char *s, size_t len) {
    size_t chars = 0;
    for (size_t i = 0; i < len; chars++) {
        uint32_t cp;
        size_t n = rp_utf8_next((const uint8_t *)s + i, len - i, &cp);
        i += n ? n : 1;
    }
    return chars;
}

/* The shown form: escaped (escape.h: controls and bad bytes as \xHH
 * escapes), cut to RP_TABLE_MAX_WIDTH characters with "..." at the end. */
static char *rp_shown(const char *raw, size_t *width) {
    char *esc = rp_ctl_escaped(raw);
    if (esc == NULL) return NULL;
    const char *s = esc;
    size_t len = strlen(s);
    size_t keep = rp_chars(s, len);
    bool cut = keep > RP_TABLE_MAX_WIDTH;
    if (cut) keep = RP_TABLE_MAX_WIDTH - 3;
    char *out = malloc(len + 4);
    if (out == NULL) {
        free(esc);
        return NULL;
    }
    size_t w = 0, i = 0;
    for (size_t chars = 0; chars < keep; chars++) {
        uint32_t cp;
        size_t n = rp_utf8_next((const uint8_t *)s + i, len - i, &cp);
        if (n == 0 || rp_utf8_is_control(cp)) {
            out[w++] = '?';
            i += n ? n : 1;
        } else {
            memcpy(out + w, s + i, n);
            w += n;
            i += n;
        }
    }
    if (cut) {
        memcpy(out + w, "...", 3);
        w += 3;
    }
    out[w] = '\0';
    *width = cut ? RP_TABLE_MAX_WIDTH : keep;
    free(esc);
    return out;
}

/* Room for one more row. */
static bool rp_reserve(rp_table *t) {
    if (t->nrows + 1 < t->cap) return true;
    size_t cap = t->cap ? t->cap * 2 : 16;
    char **c = realloc(t->cells, cap * t->ncols * sizeof *c);
    if (c == NULL) return false;
    t->cells = c;
    size_t *w = realloc(t->chars, cap * t->ncols * sizeof *w);
    if (w == NULL) return false;
    t->chars = w;
    t->cap = cap;
    return true;
}

rp_table *rp_table_new(size_t ncols, const char *const *headings) {
    rp_table *t = calloc(1, sizeof *t);
    if (t == NULL || ncols == 0) {
        free(t);
        return NULL;
    }
    t->ncols = ncols;
    if (!rp_reserve(t)) {
        rp_table_free(t);
        return NULL;
    }
    for (size_t c = 0; c < ncols; c++) {
        t->cells[c] = rp_shown(headings[c], &t->chars[c]);
        if (t->cells[c] == NULL) {
            for (size_t k = 0; k < c; k++) free(t->cells[k]);
            free(t->cells);
            free(t->chars);
            free(t);
            return NULL;
        }
    }
    return t;
}

bool rp_table_add(rp_table *t, const char *const *cells) {
    if (!rp_reserve(t)) return false;
    size_t base = (t->nrows + 1) * t->ncols;
    for (size_t c = 0; c < t->ncols; c++) {
        t->cells[base + c] = rp_shown(cells[c], &t->chars[base + c]);
        if (t->cells[base + c] == NULL) {
            for (size_t k = 0; k < c; k++) free(t->cells[base + k]);
            return false;
        }
    }
    t->nrows++;
    return true;
}

void rp_table_print(const rp_table *t, FILE *f, const char *indent) {
    size_t *width = calloc(t->ncols, sizeof *width);
    if (width == NULL) return;
    for (size_t r = 0; r <= t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++)
            if (t->chars[r * t->ncols + c] > width[c]) width[c] = t->chars[r * t->ncols + c];
    for (size_t r = 0; r <= t->nrows; r++) {
        fputs(indent ? indent : "", f);
        for (size_t c = 0; c < t->ncols; c++) {
            size_t i = r * t->ncols + c;
            fputs(t->cells[i], f);
            if (c + 1 == t->ncols) break;
            for (size_t k = t->chars[i]; k < width[c] + 2; k++) fputc(' ', f);
        }
        fputc('\n', f);
    }
    free(width);
}

void rp_table_free(rp_table *t) {
    if (t == NULL) return;
    size_t n = t->cells ? (t->nrows + 1) * t->ncols : 0;
    for (size_t i = 0; i < n; i++) free(t->cells[i]);
    free(t->cells);
    free(t->chars);
    free(t);
}
