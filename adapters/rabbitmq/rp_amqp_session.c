/*
 * The daemon's AMQP session (rp_amqp_session.h): the connection, what
 * reaper declares on it, the frame drain and the dispatch of deliveries by
 * consumer tag.
 */
#include "rp_amqp_session.h"
#include "rp_amqp_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"

/* binding.* and exchange.*: the tap follows every route a dead letter can
 * take (tap.h). */
static const char *const rp_event_keys[] = {"queue.*",           "consumer.*", "channel.closed",
                                            "connection.closed", "policy.*",   "binding.*",
                                            "exchange.*"};

typedef struct rp_session_handler {
    char *tag;
    rp_amqp_session_handler fn;
    void *arg;
} rp_session_handler;

struct rp_amqp_session {
    rp_amqp_conn *conn;
    rp_amqp_assembler assembler;
    rp_amqp_publisher *publisher;
    rp_amqp_publisher *replay_publisher;
    rp_amqp_session_hooks hooks;
    rp_session_handler handlers[RP_AMQP_SESSION_MAX_HANDLERS];
    size_t n_handlers;
    /* Copies: the connect thread reads them. */
    char *events_exchange;
    char *control_queue;
    uint16_t control_prefetch;
    uint16_t replay_channel;
    int group_size; /* > 0: the control queue is a quorum queue (a host list) */
    unsigned generation; /* grows at every (re)connect: stale tags */
    bool up;
    bool quiet;
};

static const char *const rp_ack_result_names[RP_AMQP_ACK_COUNT_] = {
    [RP_AMQP_ACK_SENT] = "sent",
    [RP_AMQP_ACK_STALE] = "stale",
    [RP_AMQP_ACK_NO_CONNECTION] = "no connection",
    [RP_AMQP_ACK_FAILED] = "failed",
};

const char *rp_amqp_ack_result_string(rp_amqp_ack_result r) {
    if ((unsigned)r >= RP_AMQP_ACK_COUNT_ || rp_ack_result_names[r] == NULL) return "unknown";
    return rp_ack_result_names[r];
}

static bool rp_rpc_ok(amqp_connection_state_t c, const char *what, char *err, size_t n) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

/* The control queue: durable; with a host list in broker.url (a cluster) a
 * quorum queue replicated on up to 3 nodes, so that the loss of one node
 * loses neither the queue nor its waiting requests (a classic queue is
 * unreachable while its home node is down: "home node ... is down or
 * inaccessible", seen on 3.10.8). A control queue made earlier as a
 * classic queue is refused that way (406) and is used as it is, warned. */
static bool rp_session_declare_control(rp_amqp_session *s, amqp_connection_state_t c, char *err,
                                       size_t n) {
    amqp_table_entry_t e[2];
    amqp_table_t args = amqp_empty_table;
    if (s->group_size > 0) {
        e[0].key = amqp_cstring_bytes("x-queue-type");
        e[0].value.kind = AMQP_FIELD_KIND_UTF8;
        e[0].value.value.bytes = amqp_cstring_bytes("quorum");
        e[1].key = amqp_cstring_bytes("x-quorum-initial-group-size");
        e[1].value.kind = AMQP_FIELD_KIND_I64;
        e[1].value.value.i64 = s->group_size;
        args = (amqp_table_t){2, e};
    }
    amqp_queue_declare(c, 1, amqp_cstring_bytes(s->control_queue), 0, 1, 0, 0, args);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "declaring the control queue: %s", rp_amqp_reply_string(r, buf, sizeof buf));
    if (s->group_size == 0 || r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
        r.reply.id != AMQP_CHANNEL_CLOSE_METHOD ||
        ((const amqp_channel_close_t *)r.reply.decoded)->reply_code != AMQP_PRECONDITION_FAILED)
        return false;
    RP_WARN("the control queue exists as a classic queue: it lives on one node of the cluster "
            "and is unreachable while that node is down; delete it while reaperd is stopped to "
            "declare it again as a quorum queue",
            "queue", s->control_queue, "reason", err, NULL);
    amqp_channel_close_ok_t ok = {0};
    if (amqp_send_method(c, 1, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK) return false;
    amqp_channel_open(c, 1);
    if (!rp_rpc_ok(c, "opening channel 1 again", err, n)) return false;
    amqp_queue_declare(c, 1, amqp_cstring_bytes(s->control_queue), 1, 1, 0, 0, amqp_empty_table);
    return rp_rpc_ok(c, "declaring the control queue (passive)", err, n);
}

/* Connect thread: reads only what _new copied. */
static bool rp_session_setup(void *arg, amqp_connection_state_t c, char *err, size_t n) {
    rp_amqp_session *s = arg;
    amqp_exchange_declare(c, 1, amqp_cstring_bytes(s->events_exchange),
                          amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
    if (!rp_rpc_ok(c, "declaring the events exchange", err, n)) return false;
    if (s->control_queue == NULL) return rp_amqp_publisher_setup(c, err, n);
    if (!rp_session_declare_control(s, c, err, n)) return false;
    amqp_basic_qos(c, 1, 0, s->control_prefetch, 0);
    if (!rp_rpc_ok(c, "setting the prefetch", err, n)) return false;
    amqp_basic_consume(c, 1, amqp_cstring_bytes(s->control_queue),
                       amqp_cstring_bytes(RP_AMQP_SESSION_CONTROL_TAG), 0, 0, 0,
                       amqp_empty_table);
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
        amqp_basic_consume(c, 1, name, amqp_cstring_bytes(RP_AMQP_SESSION_EVENTS_TAG), 0, 1, 1,
                           amqp_empty_table);
        ok = rp_rpc_ok(c, "consuming broker events", err, n);
    }
    amqp_bytes_free(name);
    return ok && rp_amqp_publisher_setup(c, err, n) &&
           (s->replay_channel == 0 || rp_amqp_publisher_setup_on(c, s->replay_channel, err, n));
}

static bool rp_tag_is(amqp_bytes_t tag, const char *want) {
    size_t n = strlen(want);
    return tag.len == n && (n == 0 || memcmp(tag.bytes, want, n) == 0);
}

bool rp_amqp_session_dispatch(rp_amqp_session *s, const rp_amqp_message *msg) {
    /* Stopping: take no new work. Unacked, the delivery goes to the next
     * reaper when this connection closes. */
    if (s->hooks.accepting != NULL && !s->hooks.accepting(s->hooks.arg)) return false;
    for (size_t i = 0; i < s->n_handlers; i++) {
        if (rp_tag_is(msg->consumer_tag, s->handlers[i].tag)) {
            s->handlers[i].fn(s->handlers[i].arg, msg);
            return true;
        }
    }
    RP_WARN("delivery for an unknown consumer; rejected", NULL);
    amqp_connection_state_t c = rp_amqp_conn_handle(s->conn);
    if (c) (void)amqp_basic_reject(c, msg->channel, msg->delivery_tag, 1);
    return false;
}

static void rp_session_on_message(void *arg, const rp_amqp_message *msg) {
    (void)rp_amqp_session_dispatch(arg, msg);
}

static void rp_session_on_frame(void *arg, const amqp_frame_t *f) {
    rp_amqp_session *s = arg;
    if (rp_amqp_publisher_frame(s->publisher, f)) return;
    if (s->replay_publisher && rp_amqp_publisher_frame(s->replay_publisher, f)) return;
    rp_status st = RP_OK;
    if (rp_amqp_assembler_frame(&s->assembler, f, &st)) {
        if (st != RP_OK) rp_amqp_conn_fail(s->conn, "a delivery arrived out of order");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD && f->payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        /* The broker cancelled a consumer (its queue was deleted): rebuild
         * the connection, which declares and consumes everything again. */
        rp_amqp_conn_fail(s->conn, "the broker cancelled a consumer (queue deleted?)");
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
static bool rp_session_on_channel_close(void *arg, uint16_t channel, const char *why) {
    rp_amqp_session *s = arg;
    if (s->replay_publisher == NULL || channel != s->replay_channel) return false;
    RP_WARN("the broker refused a replay and closed the replay channel; opening it again",
            "reason", why, NULL);
    return rp_amqp_publisher_channel_closed(s->replay_publisher, channel, why);
}

static void rp_session_on_state(void *arg, rp_amqp_state state, const char *why) {
    rp_amqp_session *s = arg;
    switch (state) {
    case RP_AMQP_UP:
        s->up = true;
        s->generation++;
        if (s->hooks.on_up) s->hooks.on_up(s->hooks.arg, s->generation);
        if (s->quiet)
            RP_DEBUG("broker connected", "broker", why, NULL);
        else
            RP_INFO("broker connected", "broker", why, "control_queue", s->control_queue, NULL);
        rp_amqp_publisher_on_up(s->publisher);
        if (s->replay_publisher) rp_amqp_publisher_on_up(s->replay_publisher);
        if (s->hooks.on_ready) s->hooks.on_ready(s->hooks.arg);
        break;
    case RP_AMQP_DOWN: {
        bool was_up = s->up;
        if (was_up) {
            rp_amqp_assembler_reset(&s->assembler);
            rp_amqp_publisher_on_down(s->publisher);
            if (s->replay_publisher) rp_amqp_publisher_on_down(s->replay_publisher);
        }
        s->up = false;
        if (s->hooks.on_down) s->hooks.on_down(s->hooks.arg, was_up, why);
        if (s->quiet)
            RP_DEBUG("broker unreachable; retrying", "broker", rp_amqp_conn_peer(s->conn),
                     "reason", why, NULL);
        else
            RP_WARN("broker unreachable; retrying", "broker", rp_amqp_conn_peer(s->conn),
                    "reason", why, NULL);
        break;
    }
    case RP_AMQP_CONNECTING:
        RP_DEBUG("broker connecting", "broker", why, NULL);
        break;
    default:
        break;
    }
}

rp_amqp_session *rp_amqp_session_new(struct event_base *base, const rp_amqp_session_params *p,
                                     const rp_amqp_session_hooks *hooks, const char **err) {
    *err = "out of memory";
    rp_amqp_session *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    if (hooks != NULL) s->hooks = *hooks;
    s->control_prefetch = p->control_prefetch;
    s->replay_channel = p->replay_channel;
    s->quiet = p->quiet;
    s->events_exchange = strdup(p->events_exchange);
    s->control_queue = p->control_queue ? strdup(p->control_queue) : NULL;
    s->group_size = rp_amqp_quorum_group_size(p->amqp->url);
    rp_amqp_assembler_init(&s->assembler, p->body_limit, rp_session_on_message, s);
    if (s->events_exchange == NULL || (p->control_queue != NULL && s->control_queue == NULL)) {
        rp_amqp_session_free(s);
        return NULL;
    }
    rp_amqp_hooks ch = {
        .on_state = rp_session_on_state,
        .on_frame = rp_session_on_frame,
        .on_setup = rp_session_setup,
        .on_channel_close = rp_session_on_channel_close,
        .arg = s,
    };
    s->conn = rp_amqp_conn_new(base, p->amqp, &ch, err);
    if (s->conn == NULL) {
        rp_amqp_session_free(s);
        return NULL;
    }
    s->publisher = rp_amqp_publisher_new(s->conn);
    if (p->replay_channel != 0)
        s->replay_publisher = rp_amqp_publisher_new_on(s->conn, p->replay_channel);
    if (s->publisher == NULL || (p->replay_channel != 0 && s->replay_publisher == NULL)) {
        *err = "out of memory";
        rp_amqp_session_free(s);
        return NULL;
    }
    return s;
}

rp_status rp_amqp_session_on(rp_amqp_session *s, const char *tag, rp_amqp_session_handler fn,
                             void *arg) {
    if (tag == NULL || *tag == '\0' || fn == NULL || s->n_handlers == RP_AMQP_SESSION_MAX_HANDLERS)
        return RP_ERR_INVALID;
    for (size_t i = 0; i < s->n_handlers; i++)
        if (strcmp(s->handlers[i].tag, tag) == 0) return RP_ERR_INVALID;
    char *copy = strdup(tag);
    if (copy == NULL) return RP_ERR_NOMEM;
    s->handlers[s->n_handlers++] = (rp_session_handler){copy, fn, arg};
    return RP_OK;
}

rp_status rp_amqp_session_start(rp_amqp_session *s) { return rp_amqp_conn_start(s->conn); }

rp_amqp_publisher *rp_amqp_session_publisher(const rp_amqp_session *s) {
    return s ? s->publisher : NULL;
}

rp_amqp_publisher *rp_amqp_session_replay_publisher(const rp_amqp_session *s) {
    return s ? s->replay_publisher : NULL;
}

const char *rp_amqp_session_peer(const rp_amqp_session *s) { return rp_amqp_conn_peer(s->conn); }

bool rp_amqp_session_up(const rp_amqp_session *s) { return s->up; }

unsigned rp_amqp_session_generation(const rp_amqp_session *s) { return s->generation; }

rp_amqp_ack_result rp_amqp_session_ack(rp_amqp_session *s, unsigned generation, uint64_t tag) {
    if (generation != s->generation) return RP_AMQP_ACK_STALE; /* redelivered anyway */
    amqp_connection_state_t c = rp_amqp_conn_handle(s->conn);
    if (c == NULL) return RP_AMQP_ACK_NO_CONNECTION;
    int st = amqp_basic_ack(c, 1, tag, 0);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "ack: %s", amqp_error_string2(st));
        rp_amqp_conn_fail(s->conn, why);
        return RP_AMQP_ACK_FAILED;
    }
    return RP_AMQP_ACK_SENT;
}

void rp_amqp_session_free(rp_amqp_session *s) {
    if (s == NULL) return;
    /* The publishers first: their pending callbacks may still use what the
     * daemon lent them. */
    rp_amqp_publisher_free(s->replay_publisher);
    rp_amqp_publisher_free(s->publisher);
    rp_amqp_conn_free(s->conn);
    rp_amqp_assembler_cleanup(&s->assembler);
    for (size_t i = 0; i < s->n_handlers; i++) free(s->handlers[i].tag);
    free(s->events_exchange);
    free(s->control_queue);
    free(s);
}

/* ---- reaperd's own session ------------------------------------------------------- */

void rp_amqp_params_daemon(const rp_config *cfg, const char *password, rp_amqp_params *ap) {
    rp_amqp_params_from_config(cfg, password, ap);
    ap->heartbeat_seconds = RP_HEARTBEAT_SECONDS;
    ap->connect_timeout_ms = 5000;
    ap->connection_name = "reaperd";
}

rp_amqp_session *rp_amqp_session_daemon_new(struct event_base *base, const rp_config *cfg,
                                            const rp_amqp_params *ap,
                                            const rp_amqp_session_hooks *hooks, const char **err) {
    rp_amqp_session_params sp = {
        .amqp = ap,
        .events_exchange = cfg->broker.events_exchange,
        .control_queue = cfg->broker.control_queue,
        .control_prefetch = RP_CONTROL_PREFETCH,
        .replay_channel = RP_REPLAY_CHANNEL,
        .body_limit = RP_DELIVERY_BODY_LIMIT,
    };
    return rp_amqp_session_new(base, &sp, hooks, err);
}
