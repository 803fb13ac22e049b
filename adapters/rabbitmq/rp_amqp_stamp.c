/* The broker's timestamp_in_ms header (rp_amqp_stamp.h). */
#include "rp_amqp_stamp.h"

#include <string.h>

bool rp_amqp_timestamp_in_ms(const rp_amqp_message *msg, int64_t *ms) {
    const amqp_basic_properties_t *p = &msg->props;
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG)) return false;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (e->key.len != 15 || memcmp(e->key.bytes, "timestamp_in_ms", 15) != 0) continue;
        switch (e->value.kind) {
        case AMQP_FIELD_KIND_I64: *ms = e->value.value.i64; return true;
        case AMQP_FIELD_KIND_U64:
        case AMQP_FIELD_KIND_TIMESTAMP: *ms = (int64_t)e->value.value.u64; return true;
        case AMQP_FIELD_KIND_I32: *ms = e->value.value.i32; return true;
        case AMQP_FIELD_KIND_U32: *ms = e->value.value.u32; return true;
        default: return false;
        }
    }
    return false;
}
