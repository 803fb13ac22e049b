#include "rp_amqp_publisher.h"

#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_frames.h"
#include "rp_amqp_msg.h"
#include "rp_log.h"

typedef struct rp_pub_entry {
    struct rp_pub_entry *next;
    /* What is sent: the entry's own copies, or the caller's (handed over:
     * release(owner) once the entry is done with them). */
    const char *exchange;
    const char *routing_key;
    const amqp_basic_properties_t *props; /* NULL: none */
    const uint8_t *body;
    size_t len;
    void (*release)(void *owner); /* NULL: the fields below are the copies */
    void *owner;
    char *own_exchange, *own_routing_key;
    amqp_pool_t pool; /* the properties' copies */
    bool has_pool;
    amqp_basic_properties_t own_props;
    uint8_t *own_body;
    bool mandatory, retry, returned;
    uint64_t seq;
    rp_publish_outcome outcome;
    rp_publish_done_fn done;
    void *arg;
    char *refusal; /* REFUSED: the broker's reason (heap) */
} rp_pub_entry;

typedef struct rp_pub_list {
    rp_pub_entry *head, *tail;
    size_t n;
} rp_pub_list;

/* The publish channel's state: a channel the broker closed (a channel
 * error caused by a publish) is opened again on the loop without blocking:
 * channel.open, then confirm.select, each sent and its -ok awaited as a
 * frame. Nothing is sent meanwhile. */
typedef enum rp_pub_channel {
    RP_PUB_CH_OPEN = 0,
    RP_PUB_CH_OPENING,   /* channel.open sent */
    RP_PUB_CH_SELECTING, /* confirm.select sent */
} rp_pub_channel;

struct rp_amqp_publisher {
    rp_amqp_conn *conn;
    uint16_t channel;
    rp_pub_channel ch_state;
    const char *refusal; /* during a REFUSED callback: the broker's reason */
    rp_pub_list todo;     /* waiting to be sent, in order */
    rp_pub_list inflight; /* sent, by ascending seq */
    rp_pub_list settled;  /* callbacks due on the next loop turn */
    uint64_t next_seq;
    size_t limit; /* queued + in flight, at most */
    bool mandatory_in_flight;
    /* The broker sent connection.blocked (a resource alarm): it reads
     * nothing more from this connection, so a publish written now would
     * only fill the socket until a write blocks the loop. Held until
     * connection.unblocked or a new connection. */
    bool blocked;
    /* The content frames that follow a basic.return are skipped. */
    bool skipping_return;
    bool return_have_header;
    uint64_t return_left;
    struct event *settle_ev;
    struct event *flush_ev; /* sends the rest of a long backlog on a later turn */
    /* The socket's room ran out (rp_amqp_socket_room): the flush goes on
     * when the socket is writable again (room_ev, made per connection), or,
     * when it is writable but the next publish still does not fit, after
     * RP_PUB_ROOM_RETRY_MS (flush_ev as a timer). */
    struct event *room_ev;
    bool after_writable; /* this flush runs because room_ev fired */
    /* A flush's frames, encoded by reaper and written in one send (plain
     * TCP; over TLS each publish goes through amqp_basic_publish). */
    rp_amqp_frames out;
};

static const char *const rp_publish_outcome_names[RP_PUBLISH_OUTCOME_COUNT_] = {
    "confirmed", "nacked", "returned", "lost", "dropped", "refused"};

const char *rp_publish_outcome_string(rp_publish_outcome o) {
    if ((int)o < 0 || o >= RP_PUBLISH_OUTCOME_COUNT_) return "unknown";
    return rp_publish_outcome_names[o];
}

static void rp_push(rp_pub_list *l, rp_pub_entry *e) {
    e->next = NULL;
    if (l->tail) l->tail->next = e;
    else l->head = e;
    l->tail = e;
    l->n++;
}

static rp_pub_entry *rp_pop(rp_pub_list *l) {
    rp_pub_entry *e = l->head;
    if (e) {
        l->head = e->next;
        if (l->head == NULL) l->tail = NULL;
        l->n--;
        e->next = NULL;
    }
    return e;
}

static void rp_entry_free(rp_pub_entry *e) {
    if (e->has_pool) empty_amqp_pool(&e->pool);
    free(e->refusal);
    free(e->own_exchange);
    free(e->own_routing_key);
    free(e->own_body);
    if (e->release) e->release(e->owner);
    free(e);
}

static void rp_settle(rp_amqp_publisher *p, rp_pub_entry *e, rp_publish_outcome o) {
    e->outcome = o;
    rp_push(&p->settled, e);
    event_active(p->settle_ev, 0, 0);
}

/* Next loop turn: the callbacks, never from inside a publish call. */
static void rp_flush(rp_amqp_publisher *p);

static void rp_on_flush(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_flush(arg);
}

static void rp_on_room(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_amqp_publisher *p = arg;
    p->after_writable = true;
    rp_flush(p);
    p->after_writable = false;
}

static void rp_room_free(rp_amqp_publisher *p) {
    if (p->room_ev == NULL) return;
    event_free(p->room_ev);
    p->room_ev = NULL;
}

static void rp_on_settle(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_amqp_publisher *p = arg;
    rp_pub_entry *e;
    while ((e = rp_pop(&p->settled)) != NULL) {
        p->refusal = e->refusal;
        if (e->done) e->done(e->arg, e->outcome);
        p->refusal = NULL;
        rp_entry_free(e);
    }
}

rp_amqp_publisher *rp_amqp_publisher_new(rp_amqp_conn *conn) {
    return rp_amqp_publisher_new_on(conn, RP_AMQP_PUBLISH_CHANNEL);
}

rp_amqp_publisher *rp_amqp_publisher_new_on(rp_amqp_conn *conn, uint16_t channel) {
    rp_amqp_publisher *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->conn = conn;
    p->channel = channel;
    p->next_seq = 1;
    p->limit = RP_AMQP_PUBLISH_QUEUE_MAX;
    p->settle_ev = event_new(rp_amqp_conn_base(conn), -1, 0, rp_on_settle, p);
    p->flush_ev = event_new(rp_amqp_conn_base(conn), -1, 0, rp_on_flush, p);
    if (p->settle_ev == NULL || p->flush_ev == NULL) {
        if (p->settle_ev) event_free(p->settle_ev);
        if (p->flush_ev) event_free(p->flush_ev);
        free(p);
        return NULL;
    }
    return p;
}

void rp_amqp_publisher_free(rp_amqp_publisher *p) {
    if (p == NULL) return;
    rp_pub_entry *e;
    while ((e = rp_pop(&p->inflight)) != NULL) rp_settle(p, e, RP_PUBLISH_DROPPED);
    while ((e = rp_pop(&p->todo)) != NULL) rp_settle(p, e, RP_PUBLISH_DROPPED);
    rp_on_settle(-1, 0, p);
    rp_room_free(p);
    event_free(p->flush_ev);
    event_free(p->settle_ev);
    rp_amqp_frames_free(&p->out);
    free(p);
}

bool rp_amqp_publisher_setup(amqp_connection_state_t c, char *err, size_t errlen) {
    return rp_amqp_publisher_setup_on(c, RP_AMQP_PUBLISH_CHANNEL, err, errlen);
}

bool rp_amqp_publisher_setup_on(amqp_connection_state_t c, uint16_t channel, char *err,
                                size_t errlen) {
    amqp_channel_open(c, channel);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    char buf[200];
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        snprintf(err, errlen, "publish channel open: %s", rp_amqp_reply_string(r, buf, sizeof buf));
        return false;
    }
    amqp_confirm_select(c, channel);
    r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        snprintf(err, errlen, "confirm select: %s", rp_amqp_reply_string(r, buf, sizeof buf));
        return false;
    }
    return true;
}

/* Holds (on) or lets go (off) the socket's partial segments: rabbitmq-c
 * writes each publish as three sends and pushes a segment at the last one,
 * so a flush of many publishes over TLS, corked, leaves in full segments
 * instead of one small one (and one wake-up of the broker's reader) per
 * publish. */
static void rp_cork(amqp_connection_state_t c, bool on) {
    int fd = amqp_get_sockfd(c);
    int v = on ? 1 : 0;
    if (fd >= 0) (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, sizeof v);
}

/* The flush's buffer is written out once it holds this much, and again at
 * the end: a flush of small publishes (the feed's events) is one send, and
 * big ones (events of dead letters with large headers, replays) cost at
 * most this plus one publish of memory, not a whole batch's. */
#define RP_PUB_OUT_WRITE (256u << 10)
/* A flush's buffer over this is not kept for the next one. */
#define RP_PUB_OUT_KEEP (1u << 20)
/* A flush writes only what the socket has room for, so a write waits only
 * for a publish bigger than the whole room, sent alone (nothing queued on
 * the socket, nothing unconfirmed): over plain TCP at most this long
 * without the broker taking a byte, then the connection is given up (and
 * rebuilt). Over TLS rabbitmq-c writes it, without a bound. */
#define RP_PUB_WRITE_STALL_MS 10000
/* The wait for room when the socket is writable but the next publish is
 * bigger than its room. */
#define RP_PUB_ROOM_RETRY_MS 2

/* The next publish does not fit in the socket's room: the flush goes on
 * when the socket is writable, or, when being writable is what woke this
 * flush and still nothing fitted, after a short wait (a writable socket
 * would wake it again at once). */
static void rp_wait_room(rp_amqp_publisher *p, size_t sent) {
    if (p->room_ev != NULL && !(p->after_writable && sent == 0)) {
        event_add(p->room_ev, NULL);
        return;
    }
    struct timeval tv = {0, RP_PUB_ROOM_RETRY_MS * 1000};
    event_add(p->flush_ev, &tv);
}

/* Writes the buffer out and empties it: false when the connection failed
 * (rp_publish_failed called). */
static bool rp_out_write(rp_amqp_publisher *p, amqp_connection_state_t c);

/* The publish failed on the socket: the connection goes (on_down requeues
 * or settles what is in flight and queued). */
static void rp_publish_failed(rp_amqp_publisher *p, int st) {
    char why[160];
    if (st == AMQP_STATUS_TIMEOUT)
        snprintf(why, sizeof why, "publish: the broker took no byte for %d s",
                 RP_PUB_WRITE_STALL_MS / 1000);
    else
        snprintf(why, sizeof why, "publish: %s", amqp_error_string2(st));
    rp_amqp_conn_fail(p->conn, why);
}

static bool rp_out_write(rp_amqp_publisher *p, amqp_connection_state_t c) {
    if (p->out.len == 0) return true;
    int st = rp_amqp_frames_write(amqp_get_sockfd(c), p->out.bytes, p->out.len,
                                  RP_PUB_WRITE_STALL_MS);
    rp_amqp_frames_reset(&p->out, RP_PUB_OUT_KEEP);
    if (st == AMQP_STATUS_OK) return true;
    rp_publish_failed(p, st);
    return false;
}

/* Sends what is queued, in order, while the connection is up: at most
 * RP_AMQP_PUBLISH_BATCH per loop turn, so that a backlog (events committed
 * while the broker was away) never holds the loop up; the rest goes on the
 * next turn. Only what the socket has room for is written
 * (rp_amqp_socket_room): a broker that stops reading (a resource alarm,
 * before its connection.blocked has arrived; a stalled peer) leaves the
 * rest queued, and the flush goes on when there is room, instead of a
 * write waiting on the loop for a reader that may not come back. Over
 * plain TCP the flush's frames are encoded into one buffer and written in
 * one send (rp_amqp_frames.h; every RP_PUB_OUT_WRITE bytes when the
 * publishes are big); over TLS each publish goes through the library,
 * several at once corked (rp_cork), its size measured by the same
 * encoder. */
static void rp_flush(rp_amqp_publisher *p) {
    if (p->blocked || p->ch_state != RP_PUB_CH_OPEN) return;
    amqp_connection_state_t c = rp_amqp_conn_handle(p->conn);
    if (c == NULL || p->todo.head == NULL) return;
    bool tls = rp_amqp_conn_tls(p->conn);
    size_t frame_max = (size_t)amqp_get_frame_max(c);
    size_t queued = 0;
    size_t room = rp_amqp_socket_room(amqp_get_sockfd(c), &queued);
    bool corked = tls && p->todo.n > 1;
    if (corked) rp_cork(c, true);
    size_t budget = RP_AMQP_PUBLISH_BATCH;
    size_t sent = 0, written = 0; /* written: bytes of this flush already sent */
    while (p->todo.head != NULL) {
        if (budget-- == 0) {
            event_active(p->flush_ev, 0, 0);
            break;
        }
        rp_pub_entry *e = p->todo.head;
        if (e->mandatory && p->mandatory_in_flight) break;
        amqp_bytes_t exchange = amqp_cstring_bytes(e->exchange);
        amqp_bytes_t routing_key = amqp_cstring_bytes(e->routing_key);
        amqp_bytes_t body = {e->len, (void *)e->body};
        size_t before = p->out.len;
        int st = rp_amqp_frames_publish(&p->out, p->channel, frame_max, exchange, routing_key,
                                        e->mandatory, false, e->props, body);
        /* A publish bigger than the whole room goes alone, when nothing
         * is queued on the socket or unconfirmed (so a broker that has
         * just blocked the connection has said so by then). */
        bool alone = sent == 0 && queued == 0 && p->inflight.n == 0;
        if (st == AMQP_STATUS_OK && written + p->out.len > room && !alone) {
            p->out.len = before; /* whole frames were appended: cut them off */
            rp_wait_room(p, sent);
            break;
        }
        size_t size = p->out.len - before;
        if (tls) { /* the encoder only measured it: the library sends it */
            p->out.len = 0;
            st = amqp_basic_publish(c, p->channel, exchange, routing_key, e->mandatory, 0,
                                    e->props, body);
        }
        if (st != AMQP_STATUS_OK) {
            rp_amqp_frames_reset(&p->out, RP_PUB_OUT_KEEP);
            rp_publish_failed(p, st);
            return; /* on_down requeues the rest; the socket goes with it */
        }
        rp_pop(&p->todo);
        e->seq = p->next_seq++;
        if (e->mandatory) p->mandatory_in_flight = true;
        rp_push(&p->inflight, e);
        sent++;
        if (tls) {
            written += size;
            c = rp_amqp_conn_handle(p->conn);
            if (c == NULL) return;
        } else if (p->out.len >= RP_PUB_OUT_WRITE) {
            written += p->out.len;
            if (!rp_out_write(p, c)) return; /* on_down requeues or settles what is in flight */
        }
    }
    if (corked) rp_cork(c, false);
    if (!tls && !rp_out_write(p, c)) return;
    if (sent) rp_amqp_conn_drain(p->conn);
}

/* The entry's own copies of what pub names (the caller's may die after
 * the call). */
static bool rp_entry_copy(rp_pub_entry *e, const rp_publish *pub) {
    e->own_exchange = strdup(pub->exchange ? pub->exchange : "");
    e->own_routing_key = strdup(pub->routing_key ? pub->routing_key : "");
    e->own_body = e->len ? malloc(e->len) : NULL;
    if (e->own_exchange == NULL || e->own_routing_key == NULL || (e->len && e->own_body == NULL))
        return false;
    e->exchange = e->own_exchange;
    e->routing_key = e->own_routing_key;
    if (e->len) memcpy(e->own_body, pub->body.ptr, e->len);
    e->body = e->own_body;
    if (pub->props) {
        /* A deep copy: the caller's properties may die after this call. */
        init_amqp_pool(&e->pool, 512);
        e->has_pool = true;
        if (!rp_amqp_props_copy(&e->pool, pub->props, &e->own_props)) return false;
        e->props = &e->own_props;
    }
    return true;
}

rp_status rp_amqp_publisher_publish(rp_amqp_publisher *p, const rp_publish *pub) {
    rp_pub_entry *e = calloc(1, sizeof *e);
    if (e == NULL) return RP_ERR_NOMEM;
    e->len = pub->body.len;
    e->mandatory = pub->mandatory;
    e->retry = pub->retry;
    e->done = pub->done;
    e->arg = pub->arg;
    if (pub->release != NULL) {
        /* Handed over: nothing copied; released when the entry goes. */
        e->exchange = pub->exchange ? pub->exchange : "";
        e->routing_key = pub->routing_key ? pub->routing_key : "";
        e->props = pub->props;
        e->body = pub->body.ptr;
    } else if (!rp_entry_copy(e, pub)) {
        rp_entry_free(e);
        return RP_ERR_NOMEM;
    }
    /* Set last: a failure above leaves the caller's memory the caller's. */
    e->release = pub->release;
    e->owner = pub->owner;
    if (p->todo.n + p->inflight.n >= p->limit) {
        rp_settle(p, e, RP_PUBLISH_DROPPED);
        return RP_OK;
    }
    /* Sent on this loop pass, once the callbacks running now are done:
     * the publishes they make (a store batch's events) go out together. */
    rp_push(&p->todo, e);
    event_active(p->flush_ev, 0, 0);
    return RP_OK;
}

void rp_amqp_publisher_set_limit(rp_amqp_publisher *p, size_t max) {
    p->limit = max > 0 ? max : 1;
}

void rp_amqp_publisher_on_up(rp_amqp_publisher *p) {
    p->blocked = false; /* a new connection starts unblocked */
    rp_room_free(p);
    amqp_connection_state_t c = rp_amqp_conn_handle(p->conn);
    if (c != NULL) /* NULL: the flush waits for room with its timer */
        p->room_ev = event_new(rp_amqp_conn_base(p->conn), amqp_get_sockfd(c), EV_WRITE,
                               rp_on_room, p);
    p->ch_state = RP_PUB_CH_OPEN; /* opened by the set-up */
    p->next_seq = 1;
    p->mandatory_in_flight = false;
    p->skipping_return = false;
    rp_flush(p);
}

/* Takes every in-flight publish off: those to be retried, in order, into
 * again; the others are settled lost. */
static void rp_take_inflight(rp_amqp_publisher *p, rp_pub_list *again) {
    rp_pub_entry *e;
    while ((e = rp_pop(&p->inflight)) != NULL) {
        if (e->retry) {
            e->returned = false;
            rp_push(again, e);
        } else {
            rp_settle(p, e, RP_PUBLISH_LOST);
        }
    }
}

void rp_amqp_publisher_on_down(rp_amqp_publisher *p) {
    rp_room_free(p); /* its socket is gone */
    /* In-flight publishes go back to the front of the queue, in order, or
     * are lost when they are not to be retried. */
    rp_pub_list again = {0};
    rp_pub_entry *e;
    rp_take_inflight(p, &again);
    rp_pub_list rest = p->todo;
    p->todo = again;
    while ((e = rp_pop(&rest)) != NULL) {
        if (e->retry) rp_push(&p->todo, e);
        else rp_settle(p, e, RP_PUBLISH_LOST);
    }
    p->mandatory_in_flight = false;
    p->skipping_return = false;
}

/* Settles in-flight publishes up to tag (or exactly tag). */
static void rp_confirm(rp_amqp_publisher *p, uint64_t tag, bool multiple, bool ack) {
    while (p->inflight.head && p->inflight.head->seq <= tag) {
        rp_pub_entry *e = p->inflight.head;
        if (!multiple && e->seq != tag) break; /* confirms come in order */
        rp_pop(&p->inflight);
        if (e->mandatory) p->mandatory_in_flight = false;
        rp_settle(p, e, !ack ? RP_PUBLISH_NACKED
                             : e->returned ? RP_PUBLISH_RETURNED : RP_PUBLISH_CONFIRMED);
    }
    /* A single confirm out of order (allowed by the protocol): find it.
     * Only then: the list is in sequence order, so a head past the tag
     * (the tag just settled above, or one not in flight) means it is not
     * in the list, and walking all of it for every in-order confirm made a
     * storm's confirms cost the square of the publishes in flight. */
    if (!multiple && p->inflight.head && p->inflight.head->seq < tag) {
        rp_pub_entry *prev = NULL;
        for (rp_pub_entry *e = p->inflight.head; e; prev = e, e = e->next) {
            if (e->seq != tag) continue;
            if (prev) prev->next = e->next;
            else p->inflight.head = e->next;
            if (p->inflight.tail == e) p->inflight.tail = prev;
            p->inflight.n--;
            if (e->mandatory) p->mandatory_in_flight = false;
            rp_settle(p, e, !ack ? RP_PUBLISH_NACKED
                                 : e->returned ? RP_PUBLISH_RETURNED : RP_PUBLISH_CONFIRMED);
            break;
        }
    }
    rp_flush(p);
}

/* Sends one method on the publish channel; a failure drops the connection
 * (on_down then settles or requeues what is pending). */
static void rp_send(rp_amqp_publisher *p, amqp_method_number_t id, void *m) {
    amqp_connection_state_t c = rp_amqp_conn_handle(p->conn);
    if (c == NULL) return;
    int st = amqp_send_method(c, p->channel, id, m);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "reopening a publish channel: %s", amqp_error_string2(st));
        rp_amqp_conn_fail(p->conn, why);
    }
}

bool rp_amqp_publisher_channel_closed(rp_amqp_publisher *p, uint16_t channel, const char *why) {
    if (p == NULL || channel != p->channel) return false;
    /* The broker handles a channel's publishes in order and discards
     * everything after the one that failed: the oldest unconfirmed publish
     * caused it (refused, with the broker's reason); the rest were never
     * taken and go back to the queue (retry) or are lost. */
    rp_pub_entry *first = rp_pop(&p->inflight);
    if (first != NULL) {
        first->refusal = strdup(why ? why : "the broker closed the channel");
        rp_settle(p, first, RP_PUBLISH_REFUSED);
    }
    rp_pub_list again = {0};
    rp_pub_entry *e;
    rp_take_inflight(p, &again);
    while ((e = rp_pop(&p->todo)) != NULL) rp_push(&again, e);
    p->todo = again;
    p->mandatory_in_flight = false;
    p->skipping_return = false;
    /* Open it again, without blocking: channel.open, then confirm.select. */
    amqp_channel_open_t open = {.out_of_band = amqp_empty_bytes};
    p->ch_state = RP_PUB_CH_OPENING;
    rp_send(p, AMQP_CHANNEL_OPEN_METHOD, &open);
    return true;
}

const char *rp_amqp_publisher_refusal(const rp_amqp_publisher *p) {
    return p && p->refusal ? p->refusal : "";
}

bool rp_amqp_publisher_frame(rp_amqp_publisher *p, const amqp_frame_t *f) {
    if (f->channel == 0 && f->frame_type == AMQP_FRAME_METHOD) {
        if (f->payload.method.id == AMQP_CONNECTION_BLOCKED_METHOD) {
            p->blocked = true;
            return true;
        }
        if (f->payload.method.id == AMQP_CONNECTION_UNBLOCKED_METHOD) {
            p->blocked = false;
            rp_flush(p);
            return true;
        }
        return false;
    }
    if (f->channel != p->channel) return false;
    if (f->frame_type == AMQP_FRAME_METHOD) {
        switch (f->payload.method.id) {
        case AMQP_CHANNEL_OPEN_OK_METHOD:
            if (p->ch_state == RP_PUB_CH_OPENING) {
                amqp_confirm_select_t sel = {0};
                p->ch_state = RP_PUB_CH_SELECTING;
                rp_send(p, AMQP_CONFIRM_SELECT_METHOD, &sel);
            }
            return true;
        case AMQP_CONFIRM_SELECT_OK_METHOD:
            if (p->ch_state == RP_PUB_CH_SELECTING) {
                p->ch_state = RP_PUB_CH_OPEN;
                p->next_seq = 1; /* a new channel counts from 1 again */
                RP_INFO("publish channel open again", NULL);
                event_active(p->flush_ev, 0, 0);
            }
            return true;
        case AMQP_BASIC_ACK_METHOD: {
            const amqp_basic_ack_t *a = f->payload.method.decoded;
            rp_confirm(p, a->delivery_tag, a->multiple, true);
            return true;
        }
        case AMQP_BASIC_NACK_METHOD: {
            const amqp_basic_nack_t *n = f->payload.method.decoded;
            rp_confirm(p, n->delivery_tag, n->multiple, false);
            return true;
        }
        case AMQP_BASIC_RETURN_METHOD:
            /* Only mandatory publishes come back, one in flight at a time. */
            for (rp_pub_entry *e = p->inflight.head; e; e = e->next)
                if (e->mandatory) {
                    e->returned = true;
                    break;
                }
            p->skipping_return = true;
            p->return_have_header = false;
            return true;
        default:
            return false;
        }
    }
    if (!p->skipping_return) return false;
    if (f->frame_type == AMQP_FRAME_HEADER) {
        p->return_have_header = true;
        p->return_left = f->payload.properties.body_size;
        if (p->return_left == 0) p->skipping_return = false;
        return true;
    }
    if (f->frame_type == AMQP_FRAME_BODY && p->return_have_header) {
        uint64_t n = f->payload.body_fragment.len;
        p->return_left = n >= p->return_left ? 0 : p->return_left - n;
        if (p->return_left == 0) p->skipping_return = false;
        return true;
    }
    return false;
}

size_t rp_amqp_publisher_pending(const rp_amqp_publisher *p) {
    return p == NULL ? 0 : p->todo.n + p->inflight.n + p->settled.n;
}
