#include "rp_amqp_events.h"

#include <stdio.h>
#include <string.h>

#include "rp_amqp_msg.h"
#include "rp_amqp_stamp.h"
#include "rp_log.h"
#include "rp_metrics.h"

typedef struct rp_kind_name {
    const char *key;
    rp_broker_event_kind kind;
} rp_kind_name;

static const rp_kind_name rp_kinds[] = {
    {"queue.created", RP_BEV_QUEUE_CREATED},
    {"queue.deleted", RP_BEV_QUEUE_DELETED},
    {"consumer.created", RP_BEV_CONSUMER_CREATED},
    {"consumer.deleted", RP_BEV_CONSUMER_DELETED},
    {"channel.closed", RP_BEV_CHANNEL_CLOSED},
    {"connection.closed", RP_BEV_CONNECTION_CLOSED},
    {"policy.set", RP_BEV_POLICY_SET},
    {"policy.cleared", RP_BEV_POLICY_CLEARED},
    {"binding.created", RP_BEV_BINDING_CREATED},
    {"binding.deleted", RP_BEV_BINDING_DELETED},
    {"exchange.created", RP_BEV_EXCHANGE_CREATED},
    {"exchange.deleted", RP_BEV_EXCHANGE_DELETED},
};

static const amqp_field_value_t *rp_field(const amqp_table_t *t, const char *key) {
    size_t klen = strlen(key);
    for (int i = 0; i < t->num_entries; i++) {
        const amqp_table_entry_t *e = &t->entries[i];
        if (e->key.len == klen && e->key.bytes && memcmp(e->key.bytes, key, klen) == 0)
            return &e->value;
    }
    return NULL;
}

/* Copies a string field; false when absent, not a string, holding a NUL,
 * or too long for buf. */
static bool rp_str(const amqp_table_t *t, const char *key, char *buf, size_t cap) {
    buf[0] = '\0';
    const amqp_field_value_t *v = rp_field(t, key);
    if (v == NULL) return false;
    if (v->kind != AMQP_FIELD_KIND_UTF8 && v->kind != AMQP_FIELD_KIND_BYTES) return false;
    amqp_bytes_t b = v->value.bytes;
    if (b.len >= cap || (b.len > 0 && b.bytes == NULL)) return false;
    if (b.len > 0 && memchr(b.bytes, '\0', b.len) != NULL) return false;
    if (b.len > 0) memcpy(buf, b.bytes, b.len);
    buf[b.len] = '\0';
    return true;
}

static bool rp_int(const amqp_table_t *t, const char *key, int64_t *out) {
    const amqp_field_value_t *v = rp_field(t, key);
    if (v == NULL) return false;
    switch (v->kind) {
    case AMQP_FIELD_KIND_I8: *out = v->value.i8; return true;
    case AMQP_FIELD_KIND_U8: *out = v->value.u8; return true;
    case AMQP_FIELD_KIND_I16: *out = v->value.i16; return true;
    case AMQP_FIELD_KIND_U16: *out = v->value.u16; return true;
    case AMQP_FIELD_KIND_I32: *out = v->value.i32; return true;
    case AMQP_FIELD_KIND_U32: *out = v->value.u32; return true;
    case AMQP_FIELD_KIND_I64: *out = v->value.i64; return true;
    case AMQP_FIELD_KIND_TIMESTAMP:
    case AMQP_FIELD_KIND_U64:
        if (v->value.u64 > (uint64_t)INT64_MAX) return false;
        *out = (int64_t)v->value.u64;
        return true;
    default: return false;
    }
}

bool rp_broker_event_from_broker(amqp_bytes_t exchange) {
    size_t n = sizeof RP_BROKER_EVENT_EXCHANGE - 1;
    return exchange.len == n && exchange.bytes != NULL &&
           memcmp(exchange.bytes, RP_BROKER_EVENT_EXCHANGE, n) == 0;
}

bool rp_broker_event_parse(amqp_bytes_t routing_key, const amqp_basic_properties_t *props,
                           rp_broker_event *out, const char **why) {
    memset(out, 0, sizeof *out);
    *why = NULL;
    if (routing_key.len == 0 || routing_key.len >= sizeof out->routing_key ||
        memchr(routing_key.bytes, '\0', routing_key.len) != NULL) {
        *why = "routing key empty, too long or not text";
        return false;
    }
    memcpy(out->routing_key, routing_key.bytes, routing_key.len);
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_kinds); i++)
        if (strcmp(out->routing_key, rp_kinds[i].key) == 0) out->kind = rp_kinds[i].kind;
    if (out->kind == RP_BEV_OTHER) return true;
    if (props == NULL || !(props->_flags & AMQP_BASIC_HEADERS_FLAG)) {
        *why = "no headers";
        return false;
    }
    const amqp_table_t *h = &props->headers;
    out->has_timestamp = rp_int(h, "timestamp_in_ms", &out->timestamp_ms);
    (void)rp_str(h, "user_who_performed_action", out->user, sizeof out->user);
    switch (out->kind) {
    case RP_BEV_QUEUE_CREATED:
    case RP_BEV_QUEUE_DELETED:
        if (!rp_str(h, "name", out->name, sizeof out->name) || out->name[0] == '\0' ||
            !rp_str(h, "vhost", out->vhost, sizeof out->vhost)) {
            *why = "queue event without a usable name or vhost";
            return false;
        }
        return true;
    case RP_BEV_CONSUMER_CREATED:
    case RP_BEV_CONSUMER_DELETED:
        if (!rp_str(h, "queue", out->name, sizeof out->name) || out->name[0] == '\0' ||
            !rp_str(h, "vhost", out->vhost, sizeof out->vhost)) {
            *why = "consumer event without a usable queue or vhost";
            return false;
        }
        /* Tag and channel identify the consumer; without them the event
         * still says that the queue changed. */
        (void)rp_str(h, "consumer_tag", out->consumer_tag, sizeof out->consumer_tag);
        (void)rp_str(h, "channel", out->pid, sizeof out->pid);
        return true;
    case RP_BEV_CHANNEL_CLOSED:
    case RP_BEV_CONNECTION_CLOSED:
        if (!rp_str(h, "pid", out->pid, sizeof out->pid) || out->pid[0] == '\0') {
            *why = "close event without a usable pid";
            return false;
        }
        return true;
    case RP_BEV_POLICY_SET:
    case RP_BEV_POLICY_CLEARED:
        if (!rp_str(h, "name", out->name, sizeof out->name) ||
            !rp_str(h, "vhost", out->vhost, sizeof out->vhost)) {
            *why = "policy event without a usable name or vhost";
            return false;
        }
        out->has_pattern = rp_str(h, "pattern", out->pattern, sizeof out->pattern);
        return true;
    case RP_BEV_BINDING_CREATED:
    case RP_BEV_BINDING_DELETED:
        if (!rp_str(h, "vhost", out->vhost, sizeof out->vhost)) {
            *why = "binding event without a usable vhost";
            return false;
        }
        /* Without a usable destination the event still says that a route
         * in that vhost changed. */
        (void)rp_str(h, "destination_name", out->name, sizeof out->name);
        (void)rp_str(h, "source_name", out->source, sizeof out->source);
        return true;
    case RP_BEV_EXCHANGE_CREATED:
    case RP_BEV_EXCHANGE_DELETED:
        if (!rp_str(h, "name", out->name, sizeof out->name) ||
            !rp_str(h, "vhost", out->vhost, sizeof out->vhost)) {
            *why = "exchange event without a usable name or vhost";
            return false;
        }
        return true;
    case RP_BEV_OTHER:
    default:
        return true;
    }
}

/* ---- one delivery on reaperd's broker-event queue (rp_amqp_events.h) ------- */

/* Not routed by amq.rabbitmq.event: counted, and said once. */
static void rp_amqp_event_refused(const rp_amqp_message *msg, rp_metrics *metrics) {
    uint64_t n = rp_metrics_event_refused(metrics);
    char ex[64];
    snprintf(ex, sizeof ex, "%.*s", (int)(msg->exchange.len < 48 ? msg->exchange.len : 48),
             msg->exchange.len ? (const char *)msg->exchange.bytes : "");
    if (n == 1)
        RP_WARN("a delivery on the broker-event queue did not come from amq.rabbitmq.event "
                "(published straight into the queue?): refused and not acted on; later ones "
                "are only counted (reaper_broker_events_refused_total)",
                "exchange", ex, NULL);
    else
        RP_DEBUG("broker event refused: not from amq.rabbitmq.event", "exchange", ex, NULL);
}

rp_amqp_event_take rp_amqp_event_delivery(const rp_amqp_message *msg, rp_metrics *metrics,
                                          rp_broker_event *ev, bool *stamped, int64_t *stamp_ms) {
    *stamped = false;
    if (!rp_broker_event_from_broker(msg->exchange)) {
        rp_amqp_event_refused(msg, metrics);
        return RP_AMQP_EVENT_REFUSED;
    }
    *stamped = rp_amqp_timestamp_in_ms(msg, stamp_ms);
    const char *why = NULL;
    if (!rp_broker_event_parse(msg->routing_key, &msg->props, ev, &why)) {
        RP_DEBUG("broker event ignored", "routing_key", ev->routing_key, "reason", why, NULL);
        return RP_AMQP_EVENT_IGNORED;
    }
    return RP_AMQP_EVENT_TAKEN;
}
