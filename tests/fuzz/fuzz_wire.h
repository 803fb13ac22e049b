/* Helpers shared by the libFuzzer targets that feed bytes through
 * rabbitmq-c's own wire decoders (amqp_decode_properties, whose headers go
 * through amqp_decode_table, and amqp_decode_method), so that reaper's code
 * sees exactly the shapes a hostile publisher can put on the wire. */
#ifndef RP_FUZZ_WIRE_H
#define RP_FUZZ_WIRE_H

#include <amqp.h>
#include <amqp_framing.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rp_fuzz_reader {
    const uint8_t *p;
    size_t n;
} rp_fuzz_reader;

static inline uint8_t rp_fuzz_byte(rp_fuzz_reader *r) {
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

static inline uint16_t rp_fuzz_u16(rp_fuzz_reader *r) {
    uint16_t v = rp_fuzz_byte(r);
    return (uint16_t)(v | (uint16_t)rp_fuzz_byte(r) << 8);
}

static inline uint64_t rp_fuzz_u64(rp_fuzz_reader *r) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)rp_fuzz_byte(r) << (8 * i);
    return v;
}

/* The next len bytes (fewer when the input ends). */
static inline amqp_bytes_t rp_fuzz_take(rp_fuzz_reader *r, size_t len) {
    if (len > r->n) len = r->n;
    amqp_bytes_t b = {len, (void *)r->p};
    r->p += len;
    r->n -= len;
    return b;
}

/* The rest of the input. */
static inline amqp_bytes_t rp_fuzz_rest(rp_fuzz_reader *r) { return rp_fuzz_take(r, r->n); }

/* Decodes wire bytes as a basic content header's property list (two flag
 * bytes, then the flagged fields, the headers table among them) with
 * rabbitmq-c's decoder. NULL when the library refuses them. */
static inline amqp_basic_properties_t *rp_fuzz_props(amqp_pool_t *pool, amqp_bytes_t wire) {
    void *decoded = NULL;
    if (amqp_decode_properties(AMQP_BASIC_CLASS, pool, wire, &decoded) < 0) return NULL;
    return decoded;
}

/* Visits every value of a table, recursively, so that ASan sees every
 * pointer the decoder or a copy left in it. Returns a count to keep the
 * reads. */
static size_t rp_fuzz_walk_value(const amqp_field_value_t *v, int depth);

static inline size_t rp_fuzz_walk_table(const amqp_table_t *t, int depth) {
    size_t n = 0;
    for (int i = 0; i < t->num_entries; i++) {
        const amqp_table_entry_t *e = &t->entries[i];
        for (size_t k = 0; k < e->key.len; k++) n += ((const uint8_t *)e->key.bytes)[k];
        n += rp_fuzz_walk_value(&e->value, depth + 1);
    }
    return n;
}

static size_t rp_fuzz_walk_value(const amqp_field_value_t *v, int depth) {
    size_t n = 1;
    switch (v->kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES:
        for (size_t k = 0; k < v->value.bytes.len; k++)
            n += ((const uint8_t *)v->value.bytes.bytes)[k];
        break;
    case AMQP_FIELD_KIND_TABLE: n += rp_fuzz_walk_table(&v->value.table, depth); break;
    case AMQP_FIELD_KIND_ARRAY:
        for (int i = 0; i < v->value.array.num_entries; i++)
            n += rp_fuzz_walk_value(&v->value.array.entries[i], depth + 1);
        break;
    default: break;
    }
    return n;
}

#endif
