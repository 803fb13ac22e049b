/* AMQP properties and headers to JSON and back, losslessly
 * (rp_amqp_restore.h). */
#include "rp_amqp_restore.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_table.h"
#include "rp_json_out.h"
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

/* Whether a real survives as a plain JSON number: jsonb keeps a number as
 * numeric and prints it without an exponent, so 1e17 would come back as
 * the integer 100000000000000000 (another kind, or too big for jansson),
 * and -0.0 as 0.0; NaN and the infinities are no JSON number at all. Below
 * 1e15 jansson writes a real with a fraction or an exponent that PostgreSQL
 * prints back as a fraction. */
static bool rp_plain_real(double v) {
    return isfinite(v) && fabs(v) < 1e15 && !(v == 0 && signbit(v));
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

/* The capture streams its two texts through rp_json_out.h: value for value
 * what a jansson tree of them would dump (it did, until the tap's CPU was
 * measured): keys in the table's order, a key that repeats written once at its
 * first place with its last value (as json_object_set keeps it). */

typedef struct rp_cap {
    rp_jout w;
    rp_status st; /* RP_ERR_INVALID once a value cannot be stored */
} rp_cap;

static void rp_cap_invalid(rp_cap *c) {
    c->st = RP_ERR_INVALID;
    c->w.failed = true;
}

static void rp_cap_b64(rp_cap *c, const char *kind, amqp_bytes_t b) {
    char *enc = rp_b64_encode(b.bytes, b.len);
    if (enc == NULL) {
        c->w.failed = true;
        return;
    }
    rp_jout_obj_open(&c->w);
    rp_jout_lit(&c->w, RP_TAG);
    rp_jout_strz(&c->w, kind);
    rp_jout_lit(&c->w, "value");
    rp_jout_strz(&c->w, enc);
    rp_jout_obj_close(&c->w);
    free(enc);
}

static void rp_cap_text(rp_cap *c, amqp_bytes_t b) {
    if (b.len == 0)
        rp_jout_str(&c->w, "", 0);
    else if (rp_plain_text(b))
        rp_jout_str_checked(&c->w, b.bytes, b.len);
    else
        rp_cap_b64(c, "S", b);
}

/* {"$amqp": kind, "value": and the value the caller writes next. */
static void rp_cap_tag_open(rp_cap *c, const char *kind) {
    rp_jout_obj_open(&c->w);
    rp_jout_lit(&c->w, RP_TAG);
    rp_jout_str_checked(&c->w, kind, strlen(kind)); /* one ASCII letter of ours */
    rp_jout_lit(&c->w, "value");
}

static void rp_cap_tag_int(rp_cap *c, const char *kind, int64_t v) {
    rp_cap_tag_open(c, kind);
    rp_jout_int(&c->w, v);
    rp_jout_obj_close(&c->w);
}

/* A uint64 as an integer, or as its digits above INT64_MAX, tagged. */
static void rp_cap_tag_u64(rp_cap *c, const char *kind, uint64_t v) {
    rp_cap_tag_open(c, kind);
    if (v <= (uint64_t)INT64_MAX) {
        rp_jout_int(&c->w, (int64_t)v);
    } else {
        char buf[24];
        snprintf(buf, sizeof buf, "%" PRIu64, v);
        rp_jout_strz(&c->w, buf);
    }
    rp_jout_obj_close(&c->w);
}

static void rp_cap_real_text(rp_cap *c, double v, int digits) {
    char buf[40];
    if (isnan(v))
        rp_jout_strz(&c->w, "nan");
    else if (isinf(v))
        rp_jout_strz(&c->w, v < 0 ? "-inf" : "inf");
    else {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        rp_jout_strz(&c->w, buf);
    }
}

static void rp_cap_table(rp_cap *c, const amqp_table_t *t, int depth);

static void rp_cap_field(rp_cap *c, const amqp_field_value_t *f, int depth) {
    if ((f->kind == AMQP_FIELD_KIND_ARRAY || f->kind == AMQP_FIELD_KIND_TABLE) &&
        depth >= RP_AMQP_RESTORE_MAX_DEPTH) {
        rp_cap_invalid(c); /* deeper than anything stored or replayed */
        return;
    }
    switch (f->kind) {
    case AMQP_FIELD_KIND_BOOLEAN: rp_jout_bool(&c->w, f->value.boolean); break;
    case AMQP_FIELD_KIND_I8: rp_cap_tag_int(c, "b", f->value.i8); break;
    case AMQP_FIELD_KIND_U8: rp_cap_tag_int(c, "B", f->value.u8); break;
    case AMQP_FIELD_KIND_I16: rp_cap_tag_int(c, "s", f->value.i16); break;
    case AMQP_FIELD_KIND_U16: rp_cap_tag_int(c, "u", f->value.u16); break;
    case AMQP_FIELD_KIND_I32: rp_cap_tag_int(c, "I", f->value.i32); break;
    case AMQP_FIELD_KIND_U32: rp_cap_tag_int(c, "i", f->value.u32); break;
    case AMQP_FIELD_KIND_I64: rp_jout_int(&c->w, f->value.i64); break;
    case AMQP_FIELD_KIND_U64: rp_cap_tag_u64(c, "L", f->value.u64); break;
    case AMQP_FIELD_KIND_F32:
        rp_cap_tag_open(c, "f");
        if (rp_plain_real(f->value.f32))
            rp_jout_real(&c->w, f->value.f32);
        else
            rp_cap_real_text(c, f->value.f32, 9);
        rp_jout_obj_close(&c->w);
        break;
    case AMQP_FIELD_KIND_F64:
        if (rp_plain_real(f->value.f64)) {
            rp_jout_real(&c->w, f->value.f64);
        } else {
            rp_cap_tag_open(c, "d");
            rp_cap_real_text(c, f->value.f64, 17);
            rp_jout_obj_close(&c->w);
        }
        break;
    case AMQP_FIELD_KIND_TIMESTAMP: rp_cap_tag_u64(c, "T", f->value.u64); break;
    case AMQP_FIELD_KIND_DECIMAL:
        rp_cap_tag_open(c, "D");
        rp_jout_obj_open(&c->w);
        rp_jout_lit(&c->w, "decimals");
        rp_jout_int(&c->w, (int)f->value.decimal.decimals);
        rp_jout_lit(&c->w, "value");
        rp_jout_int(&c->w, (json_int_t)f->value.decimal.value);
        rp_jout_obj_close(&c->w);
        rp_jout_obj_close(&c->w);
        break;
    case AMQP_FIELD_KIND_UTF8: rp_cap_text(c, f->value.bytes); break;
    case AMQP_FIELD_KIND_BYTES: rp_cap_b64(c, "x", f->value.bytes); break;
    case AMQP_FIELD_KIND_VOID: rp_jout_null(&c->w); break;
    case AMQP_FIELD_KIND_ARRAY:
        rp_jout_arr_open(&c->w);
        for (int i = 0; i < f->value.array.num_entries && !c->w.failed; i++)
            rp_cap_field(c, &f->value.array.entries[i], depth + 1);
        rp_jout_arr_close(&c->w);
        break;
    case AMQP_FIELD_KIND_TABLE: {
        const amqp_table_t *t = &f->value.table;
        bool tagged = false;
        for (int i = 0; i < t->num_entries && !tagged; i++)
            tagged = t->entries[i].key.len == sizeof RP_TAG - 1 &&
                     memcmp(t->entries[i].key.bytes, RP_TAG, sizeof RP_TAG - 1) == 0;
        if (tagged) rp_cap_tag_open(c, "F");
        rp_cap_table(c, t, depth + 1);
        if (tagged) rp_jout_obj_close(&c->w);
        break;
    }
    default: rp_cap_invalid(c); break;
    }
}

static bool rp_key_eq(const amqp_table_entry_t *a, const amqp_table_entry_t *b) {
    return a->key.len == b->key.len && memcmp(a->key.bytes, b->key.bytes, a->key.len) == 0;
}

typedef struct rp_kref {
    const amqp_bytes_t *key;
    int at;
} rp_kref;

static int rp_by_key_then_place(const void *pa, const void *pb) {
    const rp_kref *a = pa, *b = pb;
    size_t n = a->key->len < b->key->len ? a->key->len : b->key->len;
    int d = n ? memcmp(a->key->bytes, b->key->bytes, n) : 0;
    if (d == 0) d = (a->key->len > b->key->len) - (a->key->len < b->key->len);
    return d != 0 ? d : (a->at > b->at) - (a->at < b->at);
}

/* For a table whose keys repeat: last[i] = the entry whose value is written
 * at entry i (its key's last), or -1 where i is a repeat (written earlier);
 * last[n + i] = 1 when entry i's value is replaced by a later one (the tree
 * built it all the same, and refused the message when it could not).
 * NULL with no repeat (the common case: no allocation for up to 16 keys). */
static int *rp_repeats(rp_cap *c, const amqp_table_t *t) {
    int n = t->num_entries;
    bool any = false;
    if (n <= 16) {
        for (int i = 1; i < n && !any; i++)
            for (int j = 0; j < i && !any; j++) any = rp_key_eq(&t->entries[i], &t->entries[j]);
        if (!any) return NULL;
    }
    rp_kref *order = malloc(sizeof *order * (size_t)n);
    int *last = malloc(sizeof *last * (size_t)n * 2);
    if (order == NULL || last == NULL) {
        free(order);
        free(last);
        c->w.failed = true;
        return NULL;
    }
    for (int i = 0; i < n; i++) order[i] = (rp_kref){&t->entries[i].key, i};
    qsort(order, (size_t)n, sizeof *order, rp_by_key_then_place);
    any = false;
    for (int g = 0; g < n;) {
        int e = g + 1;
        while (e < n && rp_key_eq(&t->entries[order[g].at], &t->entries[order[e].at])) e++;
        last[order[g].at] = order[e - 1].at;
        for (int k = g + 1; k < e; k++) last[order[k].at] = -1;
        for (int k = g; k < e; k++) last[n + order[k].at] = k < e - 1;
        any = any || e - g > 1;
        g = e;
    }
    free(order);
    if (!any) {
        free(last);
        return NULL;
    }
    return last;
}

static void rp_cap_table(rp_cap *c, const amqp_table_t *t, int depth) {
    for (int i = 0; i < t->num_entries; i++) {
        if (!rp_plain_text(t->entries[i].key)) {
            rp_cap_invalid(c);
            return;
        }
    }
    int *last = rp_repeats(c, t);
    for (int i = 0; last != NULL && i < t->num_entries && c->st == RP_OK; i++) {
        if (!last[t->num_entries + i]) continue;
        rp_cap scratch = {.st = RP_OK}; /* a replaced value: refused as the tree refused it */
        rp_jout_init(&scratch.w);
        rp_cap_field(&scratch, &t->entries[i].value, depth);
        if (scratch.st != RP_OK) rp_cap_invalid(c);
        else if (scratch.w.failed) c->w.failed = true;
        rp_jout_free(&scratch.w);
    }
    rp_jout_obj_open(&c->w);
    for (int i = 0; i < t->num_entries && !c->w.failed; i++) {
        int v = last ? last[i] : i;
        if (v < 0) continue;
        const amqp_table_entry_t *e = &t->entries[i];
        rp_jout_key_checked(&c->w, e->key.bytes, e->key.len); /* rp_plain_text above */
        rp_cap_field(c, &t->entries[v].value, depth);
    }
    rp_jout_obj_close(&c->w);
    free(last);
}

/* The properties in the order JSON_SORT_KEYS wrote them. */
enum { RP_P_STR, RP_P_DELIVERY_MODE, RP_P_PRIORITY, RP_P_TIMESTAMP };
typedef struct rp_prop_out {
    const char *name;
    int kind;
    amqp_flags_t flag;
    size_t offset;
} rp_prop_out;

#define RP_PS(n, F) {#n, RP_P_STR, AMQP_BASIC_##F##_FLAG, offsetof(amqp_basic_properties_t, n)}
static const rp_prop_out rp_props_sorted[] = {
    RP_PS(app_id, APP_ID),
    RP_PS(cluster_id, CLUSTER_ID),
    RP_PS(content_encoding, CONTENT_ENCODING),
    RP_PS(content_type, CONTENT_TYPE),
    RP_PS(correlation_id, CORRELATION_ID),
    {"delivery_mode", RP_P_DELIVERY_MODE, AMQP_BASIC_DELIVERY_MODE_FLAG, 0},
    RP_PS(expiration, EXPIRATION),
    RP_PS(message_id, MESSAGE_ID),
    {"priority", RP_P_PRIORITY, AMQP_BASIC_PRIORITY_FLAG, 0},
    RP_PS(reply_to, REPLY_TO),
    {"timestamp", RP_P_TIMESTAMP, AMQP_BASIC_TIMESTAMP_FLAG, 0},
    RP_PS(type, TYPE),
    RP_PS(user_id, USER_ID),
};

rp_status rp_amqp_restore_capture(const amqp_basic_properties_t *p, char **props_json,
                                  char **headers_json) {
    *props_json = *headers_json = NULL;
    rp_cap c = {.st = RP_OK};
    rp_jout_init(&c.w);
    rp_jout_obj_open(&c.w);
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_props_sorted); i++) {
        const rp_prop_out *d = &rp_props_sorted[i];
        if (!(p->_flags & d->flag)) continue;
        rp_jout_keyz(&c.w, d->name);
        switch (d->kind) {
        case RP_P_STR:
            rp_cap_text(&c, *(const amqp_bytes_t *)((const char *)p + d->offset));
            break;
        case RP_P_DELIVERY_MODE: rp_jout_int(&c.w, p->delivery_mode); break;
        case RP_P_PRIORITY: rp_jout_int(&c.w, p->priority); break;
        default:
            if (p->timestamp <= (uint64_t)INT64_MAX)
                rp_jout_int(&c.w, (int64_t)p->timestamp);
            else
                rp_cap_tag_u64(&c, "T", p->timestamp);
        }
    }
    rp_jout_obj_close(&c.w);
    char *props = rp_jout_take(&c.w);
    if (props == NULL) return RP_ERR_NOMEM;
    rp_jout_init(&c.w);
    if (p->_flags & AMQP_BASIC_HEADERS_FLAG) {
        rp_cap_table(&c, &p->headers, 0);
    } else {
        rp_jout_obj_open(&c.w);
        rp_jout_obj_close(&c.w);
    }
    char *headers = rp_jout_take(&c.w);
    if (headers == NULL) {
        free(props);
        return c.st != RP_OK ? c.st : RP_ERR_NOMEM;
    }
    *props_json = props;
    *headers_json = headers;
    return RP_OK;
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

rp_status rp_amqp_restore_note_kept(char **props_json, size_t headers_dropped, size_t cap_bytes,
                                    size_t x_death_entries) {
    if (headers_dropped == 0 && x_death_entries == 0) return RP_OK;
    char why[240];
    if (headers_dropped == SIZE_MAX)
        snprintf(why, sizeof why,
                 "its header table nests deeper than %d levels: it was parked without its "
                 "headers (only x-death and x-first-death-* kept), so it cannot be replayed "
                 "as it was",
                 RP_AMQP_FOOTPRINT_DEPTH);
    else
        snprintf(why, sizeof why,
                 "its header table weighed %zu bytes decoded, over "
                 "broker.tap_header_cap_bytes (%zu): it was parked without its "
                 "headers (only x-death and x-first-death-* kept), so it cannot be replayed "
                 "as it was",
                 headers_dropped, cap_bytes);
    return rp_amqp_restore_note(props_json, headers_dropped > 0 ? why : NULL,
                                headers_dropped == SIZE_MAX ? 0 : headers_dropped,
                                x_death_entries);
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
