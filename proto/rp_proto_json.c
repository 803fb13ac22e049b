/* JSON: a bounded front for jansson, the limit walk shared by both
 * encodings, the writers and the generic decode entry points.
 *
 * Memory: the body is at most limits->max_body bytes before jansson sees it
 * and jansson's memory is linear in its input, so a hostile body cannot make
 * it allocate without bound. Depth is checked by a scan of the bytes before
 * jansson's recursive parser runs (its own cap is JSON_PARSER_MAX_DEPTH, 2048);
 * strings, entries and nodes are checked on the tree it builds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

/* Copies jansson's error text into dst, escaping anything not printable. */
static void rp_json_clean(char *dst, size_t size, const char *src) {
    const uint8_t *p = (const uint8_t *)src;
    size_t n = strlen(src), i = 0, o = 0;
    while (i < n) {
        size_t k = p[i] < 0x80 ? 1 : rp__utf8_seq(p + i, n - i);
        if (k == 0 || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
            if (o + 5 > size) break;
            snprintf(dst + o, size - o, "\\x%02x", p[i]);
            o += 4;
            i++;
            continue;
        }
        if (o + k + 1 > size) break;
        memcpy(dst + o, p + i, k);
        o += k;
        i += k;
    }
    dst[o] = '\0';
}

static bool rp_json_prescan(const uint8_t *p, size_t n, const rp_proto_limits *lim,
                            rp_proto_error *err) {
    size_t depth = 0;
    bool in_str = false, esc = false;
    if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf) {
        rp__err_set(err, RP_ERR_BAD_REQUEST, "the JSON body starts with a byte order mark (not allowed)");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (in_str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > lim->max_depth) {
                rp__err_set(err, RP_ERR_BAD_REQUEST, "nesting deeper than %zu (at byte %zu)",
                            lim->max_depth, i);
                return false;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return true;
}

/* The key jansson quotes in "duplicate object key near '\"k\"'". */
static void rp_json_dup_key(char *dst, size_t size, const char *text) {
    const char *a = strstr(text, "near '");
    const char *b = strrchr(text, '\'');
    if (a == NULL || b == NULL || b < a + 6) {
        snprintf(dst, size, "(unknown)");
        return;
    }
    a += 6;
    if (b - a >= 2 && a[0] == '"' && b[-1] == '"') {
        a++;
        b--;
    }
    rp__quote(dst, size, a, (size_t)(b - a));
}

static void rp_json_error(const json_error_t *je, rp_proto_error *err) {
    char text[JSON_ERROR_TEXT_LENGTH * 4 + 1];
    char where[64];
    snprintf(where, sizeof where, "(at line %d, column %d)", je->line, je->column);
    switch (json_error_code(je)) {
    case json_error_out_of_memory:
        rp__err_set(err, RP_ERR_NOMEM, "out of memory while decoding");
        return;
    case json_error_invalid_utf8:
        rp__err_set(err, RP_ERR_BAD_REQUEST, "invalid UTF-8 in the JSON body %s", where);
        return;
    case json_error_premature_end_of_input:
        rp__err_set(err, RP_ERR_BAD_REQUEST, "truncated JSON: the body ends inside a value %s", where);
        return;
    case json_error_end_of_input_expected:
        rp__err_set(err, RP_ERR_BAD_REQUEST, "trailing bytes after the document %s", where);
        return;
    case json_error_null_character:
    case json_error_null_byte_in_key:
        rp__err_set(err, RP_ERR_BAD_REQUEST, "NUL byte in a string %s", where);
        return;
    case json_error_duplicate_key:
        rp_json_dup_key(text, sizeof text, je->text);
        rp__err_set(err, RP_ERR_BAD_REQUEST, "duplicate key %s %s", text, where);
        return;
    case json_error_numeric_overflow:
        rp_json_clean(text, sizeof text, je->text);
        rp__err_set(err, RP_ERR_BAD_REQUEST, "number out of range: %s %s", text, where);
        return;
    case json_error_stack_overflow:
        rp__err_set(err, RP_ERR_BAD_REQUEST, "nesting too deep %s", where);
        return;
    default:
        rp_json_clean(text, sizeof text, je->text);
        rp__err_set(err, RP_ERR_BAD_REQUEST, "invalid JSON: %s %s", text, where);
        return;
    }
}

json_t *rp__json_parse(const uint8_t *p, size_t n, const rp_proto_limits *limits,
                       rp_proto_error *err) {
    json_error_t je;
    if (!rp_json_prescan(p, n, limits, err)) return NULL;
    json_t *root = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (root == NULL) {
        rp_json_error(&je, err);
        return NULL;
    }
    if (rp__tree_check(root, limits, err) != RP_OK) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* ---- the limit walk ----------------------------------------------------- */

typedef struct rp_walk {
    const rp_proto_limits *lim;
    size_t nodes;
    rp_proto_error *err;
} rp_walk;

static rp_status rp_walk_string(rp_walk *w, const char *s, size_t len) {
    if (len > w->lim->max_string)
        return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "string of %zu bytes exceeds the limit of %zu",
                           len, w->lim->max_string);
    if (!rp__utf8_valid((const uint8_t *)s, len, NULL))
        return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "invalid UTF-8 in a string");
    if (memchr(s, 0, len) != NULL)
        return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "NUL byte in a string");
    return RP_OK;
}

static rp_status rp_walk_node(rp_walk *w) {
    if (++w->nodes > w->lim->max_nodes)
        return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "more than %zu values in the document",
                           w->lim->max_nodes);
    return RP_OK;
}

static rp_status rp_walk_value(rp_walk *w, const json_t *v, size_t depth) {
    rp_status st = rp_walk_node(w);
    if (st != RP_OK) return st;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
    case JSON_ARRAY: {
        bool map = json_is_object(v);
        size_t n = map ? json_object_size(v) : json_array_size(v);
        if (depth + 1 > w->lim->max_depth)
            return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "nesting deeper than %zu",
                               w->lim->max_depth);
        if (n > w->lim->max_entries)
            return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "%s of %zu entries exceeds the limit of %zu",
                               map ? "map" : "array", n, w->lim->max_entries);
        if (map) {
            const char *key;
            size_t klen;
            json_t *val;
            json_object_keylen_foreach((json_t *)v, key, klen, val) {
                if ((st = rp_walk_node(w)) != RP_OK || (st = rp_walk_string(w, key, klen)) != RP_OK ||
                    (st = rp_walk_value(w, val, depth + 1)) != RP_OK)
                    return st;
            }
        } else {
            size_t i;
            json_t *val;
            json_array_foreach(v, i, val) {
                if ((st = rp_walk_value(w, val, depth + 1)) != RP_OK) return st;
            }
        }
        return RP_OK;
    }
    case JSON_STRING:
        return rp_walk_string(w, json_string_value(v), json_string_length(v));
    case JSON_REAL:
        if (!isfinite(json_real_value(v)))
            return rp__err_set(w->err, RP_ERR_BAD_REQUEST, "non-finite float (NaN or infinity)");
        return RP_OK;
    default:
        return RP_OK;
    }
}

rp_status rp__tree_check(const json_t *tree, const rp_proto_limits *limits, rp_proto_error *err) {
    rp_walk w = {limits, 0, err};
    if (tree == NULL) return rp__err_set(err, RP_ERR_INVALID, "no tree");
    return rp_walk_value(&w, tree, 0);
}

/* ---- entry points ------------------------------------------------------- */

rp_status rp__encoding_for(rp_bytes ct, rp_encoding *enc, rp_proto_error *err) {
    if (rp_encoding_parse(ct, enc) == RP_OK) return RP_OK;
    char q[RP_PROTO_QUOTE_MAX * 4 + 8];
    rp__quote(q, sizeof q, (const char *)ct.ptr, ct.len);
    return rp__err_set(err, RP_ERR_BAD_REQUEST,
                       "content_type %s is not supported (use " RP_PROTO_CT_MSGPACK
                       " or " RP_PROTO_CT_JSON ")",
                       q);
}

json_t *rp__parse(rp_bytes body, rp_encoding enc, const rp_proto_limits *limits,
                  rp_proto_error *err) {
    if (body.len == 0 || body.ptr == NULL) {
        rp__err_set(err, RP_ERR_BAD_REQUEST, "empty body (expected a map)");
        return NULL;
    }
    if (body.len > limits->max_body) {
        rp__err_set(err, RP_ERR_BAD_REQUEST, "body of %zu bytes exceeds the limit of %zu",
                    body.len, limits->max_body);
        return NULL;
    }
    if (enc == RP_ENC_JSON) return rp__json_parse(body.ptr, body.len, limits, err);
    return rp__msgpack_parse(body.ptr, body.len, limits, err);
}

json_t *rp_proto_to_json(rp_bytes body, rp_bytes content_type, const rp_proto_limits *limits,
                         rp_proto_error *err) {
    rp_encoding enc;
    if (err != NULL) rp_proto_error_init(err);
    if (limits == NULL) limits = &rp_proto_reply_limits;
    if (rp__encoding_for(content_type, &enc, err) != RP_OK) return NULL;
    return rp__parse(body, enc, limits, err);
}

/* ---- writers ------------------------------------------------------------ */

rp_status rp__json_write(const json_t *tree, size_t flags, rp_proto_buf *out) {
    flags |= JSON_ENCODE_ANY;
    /* json_dumpb twice rather than json_dumps: the buffer is then ours to
     * free() whatever allocator jansson was given. */
    size_t n = json_dumpb(tree, NULL, 0, flags);
    if (n == 0) return RP_ERR_NOMEM;
    uint8_t *p = malloc(n + 1);
    if (p == NULL) return RP_ERR_NOMEM;
    if (json_dumpb(tree, (char *)p, n, flags) != n) {
        free(p);
        return RP_ERR_INTERNAL;
    }
    p[n] = '\0';
    out->ptr = p;
    out->len = n;
    return RP_OK;
}

rp_status rp_proto_encode_json(const json_t *tree, rp_encoding enc, rp_proto_buf *out) {
    if (out == NULL || tree == NULL) return RP_ERR_INVALID;
    rp_proto_buf_cleanup(out);
    if (enc == RP_ENC_JSON) return rp__json_write(tree, JSON_COMPACT, out);
    if (enc == RP_ENC_MSGPACK) return rp__msgpack_write(tree, out);
    return RP_ERR_INVALID;
}

rp_status rp__finish(json_t *tree, rp_encoding enc, rp_proto_buf *out) {
    rp_status st;
    rp_proto_error err;
    if (out == NULL) {
        json_decref(tree);
        return RP_ERR_INVALID;
    }
    rp_proto_buf_cleanup(out);
    if (tree == NULL) return RP_ERR_NOMEM;
    if ((int)enc < 0 || enc >= RP_ENC_COUNT_) {
        json_decref(tree);
        return RP_ERR_INVALID;
    }
    if (rp__tree_check(tree, &rp_proto_reply_limits, &err) != RP_OK) {
        json_decref(tree);
        return RP_ERR_TOO_LARGE;
    }
    st = rp_proto_encode_json(tree, enc, out);
    json_decref(tree);
    if (st == RP_OK && out->len > rp_proto_reply_limits.max_body) {
        rp_proto_buf_cleanup(out);
        return RP_ERR_TOO_LARGE;
    }
    return st;
}
