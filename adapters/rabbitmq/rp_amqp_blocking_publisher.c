/* The publisher port over a blocking connection with publisher confirms,
 * for reaperd --once (rp_amqp_blocking_publisher.h). */
#include "rp_amqp_blocking_publisher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "rp_amqp_open.h"
#include "rp_proto.h"

#define RP_BP_CHANNEL 1
#define RP_BP_RPC_TIMEOUT_S 10
#define RP_BP_FRAME_MAX 131072

typedef struct rp_bp_entry {
    struct rp_bp_entry *next;
    int64_t seq;
    uint64_t tag; /* delivery tag on the current connection; 0: not in flight */
    rp_proto_event_msg msg;
} rp_bp_entry;

struct rp_amqp_blocking_publisher {
    char *url, *password, *ca_file, *cert_file, *key_file, *exchange;
    bool verify_peer;
    rp_encoding enc; /* of every body */
    int connect_timeout_ms;
    amqp_connection_state_t conn;
    bool gave_up; /* a connection failed in this pass: no more tries before the flush */
    uint64_t next_tag;
    rp_bp_entry *head, *tail; /* not confirmed yet, in the order given */
    size_t n, in_flight;
    size_t events, confirmed, dropped, retried;
    int64_t dropped_first, dropped_last;
    char why[256];
};

static char *rp_dup_or_null(const char *s) { return s && s[0] ? strdup(s) : NULL; }

static int64_t rp_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

rp_amqp_blocking_publisher *rp_amqp_blocking_publisher_new(const rp_amqp_params *params,
                                                           const char *exchange,
                                                           rp_encoding enc,
                                                           const char **err) {
    if ((int)enc < 0 || enc >= RP_ENC_COUNT_) {
        *err = "not an encoding";
        return NULL;
    }
    *err = "out of memory";
    rp_amqp_blocking_publisher *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->url = strdup(params->url ? params->url : "");
    p->password = strdup(params->password ? params->password : "");
    p->exchange = strdup(exchange ? exchange : "");
    p->ca_file = rp_dup_or_null(params->ca_file);
    p->cert_file = rp_dup_or_null(params->cert_file);
    p->key_file = rp_dup_or_null(params->key_file);
    p->verify_peer = params->verify_peer;
    p->enc = enc;
    p->connect_timeout_ms = params->connect_timeout_ms > 0 ? params->connect_timeout_ms : 5000;
    if (p->url == NULL || p->password == NULL || p->exchange == NULL) {
        rp_amqp_blocking_publisher_free(p);
        return NULL;
    }
    /* The URL is checked now, so that a bad one is a configuration error
     * and not a feed that fails at the end of the pass. */
    char *copy = strdup(p->url);
    struct amqp_connection_info info;
    if (copy == NULL || amqp_parse_url(copy, &info) != AMQP_STATUS_OK) {
        if (copy != NULL) *err = "the broker URL does not parse";
        free(copy);
        rp_amqp_blocking_publisher_free(p);
        return NULL;
    }
    free(copy);
    *err = NULL;
    return p;
}

static void rp_close(rp_amqp_blocking_publisher *p, bool polite) {
    if (p->conn == NULL) return;
    if (polite) {
        (void)amqp_channel_close(p->conn, RP_BP_CHANNEL, AMQP_REPLY_SUCCESS);
        (void)amqp_connection_close(p->conn, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(p->conn);
    p->conn = NULL;
    for (rp_bp_entry *e = p->head; e; e = e->next) e->tag = 0;
    p->in_flight = 0;
}

/* The connection failed: keep the first reason, drop the connection, and
 * try no more before the flush. */
static void rp_fail(rp_amqp_blocking_publisher *p, const char *why) {
    if (p->why[0] == '\0') snprintf(p->why, sizeof p->why, "%s", why);
    rp_close(p, false);
    p->gave_up = true;
}

void rp_amqp_blocking_publisher_free(rp_amqp_blocking_publisher *p) {
    if (p == NULL) return;
    rp_close(p, true);
    rp_bp_entry *e = p->head;
    while (e) {
        rp_bp_entry *next = e->next;
        rp_proto_event_msg_cleanup(&e->msg);
        free(e);
        e = next;
    }
    free(p->url);
    if (p->password) {
        memset(p->password, 0, strlen(p->password));
        free(p->password);
    }
    free(p->ca_file);
    free(p->cert_file);
    free(p->key_file);
    free(p->exchange);
    free(p);
}

static bool rp_rpc_ok(rp_amqp_blocking_publisher *p, const char *what) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(p->conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200], why[256];
    snprintf(why, sizeof why, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    rp_fail(p, why);
    return false;
}

/* Connects, logs in (heartbeats off), declares the exchange as the daemon
 * does and selects confirms. False (with p->why) on failure. */
static bool rp_connect(rp_amqp_blocking_publisher *p) {
    char why[256];
    rp_amqp_open_opts o = {
        .url = p->url,
        .password = p->password,
        .ca_file = p->ca_file,
        .cert_file = p->cert_file,
        .key_file = p->key_file,
        .verify_peer = p->verify_peer,
        .connect_timeout_ms = p->connect_timeout_ms,
        .rpc_timeout_ms = RP_BP_RPC_TIMEOUT_S * 1000,
        .frame_max = RP_BP_FRAME_MAX,
        .connection_name = "reaperd --once feed",
    };
    p->conn = rp_amqp_open(&o, why, sizeof why);
    if (p->conn == NULL) {
        rp_fail(p, why);
        return false;
    }
    amqp_channel_open(p->conn, RP_BP_CHANNEL);
    if (!rp_rpc_ok(p, "channel open")) return false;
    amqp_exchange_declare(p->conn, RP_BP_CHANNEL, amqp_cstring_bytes(p->exchange),
                          amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
    if (!rp_rpc_ok(p, "declaring the events exchange")) return false;
    amqp_confirm_select(p->conn, RP_BP_CHANNEL);
    if (!rp_rpc_ok(p, "confirm select")) return false;
    p->next_tag = 1;
    p->in_flight = 0;
    return true;
}

static void rp_unlink(rp_amqp_blocking_publisher *p, rp_bp_entry *prev, rp_bp_entry *e) {
    if (prev) prev->next = e->next;
    else p->head = e->next;
    if (p->tail == e) p->tail = prev;
    p->n--;
}

/* basic.ack / basic.nack: settles tag (and every one before it when
 * multiple). An acked event is done; a nacked one waits for the retry. */
static void rp_settle(rp_amqp_blocking_publisher *p, uint64_t tag, bool multiple, bool ack) {
    rp_bp_entry *prev = NULL, *e = p->head;
    while (e) {
        rp_bp_entry *next = e->next;
        bool hit = e->tag != 0 && (multiple ? e->tag <= tag : e->tag == tag);
        if (hit) {
            p->in_flight--;
            if (ack) {
                rp_unlink(p, prev, e);
                rp_proto_event_msg_cleanup(&e->msg);
                free(e);
                p->confirmed++;
                e = next;
                continue;
            }
            e->tag = 0;
            if (p->why[0] == '\0') snprintf(p->why, sizeof p->why, "the broker nacked an event");
        }
        prev = e;
        e = next;
    }
}

/* Reads frames until none is waiting (wait_ms 0) or until nothing is in
 * flight or wait_ms has passed. */
static void rp_frames(rp_amqp_blocking_publisher *p, int64_t wait_ms) {
    int64_t deadline = rp_mono_ms() + wait_ms;
    while (p->conn != NULL) {
        if (wait_ms > 0 && p->in_flight == 0) return;
        int64_t left = wait_ms > 0 ? deadline - rp_mono_ms() : 0;
        if (left < 0) return;
        struct timeval tv = {(time_t)(left / 1000), (suseconds_t)((left % 1000) * 1000)};
        amqp_frame_t f;
        int st = amqp_simple_wait_frame_noblock(p->conn, &f, &tv);
        if (st == AMQP_STATUS_TIMEOUT) {
            if (wait_ms == 0 || rp_mono_ms() >= deadline) return;
            continue;
        }
        if (st != AMQP_STATUS_OK) {
            char why[200];
            snprintf(why, sizeof why, "connection lost: %s", amqp_error_string2(st));
            rp_fail(p, why);
            return;
        }
        if (f.frame_type == AMQP_FRAME_METHOD) {
            switch (f.payload.method.id) {
            case AMQP_BASIC_ACK_METHOD: {
                const amqp_basic_ack_t *a = f.payload.method.decoded;
                rp_settle(p, a->delivery_tag, a->multiple, true);
                break;
            }
            case AMQP_BASIC_NACK_METHOD: {
                const amqp_basic_nack_t *a = f.payload.method.decoded;
                rp_settle(p, a->delivery_tag, a->multiple, false);
                break;
            }
            case AMQP_CHANNEL_CLOSE_METHOD:
            case AMQP_CONNECTION_CLOSE_METHOD: {
                /* Both carry reply_code and reply_text first. */
                const amqp_channel_close_t *c = f.payload.method.decoded;
                char why[256];
                snprintf(why, sizeof why, "closed by the broker: %u %.*s", c->reply_code,
                         (int)(c->reply_text.len > 180 ? 180 : c->reply_text.len),
                         (const char *)c->reply_text.bytes);
                rp_fail(p, why);
                return;
            }
            default:
                break;
            }
        }
        amqp_maybe_release_buffers(p->conn);
    }
}

static void rp_send(rp_amqp_blocking_publisher *p, rp_bp_entry *e) {
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                   AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
                   AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG;
    props.content_type = amqp_cstring_bytes(rp_encoding_content_type(p->enc));
    props.delivery_mode = 2; /* persistent */
    props.message_id = amqp_cstring_bytes(e->msg.message_id);
    props.timestamp = (uint64_t)e->msg.timestamp;
    props.type = amqp_cstring_bytes(e->msg.type);
    props.app_id = amqp_cstring_bytes("reaperd");
    int st = amqp_basic_publish(p->conn, RP_BP_CHANNEL, amqp_cstring_bytes(p->exchange),
                                amqp_cstring_bytes(e->msg.routing_key), 0, 0, &props,
                                (amqp_bytes_t){e->msg.body.len, e->msg.body.ptr});
    if (st != AMQP_STATUS_OK) {
        char why[200];
        snprintf(why, sizeof why, "publish: %s", amqp_error_string2(st));
        rp_fail(p, why);
        return;
    }
    e->tag = p->next_tag++;
    p->in_flight++;
}

static void rp_dropped(rp_amqp_blocking_publisher *p, int64_t seq) {
    if (p->dropped == 0 || seq < p->dropped_first) p->dropped_first = seq;
    if (p->dropped == 0 || seq > p->dropped_last) p->dropped_last = seq;
    p->dropped++;
}

static rp_status rp_publish(void *self, const rp_ledger_event *ev) {
    rp_amqp_blocking_publisher *p = self;
    p->events++;
    if (p->n >= RP_AMQP_BLOCKING_PUBLISH_MAX) {
        if (p->why[0] == '\0')
            snprintf(p->why, sizeof p->why, "more than %d events waiting for the broker",
                     RP_AMQP_BLOCKING_PUBLISH_MAX);
        rp_dropped(p, ev->seq);
        return RP_OK;
    }
    rp_bp_entry *e = calloc(1, sizeof *e);
    rp_status st = e == NULL ? RP_ERR_NOMEM : rp_proto_encode_event(ev, p->enc, &e->msg);
    if (st != RP_OK) {
        free(e);
        rp_dropped(p, ev->seq);
        return st;
    }
    e->seq = ev->seq;
    if (p->tail) p->tail->next = e;
    else p->head = e;
    p->tail = e;
    p->n++;
    if (p->conn == NULL && !p->gave_up) (void)rp_connect(p);
    if (p->conn != NULL) rp_send(p, e);
    /* Confirms that have come, without waiting: the pass goes on. */
    rp_frames(p, 0);
    return RP_OK;
}

void rp_amqp_blocking_publisher_port(rp_amqp_blocking_publisher *p, rp_publisher_port *out) {
    out->self = p;
    out->publish = rp_publish;
}

rp_status rp_amqp_blocking_publisher_flush(rp_amqp_blocking_publisher *p, int timeout_ms,
                                           rp_amqp_feed_stats *stats) {
    int64_t deadline = rp_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    /* 1. The confirms still to come. */
    if (p->conn != NULL) rp_frames(p, deadline - rp_mono_ms());
    /* 2. One retry, over a new connection when needed, of everything that
     * is not in flight: never sent, lost with a connection, or nacked. An
     * event still in flight on a live connection is not sent again (it
     * would arrive twice). */
    bool want = false;
    for (rp_bp_entry *e = p->head; e && !want; e = e->next) want = e->tag == 0;
    if (want && p->conn == NULL && deadline > rp_mono_ms()) (void)rp_connect(p);
    if (want && p->conn != NULL) {
        for (rp_bp_entry *e = p->head; e && p->conn != NULL; e = e->next) {
            if (e->tag != 0) continue;
            rp_send(p, e);
            if (e->tag != 0) p->retried++;
        }
        if (p->conn != NULL) rp_frames(p, deadline - rp_mono_ms());
    }
    rp_close(p, true);
    memset(stats, 0, sizeof *stats);
    stats->events = p->events;
    stats->confirmed = p->confirmed;
    stats->retried = p->retried;
    stats->failed = p->n + p->dropped;
    if (p->dropped) {
        stats->first_failed_seq = p->dropped_first;
        stats->last_failed_seq = p->dropped_last;
    }
    for (rp_bp_entry *e = p->head; e; e = e->next) {
        if (stats->first_failed_seq == 0 || e->seq < stats->first_failed_seq)
            stats->first_failed_seq = e->seq;
        if (e->seq > stats->last_failed_seq) stats->last_failed_seq = e->seq;
    }
    snprintf(stats->why, sizeof stats->why, "%s", p->why);
    if (stats->failed > 0) {
        if (stats->why[0] == '\0')
            snprintf(stats->why, sizeof stats->why, "no confirm from the broker in time");
        return RP_ERR_UNAVAILABLE;
    }
    return RP_OK;
}
