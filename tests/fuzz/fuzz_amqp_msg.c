/* libFuzzer: the delivery assembler (adapters/rabbitmq/rp_amqp_msg.h), fed
 * frames whose payloads went through rabbitmq-c's own decoders
 * (amqp_decode_method for basic.deliver, amqp_decode_properties for the
 * content header), in any order, on any channel.
 *
 * The input: byte 0 the default body limit (times 64), byte 1 a limit for
 * channel 1 (times 16; 0: none), then frames until the input ends, each
 *   1 byte  op: bits 0-1 the kind (0 basic.deliver, 1 content header,
 *           2 body, 3 another method: basic.ack), bits 2-4 the channel
 *           (0..7: past the assembler's channels too)
 *   deliver 2 bytes length, then that many bytes of method arguments
 *   header  8 bytes declared body size, 2 bytes length, then the property
 *           list
 *   body    2 bytes length, then the fragment.
 * A frame the library refuses to decode is skipped. After a protocol error
 * the assembler is reset, as the connection rebuild does. Every message
 * handed out keeps its body within its declared size and its limit, is
 * whole when it fits, and says truncated exactly when it is not whole. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_wire.h"
#include "rp_amqp_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct rp_fuzz_state {
    size_t limit[RP_AMQP_MAX_CHANNELS];
    size_t messages;
} rp_fuzz_state;

static void rp_on_message(void *arg, const rp_amqp_message *m) {
    rp_fuzz_state *s = arg;
    if (m->channel >= RP_AMQP_MAX_CHANNELS) abort();
    size_t limit = s->limit[m->channel];
    if (m->body_len > limit || m->body_len > m->body_size) abort();
    if (m->truncated != (m->body_len < m->body_size)) abort();
    if (m->body_size <= limit && m->body_len != m->body_size) abort();
    size_t sum = 0;
    for (size_t i = 0; i < m->body_len; i++) sum += m->body[i];
    for (size_t i = 0; i < m->exchange.len; i++) sum += ((uint8_t *)m->exchange.bytes)[i];
    for (size_t i = 0; i < m->routing_key.len; i++) sum += ((uint8_t *)m->routing_key.bytes)[i];
    if (m->props._flags & AMQP_BASIC_HEADERS_FLAG) sum += rp_fuzz_walk_table(&m->props.headers, 0);
    s->messages += 1 + (sum & 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rp_fuzz_reader r = {data, size};
    rp_fuzz_state s = {0};
    rp_amqp_assembler a;
    size_t limit = (size_t)rp_fuzz_byte(&r) * 64;
    size_t limit1 = (size_t)rp_fuzz_byte(&r) * 16;
    rp_amqp_assembler_init(&a, limit, rp_on_message, &s);
    for (int i = 0; i < RP_AMQP_MAX_CHANNELS; i++) s.limit[i] = limit;
    if (limit1) {
        rp_amqp_assembler_set_limit(&a, 1, limit1);
        s.limit[1] = limit1;
    }
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_ack_t ack = {1, 0};
    while (r.n > 0) {
        uint8_t op = rp_fuzz_byte(&r);
        amqp_frame_t f;
        memset(&f, 0, sizeof f);
        f.channel = (amqp_channel_t)((op >> 2) & 7);
        bool mine = true;
        switch (op & 3) {
        case 0: {
            amqp_bytes_t args = rp_fuzz_take(&r, rp_fuzz_u16(&r));
            void *decoded = NULL;
            if (amqp_decode_method(AMQP_BASIC_DELIVER_METHOD, &pool, args, &decoded) < 0) continue;
            f.frame_type = AMQP_FRAME_METHOD;
            f.payload.method.id = AMQP_BASIC_DELIVER_METHOD;
            f.payload.method.decoded = decoded;
            break;
        }
        case 1: {
            uint64_t body_size = rp_fuzz_u64(&r);
            amqp_basic_properties_t *p = rp_fuzz_props(&pool, rp_fuzz_take(&r, rp_fuzz_u16(&r)));
            if (p == NULL) continue;
            f.frame_type = AMQP_FRAME_HEADER;
            f.payload.properties.class_id = AMQP_BASIC_CLASS;
            f.payload.properties.body_size = body_size;
            f.payload.properties.decoded = p;
            break;
        }
        case 2:
            f.frame_type = AMQP_FRAME_BODY;
            f.payload.body_fragment = rp_fuzz_take(&r, rp_fuzz_u16(&r));
            break;
        default:
            f.frame_type = AMQP_FRAME_METHOD;
            f.payload.method.id = AMQP_BASIC_ACK_METHOD;
            f.payload.method.decoded = &ack;
            mine = false;
            break;
        }
        rp_status st = RP_OK;
        bool took = rp_amqp_assembler_frame(&a, &f, &st);
        if (!mine && took) abort(); /* a confirm is the caller's */
        if (st != RP_OK) {
            if (st != RP_ERR_INTERNAL && st != RP_ERR_NOMEM) abort();
            rp_amqp_assembler_reset(&a);
        }
        /* The decoded frames die with the pool, as a connection's do when
         * its buffers are released; the assembler keeps its own copies. */
        recycle_amqp_pool(&pool);
    }
    empty_amqp_pool(&pool);
    rp_amqp_assembler_cleanup(&a);
    return 0;
}
