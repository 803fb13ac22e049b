/* A dead letter's headers as core's header model (rp_amqp_table.h). */
#include "rp_amqp_table.h"

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
