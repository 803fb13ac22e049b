/* libFuzzer: broker event parsing (adapters/rabbitmq/rp_amqp_events.h), the
 * headers coming through rabbitmq-c's own wire decoder
 * (amqp_decode_properties, amqp_decode_table), as a delivery from
 * amq.rabbitmq.event (or a forgery of one) reaches reaperd.
 *
 * The input: byte 0 picks the routing key (below 12: one of the kinds
 * reaper acts on; otherwise the next byte is a length and that many bytes
 * are the key), then the property list as it travels on the wire. Whatever
 * they hold, the parser either refuses with a reason or fills every string
 * NUL-terminated within its buffer, and a kind it acts on only with a name
 * or pid it can use. */
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_events.h"
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const rp_keys[] = {
    "queue.created",   "queue.deleted",    "consumer.created", "consumer.deleted",
    "channel.closed",  "connection.closed", "policy.set",       "policy.cleared",
    "binding.created", "binding.deleted",  "exchange.created", "exchange.deleted",
};

static void rp_check_str(const char *s, size_t cap) {
    if (memchr(s, '\0', cap) == NULL) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rp_fuzz_reader r = {data, size};
    uint8_t pick = rp_fuzz_byte(&r);
    amqp_bytes_t key;
    if (pick < RP_ARRAY_LEN(rp_keys))
        key = (amqp_bytes_t){strlen(rp_keys[pick]), (void *)rp_keys[pick]};
    else
        key = rp_fuzz_take(&r, rp_fuzz_byte(&r));
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_properties_t *p = rp_fuzz_props(&pool, rp_fuzz_rest(&r));
    rp_broker_event ev;
    const char *why = "unset";
    bool ok = rp_broker_event_parse(key, p, &ev, &why);
    if (ok) {
        if (why != NULL) abort();
        rp_check_str(ev.routing_key, sizeof ev.routing_key);
        rp_check_str(ev.vhost, sizeof ev.vhost);
        rp_check_str(ev.name, sizeof ev.name);
        rp_check_str(ev.source, sizeof ev.source);
        rp_check_str(ev.consumer_tag, sizeof ev.consumer_tag);
        rp_check_str(ev.pid, sizeof ev.pid);
        rp_check_str(ev.user, sizeof ev.user);
        rp_check_str(ev.pattern, sizeof ev.pattern);
        if (strlen(ev.routing_key) != key.len) abort();
        switch (ev.kind) {
        case RP_BEV_QUEUE_CREATED:
        case RP_BEV_QUEUE_DELETED:
        case RP_BEV_CONSUMER_CREATED:
        case RP_BEV_CONSUMER_DELETED:
            if (ev.name[0] == '\0') abort();
            break;
        case RP_BEV_CHANNEL_CLOSED:
        case RP_BEV_CONNECTION_CLOSED:
            if (ev.pid[0] == '\0') abort();
            break;
        default: break;
        }
        if (ev.kind != RP_BEV_OTHER && pick >= RP_ARRAY_LEN(rp_keys) &&
            (key.len == 0 || memchr(key.bytes, '.', key.len) == NULL))
            abort();
    } else if (why == NULL || why[0] == '\0') {
        abort();
    }
    empty_amqp_pool(&pool);
    return 0;
}
