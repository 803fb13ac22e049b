/* Reading the management API (rp_mgmt_parse.h) from answers captured from
 * RabbitMQ 3.10.8 (tests/unit/mgmt/): pages with and without statistics
 * (absent statistics are unknown, never 0), pagination, single queues,
 * error reasons, versions, the effective configuration of 4.0.5; and the HTTP client's refusals and scrubbing,
 * which need no network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_mgmt_broker.h"
#include "rp_mgmt_http.h"
#include "rp_mgmt_parse.h"

#ifndef RP_MGMT_FIXTURES
#error "RP_MGMT_FIXTURES must name tests/unit/mgmt"
#endif

static char *slurp(const char *name, size_t *len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", RP_MGMT_FIXTURES, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void parse_fixture(const char *name, rp_mgmt_page *p) {
    size_t len;
    char *body = slurp(name, &len);
    char err[200] = "";
    rp_status st = rp_mgmt_parse_page(body, len, p, err, sizeof err);
    if (st != RP_OK) fprintf(stderr, "%s: %s\n", name, err);
    assert_int_equal(st, RP_OK);
    free(body);
}

static size_t find(const rp_mgmt_page *p, const char *name) {
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->facts[i].name, name) == 0) return i;
    fail_msg("queue %s not on the page", name);
    return 0;
}

/* A page read after the statistics came in: every field. */
static void test_page_with_statistics(void **state) {
    (void)state;
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    parse_fixture("page_stats_3.10.8.json", &p);
    assert_int_equal(p.n, 5);
    assert_int_equal(p.page, 1);
    assert_int_equal(p.page_count, 1);

    const rp_queue_facts *celery = &p.facts[find(&p, "celery")];
    assert_string_equal(celery->vhost, "mgmt-fixtures");
    assert_int_equal(celery->type, RP_QUEUE_TYPE_CLASSIC);
    assert_int_equal(celery->ready, 1);
    assert_int_equal(celery->unacked, 0);
    assert_true(celery->counts_known);
    assert_true(celery->consumers_known);
    assert_int_equal(celery->consumers, 0);
    /* A message without a timestamp: head_message_timestamp null. */
    assert_false(celery->head_timestamp_known);
    assert_false(celery->owned);
    assert_false(celery->is_dead_letter_queue);

    size_t mail = find(&p, "vibey.mail");
    assert_true(p.facts[mail].head_timestamp_known);
    assert_int_equal(p.facts[mail].head_timestamp, 1700000000); /* seconds */
    assert_true(p.extra[mail].counts_known);
    assert_true(p.extra[mail].policy_known);
    assert_null(p.extra[mail].policy); /* classic: 3.10 applies no delivery-limit-only policy */

    size_t empty = find(&p, "vibey.empty");
    assert_int_equal(p.facts[empty].ready, 0);
    assert_true(p.extra[empty].counts_known);
    assert_false(p.facts[empty].head_timestamp_known); /* empty queue: null */

    size_t orders = find(&p, "vibey.orders");
    assert_int_equal(p.facts[orders].type, RP_QUEUE_TYPE_QUORUM);
    assert_false(p.facts[orders].head_timestamp_known); /* quorum: absent */
    assert_string_equal(p.extra[orders].policy, "vibey-reap");
    assert_string_equal(p.extra[orders].operator_policy, "ops-cap");
    assert_true(p.extra[orders].effective_known);
    int64_t limit = 0;
    assert_true(rp_mgmt_json_int(json_object_get(p.extra[orders].effective, "delivery-limit"), &limit));
    assert_int_equal(limit, 20);
    assert_non_null(p.extra[orders].arguments);
    assert_string_equal(json_string_value(json_object_get(p.extra[orders].arguments, "x-queue-type")),
                        "quorum");

    /* The owned dead-letter queue is left out by the joined pattern. */
    size_t dlq = find(&p, "vibey.orders.dlq");
    assert_true(p.extra[dlq].policy_known);
    assert_null(p.extra[dlq].policy);
    rp_mgmt_page_cleanup(&p);
}

/* Issue 18 item 3: message_stats' cumulative publish and ack counters
 * (absent until the queue saw a message, or a counter until it moved: 0),
 * unknown when the counts are or when they are not counts. */
static void test_message_stats_counters(void **state) {
    (void)state;
    const char *body =
        "{\"items\":["
        "{\"name\":\"a\",\"vhost\":\"/\",\"type\":\"classic\",\"messages_ready\":3,"
        "\"messages_unacknowledged\":0,\"message_stats\":{\"publish\":12,\"ack\":5}},"
        "{\"name\":\"b\",\"vhost\":\"/\",\"type\":\"quorum\",\"messages_ready\":0,"
        "\"messages_unacknowledged\":0},"
        "{\"name\":\"c\",\"vhost\":\"/\",\"type\":\"classic\",\"messages_ready\":1,"
        "\"messages_unacknowledged\":0,\"message_stats\":{\"publish\":4}},"
        "{\"name\":\"d\",\"vhost\":\"/\",\"type\":\"classic\",\"messages_ready\":1,"
        "\"messages_unacknowledged\":0,\"message_stats\":{\"publish\":\"x\",\"ack\":1}},"
        "{\"name\":\"e\",\"vhost\":\"/\",\"type\":\"classic\","
        "\"message_stats\":{\"publish\":9,\"ack\":1}}"
        "],\"page\":1,\"page_count\":1,\"item_count\":5,\"total_count\":5,"
        "\"filtered_count\":5,\"page_size\":100}";
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    char err[200] = "";
    assert_int_equal(rp_mgmt_parse_page(body, strlen(body), &p, err, sizeof err), RP_OK);
    const rp_queue_facts *a = &p.facts[find(&p, "a")];
    assert_true(a->stats_known);
    assert_int_equal(a->published_total, 12);
    assert_int_equal(a->acked_total, 5);
    const rp_queue_facts *b = &p.facts[find(&p, "b")];
    assert_true(b->stats_known);
    assert_int_equal(b->published_total, 0);
    assert_int_equal(b->acked_total, 0);
    const rp_queue_facts *c = &p.facts[find(&p, "c")];
    assert_true(c->stats_known);
    assert_int_equal(c->published_total, 4);
    assert_int_equal(c->acked_total, 0);
    assert_false(p.facts[find(&p, "d")].stats_known);
    assert_false(p.facts[find(&p, "e")].stats_known); /* counts unknown */
    rp_mgmt_page_cleanup(&p);
}

/* Read right after the queues were declared: the statistics are absent,
 * and absent is unknown, never 0. */
static void test_page_without_statistics(void **state) {
    (void)state;
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    parse_fixture("page_fresh_3.10.8.json", &p);
    assert_int_equal(p.n, 5);
    for (size_t i = 0; i < p.n; i++) {
        assert_false(p.facts[i].consumers_known);
        assert_false(p.facts[i].head_timestamp_known);
        assert_false(p.extra[i].counts_known);
        assert_false(p.facts[i].counts_known); /* core sees it too: not an empty queue */
        assert_false(p.extra[i].policy_known);
        assert_false(p.extra[i].effective_known);
        assert_null(p.extra[i].policy);
        assert_int_equal(p.facts[i].ready, 0);
        assert_int_equal(p.facts[i].unacked, 0);
        assert_true(p.facts[i].type == RP_QUEUE_TYPE_CLASSIC || p.facts[i].type == RP_QUEUE_TYPE_QUORUM);
    }
    rp_mgmt_page_cleanup(&p);
}

static void test_pagination_shapes(void **state) {
    (void)state;
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    parse_fixture("page_1of3_3.10.8.json", &p);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.page, 1);
    assert_int_equal(p.page_count, 3);
    /* Ordered by vhost, then name. */
    assert_string_equal(p.facts[0].name, "celery");
    assert_string_equal(p.facts[1].name, "vibey.empty");

    /* Re-parsing into the same page replaces it. */
    parse_fixture("page_empty_3.10.8.json", &p);
    assert_int_equal(p.n, 0);
    assert_int_equal(p.page_count, 0);

    /* A page past the last is an error object, not a page. */
    size_t len;
    char *body = slurp("page_out_of_range_3.10.8.json", &len);
    char err[200] = "";
    assert_int_equal(rp_mgmt_parse_page(body, len, &p, err, sizeof err), RP_ERR_INVALID);
    assert_true(err[0] != '\0');
    assert_true(rp_mgmt_is_error(body, len, "page_out_of_range"));
    assert_false(rp_mgmt_is_error(body, len, "bad_request"));
    free(body);
    assert_int_equal(p.n, 0);
    rp_mgmt_page_cleanup(&p);
}

static void test_single_queue(void **state) {
    (void)state;
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    size_t len;
    char *body = slurp("queue_classic_3.10.8.json", &len);
    assert_int_equal(rp_mgmt_parse_queue(body, len, &p, NULL, 0), RP_OK);
    free(body);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.facts[0].name, "vibey.mail");
    assert_int_equal(p.facts[0].head_timestamp, 1700000000);
    rp_mgmt_page_cleanup(&p);

    char reason[100];
    body = slurp("queue_404_3.10.8.json", &len);
    assert_string_equal(rp_mgmt_error_reason(body, len, reason, sizeof reason), "Not Found");
    free(body);
}

static void test_malformed_answers(void **state) {
    (void)state;
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    char err[200];
    const char *bad[] = {
        "not json",
        "[]",
        "{\"items\":{},\"page\":1,\"page_count\":1}",
        "{\"items\":[],\"page_count\":1}",
        "{\"items\":[{\"vhost\":\"/\"}],\"page\":1,\"page_count\":1}",
        "{\"items\":[{\"name\":\"x\"}],\"page\":1,\"page_count\":1}",
        "{\"items\":[7],\"page\":1,\"page_count\":1}",
        "{\"items\":[],\"page\":-1,\"page_count\":1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(rp_mgmt_parse_page(bad[i], strlen(bad[i]), &p, err, sizeof err), RP_ERR_INVALID);
        assert_true(err[0] != '\0');
        assert_int_equal(p.n, 0);
    }
    assert_int_equal(rp_mgmt_parse_page(NULL, 0, &p, err, sizeof err), RP_ERR_INVALID);
    /* An empty definition and arguments written as [] (Erlang's empty
     * list), a negative count, a real number: read, not refused. */
    const char *odd = "{\"items\":[{\"name\":\"q\",\"vhost\":\"/\",\"type\":\"stream\","
                      "\"messages_ready\":-3,\"messages_unacknowledged\":2.0,\"consumers\":1,"
                      "\"policy\":null,\"effective_policy_definition\":[],\"arguments\":[]}],"
                      "\"page\":1,\"page_count\":1}";
    assert_int_equal(rp_mgmt_parse_page(odd, strlen(odd), &p, err, sizeof err), RP_OK);
    assert_int_equal(p.facts[0].type, RP_QUEUE_TYPE_STREAM);
    assert_true(p.extra[0].counts_known);
    assert_int_equal(p.facts[0].ready, -3); /* the judge reads it as 0 */
    assert_int_equal(p.facts[0].unacked, 2);
    assert_true(p.extra[0].effective_known);
    assert_null(p.extra[0].effective);
    assert_null(p.extra[0].arguments);
    assert_true(p.extra[0].policy_known);
    assert_null(p.extra[0].policy);
    rp_mgmt_page_cleanup(&p);
}

static void test_error_reasons(void **state) {
    (void)state;
    size_t len;
    char reason[300];
    char *body = slurp("policy_400_key_3.10.8.json", &len);
    rp_mgmt_error_reason(body, len, reason, sizeof reason);
    assert_string_equal(reason,
                        "Validation failed [{<<\"consumer-timeout\">>,21600000}] are not recognised "
                        "policy settings");
    free(body);
    body = slurp("policy_400_apply_to_3.10.8.json", &len);
    rp_mgmt_error_reason(body, len, reason, sizeof reason);
    assert_non_null(strstr(reason, "apply-to 'classic_queues' unrecognised"));
    free(body);
    /* Cut to the buffer; fallbacks. */
    char small[10];
    const char *longer = "{\"reason\":\"0123456789abcdef\"}";
    rp_mgmt_error_reason(longer, strlen(longer), small, sizeof small);
    assert_string_equal(small, "012345678");
    rp_mgmt_error_reason("{\"error\":\"not_authorized\"}", 26, reason, sizeof reason);
    assert_string_equal(reason, "not_authorized");
    rp_mgmt_error_reason("<html>", 6, reason, sizeof reason);
    assert_string_equal(reason, "(no reason given)");
    rp_mgmt_error_reason(NULL, 0, reason, sizeof reason);
    assert_string_equal(reason, "(no reason given)");
    /* Found by fuzz_mgmt_parse: nothing but control characters and spaces
     * used to leave an empty reason. */
    const char *ctl = "{\"error\":\"\x7f\x7f\x7f \\r\\n \"}";
    rp_mgmt_error_reason(ctl, strlen(ctl), reason, sizeof reason);
    assert_string_equal(reason, "(no reason given)");
}

static void test_versions(void **state) {
    (void)state;
    size_t len;
    char *body = slurp("overview_3.10.8.json", &len);
    rp_mgmt_version v;
    assert_int_equal(rp_mgmt_parse_overview_version(body, len, &v), RP_OK);
    free(body);
    assert_int_equal(v.major, 3);
    assert_int_equal(v.minor, 10);
    assert_int_equal(v.patch, 8);
    assert_string_equal(v.text, "3.10.8");
    assert_false(rp_mgmt_version_at_least(&v, 3, 12));
    assert_true(rp_mgmt_version_at_least(&v, 3, 10));
    assert_true(rp_mgmt_version_parse("4.0.5", &v));
    assert_true(rp_mgmt_version_at_least(&v, 3, 12));
    assert_false(rp_mgmt_version_at_least(&v, 4, 3));
    assert_true(rp_mgmt_version_parse("3.13.7+rc.1", &v));
    assert_int_equal(v.patch, 7);
    assert_true(rp_mgmt_version_parse("4", &v));
    assert_int_equal(v.major, 4);
    assert_int_equal(v.minor, 0);
    assert_false(rp_mgmt_version_parse("v4.0", &v));
    assert_false(rp_mgmt_version_parse(NULL, &v));
    assert_int_equal(rp_mgmt_parse_overview_version("{}", 2, &v), RP_ERR_INVALID);
}

/* GET /api/config/effective (RabbitMQ 4.0.5, an excerpt of the real
 * answer): the broker-wide consumer_timeout of the rabbit application. */
static void test_effective_consumer_timeout(void **state) {
    (void)state;
    size_t len;
    char *body = slurp("config_effective_4.0.5_excerpt.txt", &len);
    bool found, enabled;
    int64_t ms;
    assert_int_equal(rp_mgmt_parse_effective_timeout(body, &found, &enabled, &ms), RP_OK);
    assert_true(found);
    assert_true(enabled);
    assert_int_equal(ms, 1800000);
    free(body);
    /* Turned off, absent, only in another application, unreadable. */
    assert_int_equal(rp_mgmt_parse_effective_timeout(
                         "[{rabbit,\n     [{a,1},\n      {consumer_timeout,undefined}]},\n {x,[]}]",
                         &found, &enabled, &ms),
                     RP_OK);
    assert_true(found);
    assert_false(enabled);
    assert_int_equal(rp_mgmt_parse_effective_timeout(
                         "[{amqp,[]},\n {rabbit,[{a,1}]},\n {other,[{consumer_timeout,5}]}]", &found,
                         &enabled, &ms),
                     RP_OK);
    assert_false(found);
    assert_false(enabled);
    assert_int_equal(rp_mgmt_parse_effective_timeout("[{rabbit_common,[{consumer_timeout,5}]}]",
                                                     &found, &enabled, &ms),
                     RP_ERR_INVALID);
    assert_int_equal(rp_mgmt_parse_effective_timeout("[{rabbit,[{consumer_timeout,12x}]}]", &found,
                                                     &enabled, &ms),
                     RP_ERR_INVALID);
    assert_int_equal(rp_mgmt_parse_effective_timeout("[{rabbit,[{consumer_timeout,7200000}]}]",
                                                     &found, &enabled, &ms),
                     RP_OK);
    assert_int_equal(ms, 7200000);
    assert_int_equal(rp_mgmt_parse_effective_timeout(NULL, &found, &enabled, &ms), RP_ERR_INVALID);
}

/* A quorum queue's delivery limit and dead-letter exchange, from its
 * arguments and its effective policy (the smaller positive limit). */
static void test_delivery_limit_facts(void **state) {
    (void)state;
    static const char body[] =
        "{\"page\":1,\"page_count\":1,\"items\":["
        "{\"name\":\"a\",\"vhost\":\"/\",\"type\":\"quorum\",\"effective_policy_definition\":"
        "{\"delivery-limit\":20},\"arguments\":{\"x-queue-type\":\"quorum\"}},"
        "{\"name\":\"b\",\"vhost\":\"/\",\"type\":\"quorum\",\"effective_policy_definition\":"
        "{\"delivery-limit\":20},\"arguments\":{\"x-delivery-limit\":5,"
        "\"x-dead-letter-exchange\":\"\"}},"
        "{\"name\":\"c\",\"vhost\":\"/\",\"type\":\"quorum\",\"effective_policy_definition\":[],"
        "\"arguments\":{}},"
        "{\"name\":\"d\",\"vhost\":\"/\",\"type\":\"quorum\",\"effective_policy_definition\":"
        "{\"dead-letter-exchange\":\"dlx\"},\"arguments\":{\"x-delivery-limit\":-1}},"
        "{\"name\":\"e\",\"vhost\":\"/\",\"type\":\"classic\",\"effective_policy_definition\":"
        "{\"delivery-limit\":20}},"
        "{\"name\":\"f\",\"vhost\":\"/\",\"type\":\"quorum\"}]}";
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    char err[200] = "";
    assert_int_equal(rp_mgmt_parse_page(body, strlen(body), &p, err, sizeof err), RP_OK);
    const rp_queue_facts *f = p.facts;
    assert_true(f[0].delivery_limit_known);
    assert_int_equal(f[0].delivery_limit, 20);
    assert_false(f[0].dead_letter_exchange);
    assert_true(p.extra[0].delivery_limit_set);
    assert_int_equal(f[1].delivery_limit, 5);
    assert_true(f[1].dead_letter_exchange); /* "" is the default exchange: a DLX too */
    assert_true(f[2].delivery_limit_known);
    assert_int_equal(f[2].delivery_limit, 0);
    assert_false(p.extra[2].delivery_limit_set); /* RabbitMQ 4's default applies */
    assert_int_equal(f[3].delivery_limit, 0);
    assert_true(p.extra[3].delivery_limit_set); /* disabled */
    assert_true(f[3].dead_letter_exchange);
    assert_false(f[4].delivery_limit_known); /* classic */
    assert_false(f[5].delivery_limit_known); /* no effective definition reported */
    rp_mgmt_page_cleanup(&p);
}

/* The dead-letter exchange and routing key a queue names, any type (issue
 * 14 item 1): the argument wins over the effective policy. */
static void test_dead_letter_route_facts(void **state) {
    (void)state;
    static const char body[] =
        "{\"page\":1,\"page_count\":1,\"items\":["
        "{\"name\":\"a\",\"vhost\":\"/\",\"type\":\"classic\",\"arguments\":"
        "{\"x-dead-letter-exchange\":\"\",\"x-dead-letter-routing-key\":\"a.failed\"}},"
        "{\"name\":\"b\",\"vhost\":\"/\",\"type\":\"classic\",\"effective_policy_definition\":"
        "{\"dead-letter-exchange\":\"pol\",\"dead-letter-routing-key\":\"k\"},"
        "\"arguments\":{\"x-dead-letter-exchange\":\"arg\"}},"
        "{\"name\":\"c\",\"vhost\":\"/\",\"type\":\"quorum\",\"effective_policy_definition\":"
        "{\"dead-letter-exchange\":\"pol\"},\"arguments\":{}},"
        "{\"name\":\"d\",\"vhost\":\"/\",\"type\":\"classic\",\"arguments\":"
        "{\"x-dead-letter-exchange\":7}}]}";
    rp_mgmt_page p;
    rp_mgmt_page_init(&p);
    char err[200] = "";
    assert_int_equal(rp_mgmt_parse_page(body, strlen(body), &p, err, sizeof err), RP_OK);
    const rp_queue_facts *f = p.facts;
    assert_string_equal(f[0].dlx_name, "");
    assert_string_equal(f[0].dlx_routing_key, "a.failed");
    assert_string_equal(f[1].dlx_name, "arg");
    assert_string_equal(f[1].dlx_routing_key, "k");
    assert_string_equal(f[2].dlx_name, "pol");
    assert_null(f[2].dlx_routing_key);
    assert_null(f[3].dlx_name); /* not a string: none */
    rp_mgmt_page_cleanup(&p);
}

static void test_url_encode(void **state) {
    (void)state;
    char *s = rp_mgmt_url_encode("/");
    assert_string_equal(s, "%2F");
    free(s);
    s = rp_mgmt_url_encode("vibey.orders-v2_x~");
    assert_string_equal(s, "vibey.orders-v2_x~");
    free(s);
    s = rp_mgmt_url_encode("a b/?#%&+\xc3\xa9");
    assert_string_equal(s, "a%20b%2F%3F%23%25%26%2B%C3%A9");
    free(s);
}

/* The client refuses a URL with user information without quoting it, and
 * scrubs its password out of any text. */
static void test_http_refusals_and_scrub(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    const char *err = NULL;
    rp_mgmt_http_params p = {.base_url = "http://reaper:hunter2@127.0.0.1:15672", .user = "reaper",
                             .password = "hunter2"};
    assert_null(rp_mgmt_http_new(base, &p, &err));
    assert_non_null(err);
    assert_null(strstr(err, "hunter2"));
    assert_non_null(strstr(err, "user information"));
    p.base_url = "ftp://127.0.0.1";
    assert_null(rp_mgmt_http_new(base, &p, &err));
    p.base_url = "http://";
    assert_null(rp_mgmt_http_new(base, &p, &err));
    p.base_url = "http://127.0.0.1:1/";
    rp_mgmt_http *h = rp_mgmt_http_new(base, &p, &err);
    assert_non_null(h);
    char buf[64] = "x hunter2 y hunter2hunter2";
    assert_string_equal(rp_mgmt_http_scrub(h, buf, sizeof buf), "x ******** y ****************");
    char tight[12] = "ab hunter2";
    rp_mgmt_http_scrub(h, tight, sizeof tight);
    assert_null(strstr(tight, "hunter"));
    char tighter[6] = "hunte";
    rp_mgmt_http_scrub(h, tighter, sizeof tighter); /* a prefix is left alone */
    /* Bad requests are refused at once, never called back. */
    assert_int_equal(rp_mgmt_http_request(h, RP_HTTP_GET, "api/x", NULL, 0, 1000, NULL, NULL),
                     RP_ERR_INVALID);
    assert_int_equal(rp_mgmt_http_pending(h), 0);
    assert_string_equal(rp_http_method_string(RP_HTTP_DELETE), "DELETE");
    assert_string_equal(rp_http_method_string(RP_HTTP_METHOD_COUNT_), "?");
    rp_mgmt_http_free(h);
    event_base_free(base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_with_statistics),
        cmocka_unit_test(test_page_without_statistics),
        cmocka_unit_test(test_message_stats_counters),
        cmocka_unit_test(test_pagination_shapes),
        cmocka_unit_test(test_single_queue),
        cmocka_unit_test(test_malformed_answers),
        cmocka_unit_test(test_error_reasons),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_effective_consumer_timeout),
        cmocka_unit_test(test_delivery_limit_facts),
        cmocka_unit_test(test_dead_letter_route_facts),
        cmocka_unit_test(test_url_encode),
        cmocka_unit_test(test_http_refusals_and_scrub),
    };
    return cmocka_run_group_tests_name("mgmt_parse", tests, NULL, NULL);
}
