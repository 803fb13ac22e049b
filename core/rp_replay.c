#include "rp_replay.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_match.h"

static int rp_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Appends code point cp as UTF-8. */
static size_t rp_put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

rp_status rp_replay_origin_parse(const char *rendered, char **name, const char **why) {
    *name = NULL;
    *why = NULL;
    size_t len = rendered ? strlen(rendered) : 0;
    if (len < 2 || rendered[0] != '"') {
        *why = "the stored origin queue is not a quoted name";
        return RP_ERR_INVALID;
    }
    if (len >= 5 && strcmp(rendered + len - 4, "\"...") == 0) {
        *why = "the origin queue's name was cut when it was stored (over 200 characters)";
        return RP_ERR_INVALID;
    }
    if (rendered[len - 1] != '"') {
        *why = "the stored origin queue is not a quoted name";
        return RP_ERR_INVALID;
    }
    char *out = malloc(len); /* never longer than the rendering */
    if (out == NULL) return RP_ERR_NOMEM;
    size_t w = 0;
    const char *p = rendered + 1, *end = rendered + len - 1;
    while (p < end) {
        if (*p == '"') goto bad; /* an unescaped quote inside */
        if (*p != '\\') {
            out[w++] = *p++;
            continue;
        }
        if (p + 1 >= end) goto bad;
        char e = p[1];
        p += 2;
        switch (e) {
        case '"': out[w++] = '"'; break;
        case '\\': out[w++] = '\\'; break;
        case 'n': out[w++] = '\n'; break;
        case 'r': out[w++] = '\r'; break;
        case 't': out[w++] = '\t'; break;
        case 'x': {
            if (end - p < 2 || rp_hex(p[0]) < 0 || rp_hex(p[1]) < 0) goto bad;
            int byte = rp_hex(p[0]) * 16 + rp_hex(p[1]);
            if (byte == 0) goto nul;
            out[w++] = (char)byte;
            p += 2;
            break;
        }
        case 'u': {
            if (end - p < 4) goto bad;
            uint32_t cp = 0;
            for (int i = 0; i < 4; i++) {
                int h = rp_hex(p[i]);
                if (h < 0) goto bad;
                cp = cp * 16 + (uint32_t)h;
            }
            p += 4;
            if (cp == 0) goto nul;
            w += rp_put_utf8(out + w, cp);
            break;
        }
        default: goto bad;
        }
    }
    out[w] = '\0';
    if (w == 0 || w > 255) {
        free(out);
        *why = w == 0 ? "the origin queue's name is empty"
                      : "the origin queue's name is longer than 255 bytes";
        return RP_ERR_INVALID;
    }
    *name = out;
    return RP_OK;
nul:
    free(out);
    *why = "the origin queue's name holds a NUL character";
    return RP_ERR_INVALID;
bad:
    free(out);
    *why = "the stored origin queue is not a well-formed quoted name";
    return RP_ERR_INVALID;
}

rp_status rp_replay_decide(const char *rendered_origin, bool body_truncated,
                           const pcre2_code *owned, char **queue, const char **why) {
    *queue = NULL;
    *why = NULL;
    if (body_truncated) {
        *why = "the message's body (or its properties) was not stored whole, so it cannot be "
               "replayed byte for byte";
        return RP_ERR_CONFLICT;
    }
    char *name = NULL;
    rp_status st = rp_replay_origin_parse(rendered_origin, &name, why);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) return RP_ERR_CONFLICT;
    bool is_owned = false;
    if (owned == NULL || rp_match_name(owned, name, &is_owned) != RP_OK || !is_owned) {
        free(name);
        *why = "the origin queue named by the message's (untrusted) dead-letter headers is not "
               "owned by reaper (owned_queue_pattern): reaper replays only to queues it owns";
        return RP_ERR_CONFLICT;
    }
    *queue = name;
    return RP_OK;
}

bool rp_replay_expiration_valid(const char *s, size_t len) {
    if (s == NULL || len == 0 || len > 10) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v <= UINT64_C(4294967295);
}

bool rp_replay_reserved_queue(const char *queue, const char *const *own, size_t n) {
    if (queue == NULL) return false;
    if (strncmp(queue, "amq.", 4) == 0) return true;
    for (size_t i = 0; i < n; i++)
        if (own[i] != NULL && strcmp(own[i], queue) == 0) return true;
    return false;
}
