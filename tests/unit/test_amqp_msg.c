/* Assembling deliveries from frames: properties copied deep (and only the
 * flagged ones: the library leaves the rest uninitialised), bodies over
 * several frames, the body limit (truncated, not grown), several channels
 * interleaved, and frames that are not deliveries left to the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_msg.h"

typedef struct seen {
    int n;
    char body[256];
    size_t body_len;
    uint64_t body_size;
    bool truncated;
    char ct[64], corr[64], rk[64];
    uint64_t tag;
    uint16_t channel;
    int n_headers;
} seen;

static void on_msg(void *arg, const rp_amqp_message *m) {
    seen *s = arg;
    s->n++;
    if (m->body_len) memcpy(s->body, m->body, m->body_len < sizeof s->body ? m->body_len : sizeof s->body);
    s->body_len = m->body_len;
    s->body_size = m->body_size;
    s->truncated = m->truncated;
    s->tag = m->delivery_tag;
    s->channel = m->channel;
    rp_amqp_prop_string(&m->props, AMQP_BASIC_CONTENT_TYPE_FLAG, s->ct, sizeof s->ct);
    rp_amqp_prop_string(&m->props, AMQP_BASIC_CORRELATION_ID_FLAG, s->corr, sizeof s->corr);
    snprintf(s->rk, sizeof s->rk, "%.*s", (int)m->routing_key.len, (const char *)m->routing_key.bytes);
    s->n_headers = m->props.headers.num_entries;
}

static void feed_deliver(rp_amqp_assembler *a, uint16_t ch, uint64_t tag) {
    amqp_basic_deliver_t d = {0};
    d.consumer_tag = amqp_cstring_bytes("ctag");
    d.delivery_tag = tag;
    d.exchange = amqp_cstring_bytes("");
    d.routing_key = amqp_cstring_bytes("vibey.reap.control");
    amqp_frame_t f = {0};
    f.frame_type = AMQP_FRAME_METHOD;
    f.channel = ch;
    f.payload.method.id = AMQP_BASIC_DELIVER_METHOD;
    f.payload.method.decoded = &d;
    rp_status st;
    assert_true(rp_amqp_assembler_frame(a, &f, &st));
    assert_int_equal(st, RP_OK);
}

static void feed_header(rp_amqp_assembler *a, uint16_t ch, uint64_t size) {
    amqp_basic_properties_t p;
    /* Garbage everywhere, as the library leaves unflagged fields. */
    memset(&p, 0xA5, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
               AMQP_BASIC_HEADERS_FLAG;
    p.content_type = amqp_cstring_bytes("application/json");
    p.correlation_id = amqp_cstring_bytes("c-1");
    amqp_table_entry_t e[1] = {{amqp_cstring_bytes("x-death"),
                                {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("q")}}}};
    p.headers.num_entries = 1;
    p.headers.entries = e;
    amqp_frame_t f = {0};
    f.frame_type = AMQP_FRAME_HEADER;
    f.channel = ch;
    f.payload.properties.body_size = size;
    f.payload.properties.decoded = &p;
    rp_status st;
    assert_true(rp_amqp_assembler_frame(a, &f, &st));
    assert_int_equal(st, RP_OK);
    /* The copy must not point into the frame: scribble over it. */
    memset(&p, 0, sizeof p);
    e[0].key = amqp_cstring_bytes("zzzzzzz");
}

static void feed_body(rp_amqp_assembler *a, uint16_t ch, const char *s) {
    char *copy = strdup(s);
    amqp_frame_t f = {0};
    f.frame_type = AMQP_FRAME_BODY;
    f.channel = ch;
    f.payload.body_fragment = (amqp_bytes_t){strlen(s), copy};
    rp_status st;
    assert_true(rp_amqp_assembler_frame(a, &f, &st));
    assert_int_equal(st, RP_OK);
    memset(copy, 'X', strlen(s));
    free(copy);
}

static void test_delivery_over_several_frames(void **state) {
    (void)state;
    seen s = {0};
    rp_amqp_assembler a;
    rp_amqp_assembler_init(&a, 1024, on_msg, &s);
    for (int round = 0; round < 3; round++) { /* buffers are reused */
        feed_deliver(&a, 1, 7 + round);
        feed_header(&a, 1, 11);
        feed_body(&a, 1, "hello");
        assert_int_equal(s.n, round);
        feed_body(&a, 1, " world");
        assert_int_equal(s.n, round + 1);
        assert_int_equal(s.body_len, 11);
        assert_memory_equal(s.body, "hello world", 11);
        assert_false(s.truncated);
        assert_string_equal(s.ct, "application/json");
        assert_string_equal(s.corr, "c-1");
        assert_string_equal(s.rk, "vibey.reap.control");
        assert_int_equal(s.tag, 7 + round);
        assert_int_equal(s.n_headers, 1);
    }
    rp_amqp_assembler_cleanup(&a);
}

static void test_empty_body_and_limit(void **state) {
    (void)state;
    seen s = {0};
    rp_amqp_assembler a;
    rp_amqp_assembler_init(&a, 4, on_msg, &s);
    feed_deliver(&a, 1, 1);
    feed_header(&a, 1, 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.body_len, 0);
    /* Over the limit: the first 4 bytes are kept, the rest only counted. */
    feed_deliver(&a, 1, 2);
    feed_header(&a, 1, 10);
    feed_body(&a, 1, "abcdef");
    feed_body(&a, 1, "ghij");
    assert_int_equal(s.n, 2);
    assert_int_equal(s.body_len, 4);
    assert_int_equal(s.body_size, 10);
    assert_true(s.truncated);
    assert_memory_equal(s.body, "abcd", 4);
    rp_amqp_assembler_cleanup(&a);
}

static void test_channels_interleave_and_others_pass(void **state) {
    (void)state;
    seen s = {0};
    rp_amqp_assembler a;
    rp_amqp_assembler_init(&a, 1024, on_msg, &s);
    feed_deliver(&a, 1, 1);
    feed_deliver(&a, 3, 2);
    feed_header(&a, 3, 2);
    feed_header(&a, 1, 2);
    feed_body(&a, 3, "c3");
    assert_int_equal(s.channel, 3);
    feed_body(&a, 1, "c1");
    assert_int_equal(s.n, 2);
    assert_int_equal(s.channel, 1);
    /* A confirm is not a delivery: the caller's. */
    amqp_basic_ack_t ack = {5, 0};
    amqp_frame_t f = {0};
    f.frame_type = AMQP_FRAME_METHOD;
    f.channel = 2;
    f.payload.method.id = AMQP_BASIC_ACK_METHOD;
    f.payload.method.decoded = &ack;
    rp_status st;
    assert_false(rp_amqp_assembler_frame(&a, &f, &st));
    /* A body with no delivery under way is not ours either. */
    f.frame_type = AMQP_FRAME_BODY;
    f.payload.body_fragment = amqp_cstring_bytes("stray");
    assert_false(rp_amqp_assembler_frame(&a, &f, &st));
    /* A second deliver before the first ended is a protocol error. */
    feed_deliver(&a, 1, 9);
    amqp_basic_deliver_t d = {0};
    f.frame_type = AMQP_FRAME_METHOD;
    f.channel = 1;
    f.payload.method.id = AMQP_BASIC_DELIVER_METHOD;
    f.payload.method.decoded = &d;
    assert_true(rp_amqp_assembler_frame(&a, &f, &st));
    assert_int_equal(st, RP_ERR_INTERNAL);
    rp_amqp_assembler_reset(&a);
    feed_deliver(&a, 1, 10);
    rp_amqp_assembler_cleanup(&a);
}

/* A channel with its own limit: the same 10-byte body is kept whole on a
 * channel allowed 16 bytes and cut at 4 on the others. */
static void test_limit_per_channel(void **state) {
    (void)state;
    seen s = {0};
    rp_amqp_assembler a;
    rp_amqp_assembler_init(&a, 4, on_msg, &s);
    rp_amqp_assembler_set_limit(&a, 3, 16);
    rp_amqp_assembler_set_limit(&a, RP_AMQP_MAX_CHANNELS, 16); /* ignored */
    feed_deliver(&a, 3, 1);
    feed_header(&a, 3, 10);
    feed_body(&a, 3, "abcdefghij");
    assert_int_equal(s.n, 1);
    assert_int_equal(s.channel, 3);
    assert_int_equal(s.body_len, 10);
    assert_false(s.truncated);
    assert_memory_equal(s.body, "abcdefghij", 10);
    feed_deliver(&a, 1, 2);
    feed_header(&a, 1, 10);
    feed_body(&a, 1, "abcdefghij");
    assert_int_equal(s.n, 2);
    assert_int_equal(s.body_len, 4);
    assert_true(s.truncated);
    rp_amqp_assembler_cleanup(&a);
}

/* Found by fuzz_amqp_msg: the body buffer is kept for the next delivery on
 * the channel, and a delivery after a larger one kept every body byte that
 * fitted that buffer, past its own declared size (a body frame longer than
 * the content header said). It keeps its declared size at most. */
static void test_body_never_past_its_declared_size(void **state) {
    (void)state;
    seen s = {0};
    rp_amqp_assembler a;
    rp_amqp_assembler_init(&a, 1024, on_msg, &s);
    feed_deliver(&a, 1, 1);
    feed_header(&a, 1, 11);
    feed_body(&a, 1, "hello world");
    assert_int_equal(s.n, 1);
    feed_deliver(&a, 1, 2);
    feed_header(&a, 1, 3);
    feed_body(&a, 1, "abcdefgh"); /* more than declared */
    assert_int_equal(s.n, 2);
    assert_int_equal(s.body_size, 3);
    assert_int_equal(s.body_len, 3);
    assert_memory_equal(s.body, "abc", 3);
    assert_false(s.truncated);
    rp_amqp_assembler_cleanup(&a);
}

/* Issue 21: a body that arrives in one frame is lent as the frame's bytes
 * (no copy); one over several frames is still assembled in the buffer. */
typedef struct lent {
    const uint8_t *body;
    size_t body_len;
    int n;
} lent;

static void on_lent(void *arg, const rp_amqp_message *m) {
    lent *l = arg;
    l->body = m->body;
    l->body_len = m->body_len;
    l->n++;
}

static void test_one_frame_body_is_lent(void **state) {
    (void)state;
    lent l = {0};
    rp_amqp_assembler a;
    rp_amqp_assembler_init(&a, 1024, on_lent, &l);
    char frame[] = "hello world";
    feed_deliver(&a, 1, 1);
    feed_header(&a, 1, 11);
    amqp_frame_t f = {0};
    f.frame_type = AMQP_FRAME_BODY;
    f.channel = 1;
    f.payload.body_fragment = (amqp_bytes_t){11, frame};
    rp_status st;
    assert_true(rp_amqp_assembler_frame(&a, &f, &st));
    assert_int_equal(st, RP_OK);
    assert_int_equal(l.n, 1);
    assert_ptr_equal(l.body, (const uint8_t *)frame);
    assert_int_equal(l.body_len, 11);
    /* Longer than declared, in one frame: lent, cut at the declared size. */
    feed_deliver(&a, 1, 2);
    feed_header(&a, 1, 5);
    assert_true(rp_amqp_assembler_frame(&a, &f, &st));
    assert_int_equal(l.n, 2);
    assert_ptr_equal(l.body, (const uint8_t *)frame);
    assert_int_equal(l.body_len, 5);
    /* Two frames: assembled in the channel's buffer, not the frame's. */
    feed_deliver(&a, 1, 3);
    feed_header(&a, 1, 22);
    assert_true(rp_amqp_assembler_frame(&a, &f, &st));
    assert_int_equal(l.n, 2);
    assert_true(rp_amqp_assembler_frame(&a, &f, &st));
    assert_int_equal(l.n, 3);
    assert_int_equal(l.body_len, 22);
    assert_ptr_not_equal(l.body, (const uint8_t *)frame);
    assert_memory_equal(l.body, "hello worldhello world", 22);
    rp_amqp_assembler_cleanup(&a);
}

/* Issue 21: a handler that keeps the properties takes the message's pool
 * instead of copying them; they outlive the delivery and the channel's
 * next one, and the pool is the taker's to free. Outside a handler nothing
 * is taken. */
typedef struct taker {
    rp_amqp_assembler *a;
    amqp_pool_t pool[3];
    amqp_basic_properties_t props[3];
    bool took[3];
    int n;
} taker;

static void on_take(void *arg, const rp_amqp_message *m) {
    taker *t = arg;
    if (t->n < 3) {
        t->took[t->n] = rp_amqp_assembler_take_pool(t->a, m, &t->pool[t->n]);
        t->props[t->n] = m->props;
    }
    t->n++;
}

static void test_taken_pool_keeps_properties(void **state) {
    (void)state;
    taker t = {0};
    rp_amqp_assembler a;
    t.a = &a;
    rp_amqp_assembler_init(&a, 1024, on_take, &t);
    for (int k = 0; k < 3; k++) {
        feed_deliver(&a, 1, (uint64_t)k + 1);
        feed_header(&a, 1, 2);
        feed_body(&a, 1, "hi");
    }
    assert_int_equal(t.n, 3);
    for (int k = 0; k < 3; k++) {
        assert_true(t.took[k]);
        char ct[64];
        assert_true(rp_amqp_prop_string(&t.props[k], AMQP_BASIC_CONTENT_TYPE_FLAG, ct, sizeof ct));
        assert_string_equal(ct, "application/json");
        assert_int_equal(t.props[k].headers.num_entries, 1);
        assert_memory_equal(t.props[k].headers.entries[0].key.bytes, "x-death", 7);
        empty_amqp_pool(&t.pool[k]);
    }
    /* No message being handed: nothing to take. */
    amqp_pool_t p;
    rp_amqp_message none = {.channel = 1};
    assert_false(rp_amqp_assembler_take_pool(&a, &none, &p));
    assert_false(rp_amqp_assembler_take_pool(&a, &a.ch[1].msg, &p));
    rp_amqp_assembler_cleanup(&a);
}

/* Issue 21: a dead letter's properties as RabbitMQ 3.10 writes them (one
 * x-death entry, the x-first-death-* headers) and the delivery's names fit
 * in one pool page of at most 1 KiB: the tap takes every delivery's pool,
 * and a page is zeroed whole at its first use and held with the item (it
 * was 4 KiB: 3 KiB zeroed and held for nothing). */
static amqp_table_entry_t dl_entry(const char *k, amqp_field_value_t v) {
    return (amqp_table_entry_t){amqp_cstring_bytes(k), v};
}

static amqp_field_value_t dl_utf8(const char *s) {
    amqp_field_value_t v = {.kind = AMQP_FIELD_KIND_UTF8};
    v.value.bytes = amqp_cstring_bytes(s);
    return v;
}

static void test_dead_letter_fits_one_small_page(void **state) {
    (void)state;
    amqp_field_value_t rk = dl_utf8("orders.retry.queue"), death, xd, n = {.kind = AMQP_FIELD_KIND_I64},
                       when = {.kind = AMQP_FIELD_KIND_TIMESTAMP};
    n.value.i64 = 1;
    when.value.u64 = 1764700000;
    amqp_field_value_t keys = {.kind = AMQP_FIELD_KIND_ARRAY};
    keys.value.array = (amqp_array_t){1, &rk};
    amqp_table_entry_t de[6] = {dl_entry("count", n),
                                dl_entry("reason", dl_utf8("expired")),
                                dl_entry("queue", dl_utf8("orders.retry.queue")),
                                dl_entry("time", when),
                                dl_entry("exchange", dl_utf8("")),
                                dl_entry("routing-keys", keys)};
    death.kind = AMQP_FIELD_KIND_TABLE;
    death.value.table = (amqp_table_t){6, de};
    xd.kind = AMQP_FIELD_KIND_ARRAY;
    xd.value.array = (amqp_array_t){1, &death};
    amqp_table_entry_t h[4] = {dl_entry("x-death", xd),
                               dl_entry("x-first-death-exchange", dl_utf8("")),
                               dl_entry("x-first-death-queue", dl_utf8("orders.retry.queue")),
                               dl_entry("x-first-death-reason", dl_utf8("expired"))};
    amqp_basic_properties_t props = {0};
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
    props.delivery_mode = 2;
    props.headers = (amqp_table_t){4, h};

    taker t = {0};
    rp_amqp_assembler a;
    t.a = &a;
    rp_amqp_assembler_init(&a, 1024, on_take, &t);
    amqp_basic_deliver_t d = {.consumer_tag = amqp_cstring_bytes("reaper.tap.12"),
                              .delivery_tag = 1,
                              .exchange = amqp_cstring_bytes("reaper.dead-letters"),
                              .routing_key = amqp_cstring_bytes("orders.retry.queue")};
    rp_status st;
    amqp_frame_t f = {.frame_type = AMQP_FRAME_METHOD, .channel = 1};
    f.payload.method.id = AMQP_BASIC_DELIVER_METHOD;
    f.payload.method.decoded = &d;
    assert_true(rp_amqp_assembler_frame(&a, &f, &st));
    amqp_frame_t hf = {.frame_type = AMQP_FRAME_HEADER, .channel = 1};
    hf.payload.properties.class_id = AMQP_BASIC_CLASS;
    hf.payload.properties.body_size = 2;
    hf.payload.properties.decoded = &props;
    assert_true(rp_amqp_assembler_frame(&a, &hf, &st));
    feed_body(&a, 1, "hi");
    assert_int_equal(t.n, 1);
    assert_true(t.took[0]);
    assert_int_equal(t.props[0].headers.num_entries, 4);
    amqp_pool_t *p = &t.pool[0];
    assert_int_equal(p->pages.num_blocks, 1);
    assert_int_equal(p->large_blocks.num_blocks, 0);
    /* What a held dead letter's pool zeroes and keeps. */
    assert_true(p->pages.num_blocks * p->pagesize <= 1024);
    assert_true(p->alloc_used <= p->pagesize);
    empty_amqp_pool(p);
    rp_amqp_assembler_cleanup(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivery_over_several_frames),
        cmocka_unit_test(test_one_frame_body_is_lent),
        cmocka_unit_test(test_taken_pool_keeps_properties),
        cmocka_unit_test(test_dead_letter_fits_one_small_page),
        cmocka_unit_test(test_empty_body_and_limit),
        cmocka_unit_test(test_channels_interleave_and_others_pass),
        cmocka_unit_test(test_limit_per_channel),
        cmocka_unit_test(test_body_never_past_its_declared_size),
    };
    return cmocka_run_group_tests_name("amqp_msg", tests, NULL, NULL);
}
