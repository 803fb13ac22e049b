/*
 * The events feed (issue: reaps as events): every ledger event reaper
 * commits is also published, after the commit, to broker.events_exchange
 * (topic) with publisher confirms. The message (routing key
 * <source>.<condition>.<action> or gate.<kind>.<outcome> in lower case,
 * message_id ledger-<seq>, the ledger payload as the body, msgpack or JSON
 * as broker.events_format says, with the content_type to match) is built by
 * rp_proto_encode_event (SCHEMA.md section 7). broker.events_format needs a
 * restart, so the store thread reads it from boot_cfg.
 *
 * The publisher port is called on the store thread, right after a commit
 * (a pass's verdicts, a park, and every gate answer through
 * rp_gate_feed_wrap); it encodes there and posts the publish to the loop,
 * which alone touches AMQP. A publish waiting for the broker is retried
 * across reconnects (rp_amqp_publisher retry) and never blocks the loop or
 * the pass; past the publisher's bounded queue it is DROPPED and logged
 * here with its message id. The ledger row is the record either way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_internal.h"
#include "rp_log.h"
#include "rp_proto.h"

typedef struct rp_feed_item {
    rp_daemon *d;
    rp_encoding enc; /* the body's encoding (broker.events_format) */
    rp_proto_event_msg msg;
} rp_feed_item;

typedef struct rp_feed_sent {
    rp_daemon *d;
    char id[RP_PROTO_EVENT_ID_MAX];
} rp_feed_sent;

static void rp_feed_settled(void *arg, rp_publish_outcome outcome) {
    rp_feed_sent *sent = arg;
    if (outcome == RP_PUBLISH_CONFIRMED) rp_metrics_feed_published(&sent->d->metrics);
    if (outcome != RP_PUBLISH_CONFIRMED) {
        rp_metrics_feed_publish_failed(&sent->d->metrics);
        RP_WARN("ledger event not published to the events exchange (it stays on the ledger)",
                "event", sent->id, "outcome", rp_publish_outcome_string(outcome), NULL);
    }
    free(sent);
}

/* Loop thread: hand the encoded event to the publisher. */
static void rp_feed_on_loop(void *job, bool cancelled) {
    rp_feed_item *it = job;
    rp_daemon *d = it->d;
    if (!cancelled) rp_observe_gauges_soon(d); /* a gate or sighting may have changed */
    if (!cancelled && d->publisher != NULL) {
        amqp_basic_properties_t props;
        memset(&props, 0, sizeof props);
        props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                       AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
                       AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG;
        props.content_type = amqp_cstring_bytes(rp_encoding_content_type(it->enc));
        props.delivery_mode = 2; /* persistent */
        props.message_id = amqp_cstring_bytes(it->msg.message_id);
        props.timestamp = (uint64_t)it->msg.timestamp;
        props.type = amqp_cstring_bytes(it->msg.type);
        props.app_id = amqp_cstring_bytes("reaperd");
        rp_feed_sent *id = malloc(sizeof *id);
        if (id) {
            id->d = d;
            snprintf(id->id, sizeof id->id, "%s", it->msg.message_id);
        }
        rp_publish pub = {
            .exchange = d->cfg->broker.events_exchange,
            .routing_key = it->msg.routing_key,
            .props = &props,
            .body = {it->msg.body.ptr, it->msg.body.len},
            .mandatory = false,
            .retry = true,
            .done = rp_feed_settled,
            .arg = id,
        };
        if (id == NULL || rp_amqp_publisher_publish(d->publisher, &pub) != RP_OK) {
            free(id);
            rp_metrics_feed_publish_failed(&d->metrics);
            RP_WARN("out of memory: a ledger event was not published", "event",
                    it->msg.message_id, NULL);
        }
    } else {
        RP_WARN("ledger event not published to the events exchange (it stays on the ledger)",
                "event", it->msg.message_id, "outcome", "stopping", NULL);
    }
    rp_proto_event_msg_cleanup(&it->msg);
    free(it);
}

/* broker.events_format as the proto's encoding. */
static rp_encoding rp_feed_encoding(const rp_config *cfg) {
    return cfg->broker.events_format == RP_EVENTS_FORMAT_JSON ? RP_ENC_JSON : RP_ENC_MSGPACK;
}

/* Store thread: the publisher port. */
static rp_status rp_feed_publish(void *self, const rp_ledger_event *ev) {
    rp_daemon *d = self;
    rp_feed_item *it = calloc(1, sizeof *it);
    if (it == NULL) {
        RP_WARN("out of memory: a ledger event was not published", NULL);
        return RP_ERR_NOMEM;
    }
    it->d = d;
    it->enc = rp_feed_encoding(d->boot_cfg);
    /* Metrics: every committed ledger event passes here (store thread);
     * a gate answer's event carries no verdict. */
    const rp_verdict *v = ev->verdict;
    if (v != NULL) {
        rp_metrics_reaped(&d->metrics, v->source, v->condition, v->action);
        if (v->condition == RP_COND_DEAD_LETTER && v->action == RP_ACTION_PARKED)
            rp_metrics_dead_letters_parked(&d->metrics, 1);
    }
    rp_status st = rp_proto_encode_event(ev, it->enc, &it->msg);
    if (st == RP_OK) st = rp_worker_post(d->store, rp_feed_on_loop, it);
    if (st != RP_OK) {
        char id[RP_PROTO_EVENT_ID_MAX];
        snprintf(id, sizeof id, "ledger-%" PRId64, ev->seq);
        RP_WARN("ledger event not published to the events exchange (it stays on the ledger)",
                "event", id, "status", rp_status_string(st), NULL);
        rp_proto_event_msg_cleanup(&it->msg);
        free(it);
    }
    return st;
}

void rp_feed_port(rp_daemon *d, rp_publisher_port *out) {
    out->self = d;
    out->publish = rp_feed_publish;
}
