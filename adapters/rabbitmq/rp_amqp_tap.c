/*
 * The dead-letter tap's AMQP side (rp_amqp_tap.h): its declaration on the
 * connect thread, its consumer, acks and returns on the loop.
 */
#include "rp_amqp_tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_msg.h"
#include "rp_amqp_table.h"
#include "rp_amqp_open.h"
#include "rp_log.h"

struct rp_amqp_tap {
    rp_amqp_conn *amqp;
    rp_amqp_assembler assembler;
    bool assembling; /* the assembler is initialised */
    bool up;
    char *queue;
    size_t header_cap;
    int group_size; /* x-quorum-initial-group-size; 0: not sent */
    rp_amqp_tap_hooks hooks;
};

/* An item's properties' pool page, and what an item costs beyond its body
 * and its decoded properties (rp_amqp_props_footprint): the item and one
 * page. */
#define RP_TAP_POOL_PAGE RP_AMQP_POOL_PAGE
#define RP_TAP_ITEM_OVERHEAD (sizeof(rp_amqp_tap_item) + RP_TAP_POOL_PAGE)

/* ---- items ------------------------------------------------------------------ */

void rp_amqp_tap_item_free(rp_amqp_tap_item *it) {
    if (it == NULL) return;
    empty_amqp_pool(&it->pool);
    free(it->body);
    free(it);
}

size_t rp_amqp_tap_item_shed(rp_amqp_tap_item *it) {
    empty_amqp_pool(&it->pool);
    memset(&it->props, 0, sizeof it->props);
    free(it->body);
    it->body = NULL;
    it->body_len = 0;
    return sizeof *it;
}

rp_amqp_tap_item *rp_amqp_tap_item_make(rp_amqp_assembler *a, const rp_amqp_message *msg,
                                        size_t header_cap) {
    rp_amqp_tap_item *it = calloc(1, sizeof *it);
    bool ok = it != NULL;
    size_t names = 0; /* the delivery's names, in a taken pool beside the properties */
    if (ok) {
        it->base.tag = msg->delivery_tag;
        it->base.via_default = msg->exchange.len == 0;
        it->truncated = msg->truncated;
        it->body_len = msg->body_len;
        /* Headers over the cap are not kept (a count prefetch bounds no
         * bytes, and a frame can carry a table of the broker's frame_max):
         * only what the identity rule reads, copied into a pool of the
         * item's own. Under the cap the item takes the assembler's pool,
         * which holds the properties as decoded: no second copy. */
        amqp_basic_properties_t src = msg->props;
        size_t hdr = (src._flags & AMQP_BASIC_HEADERS_FLAG) ? rp_amqp_table_footprint(&src.headers)
                                                            : 0;
        if (hdr > header_cap) {
            init_amqp_pool(&it->pool, RP_TAP_POOL_PAGE);
            it->headers_dropped = hdr;
            ok = rp_amqp_death_headers(&it->pool, &msg->props.headers, &src.headers) == RP_OK;
            ok = ok && rp_amqp_props_copy(&it->pool, &src, &it->props);
        } else if (rp_amqp_assembler_take_pool(a, msg, &it->pool)) {
            it->props = msg->props;
            names = msg->consumer_tag.len + msg->exchange.len + msg->routing_key.len;
        } else {
            init_amqp_pool(&it->pool, RP_TAP_POOL_PAGE);
            ok = rp_amqp_props_copy(&it->pool, &src, &it->props);
        }
        if (ok && msg->body_len > 0) {
            it->body = malloc(msg->body_len);
            ok = it->body != NULL;
            if (ok) memcpy(it->body, msg->body, msg->body_len);
        }
    }
    if (!ok) {
        rp_amqp_tap_item_free(it);
        return NULL;
    }
    /* What it holds: its body, its properties and headers as decoded, and
     * its bookkeeping (issue 14 item 6). */
    it->base.weight =
        it->body_len + rp_amqp_props_footprint(&it->props) + names + RP_TAP_ITEM_OVERHEAD;
    return it;
}

/* ---- the connect thread ---------------------------------------------------- */

static bool rp_tap_rpc_ok(amqp_connection_state_t c, const char *what, char *err, size_t n,
                          amqp_rpc_reply_t *out) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (out) *out = r;
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

/* The broker's major version from its server properties; 0 when unknown. */
static int rp_server_major(amqp_connection_state_t c) {
    const amqp_table_t *p = amqp_get_server_properties(c);
    for (int i = 0; p && i < p->num_entries; i++) {
        const amqp_table_entry_t *e = &p->entries[i];
        if (e->key.len == 7 && memcmp(e->key.bytes, "version", 7) == 0 &&
            e->value.kind == AMQP_FIELD_KIND_UTF8) {
            int major = 0;
            const char *s = e->value.value.bytes.bytes;
            for (size_t k = 0; k < e->value.value.bytes.len && s[k] >= '0' && s[k] <= '9' &&
                               major < 1000;
                 k++)
                major = major * 10 + (s[k] - '0');
            return major;
        }
    }
    return 0;
}

/* Opens RP_AMQP_TAP_CHANNEL, declares the tap queue, sets the prefetch and
 * consumes. Reads only the queue's name and the server properties. */
static bool rp_tap_setup(void *arg, amqp_connection_state_t c, char *err, size_t n) {
    rp_amqp_tap *t = arg;
    const char *tap = t->queue;
    amqp_channel_open(c, RP_AMQP_TAP_CHANNEL);
    if (!rp_tap_rpc_ok(c, "opening the tap channel", err, n, NULL)) return false;
    int major = rp_server_major(c);
    amqp_table_entry_t e[3];
    int ne = 0;
    e[ne].key = amqp_cstring_bytes("x-queue-type");
    e[ne].value.kind = AMQP_FIELD_KIND_UTF8;
    e[ne++].value.value.bytes = amqp_cstring_bytes("quorum");
    if (major >= 4) {
        e[ne].key = amqp_cstring_bytes("x-delivery-limit");
        e[ne].value.kind = AMQP_FIELD_KIND_I64;
        e[ne++].value.value.i64 = -1;
    }
    if (t->group_size > 0) { /* read only when the queue is made */
        e[ne].key = amqp_cstring_bytes("x-quorum-initial-group-size");
        e[ne].value.kind = AMQP_FIELD_KIND_I64;
        e[ne++].value.value.i64 = t->group_size;
    }
    amqp_table_t args = {ne, e};
    amqp_queue_declare(c, RP_AMQP_TAP_CHANNEL, amqp_cstring_bytes(tap), 0, 1, 0, 0, args);
    amqp_rpc_reply_t r;
    if (!rp_tap_rpc_ok(c, "declaring the tap queue", err, n, &r)) {
        /* A tap declared before without the limit argument (made on 3.x,
         * or by an older reaper): the broker refuses the new argument
         * (406) and closes the channel. Use the queue as it is. */
        if (major < 4 || r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
            r.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
            return false;
        RP_WARN("the tap queue exists without x-delivery-limit -1: RabbitMQ 4's default "
                "delivery limit of 20 applies to it; delete it while reaperd is stopped to "
                "declare it again",
                "queue", tap, "reason", err, NULL);
        amqp_channel_close_ok_t ok = {0};
        if (amqp_send_method(c, RP_AMQP_TAP_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) !=
            AMQP_STATUS_OK) {
            snprintf(err, n, "closing the tap channel failed");
            return false;
        }
        amqp_channel_open(c, RP_AMQP_TAP_CHANNEL);
        if (!rp_tap_rpc_ok(c, "opening the tap channel again", err, n, NULL)) return false;
        amqp_queue_declare(c, RP_AMQP_TAP_CHANNEL, amqp_cstring_bytes(tap), 1, 1, 0, 0,
                           amqp_empty_table);
        if (!rp_tap_rpc_ok(c, "declaring the tap queue (passive)", err, n, NULL)) return false;
    }
    amqp_basic_qos(c, RP_AMQP_TAP_CHANNEL, 0, RP_TAP_PREFETCH, 0);
    if (!rp_tap_rpc_ok(c, "setting the tap's prefetch", err, n, NULL)) return false;
    amqp_basic_consume(c, RP_AMQP_TAP_CHANNEL, amqp_cstring_bytes(tap),
                       amqp_cstring_bytes(RP_TAP_CONSUMER_TAG), 0, 0, 0, amqp_empty_table);
    return rp_tap_rpc_ok(c, "consuming the tap queue", err, n, NULL);
}

/* ---- the loop ----------------------------------------------------------------- */

/* Sends a method on the tap's channel; a failure drops the connection. */
static bool rp_tap_send_method(rp_amqp_tap *t, amqp_method_number_t id, void *method,
                               const char *what) {
    amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
    if (c == NULL) return false;
    int st = amqp_send_method(c, RP_AMQP_TAP_CHANNEL, id, method);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "%s: %s", what, amqp_error_string2(st));
        rp_amqp_conn_fail(t->amqp, why);
        return false;
    }
    return true;
}

bool rp_amqp_tap_ack(rp_amqp_tap *t, uint64_t tag, bool multiple) {
    amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
    if (c == NULL) return false;
    int st = amqp_basic_ack(c, RP_AMQP_TAP_CHANNEL, tag, multiple);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "tap ack: %s", amqp_error_string2(st));
        rp_amqp_conn_fail(t->amqp, why);
        return false;
    }
    return true;
}

bool rp_amqp_tap_cancel(rp_amqp_tap *t, const char *tag) {
    amqp_basic_cancel_t m = {.consumer_tag = amqp_cstring_bytes(tag), .nowait = 1};
    return rp_tap_send_method(t, AMQP_BASIC_CANCEL_METHOD, &m, "tap cancel");
}

bool rp_amqp_tap_consume(rp_amqp_tap *t, const char *tag) {
    amqp_basic_consume_t m = {.queue = amqp_cstring_bytes(t->queue),
                              .consumer_tag = amqp_cstring_bytes(tag),
                              .nowait = 1,
                              .arguments = amqp_empty_table};
    return rp_tap_send_method(t, AMQP_BASIC_CONSUME_METHOD, &m, "tap consume");
}

/* A delivery for one of the tap's consumer tags (lent for the call). */
static void rp_tap_on_message(rp_amqp_tap *t, const rp_amqp_message *msg) {
    if (t->hooks.returning(t->hooks.arg)) {
        /* Sent before the broker had our cancel: back to it, kept in the
         * queue for when the tap consumes again (its x-delivery-limit -1
         * on RabbitMQ 4 makes a return cost nothing). */
        amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
        int st = c ? amqp_basic_nack(c, RP_AMQP_TAP_CHANNEL, msg->delivery_tag, 0, 1)
                   : AMQP_STATUS_OK;
        if (st != AMQP_STATUS_OK) {
            char why[160];
            snprintf(why, sizeof why, "tap nack: %s", amqp_error_string2(st));
            rp_amqp_conn_fail(t->amqp, why);
            return;
        }
        t->hooks.on_returned(t->hooks.arg);
        return;
    }
    rp_amqp_tap_item *it = rp_amqp_tap_item_make(&t->assembler, msg, t->header_cap);
    if (it == NULL) {
        /* Out of memory: not acked, so the broker gives it again after
         * the reconnect this forces. */
        rp_amqp_conn_fail(t->amqp, "out of memory holding a tap delivery");
        return;
    }
    t->hooks.on_item(t->hooks.arg, it);
}

static void rp_tap_assembled(void *arg, const rp_amqp_message *msg) {
    rp_amqp_tap *t = arg;
    /* Stopping: take no new work; unacked, it goes back at the close. */
    if (t->hooks.stopping(t->hooks.arg)) return;
    if (rp_tap_owns_tag(msg->consumer_tag.bytes, msg->consumer_tag.len)) {
        rp_tap_on_message(t, msg);
        return;
    }
    RP_WARN("delivery for an unknown consumer on the tap's connection; rejected", NULL);
    amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
    if (c) (void)amqp_basic_reject(c, msg->channel, msg->delivery_tag, 1);
}

static void rp_tap_on_frame(void *arg, const amqp_frame_t *f) {
    rp_amqp_tap *t = arg;
    rp_status st = RP_OK;
    if (rp_amqp_assembler_frame(&t->assembler, f, &st)) {
        if (st != RP_OK) rp_amqp_conn_fail(t->amqp, "a tap delivery arrived out of order");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD && f->payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        /* The broker cancelled the tap's consumer (its queue was deleted):
         * the connection is built again, which declares it again. */
        rp_amqp_conn_fail(t->amqp, "the broker cancelled the tap's consumer (queue deleted?)");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD) {
        char id[16];
        snprintf(id, sizeof id, "0x%08x", f->payload.method.id);
        RP_DEBUG("tap frame not handled", "method", id, NULL);
    }
}

static void rp_tap_on_state(void *arg, rp_amqp_state state, const char *why) {
    rp_amqp_tap *t = arg;
    if (state == RP_AMQP_UP) {
        t->up = true;
        char fm[24];
        amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
        snprintf(fm, sizeof fm, "%d", c ? amqp_get_frame_max(c) : 0);
        RP_INFO("tap connected", "broker", why, "queue", t->queue, "frame_max", fm, NULL);
        t->hooks.on_up(t->hooks.arg);
    } else if (state == RP_AMQP_DOWN) {
        if (t->up) rp_amqp_assembler_reset(&t->assembler);
        t->up = false;
        t->hooks.on_down(t->hooks.arg);
        RP_WARN("the tap's broker connection is down; retrying (control and events go on)",
                "broker", rp_amqp_conn_peer(t->amqp), "reason", why, NULL);
    }
}

/* ---- life ---------------------------------------------------------------------- */

rp_amqp_tap *rp_amqp_tap_new(struct event_base *base, const rp_amqp_params *params,
                             const char *queue, size_t body_limit, size_t header_cap,
                             const rp_amqp_tap_hooks *hooks, const char **err) {
    rp_amqp_tap *t = calloc(1, sizeof *t);
    if (t == NULL || (t->queue = strdup(queue)) == NULL) {
        free(t);
        *err = "out of memory";
        return NULL;
    }
    t->header_cap = header_cap;
    t->hooks = *hooks;
    t->group_size = rp_amqp_quorum_group_size(params->url);
    rp_amqp_params p = *params;
    /* Named after its queue, so that an operator tells the replicas' taps
     * from the daemon's connections in the management UI. */
    char name[300];
    snprintf(name, sizeof name, "reaperd tap %s", queue);
    p.connection_name = name;
    p.frame_max = RP_AMQP_TAP_FRAME_MAX;
    rp_amqp_hooks h = {
        .on_state = rp_tap_on_state,
        .on_frame = rp_tap_on_frame,
        .on_setup = rp_tap_setup,
        .arg = t,
    };
    rp_amqp_assembler_init(&t->assembler, body_limit, rp_tap_assembled, t);
    t->assembling = true;
    t->amqp = rp_amqp_conn_new(base, &p, &h, err);
    if (t->amqp == NULL) {
        rp_amqp_tap_free(t);
        return NULL;
    }
    return t;
}

rp_status rp_amqp_tap_start(rp_amqp_tap *t) { return rp_amqp_conn_start(t->amqp); }

void rp_amqp_tap_free(rp_amqp_tap *t) {
    if (t == NULL) return;
    if (t->amqp) rp_amqp_conn_free(t->amqp);
    if (t->assembling) rp_amqp_assembler_cleanup(&t->assembler);
    free(t->queue);
    free(t);
}
