/* Reading amq.rabbitmq.event messages (adapters/rabbitmq/rp_amqp_events.h): the
 * shapes RabbitMQ 3.10.8 and 4.0.5 send (seen here), and every odd or
 * missing field refused with a reason instead of read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rp_amqp_events.h"

#define MAXE 16

typedef struct hdrs {
    amqp_table_entry_t e[MAXE];
    int n;
    amqp_basic_properties_t p;
} hdrs;

static void init(hdrs *h) {
    memset(h, 0, sizeof *h);
    h->p._flags = AMQP_BASIC_HEADERS_FLAG;
}

static void str(hdrs *h, const char *k, const char *v) {
    h->e[h->n].key = amqp_cstring_bytes(k);
    h->e[h->n].value.kind = AMQP_FIELD_KIND_UTF8;
    h->e[h->n].value.value.bytes = amqp_cstring_bytes(v);
    h->n++;
}

static void raw(hdrs *h, const char *k, const void *v, size_t len, uint8_t kind) {
    h->e[h->n].key = amqp_cstring_bytes(k);
    h->e[h->n].value.kind = kind;
    h->e[h->n].value.value.bytes = (amqp_bytes_t){len, (void *)v};
    h->n++;
}

static void i64(hdrs *h, const char *k, int64_t v) {
    h->e[h->n].key = amqp_cstring_bytes(k);
    h->e[h->n].value.kind = AMQP_FIELD_KIND_I64;
    h->e[h->n].value.value.i64 = v;
    h->n++;
}

static bool parse(hdrs *h, const char *key, rp_broker_event *ev, const char **why) {
    h->p.headers.num_entries = h->n;
    h->p.headers.entries = h->e;
    return rp_broker_event_parse(amqp_cstring_bytes(key), &h->p, ev, why);
}

static void test_consumer_deleted_3_10(void **state) {
    (void)state;
    hdrs h;
    init(&h);
    str(&h, "user_who_performed_action", "rmq-internal");
    str(&h, "queue", "vibey.x");
    str(&h, "vhost", "/");
    str(&h, "channel", "<n@h.1.922.0>");
    str(&h, "consumer_tag", "victim");
    i64(&h, "timestamp_in_ms", 1796000000123);
    rp_broker_event ev;
    const char *why;
    assert_true(parse(&h, "consumer.deleted", &ev, &why));
    assert_int_equal(ev.kind, RP_BEV_CONSUMER_DELETED);
    assert_string_equal(ev.name, "vibey.x");
    assert_string_equal(ev.vhost, "/");
    assert_string_equal(ev.pid, "<n@h.1.922.0>");
    assert_string_equal(ev.consumer_tag, "victim");
    assert_string_equal(ev.user, "rmq-internal");
    assert_true(ev.has_timestamp);
    assert_int_equal(ev.timestamp_ms, 1796000000123);
}

static void test_channel_closed_4_0_and_others(void **state) {
    (void)state;
    hdrs h;
    init(&h);
    i64(&h, "consumer_count", 1);
    str(&h, "pid", "<n@h.1.883.0>");
    rp_broker_event ev;
    const char *why;
    assert_true(parse(&h, "channel.closed", &ev, &why));
    assert_int_equal(ev.kind, RP_BEV_CHANNEL_CLOSED);
    assert_string_equal(ev.pid, "<n@h.1.883.0>");
    assert_false(ev.has_timestamp); /* optional */
    /* A routing key reaper does not act on parses as OTHER, headers or not. */
    init(&h);
    h.p._flags = 0;
    assert_true(parse(&h, "exchange.declared", &ev, &why));
    assert_int_equal(ev.kind, RP_BEV_OTHER);
    /* Bindings and exchanges: the tap follows the routes of dead-letter
     * exchanges (issue #14). A binding names its vhost; its destination is
     * read when usable. */
    init(&h);
    str(&h, "vhost", "/");
    str(&h, "source_name", "vibey.dlx");
    str(&h, "source_kind", "exchange");
    str(&h, "destination_name", "vibey.x.dlq");
    str(&h, "destination_kind", "queue");
    str(&h, "routing_key", "");
    assert_true(parse(&h, "binding.created", &ev, &why));
    assert_int_equal(ev.kind, RP_BEV_BINDING_CREATED);
    assert_string_equal(ev.name, "vibey.x.dlq");
    assert_string_equal(ev.source, "vibey.dlx");
    init(&h);
    str(&h, "vhost", "/");
    i64(&h, "destination_name", 7); /* not text: still a route change */
    assert_true(parse(&h, "binding.deleted", &ev, &why));
    assert_int_equal(ev.kind, RP_BEV_BINDING_DELETED);
    assert_string_equal(ev.name, "");
    init(&h);
    str(&h, "destination_name", "vibey.x.dlq");
    assert_false(parse(&h, "binding.created", &ev, &why)); /* no vhost */
    assert_non_null(why);
    init(&h);
    str(&h, "name", "vibey.dlx");
    str(&h, "vhost", "/");
    assert_true(parse(&h, "exchange.created", &ev, &why));
    assert_int_equal(ev.kind, RP_BEV_EXCHANGE_CREATED);
    assert_string_equal(ev.name, "vibey.dlx");
    init(&h);
    str(&h, "vhost", "/");
    assert_false(parse(&h, "exchange.deleted", &ev, &why)); /* no name */
    /* policy.set with and without a pattern. */
    init(&h);
    str(&h, "name", "ops");
    str(&h, "vhost", "/");
    str(&h, "pattern", "^vibey\\.");
    assert_true(parse(&h, "policy.set", &ev, &why));
    assert_true(ev.has_pattern);
    assert_string_equal(ev.pattern, "^vibey\\.");
    init(&h);
    str(&h, "name", "ops");
    str(&h, "vhost", "/");
    assert_true(parse(&h, "policy.cleared", &ev, &why));
    assert_false(ev.has_pattern);
    /* Bytes ('x') are strings too. */
    init(&h);
    raw(&h, "name", "vibey.y", 7, AMQP_FIELD_KIND_BYTES);
    str(&h, "vhost", "/");
    assert_true(parse(&h, "queue.created", &ev, &why));
    assert_string_equal(ev.name, "vibey.y");
}

/* Missing or unusable fields: refused, with a reason. */
static void test_odd_fields_refused(void **state) {
    (void)state;
    hdrs h;
    rp_broker_event ev;
    const char *why;
    init(&h);
    h.p._flags = 0; /* no headers at all */
    assert_false(parse(&h, "queue.created", &ev, &why));
    assert_non_null(why);
    init(&h);
    str(&h, "vhost", "/"); /* no name */
    assert_false(parse(&h, "queue.deleted", &ev, &why));
    init(&h);
    str(&h, "name", "");
    str(&h, "vhost", "/");
    assert_false(parse(&h, "queue.deleted", &ev, &why));
    init(&h);
    i64(&h, "name", 7); /* a number where a string goes */
    str(&h, "vhost", "/");
    assert_false(parse(&h, "queue.created", &ev, &why));
    init(&h);
    raw(&h, "queue", "vibey\0x", 7, AMQP_FIELD_KIND_UTF8); /* a NUL inside */
    str(&h, "vhost", "/");
    assert_false(parse(&h, "consumer.created", &ev, &why));
    char big[300];
    memset(big, 'a', sizeof big);
    init(&h);
    raw(&h, "queue", big, sizeof big, AMQP_FIELD_KIND_UTF8); /* longer than a queue name */
    str(&h, "vhost", "/");
    assert_false(parse(&h, "consumer.deleted", &ev, &why));
    init(&h);
    str(&h, "pid", "");
    assert_false(parse(&h, "channel.closed", &ev, &why));
    init(&h);
    str(&h, "name", "p");
    assert_false(parse(&h, "policy.set", &ev, &why)); /* no vhost */
    /* A routing key that is empty, too long or holds a NUL. */
    init(&h);
    assert_false(rp_broker_event_parse((amqp_bytes_t){0, NULL}, &h.p, &ev, &why));
    assert_false(rp_broker_event_parse((amqp_bytes_t){sizeof big, big}, &h.p, &ev, &why));
    assert_false(rp_broker_event_parse((amqp_bytes_t){7, "queue\0c"}, &h.p, &ev, &why));
    /* A timestamp of another type is just absent; the event stays usable. */
    init(&h);
    str(&h, "name", "vibey.x");
    str(&h, "vhost", "/");
    str(&h, "timestamp_in_ms", "soon");
    assert_true(parse(&h, "queue.created", &ev, &why));
    assert_false(ev.has_timestamp);
    /* A consumer event without tag or channel still names its queue. */
    init(&h);
    str(&h, "queue", "vibey.x");
    str(&h, "vhost", "/");
    assert_true(parse(&h, "consumer.deleted", &ev, &why));
    assert_string_equal(ev.pid, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumer_deleted_3_10),
        cmocka_unit_test(test_channel_closed_4_0_and_others),
        cmocka_unit_test(test_odd_fields_refused),
    };
    return cmocka_run_group_tests_name("events_parse", tests, NULL, NULL);
}
