#include "rp_amqp_msg.h"

#include <stdlib.h>
#include <string.h>

static amqp_bytes_t rp_pool_dup(amqp_pool_t *pool, amqp_bytes_t b, bool *ok) {
    amqp_bytes_t out = {0, NULL};
    if (b.len == 0) return out;
    amqp_pool_alloc_bytes(pool, b.len, &out);
    if (out.bytes == NULL) {
        *ok = false;
        out.len = 0;
        return out;
    }
    memcpy(out.bytes, b.bytes, b.len);
    return out;
}

/* Deep-copies properties into pool (strings and the headers table). Only
 * the fields whose flag is set are read: the library leaves the others
 * uninitialised. */
bool rp_amqp_props_copy(amqp_pool_t *pool, const amqp_basic_properties_t *src,
                        amqp_basic_properties_t *dst) {
    bool ok = true;
    amqp_flags_t fl = src->_flags;
    memset(dst, 0, sizeof *dst);
    dst->_flags = fl;
#define RP_COPY_BYTES(flag, field) \
    if (fl & (flag)) dst->field = rp_pool_dup(pool, src->field, &ok)
    RP_COPY_BYTES(AMQP_BASIC_CONTENT_TYPE_FLAG, content_type);
    RP_COPY_BYTES(AMQP_BASIC_CONTENT_ENCODING_FLAG, content_encoding);
    RP_COPY_BYTES(AMQP_BASIC_CORRELATION_ID_FLAG, correlation_id);
    RP_COPY_BYTES(AMQP_BASIC_REPLY_TO_FLAG, reply_to);
    RP_COPY_BYTES(AMQP_BASIC_EXPIRATION_FLAG, expiration);
    RP_COPY_BYTES(AMQP_BASIC_MESSAGE_ID_FLAG, message_id);
    RP_COPY_BYTES(AMQP_BASIC_TYPE_FLAG, type);
    RP_COPY_BYTES(AMQP_BASIC_USER_ID_FLAG, user_id);
    RP_COPY_BYTES(AMQP_BASIC_APP_ID_FLAG, app_id);
    RP_COPY_BYTES(AMQP_BASIC_CLUSTER_ID_FLAG, cluster_id);
#undef RP_COPY_BYTES
    if (fl & AMQP_BASIC_DELIVERY_MODE_FLAG) dst->delivery_mode = src->delivery_mode;
    if (fl & AMQP_BASIC_PRIORITY_FLAG) dst->priority = src->priority;
    if (fl & AMQP_BASIC_TIMESTAMP_FLAG) dst->timestamp = src->timestamp;
    if ((fl & AMQP_BASIC_HEADERS_FLAG) &&
        amqp_table_clone(&src->headers, &dst->headers, pool) != AMQP_STATUS_OK)
        ok = false;
    return ok;
}

void rp_amqp_assembler_init(rp_amqp_assembler *a, size_t body_limit, rp_amqp_message_fn fn,
                            void *arg) {
    memset(a, 0, sizeof *a);
    a->body_limit = body_limit;
    a->on_message = fn;
    a->arg = arg;
    for (int i = 0; i < RP_AMQP_MAX_CHANNELS; i++) init_amqp_pool(&a->ch[i].msg.pool, RP_AMQP_POOL_PAGE);
}

void rp_amqp_assembler_set_limit(rp_amqp_assembler *a, uint16_t channel, size_t body_limit) {
    if (channel < RP_AMQP_MAX_CHANNELS) a->ch[channel].limit = body_limit;
}

static void rp_channel_clear(rp_amqp_assembler *a, int i) {
    recycle_amqp_pool(&a->ch[i].msg.pool);
    amqp_pool_t pool = a->ch[i].msg.pool;
    memset(&a->ch[i].msg, 0, sizeof a->ch[i].msg);
    a->ch[i].msg.pool = pool; /* ch[i].buf is kept for the next delivery */
    a->ch[i].active = false;
    a->ch[i].handing = false;
    a->ch[i].have_header = false;
    a->ch[i].received = 0;
    a->ch[i].keep = 0;
}

void rp_amqp_assembler_reset(rp_amqp_assembler *a) {
    for (int i = 0; i < RP_AMQP_MAX_CHANNELS; i++) rp_channel_clear(a, i);
}

void rp_amqp_assembler_cleanup(rp_amqp_assembler *a) {
    for (int i = 0; i < RP_AMQP_MAX_CHANNELS; i++) {
        empty_amqp_pool(&a->ch[i].msg.pool);
        free(a->ch[i].buf);
    }
    memset(a, 0, sizeof *a);
}

static void rp_finish(rp_amqp_assembler *a, int i) {
    rp_amqp_message *m = &a->ch[i].msg;
    m->truncated = m->body_len < m->body_size;
    a->ch[i].handing = true;
    if (a->on_message) a->on_message(a->arg, m);
    rp_channel_clear(a, i);
}

bool rp_amqp_assembler_take_pool(rp_amqp_assembler *a, const rp_amqp_message *msg,
                                 amqp_pool_t *out) {
    int i = msg->channel;
    if (i >= RP_AMQP_MAX_CHANNELS || msg != &a->ch[i].msg || !a->ch[i].handing) return false;
    *out = a->ch[i].msg.pool;
    /* A fresh pool allocates nothing until used; the message's pointers
     * now live in *out. */
    init_amqp_pool(&a->ch[i].msg.pool, RP_AMQP_POOL_PAGE);
    return true;
}

bool rp_amqp_assembler_frame(rp_amqp_assembler *a, const amqp_frame_t *f, rp_status *st) {
    *st = RP_OK;
    int i = f->channel;
    if (f->frame_type == AMQP_FRAME_METHOD) {
        if (f->payload.method.id != AMQP_BASIC_DELIVER_METHOD) return false;
        if (i >= RP_AMQP_MAX_CHANNELS || a->ch[i].active) {
            *st = RP_ERR_INTERNAL; /* a delivery began before the last ended */
            return true;
        }
        const amqp_basic_deliver_t *d = f->payload.method.decoded;
        rp_amqp_message *m = &a->ch[i].msg;
        bool ok = true;
        m->channel = (uint16_t)i;
        m->delivery_tag = d->delivery_tag;
        m->redelivered = d->redelivered;
        m->consumer_tag = rp_pool_dup(&m->pool, d->consumer_tag, &ok);
        m->exchange = rp_pool_dup(&m->pool, d->exchange, &ok);
        m->routing_key = rp_pool_dup(&m->pool, d->routing_key, &ok);
        if (!ok) {
            *st = RP_ERR_NOMEM;
            return true;
        }
        a->ch[i].active = true;
        return true;
    }
    if (i >= RP_AMQP_MAX_CHANNELS || !a->ch[i].active) return false;
    rp_amqp_message *m = &a->ch[i].msg;
    if (f->frame_type == AMQP_FRAME_HEADER) {
        if (a->ch[i].have_header) {
            *st = RP_ERR_INTERNAL;
            return true;
        }
        a->ch[i].have_header = true;
        m->body_size = f->payload.properties.body_size;
        if (!rp_amqp_props_copy(&m->pool, f->payload.properties.decoded, &m->props)) {
            *st = RP_ERR_NOMEM;
            return true;
        }
        size_t limit = a->ch[i].limit ? a->ch[i].limit : a->body_limit;
        size_t want = m->body_size < limit ? (size_t)m->body_size : limit;
        /* The buffer may be larger (an earlier delivery's): this one keeps
         * no more than its own declared size and limit, however many body
         * bytes arrive. It is grown when a body needs it (several frames). */
        a->ch[i].keep = want;
        if (m->body_size == 0) rp_finish(a, i);
        return true;
    }
    if (f->frame_type == AMQP_FRAME_BODY) {
        if (!a->ch[i].have_header) {
            *st = RP_ERR_INTERNAL;
            return true;
        }
        amqp_bytes_t frag = f->payload.body_fragment;
        size_t room = a->ch[i].keep > m->body_len ? a->ch[i].keep - m->body_len : 0;
        size_t keep = frag.len < room ? frag.len : room;
        if (a->ch[i].received == 0 && frag.len >= m->body_size) {
            /* The whole body in one frame (the common case): lent as it
             * is, valid for the handler's call like the frame. */
            m->body = frag.bytes;
            m->body_len = keep;
            a->ch[i].received = frag.len;
            rp_finish(a, i);
            return true;
        }
        if (keep && a->ch[i].keep > a->ch[i].body_cap) {
            uint8_t *b = realloc(a->ch[i].buf, a->ch[i].keep);
            if (b == NULL) {
                *st = RP_ERR_NOMEM;
                return true;
            }
            a->ch[i].buf = b;
            a->ch[i].body_cap = a->ch[i].keep;
        }
        if (keep) memcpy(a->ch[i].buf + m->body_len, frag.bytes, keep);
        m->body = a->ch[i].buf;
        m->body_len += keep;
        /* What is not kept still counts towards the end of the body. */
        a->ch[i].received += frag.len;
        if (a->ch[i].received >= m->body_size) rp_finish(a, i);
        return true;
    }
    return false;
}

bool rp_amqp_prop_string(const amqp_basic_properties_t *p, amqp_flags_t flag, char *buf,
                         size_t n) {
    const amqp_bytes_t *b = NULL;
    switch (flag) {
    case AMQP_BASIC_CONTENT_TYPE_FLAG: b = &p->content_type; break;
    case AMQP_BASIC_CORRELATION_ID_FLAG: b = &p->correlation_id; break;
    case AMQP_BASIC_REPLY_TO_FLAG: b = &p->reply_to; break;
    case AMQP_BASIC_MESSAGE_ID_FLAG: b = &p->message_id; break;
    case AMQP_BASIC_USER_ID_FLAG: b = &p->user_id; break;
    case AMQP_BASIC_TYPE_FLAG: b = &p->type; break;
    case AMQP_BASIC_APP_ID_FLAG: b = &p->app_id; break;
    default: break;
    }
    if (n) buf[0] = '\0';
    if (b == NULL || !(p->_flags & flag)) return false;
    size_t len = b->len < n - 1 ? b->len : n - 1;
    memcpy(buf, b->bytes, len);
    buf[len] = '\0';
    return true;
}
