/*
 * The broker side of the daemon: the AMQP connection, what reaper declares
 * (CONTRACT section 8), and routing deliveries and confirms.
 *
 * Declarations run on the connect thread (rp_amqp_conn's on_setup hook), so
 * the loop never waits for an RPC: the events exchange, the control queue
 * with its consumer, the event queue bound to amq.rabbitmq.event with its
 * consumer, and the publish channel in confirm mode. The tap has a
 * connection of its own (tap.h), started here with the same parameters. On every reconnect they
 * are all made again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_internal.h"
#include "rp_amqp_events.h"
#include "rp_log.h"
#include "rp_pg_store.h"

#define RP_HEARTBEAT_SECONDS 10
/* The largest delivery body kept on this connection: a control request is
 * at most 64 KiB (proto/SCHEMA.md; a longer one is kept only to say it is
 * too large, truncated at the limit), broker events are small. The tap has
 * a connection of its own (tap.h), which keeps a dead letter whole up to
 * what the store keeps. */
#define RP_DELIVERY_BODY_LIMIT 65536

/* binding.* and exchange.*: the tap follows every route a dead letter can
 * take (tap.h). */
static const char *const rp_event_keys[] = {"queue.*",           "consumer.*", "channel.closed",
                                            "connection.closed", "policy.*",   "binding.*",
                                            "exchange.*"};

static bool rp_rpc_ok(amqp_connection_state_t c, const char *what, char *err, size_t n) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

/* Connect thread: reads only the configuration reaperd started with (a
 * reload never changes broker.*; d->cfg is the loop's). */
static bool rp_broker_setup(void *arg, amqp_connection_state_t c, char *err, size_t n) {
    rp_daemon *d = arg;
    const rp_config *cfg = d->boot_cfg;
    amqp_exchange_declare(c, 1, amqp_cstring_bytes(cfg->broker.events_exchange),
                          amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
    if (!rp_rpc_ok(c, "declaring the events exchange", err, n)) return false;
    amqp_queue_declare(c, 1, amqp_cstring_bytes(cfg->broker.control_queue), 0, 1, 0, 0,
                       amqp_empty_table);
    if (!rp_rpc_ok(c, "declaring the control queue", err, n)) return false;
    amqp_basic_qos(c, 1, 0, RP_CONTROL_PREFETCH, 0);
    if (!rp_rpc_ok(c, "setting the prefetch", err, n)) return false;
    amqp_basic_consume(c, 1, amqp_cstring_bytes(cfg->broker.control_queue),
                       amqp_cstring_bytes(RP_CONTROL_CONSUMER_TAG), 0, 0, 0, amqp_empty_table);
    if (!rp_rpc_ok(c, "consuming the control queue", err, n)) return false;

    /* Broker events: a server-named exclusive queue that dies with us.
     * Events are not replayed; a reconnect reconciles from a listing. */
    amqp_queue_declare_ok_t *q =
        amqp_queue_declare(c, 1, amqp_empty_bytes, 0, 0, 1, 1, amqp_empty_table);
    if (!rp_rpc_ok(c, "declaring the event queue", err, n) || q == NULL) return false;
    amqp_bytes_t name = amqp_bytes_malloc_dup(q->queue);
    bool ok = name.bytes != NULL;
    for (size_t i = 0; ok && i < RP_ARRAY_LEN(rp_event_keys); i++) {
        amqp_queue_bind(c, 1, name, amqp_cstring_bytes("amq.rabbitmq.event"),
                        amqp_cstring_bytes(rp_event_keys[i]), amqp_empty_table);
        ok = rp_rpc_ok(c, "binding the event queue to amq.rabbitmq.event", err, n);
    }
    if (ok) {
        amqp_basic_consume(c, 1, name, amqp_cstring_bytes(RP_EVENTS_CONSUMER_TAG), 0, 1, 1,
                           amqp_empty_table);
        ok = rp_rpc_ok(c, "consuming broker events", err, n);
    }
    amqp_bytes_free(name);
    return ok && rp_amqp_publisher_setup(c, err, n) &&
           rp_amqp_publisher_setup_on(c, RP_REPLAY_CHANNEL, err, n);
}

static bool rp_tag_is(amqp_bytes_t tag, const char *want) {
    return tag.len == strlen(want) && memcmp(tag.bytes, want, tag.len) == 0;
}

/* A delivery on the event queue that amq.rabbitmq.event did not route
 * (published straight into the queue through the default exchange, say):
 * not acted on, not even for the event lag; counted, and said once. The
 * event consumer is no-ack, so there is nothing to settle. */
static void rp_event_refused(rp_daemon *d, const rp_amqp_message *msg) {
    uint64_t n = rp_metrics_event_refused(&d->metrics);
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

static void rp_broker_on_message(void *arg, const rp_amqp_message *msg) {
    rp_daemon *d = arg;
    /* Stopping: take no new work. Unacked, the delivery goes to the next
     * reaper when this connection closes. */
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) return;
    if (rp_tag_is(msg->consumer_tag, RP_CONTROL_CONSUMER_TAG)) {
        rp_control_on_message(d, msg);
    } else if (rp_tag_is(msg->consumer_tag, RP_EVENTS_CONSUMER_TAG)) {
        if (!rp_broker_event_from_broker(msg->exchange)) {
            rp_event_refused(d, msg);
            return;
        }
        rp_observe_event(d, msg);
        if (d->events) rp_events_on_message(d->events, msg);
    } else {
        RP_WARN("delivery for an unknown consumer; rejected", NULL);
        amqp_connection_state_t c = rp_amqp_conn_handle(d->amqp);
        if (c) (void)amqp_basic_reject(c, msg->channel, msg->delivery_tag, 1);
    }
}

static void rp_broker_on_frame(void *arg, const amqp_frame_t *f) {
    rp_daemon *d = arg;
    if (rp_amqp_publisher_frame(d->publisher, f)) return;
    if (rp_amqp_publisher_frame(d->replay_publisher, f)) return;
    rp_status st = RP_OK;
    if (rp_amqp_assembler_frame(&d->assembler, f, &st)) {
        if (st != RP_OK) rp_amqp_conn_fail(d->amqp, "a delivery arrived out of order");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD && f->payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        /* The broker cancelled a consumer (its queue was deleted): rebuild
         * the connection, which declares and consumes everything again. */
        rp_amqp_conn_fail(d->amqp, "the broker cancelled a consumer (queue deleted?)");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD) {
        char id[16];
        snprintf(id, sizeof id, "0x%08x", f->payload.method.id);
        RP_DEBUG("broker frame not handled", "method", id, NULL);
    }
}

/* A channel error: only the replay channel is opened again in place (its
 * publisher settles the replay that caused it as refused); any other
 * channel rebuilds the connection. */
static bool rp_broker_on_channel_close(void *arg, uint16_t channel, const char *why) {
    rp_daemon *d = arg;
    if (channel != RP_REPLAY_CHANNEL) return false;
    RP_WARN("the broker refused a replay and closed the replay channel; opening it again",
            "reason", why, NULL);
    return rp_amqp_publisher_channel_closed(d->replay_publisher, channel, why);
}

static void rp_broker_on_state(void *arg, rp_amqp_state state, const char *why) {
    rp_daemon *d = arg;
    switch (state) {
    case RP_AMQP_UP:
        d->broker_up = true;
        d->broker_generation++;
        rp_metrics_connected(&d->metrics, RP_METRICS_BROKER);
        RP_INFO("broker connected", "broker", why, "control_queue", d->cfg->broker.control_queue,
                NULL);
        rp_amqp_publisher_on_up(d->publisher);
        rp_amqp_publisher_on_up(d->replay_publisher);
        if (d->events) rp_events_on_up(d->events); /* events are not replayed: list again */
        rp_tap_bindings_soon(d);
        break;
    case RP_AMQP_DOWN:
        if (d->broker_up) {
            rp_amqp_assembler_reset(&d->assembler);
            rp_amqp_publisher_on_down(d->publisher);
            rp_amqp_publisher_on_down(d->replay_publisher);
            if (d->events) rp_events_on_down(d->events);
        }
        d->broker_up = false;
        RP_WARN("broker unreachable; retrying", "broker", rp_amqp_conn_peer(d->amqp), "reason",
                why, NULL);
        break;
    case RP_AMQP_CONNECTING:
        RP_DEBUG("broker connecting", "broker", why, NULL);
        break;
    default:
        break;
    }
}

rp_status rp_broker_start(rp_daemon *d, const char *password) {
    const rp_config *cfg = d->cfg;
    rp_amqp_params ap = {
        .url = cfg->broker.url,
        .password = password,
        .heartbeat_seconds = RP_HEARTBEAT_SECONDS,
        .connect_timeout_ms = 5000,
        .connection_name = "reaperd",
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
    rp_amqp_hooks hooks = {
        .on_state = rp_broker_on_state,
        .on_frame = rp_broker_on_frame,
        .on_setup = rp_broker_setup,
        .on_channel_close = rp_broker_on_channel_close,
        .arg = d,
    };
    rp_amqp_assembler_init(&d->assembler, RP_DELIVERY_BODY_LIMIT, rp_broker_on_message, d);
    const char *err = NULL;
    d->amqp = rp_amqp_conn_new(d->base, &ap, &hooks, &err);
    if (d->amqp == NULL) {
        RP_ERROR("cannot use the broker URL", "key", "broker.url", "reason", err, NULL);
        return RP_ERR_CONFIG;
    }
    if (d->tap != NULL && rp_tap_connect(d->tap, &ap) != RP_OK) {
        RP_ERROR("cannot start the tap's broker connection", NULL);
        return RP_ERR_INTERNAL;
    }
    d->publisher = rp_amqp_publisher_new(d->amqp);
    d->replay_publisher = rp_amqp_publisher_new_on(d->amqp, RP_REPLAY_CHANNEL);
    if (d->publisher == NULL || d->replay_publisher == NULL) return RP_ERR_NOMEM;
    if (rp_amqp_conn_start(d->amqp) != RP_OK) {
        RP_ERROR("cannot start the broker connection", NULL);
        return RP_ERR_INTERNAL;
    }
    return RP_OK;
}

void rp_broker_stop(rp_daemon *d) {
    /* The publisher first: its pending callbacks may still use the daemon. */
    rp_amqp_publisher_free(d->replay_publisher);
    d->replay_publisher = NULL;
    rp_amqp_publisher_free(d->publisher);
    d->publisher = NULL;
    rp_amqp_conn_free(d->amqp);
    d->amqp = NULL;
    rp_amqp_assembler_cleanup(&d->assembler);
}

void rp_broker_ack(rp_daemon *d, unsigned generation, uint64_t tag) {
    if (generation != d->broker_generation) return; /* redelivered anyway */
    amqp_connection_state_t c = rp_amqp_conn_handle(d->amqp);
    if (c == NULL) return;
    int st = amqp_basic_ack(c, 1, tag, 0);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "ack: %s", amqp_error_string2(st));
        rp_amqp_conn_fail(d->amqp, why);
    }
}
