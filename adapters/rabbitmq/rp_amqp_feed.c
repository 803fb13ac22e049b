/* The events feed's publisher port (rp_amqp_feed.h). */
#include "rp_amqp_feed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_verdict_vhost.h"

struct rp_amqp_feed {
    char *exchange;
    rp_encoding enc;
    rp_metrics *metrics;
    rp_amqp_feed_hooks hooks;
};

typedef struct rp_feed_item {
    rp_amqp_feed *f;
    int64_t seq;
    rp_proto_event_msg msg;
    amqp_basic_properties_t props; /* point into msg */
    struct rp_feed_item *next; /* a held run (rp_feed_hold) */
} rp_feed_item;

/* The events published on this thread while it holds (rp_feed_hold), in
 * order: handed to the loop as one job at the release. */
typedef struct rp_feed_held {
    rp_amqp_feed *f; /* NULL: not holding */
    rp_feed_item *head, *tail;
} rp_feed_held;

static _Thread_local rp_feed_held rp_feed_holding;

static void rp_feed_item_free(rp_feed_item *it) {
    rp_proto_event_msg_cleanup(&it->msg);
    free(it);
}

void rp_amqp_feed_props(amqp_basic_properties_t *p, const char *content_type,
                        const char *message_id, uint64_t timestamp, const char *type) {
    memset(p, 0, sizeof *p);
    p->_flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_TYPE_FLAG |
                AMQP_BASIC_APP_ID_FLAG;
    p->content_type = amqp_cstring_bytes(content_type);
    p->delivery_mode = 2; /* persistent */
    p->message_id = amqp_cstring_bytes(message_id);
    p->timestamp = timestamp;
    p->type = amqp_cstring_bytes(type);
    p->app_id = amqp_cstring_bytes("reaperd");
}

/* The publisher is done with an item handed over to it. */
static void rp_feed_release(void *owner) { rp_feed_item_free(owner); }

static void rp_feed_settled(void *arg, rp_publish_outcome outcome) {
    rp_feed_item *it = arg;
    rp_amqp_feed *f = it->f;
    if (outcome == RP_PUBLISH_CONFIRMED) rp_metrics_feed_published(f->metrics);
    if (f->hooks.on_settled) {
        if (outcome != RP_PUBLISH_CONFIRMED) rp_metrics_feed_publish_failed(f->metrics);
        f->hooks.on_settled(f->hooks.ctx, it->seq, outcome);
    } else if (outcome != RP_PUBLISH_CONFIRMED) {
        rp_metrics_feed_publish_failed(f->metrics);
        RP_WARN("ledger event not published to the events exchange (it stays on the ledger)",
                "event", it->msg.message_id, "outcome", rp_publish_outcome_string(outcome),
                NULL);
    }
}

/* Loop thread: hand one encoded event to the publisher (NULL: stopping):
 * the item itself, not a copy (the publisher releases it once settled). */
static void rp_feed_send(rp_amqp_feed *f, rp_amqp_publisher *publisher, rp_feed_item *it) {
    if (publisher != NULL) {
        amqp_basic_properties_t *props = &it->props;
        rp_amqp_feed_props(props, rp_encoding_content_type(f->enc), it->msg.message_id,
                           (uint64_t)it->msg.timestamp, it->msg.type);
        rp_publish pub = {
            .exchange = f->exchange,
            .routing_key = it->msg.routing_key,
            .props = props,
            .body = {it->msg.body.ptr, it->msg.body.len},
            .mandatory = false,
            .retry = true,
            .done = rp_feed_settled,
            .arg = it,
            .release = rp_feed_release,
            .owner = it,
        };
        if (rp_amqp_publisher_publish(publisher, &pub) == RP_OK) return; /* handed over */
        rp_metrics_feed_publish_failed(f->metrics);
        RP_WARN("out of memory: a ledger event was not published", "event",
                it->msg.message_id, NULL);
        if (f->hooks.on_settled) f->hooks.on_settled(f->hooks.ctx, it->seq, RP_PUBLISH_DROPPED);
    } else if (f->hooks.on_settled) {
        f->hooks.on_settled(f->hooks.ctx, it->seq, RP_PUBLISH_DROPPED);
    } else {
        RP_WARN("ledger event not published to the events exchange (it stays on the ledger)",
                "event", it->msg.message_id, "outcome", "stopping", NULL);
    }
    rp_feed_item_free(it);
}

/* Loop thread: a run of encoded events (one, or a hold's), in order. */
static void rp_feed_on_loop(void *job, bool cancelled) {
    rp_feed_item *it = job;
    rp_amqp_feed *f = it->f;
    if (!cancelled && f->hooks.on_loop) f->hooks.on_loop(f->hooks.ctx);
    rp_amqp_publisher *publisher = cancelled ? NULL : f->hooks.publisher(f->hooks.ctx);
    while (it != NULL) {
        rp_feed_item *next = it->next;
        rp_feed_send(f, publisher, it);
        it = next;
    }
}

/* Committing thread: a run that could not be posted is not published
 * (logged per event; the ledger stays the record). */
static void rp_feed_unposted(rp_feed_item *it, rp_status st) {
    while (it != NULL) {
        rp_feed_item *next = it->next;
        char id[RP_PROTO_EVENT_ID_MAX];
        snprintf(id, sizeof id, "ledger-%" PRId64, it->seq);
        RP_WARN("ledger event not published to the events exchange (it stays on the ledger)",
                "event", id, "status", rp_status_string(st), NULL);
        rp_proto_event_msg_cleanup(&it->msg);
        free(it);
        it = next;
    }
}

/* Committing thread: the port's hold. The release posts what was held as
 * one job (one wake-up of the loop, one publisher flush). */
static void rp_feed_hold(void *self, bool on) {
    rp_amqp_feed *f = self;
    rp_feed_held *h = &rp_feed_holding;
    if (on) {
        if (h->f == NULL) h->f = f;
        return;
    }
    if (h->f != f) return;
    rp_feed_item *run = h->head;
    *h = (rp_feed_held){0};
    if (run == NULL) return;
    rp_status st = f->hooks.post(f->hooks.ctx, rp_feed_on_loop, run);
    if (st != RP_OK) rp_feed_unposted(run, st);
}

/* Committing thread: the publisher port. */
static rp_status rp_feed_publish(void *self, const rp_ledger_event *ev) {
    rp_amqp_feed *f = self;
    rp_feed_item *it = calloc(1, sizeof *it);
    if (it == NULL) {
        RP_WARN("out of memory: a ledger event was not published", NULL);
        return RP_ERR_NOMEM;
    }
    it->f = f;
    it->seq = ev->seq;
    /* Metrics: every committed ledger event passes here; a gate answer's
     * event carries no verdict. */
    const rp_verdict *v = ev->verdict;
    if (v != NULL) {
        rp_metrics_reaped(f->metrics, v->source, v->condition, v->action);
        if (v->condition == RP_COND_DEAD_LETTER && v->action == RP_ACTION_PARKED) {
            /* Under the dead letter's vhost, read from its object (a
             * vhost without a metrics slot: the overflow slot, logged
             * once). */
            char vhost[RP_VERDICT_VHOST_MAX];
            bool known = rp_verdict_vhost(v, vhost, sizeof vhost);
            if (rp_metrics_dead_letters_parked(f->metrics, known ? vhost : NULL, 1))
                RP_WARN("a parked dead letter's vhost has no slot of its own in the metrics: "
                        "it and any other such are counted under vhost=\"\" (logged once)",
                        "vhost", known ? vhost : "(not named by its object)", NULL);
        }
    }
    rp_status st = rp_proto_encode_event(ev, f->enc, &it->msg);
    rp_feed_held *h = &rp_feed_holding;
    if (st == RP_OK && h->f == f) {
        /* Held: posted with the others at the release. */
        if (h->tail) h->tail->next = it;
        else h->head = it;
        h->tail = it;
        return RP_OK;
    }
    if (st == RP_OK) st = f->hooks.post(f->hooks.ctx, rp_feed_on_loop, it);
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

rp_amqp_feed *rp_amqp_feed_new(const char *exchange, rp_encoding enc, rp_metrics *metrics,
                               const rp_amqp_feed_hooks *hooks) {
    rp_amqp_feed *f = calloc(1, sizeof *f);
    if (f == NULL) return NULL;
    f->exchange = strdup(exchange);
    if (f->exchange == NULL) {
        free(f);
        return NULL;
    }
    f->enc = enc;
    f->metrics = metrics;
    f->hooks = *hooks;
    return f;
}

void rp_amqp_feed_port(rp_amqp_feed *f, rp_publisher_port *out) {
    out->self = f;
    out->publish = rp_feed_publish;
    out->hold = rp_feed_hold;
}

void rp_amqp_feed_free(rp_amqp_feed *f) {
    if (f == NULL) return;
    free(f->exchange);
    free(f);
}

rp_amqp_feed *rp_amqp_feed_from_config(const rp_config *cfg, rp_metrics *metrics,
                                       const rp_amqp_feed_hooks *hooks) {
    rp_encoding enc =
        cfg->broker.events_format == RP_EVENTS_FORMAT_JSON ? RP_ENC_JSON : RP_ENC_MSGPACK;
    return rp_amqp_feed_new(cfg->broker.events_exchange, enc, metrics, hooks);
}
