/* msgpack: our own bounded reader into a jansson tree, and a writer from a
 * jansson tree through msgpack-c's packer.
 *
 * Why a reader of our own: msgpack-c's C unpacker (msgpack_unpack_next,
 * msgpack_unpacker) allocates count * sizeof(msgpack_object) from its zone as
 * soon as it reads an array or map header, before any entry arrives, so a
 * 5-byte header declaring 2^32-1 entries asks for tens of GiB; its C API has
 * no entry, string or depth limits (the C++ API's unpack_limit has no C
 * counterpart). This reader checks every declared size against the limits
 * and against the bytes that remain before it allocates anything, and it
 * never allocates more than one jansson value per input byte. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

typedef struct rp_mp_reader {
    const uint8_t *p;
    size_t n;
    size_t off;
    const rp_proto_limits *lim;
    size_t nodes;
    rp_proto_error *err;
} rp_mp_reader;

static json_t *rp_mp_value(rp_mp_reader *r, size_t depth);

static bool rp_mp_truncated(rp_mp_reader *r, size_t at) {
    rp__err_set(r->err, RP_ERR_BAD_REQUEST, "truncated msgpack: the body ends inside a value (at byte %zu)", at);
    return false;
}

/* Whether k more bytes are there; at is the start of the value. */
static bool rp_mp_need(rp_mp_reader *r, size_t k, size_t at) {
    if (r->n - r->off < k) return rp_mp_truncated(r, at);
    return true;
}

static uint64_t rp_mp_be(rp_mp_reader *r, size_t k) {
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++) v = (v << 8) | r->p[r->off + i];
    r->off += k;
    return v;
}

static json_t *rp_mp_made(rp_mp_reader *r, json_t *j) {
    if (j == NULL) rp__err_set(r->err, RP_ERR_NOMEM, "out of memory while decoding");
    return j;
}

static bool rp_mp_count_node(rp_mp_reader *r, size_t at) {
    if (++r->nodes > r->lim->max_nodes) {
        rp__err_set(r->err, RP_ERR_BAD_REQUEST, "more than %zu values in the document (at byte %zu)",
                    r->lim->max_nodes, at);
        return false;
    }
    return true;
}

static const char *rp_mp_type_name(uint8_t b) {
    if (b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)) return "an integer";
    if (b <= 0x8f || b == 0xde || b == 0xdf) return "a map";
    if (b <= 0x9f || b == 0xdc || b == 0xdd) return "an array";
    if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) return "a string";
    switch (b) {
    case 0xc0: return "null";
    case 0xc2:
    case 0xc3: return "a bool";
    case 0xca:
    case 0xcb: return "a float";
    case 0xc4:
    case 0xc5:
    case 0xc6: return "a binary value";
    default: return "an extension value";
    }
}

/* Length of the string whose header byte b was just read, or false. */
static bool rp_mp_str_len(rp_mp_reader *r, uint8_t b, size_t at, uint64_t *len) {
    size_t k;
    if (b >= 0xa0 && b <= 0xbf) {
        *len = b & 0x1f;
        return true;
    }
    k = b == 0xd9 ? 1 : b == 0xda ? 2 : 4;
    if (!rp_mp_need(r, k, at)) return false;
    *len = rp_mp_be(r, k);
    return true;
}

static bool rp_mp_is_str(uint8_t b) { return (b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb); }

/* Reads a string body of len bytes; *s points into the input. */
static bool rp_mp_str_body(rp_mp_reader *r, uint64_t len, size_t at, const char **s) {
    if (len > r->lim->max_string) {
        rp__err_set(r->err, RP_ERR_BAD_REQUEST,
                    "string of %llu bytes exceeds the limit of %zu (at byte %zu)",
                    (unsigned long long)len, r->lim->max_string, at);
        return false;
    }
    if (!rp_mp_need(r, (size_t)len, at)) return false;
    const uint8_t *p = r->p + r->off;
    size_t bad;
    if (!rp__utf8_valid(p, (size_t)len, &bad)) {
        rp__err_set(r->err, RP_ERR_BAD_REQUEST, "invalid UTF-8 in a string (at byte %zu)",
                    r->off + bad);
        return false;
    }
    const void *nul = memchr(p, 0, (size_t)len);
    if (nul != NULL) {
        rp__err_set(r->err, RP_ERR_BAD_REQUEST, "NUL byte in a string (at byte %zu)",
                    r->off + (size_t)((const uint8_t *)nul - p));
        return false;
    }
    *s = (const char *)p;
    r->off += (size_t)len;
    return true;
}

static bool rp_mp_container(rp_mp_reader *r, const char *what, uint64_t count, size_t per_entry,
                            size_t depth, size_t at) {
    if (depth + 1 > r->lim->max_depth) {
        rp__err_set(r->err, RP_ERR_BAD_REQUEST, "nesting deeper than %zu (at byte %zu)",
                    r->lim->max_depth, at);
        return false;
    }
    if (count > r->lim->max_entries) {
        rp__err_set(r->err, RP_ERR_BAD_REQUEST,
                    "%s of %llu entries exceeds the limit of %zu (at byte %zu)", what,
                    (unsigned long long)count, r->lim->max_entries, at);
        return false;
    }
    /* Every entry takes at least per_entry bytes: refuse early what cannot
     * be there, before building anything. */
    if (count > (r->n - r->off) / per_entry) return rp_mp_truncated(r, at);
    return true;
}

static json_t *rp_mp_array(rp_mp_reader *r, uint64_t count, size_t depth, size_t at) {
    if (!rp_mp_container(r, "array", count, 1, depth, at)) return NULL;
    json_t *a = rp_mp_made(r, json_array());
    if (a == NULL) return NULL;
    for (uint64_t i = 0; i < count; i++) {
        json_t *v = rp_mp_value(r, depth + 1);
        if (v == NULL || json_array_append_new(a, v) != 0) {
            if (v != NULL) rp__err_set(r->err, RP_ERR_NOMEM, "out of memory while decoding");
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *rp_mp_map(rp_mp_reader *r, uint64_t count, size_t depth, size_t at) {
    if (!rp_mp_container(r, "map", count, 2, depth, at)) return NULL;
    json_t *m = rp_mp_made(r, json_object());
    if (m == NULL) return NULL;
    for (uint64_t i = 0; i < count; i++) {
        size_t kat = r->off;
        uint64_t klen;
        const char *k;
        if (!rp_mp_count_node(r, kat) || !rp_mp_need(r, 1, kat)) goto fail;
        uint8_t b = r->p[r->off];
        if (!rp_mp_is_str(b)) {
            rp__err_set(r->err, RP_ERR_BAD_REQUEST, "map key is %s, not a string (at byte %zu)",
                        rp_mp_type_name(b), kat);
            goto fail;
        }
        r->off++;
        if (!rp_mp_str_len(r, b, kat, &klen) || !rp_mp_str_body(r, klen, kat, &k)) goto fail;
        if (json_object_getn(m, k, (size_t)klen) != NULL) {
            char q[RP_PROTO_QUOTE_MAX * 4 + 8];
            rp__quote(q, sizeof q, k, (size_t)klen);
            rp__err_set(r->err, RP_ERR_BAD_REQUEST, "duplicate key %s (at byte %zu)", q, kat);
            goto fail;
        }
        json_t *v = rp_mp_value(r, depth + 1);
        if (v == NULL) goto fail;
        if (json_object_setn_new_nocheck(m, k, (size_t)klen, v) != 0) {
            rp__err_set(r->err, RP_ERR_NOMEM, "out of memory while decoding");
            goto fail;
        }
    }
    return m;
fail:
    json_decref(m);
    return NULL;
}

static json_t *rp_mp_value(rp_mp_reader *r, size_t depth) {
    size_t at = r->off;
    if (!rp_mp_count_node(r, at) || !rp_mp_need(r, 1, at)) return NULL;
    uint8_t b = r->p[r->off++];

    if (b <= 0x7f) return rp_mp_made(r, json_integer(b));
    if (b >= 0xe0) return rp_mp_made(r, json_integer((int8_t)b));
    if (b <= 0x8f) return rp_mp_map(r, b & 0x0f, depth, at);
    if (b <= 0x9f) return rp_mp_array(r, b & 0x0f, depth, at);
    if (rp_mp_is_str(b)) {
        uint64_t len;
        const char *s;
        if (!rp_mp_str_len(r, b, at, &len) || !rp_mp_str_body(r, len, at, &s)) return NULL;
        return rp_mp_made(r, json_stringn_nocheck(s, (size_t)len));
    }
    switch (b) {
    case 0xc0: return json_null();
    case 0xc2: return json_false();
    case 0xc3: return json_true();
    case 0xc1:
        rp__err_set(r->err, RP_ERR_BAD_REQUEST, "invalid msgpack: byte 0xc1 is never used (at byte %zu)", at);
        return NULL;
    case 0xc4:
    case 0xc5:
    case 0xc6:
        rp__err_set(r->err, RP_ERR_BAD_REQUEST, "binary values (msgpack bin) are not allowed (at byte %zu)", at);
        return NULL;
    case 0xc7: case 0xc8: case 0xc9:
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        rp__err_set(r->err, RP_ERR_BAD_REQUEST,
                    "extension values (msgpack ext, timestamps) are not allowed (at byte %zu)", at);
        return NULL;
    case 0xca:
    case 0xcb: {
        size_t k = b == 0xca ? 4 : 8;
        double d;
        if (!rp_mp_need(r, k, at)) return NULL;
        uint64_t bits = rp_mp_be(r, k);
        if (k == 4) {
            uint32_t b32 = (uint32_t)bits;
            float f;
            memcpy(&f, &b32, sizeof f);
            d = f;
        } else {
            memcpy(&d, &bits, sizeof d);
        }
        if (!isfinite(d)) {
            rp__err_set(r->err, RP_ERR_BAD_REQUEST, "non-finite float (NaN or infinity) (at byte %zu)", at);
            return NULL;
        }
        return rp_mp_made(r, json_real(d));
    }
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
        size_t k = (size_t)1 << (b - 0xcc);
        if (!rp_mp_need(r, k, at)) return NULL;
        uint64_t u = rp_mp_be(r, k);
        if (u > (uint64_t)INT64_MAX) {
            rp__err_set(r->err, RP_ERR_BAD_REQUEST,
                        "number out of range: %llu is above 9223372036854775807 (at byte %zu)",
                        (unsigned long long)u, at);
            return NULL;
        }
        return rp_mp_made(r, json_integer((json_int_t)u));
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
        size_t k = (size_t)1 << (b - 0xd0);
        if (!rp_mp_need(r, k, at)) return NULL;
        uint64_t u = rp_mp_be(r, k);
        int64_t v;
        /* Sign-extend from k bytes. */
        if (k < 8 && (u & ((uint64_t)1 << (k * 8 - 1)))) u |= ~(uint64_t)0 << (k * 8);
        memcpy(&v, &u, sizeof v);
        return rp_mp_made(r, json_integer((json_int_t)v));
    }
    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf: {
        size_t k = (b == 0xdc || b == 0xde) ? 2 : 4;
        if (!rp_mp_need(r, k, at)) return NULL;
        uint64_t count = rp_mp_be(r, k);
        if (b == 0xdc || b == 0xdd) return rp_mp_array(r, count, depth, at);
        return rp_mp_map(r, count, depth, at);
    }
    default:
        break;
    }
    rp__err_set(r->err, RP_ERR_INTERNAL, "unhandled msgpack byte 0x%02x (at byte %zu)", b, at);
    return NULL;
}

json_t *rp__msgpack_parse(const uint8_t *p, size_t n, const rp_proto_limits *limits,
                          rp_proto_error *err) {
    rp_mp_reader r = {p, n, 0, limits, 0, err};
    json_t *root = rp_mp_value(&r, 0);
    if (root == NULL) return NULL;
    if (r.off != n) {
        rp__err_set(err, RP_ERR_BAD_REQUEST, "trailing bytes after the document: %zu more (at byte %zu)",
                    n - r.off, r.off);
        json_decref(root);
        return NULL;
    }
    return root;
}

/* ---- writer ------------------------------------------------------------- */

static int rp_mp_write(msgpack_packer *pk, const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        size_t klen;
        json_t *val;
        if (msgpack_pack_map(pk, json_object_size(v)) != 0) return -1;
        json_object_keylen_foreach((json_t *)v, key, klen, val) {
            if (msgpack_pack_str(pk, klen) != 0 || msgpack_pack_str_body(pk, key, klen) != 0 ||
                rp_mp_write(pk, val) != 0)
                return -1;
        }
        return 0;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *val;
        if (msgpack_pack_array(pk, json_array_size(v)) != 0) return -1;
        json_array_foreach(v, i, val) {
            if (rp_mp_write(pk, val) != 0) return -1;
        }
        return 0;
    }
    case JSON_STRING: {
        size_t len = json_string_length(v);
        if (msgpack_pack_str(pk, len) != 0) return -1;
        return msgpack_pack_str_body(pk, json_string_value(v), len);
    }
    case JSON_INTEGER: return msgpack_pack_int64(pk, (int64_t)json_integer_value(v));
    case JSON_REAL: return msgpack_pack_double(pk, json_real_value(v));
    case JSON_TRUE: return msgpack_pack_true(pk);
    case JSON_FALSE: return msgpack_pack_false(pk);
    case JSON_NULL: return msgpack_pack_nil(pk);
    }
    return -1;
}

rp_status rp__msgpack_write(const json_t *tree, rp_proto_buf *out) {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    /* The trailing NUL keeps the rp_proto_buf promise; it is not counted. */
    if (rp_mp_write(&pk, tree) != 0 || msgpack_sbuffer_write(&sb, "", 1) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return RP_ERR_NOMEM;
    }
    out->ptr = (uint8_t *)sb.data;
    out->len = sb.size - 1;
    return RP_OK;
}
