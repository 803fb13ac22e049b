/*
 * rp_config_format.c - the effective configuration as YAML, for
 * `reaperd --check-config`: every key of the table, in table order, nested
 * as in CONTRACT section 3, each followed by where its value came from.
 * Secrets are masked; the output loads back to the same values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_config.h"
#include "rp_config_internal.h"

#define RP_MASK "********"

/* Whether YAML can carry code point cp raw inside a quoted scalar on one
 * line: printable (YAML 1.1's c-printable, as libyaml checks) and not a
 * line break (NEL, LS, PS) nor a byte-order mark. */
static bool rp_yaml_raw(uint32_t cp) {
    if (cp == 0x85 || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff) return false;
    return (cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xd7ff) ||
           (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/* Writes s as a YAML scalar: single-quoted when every character can be
 * written raw (YAML's single quotes escape nothing but the quote), else
 * double-quoted with escapes. Values are valid UTF-8 (rp_config_set_*
 * refuses others); a stray invalid byte is escaped as \xNN all the same. */
static void rp_yaml_string(rp__cfg_buf *b, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s);
    bool raw = true;
    uint32_t cp;
    for (size_t i = 0, n; i < len && raw; i += n ? n : 1) {
        n = rp__cfg_utf8_next(u + i, len - i, &cp);
        raw = n > 0 && rp_yaml_raw(cp);
    }
    if (raw) {
        rp__cfg_buf_add(b, "'", 1);
        for (const char *c = s; *c; c++) {
            if (*c == '\'')
                rp__cfg_buf_add(b, "''", 2);
            else
                rp__cfg_buf_add(b, c, 1);
        }
        rp__cfg_buf_add(b, "'", 1);
        return;
    }
    rp__cfg_buf_add(b, "\"", 1);
    for (size_t i = 0, n; i < len; i += n) {
        n = rp__cfg_utf8_next(u + i, len - i, &cp);
        if (n == 0) {
            rp__cfg_buf_printf(b, "\\x%02x", u[i]);
            n = 1;
        } else if (cp == '"' || cp == '\\') {
            char esc[2] = {'\\', (char)cp};
            rp__cfg_buf_add(b, esc, 2);
        } else if (rp_yaml_raw(cp)) {
            rp__cfg_buf_add(b, s + i, n);
        } else if (cp <= 0xff) {
            rp__cfg_buf_printf(b, "\\x%02x", (unsigned)cp);
        } else if (cp <= 0xffff) {
            rp__cfg_buf_printf(b, "\\u%04x", (unsigned)cp);
        } else {
            rp__cfg_buf_printf(b, "\\U%08x", (unsigned)cp);
        }
    }
    rp__cfg_buf_add(b, "\"", 1);
}

static void rp_value(rp__cfg_buf *b, const rp_config *cfg, const rp__config_row *row) {
    const void *f = rp__config_cfield(cfg, row);
    switch (row->type) {
    case RP_CFG_TYPE_STRING: {
        const char *s = *(char *const *)f;
        if (s == NULL) s = "";
        if ((row->flags & RP__CFG_SECRET) && s[0] != '\0') s = RP_MASK;
        rp_yaml_string(b, s);
        break;
    }
    case RP_CFG_TYPE_PATTERN: {
        const rp_config_pattern *pat = f;
        rp_yaml_string(b, pat->text ? pat->text : "");
        break;
    }
    case RP_CFG_TYPE_INT:
        rp__cfg_buf_printf(b, "%lld", (long long)*(const int64_t *)f);
        break;
    case RP_CFG_TYPE_BOOL:
        rp__cfg_buf_printf(b, "%s", *(const bool *)f ? "true" : "false");
        break;
    case RP_CFG_TYPE_ENUM: {
        int v = *(const int *)f, n = 0;
        while (row->choices[n] != NULL) n++;
        if (v >= 0 && v < n)
            rp__cfg_buf_printf(b, "%s", row->choices[v]);
        else
            rp__cfg_buf_printf(b, "'invalid(%d)'", v);
        break;
    }
    case RP_CFG_TYPE_STRLIST: {
        const rp_config_strlist *l = f;
        rp__cfg_buf_add(b, "[", 1);
        for (size_t i = 0; i < l->n; i++) {
            if (i) rp__cfg_buf_add(b, ", ", 2);
            rp_yaml_string(b, l->items[i] ? l->items[i] : "");
        }
        rp__cfg_buf_add(b, "]", 1);
        break;
    }
    }
}

static void rp_origin_comment(rp__cfg_buf *b, const rp_config *cfg, rp_config_key_id id) {
    rp_config_origin o = cfg->origin[id];
    char where[512];
    switch (o.source) {
    case RP_CONFIG_FILE:
        rp__cfg_buf_printf(b, "  # file %s", rp_config_where(cfg, id, o, where, sizeof where));
        break;
    case RP_CONFIG_ENV: {
        char env[96];
        rp_config_env_name(id, env, sizeof env);
        rp__cfg_buf_printf(b, "  # env %s", env);
        break;
    }
    case RP_CONFIG_DEFAULT:
    default:
        rp__cfg_buf_printf(b, "  # default");
        break;
    }
}

/* The number of leading '.'-separated components a and b share, counting
 * only section components (not the last one of either). */
static size_t rp_common_sections(const char *a, const char *b) {
    size_t n = 0;
    for (;;) {
        const char *da = strchr(a, '.'), *db = strchr(b, '.');
        if (da == NULL || db == NULL) return n;
        if (da - a != db - b || memcmp(a, b, (size_t)(da - a)) != 0) return n;
        n++;
        a = da + 1;
        b = db + 1;
    }
}

rp_status rp_config_format(const rp_config *cfg, char **out, size_t *out_len) {
    rp__cfg_buf b = {0};
    rp__cfg_buf_printf(&b, "# reaper configuration in effect; after each value, where it "
                           "came from\n");
    const char *prev = "";
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const rp__config_row *row = rp__config_row_get((rp_config_key_id)i);
        const char *key = row->key;
        size_t shared = rp_common_sections(prev, key);
        /* Open the sections this key is in that the previous one was not. */
        const char *s = key;
        size_t depth = 0;
        for (const char *dot; (dot = strchr(s, '.')) != NULL; s = dot + 1, depth++) {
            if (depth < shared) continue;
            rp__cfg_buf_printf(&b, "%*s%.*s:\n", (int)(depth * 2), "", (int)(dot - s), s);
        }
        rp__cfg_buf_printf(&b, "%*s%s: ", (int)(depth * 2), "", s);
        rp_value(&b, cfg, row);
        rp_origin_comment(&b, cfg, row->id);
        rp__cfg_buf_add(&b, "\n", 1);
        prev = key;
    }
    if (b.nomem || b.s == NULL) {
        free(b.s);
        *out = NULL;
        if (out_len) *out_len = 0;
        return RP_ERR_NOMEM;
    }
    *out = b.s;
    if (out_len) *out_len = b.len;
    return RP_OK;
}
