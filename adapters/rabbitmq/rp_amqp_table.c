/* A dead letter's headers as core's header model (rp_amqp_table.h). */
#include "rp_amqp_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    size_t all = (size_t)xd->value.array.num_entries;
    /* At most RP_AMQP_XDEATH_MAX parsed: the first ones (the newest) and
     * the last (the oldest, the first death); the others only counted. */
    size_t n = all > RP_AMQP_XDEATH_MAX ? RP_AMQP_XDEATH_MAX : all;
    m->x_death_unparsed = all - n;
    m->entries = calloc(n, sizeof *m->entries);
    if (m->entries == NULL) return RP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t src = (i + 1 == n) ? all - 1 : i;
        const amqp_field_value_t *e = &xd->value.array.entries[src];
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

/* ---- footprint and the death headers --------------------------------------- */

static size_t rp_add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

static size_t rp_value_footprint(const amqp_field_value_t *v, int depth);

static size_t rp_table_footprint_at(const amqp_table_t *t, int depth) {
    if (depth > RP_AMQP_FOOTPRINT_DEPTH) return SIZE_MAX;
    if (t == NULL || t->num_entries <= 0) return 0;
    size_t sum = 0;
    for (int i = 0; i < t->num_entries && sum != SIZE_MAX; i++) {
        sum = rp_add_sat(sum, sizeof(amqp_table_entry_t) + RP_AMQP_ENTRY_OVERHEAD);
        sum = rp_add_sat(sum, t->entries[i].key.len);
        sum = rp_add_sat(sum, rp_value_footprint(&t->entries[i].value, depth));
    }
    return sum;
}

static size_t rp_value_footprint(const amqp_field_value_t *v, int depth) {
    switch (v->kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES: return v->value.bytes.len;
    case AMQP_FIELD_KIND_TABLE: return rp_table_footprint_at(&v->value.table, depth + 1);
    case AMQP_FIELD_KIND_ARRAY: {
        if (depth + 1 > RP_AMQP_FOOTPRINT_DEPTH) return SIZE_MAX;
        size_t sum = 0;
        const amqp_array_t *a = &v->value.array;
        for (int i = 0; i < a->num_entries && sum != SIZE_MAX; i++) {
            sum = rp_add_sat(sum, sizeof(amqp_field_value_t) + RP_AMQP_ENTRY_OVERHEAD);
            sum = rp_add_sat(sum, rp_value_footprint(&a->entries[i], depth + 1));
        }
        return sum;
    }
    default: return 0; /* held in the entry itself */
    }
}

size_t rp_amqp_table_footprint(const amqp_table_t *t) { return rp_table_footprint_at(t, 0); }

size_t rp_amqp_props_footprint(const amqp_basic_properties_t *p) {
    if (p == NULL) return 0;
    amqp_flags_t fl = p->_flags;
    size_t sum = 0;
#define RP_ADD_BYTES(flag, field) \
    if (fl & (flag)) sum = rp_add_sat(sum, p->field.len + RP_AMQP_ENTRY_OVERHEAD)
    RP_ADD_BYTES(AMQP_BASIC_CONTENT_TYPE_FLAG, content_type);
    RP_ADD_BYTES(AMQP_BASIC_CONTENT_ENCODING_FLAG, content_encoding);
    RP_ADD_BYTES(AMQP_BASIC_CORRELATION_ID_FLAG, correlation_id);
    RP_ADD_BYTES(AMQP_BASIC_REPLY_TO_FLAG, reply_to);
    RP_ADD_BYTES(AMQP_BASIC_EXPIRATION_FLAG, expiration);
    RP_ADD_BYTES(AMQP_BASIC_MESSAGE_ID_FLAG, message_id);
    RP_ADD_BYTES(AMQP_BASIC_TYPE_FLAG, type);
    RP_ADD_BYTES(AMQP_BASIC_USER_ID_FLAG, user_id);
    RP_ADD_BYTES(AMQP_BASIC_APP_ID_FLAG, app_id);
    RP_ADD_BYTES(AMQP_BASIC_CLUSTER_ID_FLAG, cluster_id);
#undef RP_ADD_BYTES
    if (fl & AMQP_BASIC_HEADERS_FLAG) sum = rp_add_sat(sum, rp_amqp_table_footprint(&p->headers));
    return sum;
}

/* A copy of a string value into pool when it is a string of at most
 * RP_AMQP_DEATH_STRING_MAX bytes; false (nothing copied) otherwise. */
static bool rp_keep_string(amqp_pool_t *pool, const amqp_field_value_t *v, amqp_field_value_t *out,
                           bool *ok) {
    if (v == NULL || (v->kind != AMQP_FIELD_KIND_UTF8 && v->kind != AMQP_FIELD_KIND_BYTES) ||
        v->value.bytes.len > RP_AMQP_DEATH_STRING_MAX)
        return false;
    *out = *v;
    if (v->value.bytes.len > 0) {
        void *p = amqp_pool_alloc(pool, v->value.bytes.len);
        if (p == NULL) {
            *ok = false;
            out->value.bytes.len = 0;
        } else {
            memcpy(p, v->value.bytes.bytes, v->value.bytes.len);
        }
        out->value.bytes.bytes = p;
    }
    return true;
}

static amqp_bytes_t rp_pool_cstr(amqp_pool_t *pool, const char *s, bool *ok) {
    amqp_bytes_t b = amqp_cstring_bytes(s);
    amqp_bytes_t out = {0, NULL};
    void *p = amqp_pool_alloc(pool, b.len);
    if (p == NULL) {
        *ok = false;
        return out;
    }
    memcpy(p, b.bytes, b.len);
    out.len = b.len;
    out.bytes = p;
    return out;
}

rp_status rp_amqp_death_headers(amqp_pool_t *pool, const amqp_table_t *src, amqp_table_t *out) {
    static const char *const firsts[] = {"x-first-death-queue", "x-first-death-reason",
                                         "x-first-death-exchange"};
    static const char *const fields[] = {"queue", "reason", "exchange"};
    bool ok = true;
    memset(out, 0, sizeof *out);
    amqp_table_entry_t *e = amqp_pool_alloc(pool, 4 * sizeof *e);
    if (e == NULL) return RP_ERR_NOMEM;
    int n = 0;
    for (size_t k = 0; k < 3; k++) {
        amqp_field_value_t v;
        if (!rp_keep_string(pool, rp_lookup(src, firsts[k]), &v, &ok)) continue;
        e[n].key = rp_pool_cstr(pool, firsts[k], &ok);
        e[n].value = v;
        n++;
    }
    const amqp_field_value_t *xd = rp_lookup(src, "x-death");
    if (xd != NULL && xd->kind == AMQP_FIELD_KIND_ARRAY && xd->value.array.num_entries > 0) {
        int all = xd->value.array.num_entries;
        int keep = all > RP_AMQP_XDEATH_MAX ? RP_AMQP_XDEATH_MAX : all;
        amqp_field_value_t *a = amqp_pool_alloc(pool, (size_t)keep * sizeof *a);
        if (a == NULL) return RP_ERR_NOMEM;
        for (int i = 0; i < keep && ok; i++) {
            /* The same entries the header model parses: the first ones and
             * the last (rp_amqp_dl_model_init). */
            const amqp_field_value_t *ev = &xd->value.array.entries[i + 1 == keep ? all - 1 : i];
            memset(&a[i], 0, sizeof a[i]);
            a[i].kind = AMQP_FIELD_KIND_TABLE;
            if (ev->kind != AMQP_FIELD_KIND_TABLE) continue;
            amqp_table_entry_t *f = amqp_pool_alloc(pool, 5 * sizeof *f);
            if (f == NULL) return RP_ERR_NOMEM;
            int m = 0;
            for (size_t k = 0; k < 3; k++) {
                amqp_field_value_t v;
                if (!rp_keep_string(pool, rp_lookup(&ev->value.table, fields[k]), &v, &ok))
                    continue;
                f[m].key = rp_pool_cstr(pool, fields[k], &ok);
                f[m].value = v;
                m++;
            }
            /* time and count are scalars: copied as they are. */
            const char *scalars[] = {"time", "count"};
            for (size_t k = 0; k < 2; k++) {
                const amqp_field_value_t *sv = rp_lookup(&ev->value.table, scalars[k]);
                if (sv == NULL || sv->kind == AMQP_FIELD_KIND_TABLE ||
                    sv->kind == AMQP_FIELD_KIND_ARRAY || sv->kind == AMQP_FIELD_KIND_UTF8 ||
                    sv->kind == AMQP_FIELD_KIND_BYTES)
                    continue;
                f[m].key = rp_pool_cstr(pool, scalars[k], &ok);
                f[m].value = *sv;
                m++;
            }
            a[i].value.table = (amqp_table_t){m, f};
        }
        e[n].key = rp_pool_cstr(pool, "x-death", &ok);
        e[n].value.kind = AMQP_FIELD_KIND_ARRAY;
        e[n].value.value.array = (amqp_array_t){keep, a};
        n++;
    }
    if (!ok) return RP_ERR_NOMEM;
    *out = (amqp_table_t){n, n ? e : NULL};
    return RP_OK;
}
