/* Reading dead letters without removing them, on a blocking connection of
 * the caller's thread (rp_amqp_peek.h). */
#include "rp_amqp_peek.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "rp_amqp_open.h"
#include "rp_amqp_restore.h"
#include "rp_amqp_table.h"
#include "rp_log.h"

#define RP_PEEK_CHANNEL 1
#define RP_PEEK_TIMEOUT_S 10
#define RP_PEEK_HEARTBEAT_S 30

typedef struct rp_peek_item {
    rp_amqp_peeked pub;
    amqp_message_t msg;    /* owns the properties and body */
    rp_xdeath *x_death;
    size_t x_death_unparsed; /* x-death entries only counted */
    size_t headers_dropped;  /* the header table's size when not kept, else 0 */
    char *props_json, *headers_json;
} rp_peek_item;

struct rp_amqp_peek {
    char *url, *password, *ca_file, *cert_file, *key_file;
    bool verify_peer;
    size_t header_cap; /* 0: every header table kept */
    amqp_connection_state_t conn;
    char *conn_vhost; /* the vhost conn is logged in to */
    rp_peek_item *items;
    rp_amqp_peeked *views; /* what read lends: copies of items[i].pub */
    size_t n, cap;
    /* What the peek port lends (rp_amqp_peek_port): core's view of views. */
    rp_dl_message *dl;
    rp_dl_stored *stored;
    size_t dl_cap;
};

static char *rp_dup_or_null(const char *s) {
    return s && s[0] ? strdup(s) : NULL;
}

rp_amqp_peek *rp_amqp_peek_new(const rp_amqp_params *params) {
    rp_amqp_peek *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->url = strdup(params->url ? params->url : "");
    p->password = strdup(params->password ? params->password : "");
    p->ca_file = rp_dup_or_null(params->ca_file);
    p->cert_file = rp_dup_or_null(params->cert_file);
    p->key_file = rp_dup_or_null(params->key_file);
    p->verify_peer = params->verify_peer;
    if (p->url == NULL || p->password == NULL) {
        rp_amqp_peek_free(p);
        return NULL;
    }
    return p;
}

void rp_amqp_peek_set_header_cap(rp_amqp_peek *p, size_t cap_bytes) {
    p->header_cap = cap_bytes;
}

static void rp_items_clear(rp_amqp_peek *p) {
    for (size_t i = 0; i < p->n; i++) {
        amqp_destroy_message(&p->items[i].msg);
        free(p->items[i].x_death);
        free(p->items[i].props_json);
        free(p->items[i].headers_json);
    }
    p->n = 0;
}

void rp_amqp_peek_close(rp_amqp_peek *p) {
    if (p == NULL) return;
    rp_items_clear(p);
    if (p->conn) {
        (void)amqp_connection_close(p->conn, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(p->conn);
        p->conn = NULL;
    }
    free(p->conn_vhost);
    p->conn_vhost = NULL;
}

void rp_amqp_peek_free(rp_amqp_peek *p) {
    if (p == NULL) return;
    rp_amqp_peek_close(p);
    free(p->items);
    free(p->views);
    free(p->dl);
    free(p->stored);
    free(p->url);
    if (p->password) {
        memset(p->password, 0, strlen(p->password));
        free(p->password);
    }
    free(p->ca_file);
    free(p->cert_file);
    free(p->key_file);
    free(p);
}

static bool rp_ok(amqp_rpc_reply_t r, const char *what, char *err, size_t n) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

/* Connects to the broker and logs in to vhost (blocking, bounded). */
static rp_status rp_connect(rp_amqp_peek *p, const char *vhost, char *err, size_t errlen) {
    if (p->conn && p->conn_vhost && strcmp(p->conn_vhost, vhost) == 0) return RP_OK;
    rp_amqp_peek_close(p);
    rp_amqp_open_opts o = {
        .url = p->url,
        .password = p->password,
        .vhost = vhost,
        .ca_file = p->ca_file,
        .cert_file = p->cert_file,
        .key_file = p->key_file,
        .verify_peer = p->verify_peer,
        .connect_timeout_ms = RP_PEEK_TIMEOUT_S * 1000,
        .rpc_timeout_ms = RP_PEEK_TIMEOUT_S * 1000,
        /* A heartbeat bounds every wait of the library (a broker that dies
         * in the middle of a message ends the read instead of hanging the
         * pass). */
        .heartbeat_s = RP_PEEK_HEARTBEAT_S,
        .connection_name = "reaperd backfill",
    };
    amqp_connection_state_t c = rp_amqp_open(&o, err, errlen);
    if (c == NULL) return RP_ERR_UNAVAILABLE;
    p->conn = c;
    p->conn_vhost = strdup(vhost);
    if (p->conn_vhost == NULL) {
        rp_amqp_peek_close(p);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

/* ---- the header model ---------------------------------------------------- */

static const amqp_field_value_t *rp_find(const amqp_table_t *t, const char *key) {
    size_t kl = strlen(key);
    for (int i = 0; i < t->num_entries; i++)
        if (t->entries[i].key.len == kl && memcmp(t->entries[i].key.bytes, key, kl) == 0)
            return &t->entries[i].value;
    return NULL;
}

static rp_opt_i64 rp_int_of(const amqp_field_value_t *v, bool timestamp) {
    rp_opt_i64 o = {false, 0};
    if (v == NULL) return o;
    switch (v->kind) {
    case AMQP_FIELD_KIND_TIMESTAMP:
    case AMQP_FIELD_KIND_U64:
        if (v->value.u64 <= (uint64_t)INT64_MAX) o = (rp_opt_i64){true, (int64_t)v->value.u64};
        break;
    case AMQP_FIELD_KIND_I64:
        if (!timestamp) o = (rp_opt_i64){true, v->value.i64};
        break;
    case AMQP_FIELD_KIND_I32:
        if (!timestamp) o = (rp_opt_i64){true, v->value.i32};
        break;
    case AMQP_FIELD_KIND_U32:
        if (!timestamp) o = (rp_opt_i64){true, v->value.u32};
        break;
    default: break;
    }
    return o;
}

/* Fills the header model of one message (pointing into its properties):
 * the tap's model (rp_amqp_table.h), so that a dead letter the tap and the
 * backfill both see has one identity. */
static rp_status rp_model(rp_peek_item *it) {
    rp_amqp_dl_model m;
    rp_status st = rp_amqp_dl_model_init(&m, &it->msg.properties);
    if (st != RP_OK) return st;
    it->pub.headers = m.headers;
    it->x_death = m.entries; /* freed with the item */
    it->x_death_unparsed = m.x_death_unparsed;
    return RP_OK;
}

/* ---- reading ------------------------------------------------------------- */

static rp_status rp_read_one(rp_amqp_peek *p, rp_peek_item *it, bool redelivered) {
    memset(it, 0, sizeof *it);
    amqp_rpc_reply_t r = amqp_read_message(p->conn, RP_PEEK_CHANNEL, &it->msg, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) return RP_ERR_UNAVAILABLE;
    it->pub.body = (rp_bytes){it->msg.body.bytes, it->msg.body.len};
    it->pub.redelivered = redelivered;
    const amqp_basic_properties_t *pr = &it->msg.properties;
    if (pr->_flags & AMQP_BASIC_HEADERS_FLAG) {
        rp_opt_i64 dc = rp_int_of(rp_find(&pr->headers, "x-delivery-count"), false);
        if (dc.present && dc.value > 0) it->pub.delivery_count = (uint64_t)dc.value;
    }
    /* A header table over the cap is kept as the tap keeps it (tap.h):
     * only what the identity rule reads, from the message's own pool, so
     * that both find one identity and store one form. */
    if (p->header_cap > 0 && (pr->_flags & AMQP_BASIC_HEADERS_FLAG)) {
        size_t hdr = rp_amqp_table_footprint(&pr->headers);
        if (hdr > p->header_cap) {
            amqp_table_t kept;
            if (rp_amqp_death_headers(&it->msg.pool, &pr->headers, &kept) != RP_OK)
                return RP_ERR_NOMEM;
            it->msg.properties.headers = kept;
            it->headers_dropped = hdr;
            it->pub.headers_dropped = true;
        }
    }
    rp_status st = rp_model(it);
    if (st != RP_OK) return st;
    st = rp_amqp_restore_capture(pr, &it->props_json, &it->headers_json);
    if (st == RP_ERR_NOMEM) return st;
    if (st == RP_OK) {
        size_t entries = it->x_death_unparsed > 0
                             ? it->pub.headers.n_x_death + it->x_death_unparsed
                             : 0;
        if (rp_amqp_restore_note_kept(&it->props_json, it->headers_dropped, p->header_cap,
                                      entries) != RP_OK)
            return RP_ERR_NOMEM;
    }
    /* RP_ERR_INVALID: kept without JSON; the caller stores it so that it
     * cannot be replayed. */
    it->pub.properties_json = it->props_json;
    it->pub.headers_json = it->headers_json;
    return RP_OK;
}

static void rp_item_free(rp_peek_item *it) {
    amqp_destroy_message(&it->msg);
    free(it->x_death);
    free(it->props_json);
    free(it->headers_json);
}

rp_status rp_amqp_peek_read(rp_amqp_peek *p, const char *vhost, const char *queue, size_t limit,
                            const rp_amqp_peeked **items, size_t *n, int64_t *behind, char *err,
                            size_t errlen) {
    size_t read = 0;
    return rp_amqp_peek_read_past(p, vhost, queue, limit, NULL, items, n, &read, behind, err,
                                  errlen);
}

rp_status rp_amqp_peek_read_past(rp_amqp_peek *p, const char *vhost, const char *queue,
                                 size_t limit, const rp_amqp_peek_past *past,
                                 const rp_amqp_peeked **items, size_t *n, size_t *read,
                                 int64_t *behind, char *err, size_t errlen) {
    *items = NULL;
    *n = 0;
    *read = 0;
    *behind = -1;
    size_t read_max = past && past->pass_over && past->read_max > limit ? past->read_max : limit;
    int64_t left = -1; /* message-count of the last get-ok */
    rp_items_clear(p);
    rp_status st = rp_connect(p, vhost, err, errlen);
    if (st != RP_OK) return st;
    if (limit > p->cap) {
        rp_peek_item *grown = realloc(p->items, limit * sizeof *grown);
        if (grown == NULL) return RP_ERR_NOMEM;
        p->items = grown;
        rp_amqp_peeked *views = realloc(p->views, limit * sizeof *views);
        if (views == NULL) return RP_ERR_NOMEM;
        p->views = views;
        p->cap = limit;
    }
    amqp_channel_open(p->conn, RP_PEEK_CHANNEL);
    if (!rp_ok(amqp_get_rpc_reply(p->conn), "channel open", err, errlen)) {
        /* A connection kept from an earlier queue of this pass may have
         * been dropped meanwhile (heartbeats are sent only inside library
         * calls): one fresh attempt. */
        rp_amqp_peek_close(p);
        st = rp_connect(p, vhost, err, errlen);
        if (st != RP_OK) return st;
        amqp_channel_open(p->conn, RP_PEEK_CHANNEL);
        if (!rp_ok(amqp_get_rpc_reply(p->conn), "channel open", err, errlen)) {
            rp_amqp_peek_close(p);
            return RP_ERR_UNAVAILABLE;
        }
    }
    st = RP_OK;
    bool channel_open = true;
    size_t held = 0; /* what the messages kept so far hold (RP_AMQP_PEEK_BYTES) */
    while (p->n < limit && *read < read_max && held <= RP_AMQP_PEEK_BYTES) {
        amqp_rpc_reply_t r = amqp_basic_get(p->conn, RP_PEEK_CHANNEL, amqp_cstring_bytes(queue), 0);
        if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
            r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            const amqp_channel_close_t *m = r.reply.decoded;
            snprintf(err, errlen, "basic.get on %s: %u %.*s", queue, m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
            amqp_channel_close_ok_t ok = {0};
            (void)amqp_send_method(p->conn, RP_PEEK_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
            channel_open = false;
            st = m->reply_code == AMQP_NOT_FOUND ? RP_ERR_NOT_FOUND : RP_ERR_UNAVAILABLE;
            break;
        }
        if (!rp_ok(r, "basic.get", err, errlen)) {
            st = RP_ERR_UNAVAILABLE;
            break;
        }
        if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
            left = 0;
            break;
        }
        const amqp_basic_get_ok_t *ok = r.reply.decoded;
        bool redelivered = ok->redelivered;
        left = (int64_t)ok->message_count;
        st = rp_read_one(p, &p->items[p->n], redelivered);
        if (st != RP_OK) {
            if (st == RP_ERR_UNAVAILABLE) snprintf(err, errlen, "reading a message of %s", queue);
            rp_item_free(&p->items[p->n]);
            break;
        }
        (*read)++;
        /* Passed over: freed now, so that reading past a long backlog
         * holds only what is kept (it stays unacked on the channel, and
         * goes back with the others when the channel closes). */
        if (past && past->pass_over && past->pass_over(past->arg, &p->items[p->n].pub)) {
            rp_item_free(&p->items[p->n]);
        } else {
            const rp_peek_item *got = &p->items[p->n];
            held += got->msg.body.len + rp_amqp_props_footprint(&got->msg.properties) +
                    (got->headers_dropped == SIZE_MAX ? 0 : got->headers_dropped) +
                    (got->props_json ? strlen(got->props_json) : 0) +
                    (got->headers_json ? strlen(got->headers_json) : 0);
            p->n++;
        }
        amqp_maybe_release_buffers_on_channel(p->conn, RP_PEEK_CHANNEL);
    }
    /* Closing the channel returns every message it holds to the queue, in
     * place: nothing was acked, so nothing is removed. */
    if (channel_open && st != RP_ERR_UNAVAILABLE) {
        if (!rp_ok(amqp_channel_close(p->conn, RP_PEEK_CHANNEL, AMQP_REPLY_SUCCESS),
                   "channel close", err, errlen))
            st = RP_ERR_UNAVAILABLE;
    }
    if (st == RP_ERR_UNAVAILABLE) {
        /* A connection in doubt is dropped: that also returns the messages. */
        rp_amqp_peek_close(p);
        return st;
    }
    if (st != RP_OK) {
        rp_items_clear(p);
        return st;
    }
    for (size_t i = 0; i < p->n; i++) p->views[i] = p->items[i].pub;
    *items = p->views;
    *n = p->n;
    *behind = left;
    return RP_OK;
}

/* ---- core's peek port ---------------------------------------------------- */

/* Whether a message read is kept whole: its headers and properties as JSON,
 * none of its headers dropped. */
static bool rp_kept_whole(const rp_amqp_peeked *m) {
    return m->headers_json != NULL && !m->headers_dropped;
}

/* The caller's pass_over asked of one message read (its handle is not made
 * yet: pass_over reads only the headers and the body). */
static bool rp_port_pass_over(void *arg, const rp_amqp_peeked *m) {
    const rp_peek_past *past = arg;
    rp_dl_message msg = {
        .headers = m->headers,
        .body = m->body,
        .body_truncated = !rp_kept_whole(m),
        .handle = NULL,
    };
    return past->pass_over(past->arg, &msg);
}

static rp_status rp_port_read(void *self, const char *vhost, const char *queue, size_t limit,
                              const rp_peek_past *past, const rp_dl_message **msgs, size_t *n,
                              size_t *read, int64_t *behind, char *err, size_t errlen) {
    rp_amqp_peek *p = self;
    *msgs = NULL;
    *n = 0;
    rp_amqp_peek_past ap = {rp_port_pass_over, (void *)past, past ? past->read_max : 0};
    const rp_amqp_peeked *items = NULL;
    size_t k = 0;
    rp_status st = rp_amqp_peek_read_past(p, vhost, queue, limit,
                                          past && past->pass_over ? &ap : NULL, &items, &k, read,
                                          behind, err, errlen);
    if (st != RP_OK) return st;
    if (k > p->dl_cap) {
        rp_dl_message *m = realloc(p->dl, k * sizeof *m);
        if (m != NULL) p->dl = m;
        rp_dl_stored *h = m ? realloc(p->stored, k * sizeof *h) : NULL;
        if (h != NULL) p->stored = h;
        if (m == NULL || h == NULL) {
            snprintf(err, errlen, "out of memory");
            rp_items_clear(p);
            return RP_ERR_NOMEM;
        }
        p->dl_cap = k;
    }
    for (size_t i = 0; i < k; i++) {
        p->stored[i].headers_json = items[i].headers_json;
        p->stored[i].properties_json = items[i].properties_json;
        p->dl[i].headers = items[i].headers;
        p->dl[i].body = items[i].body;
        /* Properties that could not be kept whole: stored as truncated so
         * that it is never replayed with properties other than its own. */
        p->dl[i].body_truncated = !rp_kept_whole(&items[i]);
        p->dl[i].handle = &p->stored[i];
    }
    *msgs = p->dl;
    *n = k;
    return RP_OK;
}

static void rp_port_close(void *self) {
    rp_amqp_peek_close(self);
}

void rp_amqp_peek_port(rp_amqp_peek *p, rp_peek_port *out) {
    out->self = p;
    out->read = rp_port_read;
    out->close = rp_port_close;
}
