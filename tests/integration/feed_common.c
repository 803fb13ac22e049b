/* The feed tests' subscriber (feed_common.h). */
#include "feed_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "itest.h"
#include "rp_proto.h"

static void die(const char *what) {
    fprintf(stderr, "feed_common: %s\n", what);
    exit(1);
}

static void ok_or_die(amqp_connection_state_t c, const char *what) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) die(what);
}

void feed_sub_open(feed_sub *s, const char *exchange, const char *queue) {
    memset(s, 0, sizeof *s);
    snprintf(s->exchange, sizeof s->exchange, "%s", exchange);
    s->c = itest_amqp_connect_plain();
    amqp_exchange_declare(s->c, 1, amqp_cstring_bytes(exchange), amqp_cstring_bytes("topic"), 0,
                          1, 0, 0, amqp_empty_table);
    ok_or_die(s->c, "exchange declare");
    amqp_queue_declare_ok_t *q =
        amqp_queue_declare(s->c, 1, queue ? amqp_cstring_bytes(queue) : amqp_empty_bytes, 0,
                           queue != NULL, queue == NULL, queue == NULL, amqp_empty_table);
    if (q == NULL) die("queue declare");
    snprintf(s->queue, sizeof s->queue, "%.*s", (int)q->queue.len, (char *)q->queue.bytes);
    amqp_queue_bind(s->c, 1, amqp_cstring_bytes(s->queue), amqp_cstring_bytes(exchange),
                    amqp_cstring_bytes("#"), amqp_empty_table);
    ok_or_die(s->c, "queue bind");
}

void feed_sub_reconnect(feed_sub *s) {
    if (s->c) {
        amqp_destroy_connection(s->c);
        s->c = NULL;
    }
    s->c = itest_amqp_connect_plain();
}

void feed_sub_close(feed_sub *s) {
    if (s->c == NULL) return;
    amqp_connection_close(s->c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(s->c);
    s->c = NULL;
}

void feed_sub_delete(feed_sub *s) {
    if (s->c == NULL) s->c = itest_amqp_connect_plain();
    amqp_queue_delete(s->c, 1, amqp_cstring_bytes(s->queue), 0, 0);
    amqp_exchange_delete(s->c, 1, amqp_cstring_bytes(s->exchange), 0);
    feed_sub_close(s);
}

static void prop(char *dst, size_t n, amqp_flags_t flags, amqp_flags_t flag, amqp_bytes_t b) {
    if (flags & flag) snprintf(dst, n, "%.*s", (int)b.len, (const char *)b.bytes);
    else dst[0] = '\0';
}

/* One basic.get; false when the queue is empty. */
static bool get_one(feed_sub *s, feed_msgs *out) {
    amqp_maybe_release_buffers(s->c);
    amqp_rpc_reply_t r = amqp_basic_get(s->c, 1, amqp_cstring_bytes(s->queue), 1);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) die("basic.get");
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) return false;
    amqp_basic_get_ok_t *ok = r.reply.decoded;
    char rk[128];
    snprintf(rk, sizeof rk, "%.*s", (int)ok->routing_key.len, (char *)ok->routing_key.bytes);
    amqp_message_t m;
    r = amqp_read_message(s->c, 1, &m, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) die("read message");
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->items = realloc(out->items, out->cap * sizeof *out->items);
        if (out->items == NULL) die("out of memory");
    }
    feed_msg *f = &out->items[out->n++];
    memset(f, 0, sizeof *f);
    snprintf(f->routing_key, sizeof f->routing_key, "%s", rk);
    amqp_basic_properties_t *p = &m.properties;
    prop(f->message_id, sizeof f->message_id, p->_flags, AMQP_BASIC_MESSAGE_ID_FLAG, p->message_id);
    prop(f->type, sizeof f->type, p->_flags, AMQP_BASIC_TYPE_FLAG, p->type);
    prop(f->content_type, sizeof f->content_type, p->_flags, AMQP_BASIC_CONTENT_TYPE_FLAG,
         p->content_type);
    f->delivery_mode = (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG) ? p->delivery_mode : 0;
    f->timestamp = (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) ? (long long)p->timestamp : -1;
    rp_proto_error err;
    f->body = rp_proto_to_json((rp_bytes){m.body.bytes, m.body.len},
                               (rp_bytes){(const uint8_t *)f->content_type, strlen(f->content_type)}, NULL, &err);
    f->raw_json = json_loadb((const char *)m.body.bytes, m.body.len, 0, NULL);
    amqp_destroy_message(&m);
    return true;
}

void feed_sub_read(feed_sub *s, feed_msgs *out, size_t want, int quiet_ms, int timeout_ms) {
    long long start = itest_mono_ms(), last = itest_mono_ms();
    for (;;) {
        long long now = itest_mono_ms();
        if (now - start > timeout_ms) return;
        if (get_one(s, out)) {
            last = now;
            continue;
        }
        /* The queue is empty for now. */
        if (want > 0 && out->n >= want && feed_msgs_distinct(out) >= want) return;
        if (now - last > quiet_ms) return;
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
}

size_t feed_msgs_count(const feed_msgs *m, const char *message_id) {
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->items[i].message_id, message_id) == 0) n++;
    return n;
}

const feed_msg *feed_msgs_find(const feed_msgs *m, const char *message_id) {
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->items[i].message_id, message_id) == 0) return &m->items[i];
    return NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t feed_msgs_distinct(const feed_msgs *m) {
    if (m->n == 0) return 0;
    const char **ids = malloc(m->n * sizeof *ids);
    if (ids == NULL) die("out of memory");
    for (size_t i = 0; i < m->n; i++) ids[i] = m->items[i].message_id;
    qsort(ids, m->n, sizeof *ids, cmp_str);
    size_t n = 1;
    for (size_t i = 1; i < m->n; i++)
        if (strcmp(ids[i], ids[i - 1]) != 0) n++;
    free(ids);
    return n;
}

void feed_msgs_free(feed_msgs *m) {
    for (size_t i = 0; i < m->n; i++) {
        json_decref(m->items[i].body);
        json_decref(m->items[i].raw_json);
    }
    free(m->items);
    memset(m, 0, sizeof *m);
}

size_t feed_ledger(PGconn *pg, const char *schema, char ***ids, char ***kinds) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT 'ledger-' || seq, kind FROM %s.ledger ORDER BY seq", schema);
    PGresult *r = PQexec(pg, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) die(PQresultErrorMessage(r));
    size_t n = (size_t)PQntuples(r);
    *ids = calloc(n + 1, sizeof **ids);
    *kinds = calloc(n + 1, sizeof **kinds);
    for (size_t i = 0; i < n; i++) {
        (*ids)[i] = strdup(PQgetvalue(r, (int)i, 0));
        (*kinds)[i] = strdup(PQgetvalue(r, (int)i, 1));
    }
    PQclear(r);
    return n;
}

void feed_ids_free(char **ids, size_t n) {
    if (ids == NULL) return;
    for (size_t i = 0; i < n; i++) free(ids[i]);
    free(ids);
}
