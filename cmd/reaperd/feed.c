/*
 * The events feed (issue: reaps as events): every ledger event reaper
 * commits is also published, after the commit, to broker.events_exchange
 * (topic) with routing key <source>.<condition>.<action> in lower case and
 * the verdict as a msgpack body, with publisher confirms.
 *
 * The publisher port is called on the store thread, right after a commit;
 * it encodes there and posts the publish to the loop, which alone touches
 * AMQP. A publish waiting for the broker is retried across reconnects
 * (rp_amqp_publisher retry) and never blocks the loop or the pass; the
 * ledger row is the record either way.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_internal.h"
#include "rp_log.h"
#include "rp_proto.h"

typedef struct rp_feed_item {
    rp_daemon *d;
    char routing_key[96];
    char message_id[48];
    int64_t at_seconds;
    rp_proto_buf body;
} rp_feed_item;

static void rp_feed_lower(char *dst, size_t n, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

typedef struct rp_feed_sent {
    rp_daemon *d;
    char id[48];
} rp_feed_sent;

static void rp_feed_settled(void *arg, rp_publish_outcome outcome) {
    rp_feed_sent *sent = arg;
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
    if (!cancelled && d->publisher != NULL) {
        amqp_basic_properties_t props;
        memset(&props, 0, sizeof props);
        props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                       AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
                       AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG;
        props.content_type = amqp_cstring_bytes(rp_encoding_content_type(RP_ENC_MSGPACK));
        props.delivery_mode = 2; /* persistent */
        props.message_id = amqp_cstring_bytes(it->message_id);
        props.timestamp = (uint64_t)it->at_seconds;
        props.type = amqp_cstring_bytes("QueueReaped");
        props.app_id = amqp_cstring_bytes("reaperd");
        rp_feed_sent *id = malloc(sizeof *id);
        if (id) {
            id->d = d;
            snprintf(id->id, sizeof id->id, "%s", it->message_id);
        }
        rp_publish pub = {
            .exchange = d->cfg->broker.events_exchange,
            .routing_key = it->routing_key,
            .props = &props,
            .body = {it->body.ptr, it->body.len},
            .mandatory = false,
            .retry = true,
            .done = rp_feed_settled,
            .arg = id,
        };
        if (id == NULL || rp_amqp_publisher_publish(d->publisher, &pub) != RP_OK) {
            free(id);
            rp_metrics_feed_publish_failed(&d->metrics);
            RP_WARN("out of memory: a ledger event was not published", "event", it->message_id,
                    NULL);
        }
    }
    rp_proto_buf_cleanup(&it->body);
    free(it);
}

/* Store thread: the publisher port. */
static rp_status rp_feed_publish(void *self, const rp_ledger_event *ev) {
    rp_daemon *d = self;
    rp_feed_item *it = calloc(1, sizeof *it);
    if (it == NULL) return RP_ERR_NOMEM;
    it->d = d;
    const rp_verdict *v = ev->verdict;
    /* Metrics: every committed ledger event passes here (store thread). */
    rp_metrics_reaped(&d->metrics, v->source, v->condition, v->action);
    if (v->condition == RP_COND_DEAD_LETTER && v->action == RP_ACTION_PARKED)
        rp_metrics_dead_letters_parked(&d->metrics, 1);
    char src[24], cond[32], act[24];
    rp_feed_lower(src, sizeof src, rp_source_string(v->source));
    rp_feed_lower(cond, sizeof cond, rp_condition_string(v->condition));
    rp_feed_lower(act, sizeof act, rp_action_string(v->action));
    snprintf(it->routing_key, sizeof it->routing_key, "%s.%s.%s", src, cond, act);
    snprintf(it->message_id, sizeof it->message_id, "ledger-%" PRId64, ev->seq);
    it->at_seconds = ev->at / 1000;
    rp_status st = rp_proto_encode_verdict(v, RP_ENC_MSGPACK, &it->body);
    if (st == RP_OK) st = rp_worker_post(d->store, rp_feed_on_loop, it);
    if (st != RP_OK) {
        rp_proto_buf_cleanup(&it->body);
        free(it);
    }
    return st;
}

void rp_feed_port(rp_daemon *d, rp_publisher_port *out) {
    out->self = d;
    out->publish = rp_feed_publish;
}
