/* AMQP properties and headers as JSON and as core's header model
 * (rp_amqp_table.h). */
#include "rp_amqp_table.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_untrusted.h"
#include "rp_utf8.h"

static bool rp_plain_text(amqp_bytes_t b) {
    if (b.len == 0) return true;
    if (memchr(b.bytes, '\0', b.len) != NULL) return false;
    return rp_utf8_valid(b.bytes, b.len);
}

static json_t *rp_tagged(const char *tag, json_t *v) {
    json_t *o = json_object();
    if (o == NULL || v == NULL || json_object_set_new(o, tag, v) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *rp_base64(amqp_bytes_t b) {
    if (b.len > (SIZE_MAX / 4) * 3 - 4 || b.len > INT32_MAX) return NULL;
    size_t cap = 4 * ((b.len + 2) / 3) + 1;
    unsigned char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    int n = EVP_EncodeBlock(buf, b.bytes ? b.bytes : (const unsigned char *)"", (int)b.len);
    json_t *s = n >= 0 ? json_stringn((const char *)buf, (size_t)n) : NULL;
    free(buf);
    return rp_tagged("$bytes", s);
}

static json_t *rp_string(amqp_bytes_t b) {
    if (rp_plain_text(b)) return json_stringn(b.len ? b.bytes : "", b.len);
    return rp_base64(b);
}

static json_t *rp_u64(const char *tag, uint64_t v) {
    if (v <= INT64_MAX) {
        json_t *i = json_integer((json_int_t)v);
        return tag ? rp_tagged(tag, i) : i;
    }
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return rp_tagged(tag ? tag : "$u64", json_string(buf));
}

static json_t *rp_float(double d) {
    if (isnan(d)) return rp_tagged("$float", json_string("nan"));
    if (isinf(d)) return rp_tagged("$float", json_string(d > 0 ? "inf" : "-inf"));
    return json_real(d);
}

static json_t *rp_table(const amqp_table_t *t, int depth);
static json_t *rp_array(const amqp_array_t *a, int depth);

static json_t *rp_value(const amqp_field_value_t *v, int depth) {
    switch (v->kind) {
    case AMQP_FIELD_KIND_BOOLEAN: return json_boolean(v->value.boolean);
    case AMQP_FIELD_KIND_I8: return json_integer(v->value.i8);
    case AMQP_FIELD_KIND_U8: return json_integer(v->value.u8);
    case AMQP_FIELD_KIND_I16: return json_integer(v->value.i16);
    case AMQP_FIELD_KIND_U16: return json_integer(v->value.u16);
    case AMQP_FIELD_KIND_I32: return json_integer(v->value.i32);
    case AMQP_FIELD_KIND_U32: return json_integer(v->value.u32);
    case AMQP_FIELD_KIND_I64: return json_integer(v->value.i64);
    case AMQP_FIELD_KIND_U64: return rp_u64(NULL, v->value.u64);
    case AMQP_FIELD_KIND_F32: return rp_float(v->value.f32);
    case AMQP_FIELD_KIND_F64: return rp_float(v->value.f64);
    case AMQP_FIELD_KIND_DECIMAL: {
        json_t *d = json_pack("{s:i, s:I}", "decimals", (int)v->value.decimal.decimals, "value",
                              (json_int_t)v->value.decimal.value);
        return rp_tagged("$decimal", d);
    }
    case AMQP_FIELD_KIND_UTF8: return rp_string(v->value.bytes);
    case AMQP_FIELD_KIND_BYTES: return rp_base64(v->value.bytes);
    case AMQP_FIELD_KIND_TIMESTAMP: return rp_u64("$timestamp", v->value.u64);
    case AMQP_FIELD_KIND_VOID: return json_null();
    case AMQP_FIELD_KIND_TABLE:
        if (depth >= RP_AMQP_JSON_MAX_DEPTH) return rp_tagged("$cut", json_string("nested too deep"));
        return rp_table(&v->value.table, depth + 1);
    case AMQP_FIELD_KIND_ARRAY:
        if (depth >= RP_AMQP_JSON_MAX_DEPTH) return rp_tagged("$cut", json_string("nested too deep"));
        return rp_array(&v->value.array, depth + 1);
    default: return rp_tagged("$kind", json_integer((json_int_t)v->kind));
    }
}

/* A key jansson and jsonb take, as a heap string. */
static char *rp_key(amqp_bytes_t k) {
    if (rp_plain_text(k)) {
        char *s = malloc(k.len + 1);
        if (s == NULL) return NULL;
        if (k.len) memcpy(s, k.bytes, k.len);
        s[k.len] = '\0';
        return s;
    }
    char *r = NULL;
    if (rp_untrusted_render((rp_bytes){k.bytes, k.len}, &r) != RP_OK) return NULL;
    return r;
}

static json_t *rp_table(const amqp_table_t *t, int depth) {
    json_t *o = json_object();
    if (o == NULL) return NULL;
    for (int i = 0; t && i < t->num_entries; i++) {
        char *key = rp_key(t->entries[i].key);
        if (key == NULL) goto fail;
        if (json_object_get(o, key) == NULL) {
            json_t *v = rp_value(&t->entries[i].value, depth);
            if (v == NULL || json_object_set_new(o, key, v) != 0) {
                free(key);
                goto fail;
            }
        }
        free(key);
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *rp_array(const amqp_array_t *a, int depth) {
    json_t *arr = json_array();
    if (arr == NULL) return NULL;
    for (int i = 0; i < a->num_entries; i++) {
        json_t *v = rp_value(&a->entries[i], depth);
        if (v == NULL || json_array_append_new(arr, v) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static rp_status rp_dump(json_t *o, char **out) {
    if (o == NULL) return RP_ERR_NOMEM;
    *out = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return *out ? RP_OK : RP_ERR_NOMEM;
}

rp_status rp_amqp_table_json(const amqp_table_t *t, char **out) {
    if (out == NULL) return RP_ERR_INVALID;
    *out = NULL;
    return rp_dump(rp_table(t, 1), out);
}

rp_status rp_amqp_props_json(const amqp_basic_properties_t *p, char **out) {
    if (out == NULL || p == NULL) return RP_ERR_INVALID;
    *out = NULL;
    json_t *o = json_object();
    if (o == NULL) return RP_ERR_NOMEM;
    static const struct {
        amqp_flags_t flag;
        const char *name;
        size_t off;
    } strs[] = {
        {AMQP_BASIC_CONTENT_TYPE_FLAG, "content_type", offsetof(amqp_basic_properties_t, content_type)},
        {AMQP_BASIC_CONTENT_ENCODING_FLAG, "content_encoding",
         offsetof(amqp_basic_properties_t, content_encoding)},
        {AMQP_BASIC_CORRELATION_ID_FLAG, "correlation_id",
         offsetof(amqp_basic_properties_t, correlation_id)},
        {AMQP_BASIC_REPLY_TO_FLAG, "reply_to", offsetof(amqp_basic_properties_t, reply_to)},
        {AMQP_BASIC_EXPIRATION_FLAG, "expiration", offsetof(amqp_basic_properties_t, expiration)},
        {AMQP_BASIC_MESSAGE_ID_FLAG, "message_id", offsetof(amqp_basic_properties_t, message_id)},
        {AMQP_BASIC_TYPE_FLAG, "type", offsetof(amqp_basic_properties_t, type)},
        {AMQP_BASIC_USER_ID_FLAG, "user_id", offsetof(amqp_basic_properties_t, user_id)},
        {AMQP_BASIC_APP_ID_FLAG, "app_id", offsetof(amqp_basic_properties_t, app_id)},
        {AMQP_BASIC_CLUSTER_ID_FLAG, "cluster_id", offsetof(amqp_basic_properties_t, cluster_id)},
    };
    bool ok = true;
    for (size_t i = 0; ok && i < RP_ARRAY_LEN(strs); i++) {
        if (!(p->_flags & strs[i].flag)) continue;
        const amqp_bytes_t *b = (const amqp_bytes_t *)((const char *)p + strs[i].off);
        ok = json_object_set_new(o, strs[i].name, rp_string(*b)) == 0;
    }
    if (ok && (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG))
        ok = json_object_set_new(o, "delivery_mode", json_integer(p->delivery_mode)) == 0;
    if (ok && (p->_flags & AMQP_BASIC_PRIORITY_FLAG))
        ok = json_object_set_new(o, "priority", json_integer(p->priority)) == 0;
    if (ok && (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG))
        ok = json_object_set_new(o, "timestamp", rp_u64(NULL, p->timestamp)) == 0;
    if (!ok) {
        json_decref(o);
        return RP_ERR_NOMEM;
    }
    return rp_dump(o, out);
}

/* ---- the header model ---------------------------------------------------- */

static bool rp_key_is(amqp_bytes_t k, const char *want) {
    size_t n = strlen(want);
    return k.len == n && memcmp(k.bytes, want, n) == 0;
}

/* The first value of key in t, or NULL. */
static const amqp_field_value_t *rp_lookup(const amqp_table_t *t, const char *key) {
    for (int i = 0; t && i < t->num_entries; i++)
        if (rp_key_is(t->entries[i].key, key)) return &t->entries[i].value;
    return NULL;
}

static rp_opt_str rp_opt_string(const amqp_field_value_t *v) {
    rp_opt_str s = {0};
    if (v && (v->kind == AMQP_FIELD_KIND_UTF8 || v->kind == AMQP_FIELD_KIND_BYTES)) {
        s.present = true;
        s.value = (rp_bytes){v->value.bytes.len ? v->value.bytes.bytes : NULL, v->value.bytes.len};
    }
    return s;
}

static rp_opt_i64 rp_opt_int(const amqp_field_value_t *v) {
    rp_opt_i64 r = {0};
    if (v == NULL) return r;
    r.present = true;
    switch (v->kind) {
    case AMQP_FIELD_KIND_I8: r.value = v->value.i8; break;
    case AMQP_FIELD_KIND_U8: r.value = v->value.u8; break;
    case AMQP_FIELD_KIND_I16: r.value = v->value.i16; break;
    case AMQP_FIELD_KIND_U16: r.value = v->value.u16; break;
    case AMQP_FIELD_KIND_I32: r.value = v->value.i32; break;
    case AMQP_FIELD_KIND_U32: r.value = v->value.u32; break;
    case AMQP_FIELD_KIND_I64: r.value = v->value.i64; break;
    case AMQP_FIELD_KIND_U64:
        if (v->value.u64 > INT64_MAX) r.present = false;
        else r.value = (int64_t)v->value.u64;
        break;
    default: r.present = false; break;
    }
    return r;
}

rp_status rp_amqp_dl_model_init(rp_amqp_dl_model *m, const amqp_basic_properties_t *p) {
    memset(m, 0, sizeof *m);
    if (p == NULL) return RP_OK;
    if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
        m->headers.message_id.present = true;
        m->headers.message_id.value =
            (rp_bytes){p->message_id.len ? p->message_id.bytes : NULL, p->message_id.len};
    }
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG)) return RP_OK;
    const amqp_table_t *t = &p->headers;
    m->headers.first_death_queue = rp_opt_string(rp_lookup(t, "x-first-death-queue"));
    m->headers.first_death_reason = rp_opt_string(rp_lookup(t, "x-first-death-reason"));
    const amqp_field_value_t *xd = rp_lookup(t, "x-death");
    if (xd == NULL || xd->kind != AMQP_FIELD_KIND_ARRAY || xd->value.array.num_entries <= 0)
        return RP_OK;
    size_t n = (size_t)xd->value.array.num_entries;
    m->entries = calloc(n, sizeof *m->entries);
    if (m->entries == NULL) return RP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const amqp_field_value_t *e = &xd->value.array.entries[i];
        if (e->kind != AMQP_FIELD_KIND_TABLE) continue;
        const amqp_table_t *et = &e->value.table;
        rp_xdeath *x = &m->entries[i];
        x->queue = rp_opt_string(rp_lookup(et, "queue"));
        x->reason = rp_opt_string(rp_lookup(et, "reason"));
        const amqp_field_value_t *tv = rp_lookup(et, "time");
        if (tv && tv->kind == AMQP_FIELD_KIND_TIMESTAMP && tv->value.u64 <= INT64_MAX) {
            x->time.present = true;
            x->time.value = (int64_t)tv->value.u64;
        }
        x->count = rp_opt_int(rp_lookup(et, "count"));
    }
    m->headers.x_death = m->entries;
    m->headers.n_x_death = n;
    return RP_OK;
}

void rp_amqp_dl_model_cleanup(rp_amqp_dl_model *m) {
    free(m->entries);
    memset(m, 0, sizeof *m);
}

bool rp_amqp_dl_model_is_dead_letter(const rp_amqp_dl_model *m) {
    return m->headers.n_x_death > 0 || m->headers.first_death_queue.present;
}
