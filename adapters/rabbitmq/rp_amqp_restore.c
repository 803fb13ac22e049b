/* AMQP properties and headers to JSON and back, losslessly
 * (rp_amqp_restore.h). */
#include "rp_amqp_restore.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_utf8.h"

#define RP_TAG "$amqp"

/* ---- base64 -------------------------------------------------------------- */

static const char rp_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *rp_b64_encode(const uint8_t *p, size_t n) {
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (out == NULL) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        out[w++] = rp_b64[(v >> 18) & 63];
        out[w++] = rp_b64[(v >> 12) & 63];
        out[w++] = i + 1 < n ? rp_b64[(v >> 6) & 63] : '=';
        out[w++] = i + 2 < n ? rp_b64[v & 63] : '=';
    }
    out[w] = '\0';
    return out;
}

static int rp_b64_val(char c) {
    const char *p = c ? strchr(rp_b64, c) : NULL;
    return p ? (int)(p - rp_b64) : -1;
}

/* Decodes s into pool memory. False on bad input or no memory. */
static bool rp_b64_decode(amqp_pool_t *pool, const char *s, amqp_bytes_t *out) {
    size_t n = strlen(s);
    if (n % 4 != 0) return false;
    size_t len = n / 4 * 3;
    if (n >= 4 && s[n - 1] == '=') len--;
    if (n >= 4 && s[n - 2] == '=') len--;
    uint8_t *buf = amqp_pool_alloc(pool, len ? len : 1);
    if (buf == NULL) return false;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = s[i + k] == '=' && i + 4 == n && k >= 2 ? 0 : rp_b64_val(s[i + k]);
            if (v[k] < 0) return false;
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if (w < len) buf[w++] = (uint8_t)(x >> 16);
        if (w < len) buf[w++] = (uint8_t)(x >> 8);
        if (w < len) buf[w++] = (uint8_t)x;
    }
    out->bytes = buf;
    out->len = len;
    return true;
}

/* ---- capture: AMQP to JSON ----------------------------------------------- */

static bool rp_plain_text(amqp_bytes_t b) {
    return memchr(b.bytes, 0, b.len) == NULL && rp_utf8_valid(b.bytes, b.len);
}

static json_t *rp_tagged(const char *kind, json_t *value) {
    if (value == NULL) return NULL;
    json_t *o = json_object();
    if (o == NULL || json_object_set_new(o, RP_TAG, json_string(kind)) != 0 ||
        json_object_set_new(o, "value", value) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *rp_text_json(amqp_bytes_t b) {
    if (b.len == 0) return json_string("");
    if (rp_plain_text(b)) return json_stringn(b.bytes, b.len);
    char *enc = rp_b64_encode(b.bytes, b.len);
    json_t *v = enc ? rp_tagged("S", json_string(enc)) : NULL;
    free(enc);
    return v;
}

/* Whether a real survives as a plain JSON number: jsonb keeps a number as
 * numeric and prints it without an exponent, so 1e17 would come back as
 * the integer 100000000000000000 (another kind, or too big for jansson),
 * and -0.0 as 0.0; NaN and the infinities are no JSON number at all. Below
 * 1e15 jansson writes a real with a fraction or an exponent that PostgreSQL
 * prints back as a fraction. */
static bool rp_plain_real(double v) {
    return isfinite(v) && fabs(v) < 1e15 && !(v == 0 && signbit(v));
}

/* Any other real: its text, exact when read back with strtod ("nan",
 * "inf", "-inf" for those). */
static json_t *rp_real_text(double v, int digits) {
    char buf[40];
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v < 0 ? "-inf" : "inf");
    snprintf(buf, sizeof buf, "%.*g", digits, v);
    return json_string(buf);
}

static json_t *rp_table_json(const amqp_table_t *t, int depth, rp_status *st);

/* depth: how many arrays and tables hold f (0 for a header's value). */
static json_t *rp_field_json(const amqp_field_value_t *f, int depth, rp_status *st) {
    if ((f->kind == AMQP_FIELD_KIND_ARRAY || f->kind == AMQP_FIELD_KIND_TABLE) &&
        depth >= RP_AMQP_RESTORE_MAX_DEPTH) {
        *st = RP_ERR_INVALID; /* deeper than anything stored or replayed */
        return NULL;
    }
    switch (f->kind) {
    case AMQP_FIELD_KIND_BOOLEAN: return json_boolean(f->value.boolean);
    case AMQP_FIELD_KIND_I8: return rp_tagged("b", json_integer(f->value.i8));
    case AMQP_FIELD_KIND_U8: return rp_tagged("B", json_integer(f->value.u8));
    case AMQP_FIELD_KIND_I16: return rp_tagged("s", json_integer(f->value.i16));
    case AMQP_FIELD_KIND_U16: return rp_tagged("u", json_integer(f->value.u16));
    case AMQP_FIELD_KIND_I32: return rp_tagged("I", json_integer(f->value.i32));
    case AMQP_FIELD_KIND_U32: return rp_tagged("i", json_integer(f->value.u32));
    case AMQP_FIELD_KIND_I64: return json_integer(f->value.i64);
    case AMQP_FIELD_KIND_U64:
        if (f->value.u64 <= (uint64_t)INT64_MAX)
            return rp_tagged("L", json_integer((json_int_t)f->value.u64));
        else {
            char buf[24];
            snprintf(buf, sizeof buf, "%" PRIu64, f->value.u64);
            return rp_tagged("L", json_string(buf));
        }
    case AMQP_FIELD_KIND_F32:
        return rp_tagged("f", rp_plain_real(f->value.f32) ? json_real(f->value.f32)
                                                          : rp_real_text(f->value.f32, 9));
    case AMQP_FIELD_KIND_F64:
        if (rp_plain_real(f->value.f64)) return json_real(f->value.f64);
        return rp_tagged("d", rp_real_text(f->value.f64, 17));
    case AMQP_FIELD_KIND_TIMESTAMP:
        /* uint64 on the wire; a value above INT64_MAX is kept as text. */
        if (f->value.u64 <= (uint64_t)INT64_MAX)
            return rp_tagged("T", json_integer((json_int_t)f->value.u64));
        else {
            char buf[24];
            snprintf(buf, sizeof buf, "%" PRIu64, f->value.u64);
            return rp_tagged("T", json_string(buf));
        }
    case AMQP_FIELD_KIND_DECIMAL: {
        json_t *d = json_pack("{s:i,s:I}", "decimals", (int)f->value.decimal.decimals, "value",
                              (json_int_t)f->value.decimal.value);
        return rp_tagged("D", d);
    }
    case AMQP_FIELD_KIND_UTF8: return rp_text_json(f->value.bytes);
    case AMQP_FIELD_KIND_BYTES: {
        char *enc = rp_b64_encode(f->value.bytes.bytes, f->value.bytes.len);
        json_t *v = enc ? rp_tagged("x", json_string(enc)) : NULL;
        free(enc);
        return v;
    }
    case AMQP_FIELD_KIND_VOID: return json_null();
    case AMQP_FIELD_KIND_ARRAY: {
        json_t *a = json_array();
        for (int i = 0; a && i < f->value.array.num_entries; i++) {
            json_t *e = rp_field_json(&f->value.array.entries[i], depth + 1, st);
            if (e == NULL || json_array_append_new(a, e) != 0) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case AMQP_FIELD_KIND_TABLE: {
        json_t *o = rp_table_json(&f->value.table, depth + 1, st);
        if (o != NULL && json_object_get(o, RP_TAG) != NULL) return rp_tagged("F", o);
        return o;
    }
    default:
        *st = RP_ERR_INVALID;
        return NULL;
    }
}

static json_t *rp_table_json(const amqp_table_t *t, int depth, rp_status *st) {
    json_t *o = json_object();
    if (o == NULL) return NULL;
    for (int i = 0; i < t->num_entries; i++) {
        const amqp_table_entry_t *e = &t->entries[i];
        if (!rp_plain_text(e->key)) {
            *st = RP_ERR_INVALID;
            json_decref(o);
            return NULL;
        }
        json_t *v = rp_field_json(&e->value, depth, st);
        if (v == NULL || json_object_setn_new(o, e->key.bytes, e->key.len, v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

typedef struct rp_str_prop {
    const char *name;
    amqp_flags_t flag;
    size_t offset;
} rp_str_prop;

#define RP_SP(n, F) {#n, AMQP_BASIC_##F##_FLAG, offsetof(amqp_basic_properties_t, n)}
static const rp_str_prop rp_str_props[] = {
    RP_SP(content_type, CONTENT_TYPE),     RP_SP(content_encoding, CONTENT_ENCODING),
    RP_SP(correlation_id, CORRELATION_ID), RP_SP(reply_to, REPLY_TO),
    RP_SP(expiration, EXPIRATION),         RP_SP(message_id, MESSAGE_ID),
    RP_SP(type, TYPE),                     RP_SP(user_id, USER_ID),
    RP_SP(app_id, APP_ID),                 RP_SP(cluster_id, CLUSTER_ID),
};

rp_status rp_amqp_restore_capture(const amqp_basic_properties_t *p, char **props_json,
                                  char **headers_json) {
    *props_json = *headers_json = NULL;
    rp_status st = RP_ERR_NOMEM;
    json_t *props = json_object();
    json_t *headers = NULL;
    if (props == NULL) goto out;
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_str_props); i++) {
        if (!(p->_flags & rp_str_props[i].flag)) continue;
        const amqp_bytes_t *b = (const amqp_bytes_t *)((const char *)p + rp_str_props[i].offset);
        json_t *v = rp_text_json(*b);
        if (v == NULL || json_object_set_new(props, rp_str_props[i].name, v) != 0) goto out;
    }
    if ((p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG) &&
        json_object_set_new(props, "delivery_mode", json_integer(p->delivery_mode)) != 0)
        goto out;
    if ((p->_flags & AMQP_BASIC_PRIORITY_FLAG) &&
        json_object_set_new(props, "priority", json_integer(p->priority)) != 0)
        goto out;
    if (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) {
        json_t *v = p->timestamp <= (uint64_t)INT64_MAX ? json_integer((json_int_t)p->timestamp)
                                                        : NULL;
        if (v == NULL) {
            char buf[24];
            snprintf(buf, sizeof buf, "%" PRIu64, p->timestamp);
            v = rp_tagged("T", json_string(buf));
        }
        if (v == NULL || json_object_set_new(props, "timestamp", v) != 0) goto out;
    }
    if (p->_flags & AMQP_BASIC_HEADERS_FLAG) {
        rp_status hst = RP_ERR_NOMEM;
        headers = rp_table_json(&p->headers, 0, &hst);
        if (headers == NULL) {
            st = hst;
            goto out;
        }
    } else if ((headers = json_object()) == NULL) {
        goto out;
    }
    *props_json = json_dumps(props, JSON_COMPACT | JSON_SORT_KEYS);
    *headers_json = json_dumps(headers, JSON_COMPACT);
    if (*props_json && *headers_json) {
        st = RP_OK;
    } else {
        free(*props_json);
        free(*headers_json);
        *props_json = *headers_json = NULL;
    }
out:
    json_decref(props);
    json_decref(headers);
    return st;
}

/* ---- restore: JSON to AMQP ----------------------------------------------- */

bool rp_amqp_restore_is_death_header(const char *name, size_t len) {
    static const char *const prefixes[] = {"x-first-death-", "x-last-death-"};
    if (len == 7 && memcmp(name, "x-death", 7) == 0) return true;
    for (size_t i = 0; i < RP_ARRAY_LEN(prefixes); i++) {
        size_t pl = strlen(prefixes[i]);
        if (len >= pl && memcmp(name, prefixes[i], pl) == 0) return true;
    }
    return false;
}

typedef struct rp_restore {
    amqp_pool_t *pool;
    char *err;
    size_t errlen;
    int depth; /* arrays and tables open around the value being read */
} rp_restore;

static bool rp_fail(rp_restore *r, const char *what, const char *where) {
    snprintf(r->err, r->errlen, "%s (%s)", what, where);
    return false;
}

static bool rp_dup_bytes(rp_restore *r, const char *s, size_t n, amqp_bytes_t *out) {
    void *m = amqp_pool_alloc(r->pool, n ? n : 1);
    if (m == NULL) return rp_fail(r, "out of memory", "copy");
    if (n) memcpy(m, s, n);
    out->bytes = m;
    out->len = n;
    return true;
}

/* A text value: a string, or {"$amqp": "S", "value": base64}. */
static bool rp_text_from(rp_restore *r, const json_t *v, const char *where, amqp_bytes_t *out) {
    if (json_is_string(v)) return rp_dup_bytes(r, json_string_value(v), json_string_length(v), out);
    const char *kind = json_string_value(json_object_get(v, RP_TAG));
    const char *b = json_string_value(json_object_get(v, "value"));
    if (kind && strcmp(kind, "S") == 0 && b && rp_b64_decode(r->pool, b, out)) return true;
    return rp_fail(r, "not a text value", where);
}

static bool rp_int_in(const json_t *v, json_int_t lo, json_int_t hi, json_int_t *out) {
    if (!json_is_integer(v)) return false;
    *out = json_integer_value(v);
    return *out >= lo && *out <= hi;
}

/* An unsigned 64-bit value: an integer >= 0 or a decimal string. */
static bool rp_u64_from(const json_t *v, uint64_t *out) {
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (s == NULL || *s < '0' || *s > '9') return false;
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (*end != '\0') return false;
    *out = (uint64_t)x;
    return true;
}

/* A real: a JSON number or the text rp_real_text writes. */
static bool rp_real_from(const json_t *v, double *out) {
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (s == NULL || *s == '\0') return false;
    char *end;
    *out = strtod(s, &end);
    return *end == '\0';
}

static bool rp_table_from(rp_restore *r, const json_t *o, bool skip_death, amqp_table_t *out);

static bool rp_field_from_at(rp_restore *r, const json_t *v, const char *where,
                             amqp_field_value_t *f);

/* One value; arrays and tables deeper than RP_AMQP_RESTORE_MAX_DEPTH are
 * refused (capture never stores one, so such a text was not written by it). */
static bool rp_field_from(rp_restore *r, const json_t *v, const char *where,
                          amqp_field_value_t *f) {
    bool nested = json_is_array(v) || json_is_object(v);
    if (nested && r->depth >= RP_AMQP_RESTORE_MAX_DEPTH)
        return rp_fail(r, "arrays and tables nested too deep", where);
    if (nested) r->depth++;
    bool ok = rp_field_from_at(r, v, where, f);
    if (nested) r->depth--;
    return ok;
}

static bool rp_field_from_at(rp_restore *r, const json_t *v, const char *where,
                             amqp_field_value_t *f) {
    memset(f, 0, sizeof *f);
    json_int_t i;
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE:
        f->kind = AMQP_FIELD_KIND_BOOLEAN;
        f->value.boolean = json_is_true(v);
        return true;
    case JSON_INTEGER:
        f->kind = AMQP_FIELD_KIND_I64;
        f->value.i64 = json_integer_value(v);
        return true;
    case JSON_REAL:
        f->kind = AMQP_FIELD_KIND_F64;
        f->value.f64 = json_real_value(v);
        return true;
    case JSON_NULL: f->kind = AMQP_FIELD_KIND_VOID; return true;
    case JSON_STRING:
        f->kind = AMQP_FIELD_KIND_UTF8;
        return rp_dup_bytes(r, json_string_value(v), json_string_length(v), &f->value.bytes);
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        f->kind = AMQP_FIELD_KIND_ARRAY;
        f->value.array.num_entries = (int)n;
        f->value.array.entries = amqp_pool_alloc(r->pool, (n ? n : 1) * sizeof(amqp_field_value_t));
        if (f->value.array.entries == NULL) return rp_fail(r, "out of memory", where);
        for (size_t k = 0; k < n; k++)
            if (!rp_field_from(r, json_array_get(v, k), where, &f->value.array.entries[k]))
                return false;
        return true;
    }
    case JSON_OBJECT: break;
    default: return rp_fail(r, "a value of no known kind", where);
    }
    const json_t *tag = json_object_get(v, RP_TAG);
    if (tag == NULL) {
        f->kind = AMQP_FIELD_KIND_TABLE;
        return rp_table_from(r, v, false, &f->value.table);
    }
    const char *kind = json_string_value(tag);
    const json_t *x = json_object_get(v, "value");
    if (kind == NULL || strlen(kind) != 1 || x == NULL || json_object_size(v) != 2)
        return rp_fail(r, "a malformed tagged value", where);
    f->kind = (uint8_t)kind[0];
    switch (kind[0]) {
    case 'b':
        if (!rp_int_in(x, INT8_MIN, INT8_MAX, &i)) break;
        f->value.i8 = (int8_t)i;
        return true;
    case 'B':
        if (!rp_int_in(x, 0, UINT8_MAX, &i)) break;
        f->value.u8 = (uint8_t)i;
        return true;
    case 's':
        if (!rp_int_in(x, INT16_MIN, INT16_MAX, &i)) break;
        f->value.i16 = (int16_t)i;
        return true;
    case 'u':
        if (!rp_int_in(x, 0, UINT16_MAX, &i)) break;
        f->value.u16 = (uint16_t)i;
        return true;
    case 'I':
        if (!rp_int_in(x, INT32_MIN, INT32_MAX, &i)) break;
        f->value.i32 = (int32_t)i;
        return true;
    case 'i':
        if (!rp_int_in(x, 0, UINT32_MAX, &i)) break;
        f->value.u32 = (uint32_t)i;
        return true;
    case 'L':
    case 'T':
        if (!rp_u64_from(x, &f->value.u64)) break;
        return true;
    case 'f':
    case 'd': {
        double real;
        if (!rp_real_from(x, &real)) break;
        if (kind[0] == 'f') f->value.f32 = (float)real;
        else f->value.f64 = real;
        return true;
    }
    case 'D': {
        json_int_t d, dv;
        if (!rp_int_in(json_object_get(x, "decimals"), 0, UINT8_MAX, &d) ||
            !rp_int_in(json_object_get(x, "value"), 0, UINT32_MAX, &dv))
            break;
        f->value.decimal.decimals = (uint8_t)d;
        f->value.decimal.value = (uint32_t)dv;
        return true;
    }
    case 'x':
    case 'S':
        if (!json_is_string(x) || !rp_b64_decode(r->pool, json_string_value(x), &f->value.bytes))
            break;
        return true;
    case 'F':
        if (!json_is_object(x)) break;
        return rp_table_from(r, x, false, &f->value.table);
    default: break;
    }
    return rp_fail(r, "a tagged value that does not fit its kind", where);
}

static bool rp_table_from(rp_restore *r, const json_t *o, bool skip_death, amqp_table_t *out) {
    size_t n = json_object_size(o);
    out->num_entries = 0;
    out->entries = amqp_pool_alloc(r->pool, (n ? n : 1) * sizeof(amqp_table_entry_t));
    if (out->entries == NULL) return rp_fail(r, "out of memory", "table");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        size_t kl = strlen(key);
        if (skip_death && rp_amqp_restore_is_death_header(key, kl)) continue;
        if (kl > 255) return rp_fail(r, "a header name longer than 255 bytes", key);
        amqp_table_entry_t *e = &out->entries[out->num_entries];
        if (!rp_dup_bytes(r, key, kl, &e->key) || !rp_field_from(r, v, key, &e->value))
            return false;
        out->num_entries++;
    }
    return true;
}

static json_t *rp_parse(rp_restore *r, const char *text, const char *what) {
    if (text == NULL) return json_object();
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        rp_fail(r, "not a JSON object", what);
        return NULL;
    }
    return o;
}

static bool rp_props_from(rp_restore *r, const json_t *props, amqp_basic_properties_t *out) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)props, key, v) {
        bool known = false;
        for (size_t i = 0; i < RP_ARRAY_LEN(rp_str_props) && !known; i++) {
            if (strcmp(key, rp_str_props[i].name) != 0) continue;
            known = true;
            amqp_bytes_t *b = (amqp_bytes_t *)((char *)out + rp_str_props[i].offset);
            if (!rp_text_from(r, v, key, b)) return false;
            if (b->len > 255) return rp_fail(r, "longer than a short string", key);
            out->_flags |= rp_str_props[i].flag;
        }
        if (known) continue;
        json_int_t i;
        if (strcmp(key, "delivery_mode") == 0) {
            if (!rp_int_in(v, 0, UINT8_MAX, &i)) return rp_fail(r, "not an octet", key);
            out->delivery_mode = (uint8_t)i;
            out->_flags |= AMQP_BASIC_DELIVERY_MODE_FLAG;
        } else if (strcmp(key, "priority") == 0) {
            if (!rp_int_in(v, 0, UINT8_MAX, &i)) return rp_fail(r, "not an octet", key);
            out->priority = (uint8_t)i;
            out->_flags |= AMQP_BASIC_PRIORITY_FLAG;
        } else if (strcmp(key, "timestamp") == 0) {
            const json_t *x = json_is_object(v) ? json_object_get(v, "value") : v;
            if (!rp_u64_from(x, &out->timestamp)) return rp_fail(r, "not a timestamp", key);
            out->_flags |= AMQP_BASIC_TIMESTAMP_FLAG;
        } else if (strcmp(key, RP_AMQP_RESTORE_NOTE) == 0) {
            /* reaper's own note (rp_amqp_restore_note): not a property. */
            const char *why = json_string_value(json_object_get(v, "not_replayable"));
            if (why != NULL) return rp_fail(r, why, "not replayable");
        } else {
            return rp_fail(r, "an unknown property", key);
        }
    }
    return true;
}

/* The broker takes the expiration off a message it dead-letters and keeps
 * it in the x-death entry as original-expiration: put it back when the
 * stored properties have none (the oldest entry that has one: later
 * dead-letterings of the same message find no expiration left). */
static bool rp_original_expiration(rp_restore *r, const json_t *headers,
                                   amqp_basic_properties_t *out) {
    if (out->_flags & AMQP_BASIC_EXPIRATION_FLAG) return true;
    const json_t *xd = json_object_get(headers, "x-death");
    for (size_t i = json_array_size(xd); i-- > 0;) {
        const json_t *v = json_object_get(json_array_get(xd, i), "original-expiration");
        if (v == NULL) continue;
        amqp_bytes_t b;
        /* Not text (a tagged value of another kind too: a publisher's
         * forged x-death can hold a float there, found by fuzz_capture), or
         * too long for the property: left out, as the broker would not have
         * written it. */
        const char *kind = json_string_value(json_object_get(v, RP_TAG));
        if (!json_is_string(v) && !(kind && strcmp(kind, "S") == 0)) return true;
        if (!rp_text_from(r, v, "original-expiration", &b)) return false;
        if (b.len > 255) return true;
        out->expiration = b;
        out->_flags |= AMQP_BASIC_EXPIRATION_FLAG;
        return true;
    }
    return true;
}

rp_status rp_amqp_restore_props(amqp_pool_t *pool, const char *props_json,
                                const char *headers_json, amqp_basic_properties_t *out,
                                char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (errlen) err[0] = '\0';
    rp_restore r = {pool, err, errlen, 0};
    json_t *props = rp_parse(&r, props_json, "properties");
    json_t *headers = props ? rp_parse(&r, headers_json, "headers") : NULL;
    bool ok = props && headers && rp_props_from(&r, props, out) &&
              rp_table_from(&r, headers, true, &out->headers) &&
              rp_original_expiration(&r, headers, out);
    json_decref(props);
    json_decref(headers);
    if (!ok) {
        memset(out, 0, sizeof *out);
        return strstr(err, "out of memory") ? RP_ERR_NOMEM : RP_ERR_INVALID;
    }
    if (out->headers.num_entries > 0) out->_flags |= AMQP_BASIC_HEADERS_FLAG;
    return RP_OK;
}

rp_status rp_amqp_restore_note(char **props_json, const char *not_replayable,
                               size_t headers_bytes, size_t x_death_entries) {
    char *old = *props_json;
    json_t *o = json_loads(old ? old : "{}", 0, NULL);
    json_t *note = json_object();
    if (o == NULL || note == NULL || !json_is_object(o)) {
        json_decref(o);
        json_decref(note);
        return RP_ERR_NOMEM;
    }
    bool ok = true;
    if (not_replayable != NULL)
        ok = json_object_set_new(note, "not_replayable", json_string(not_replayable)) == 0 &&
             json_object_set_new(note, "headers_bytes", json_integer((json_int_t)headers_bytes)) ==
                 0;
    if (ok && x_death_entries > 0)
        ok = json_object_set_new(note, "x_death_entries",
                                 json_integer((json_int_t)x_death_entries)) == 0;
    ok = ok && json_object_set_new(o, RP_AMQP_RESTORE_NOTE, note) == 0;
    char *text = ok ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text == NULL) return RP_ERR_NOMEM;
    /* jansson allocates with malloc (its default allocators). */
    free(old);
    *props_json = text;
    return RP_OK;
}

bool rp_amqp_restore_refusal(const char *props_json, char *why, size_t n) {
    if (n) why[0] = '\0';
    if (props_json == NULL || strstr(props_json, RP_AMQP_RESTORE_NOTE) == NULL) return false;
    json_t *o = json_loads(props_json, 0, NULL);
    const char *s = json_string_value(json_object_get(json_object_get(o, RP_AMQP_RESTORE_NOTE),
                                                      "not_replayable"));
    bool found = s != NULL;
    if (found) snprintf(why, n, "%s", s);
    json_decref(o);
    return found;
}
