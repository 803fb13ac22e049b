/* The events feed (rp_amqp_feed.h) without a broker: the port counts every
 * committed verdict in the metrics (a parked dead letter in both counters)
 * and posts the encoded event to the loop; an event the loop cannot hand to
 * a publisher (stopping, or the post cancelled) is settled as dropped with
 * its ledger seq (no publish was tried, so none failed); a refused post and an
 * event that does not encode reach nobody and are returned as errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rp_amqp_feed.h"
#include "rp_http_prom.h"

typedef struct fake {
    rp_amqp_feed_loop_fn fn[8];
    void *job[8];
    int n_posts;
    rp_status post_status;
    int on_loop;
    int settled;
    int64_t seq;
    rp_publish_outcome outcome;
} fake;

static rp_status fake_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    fake *f = ctx;
    if (f->post_status != RP_OK) return f->post_status;
    f->fn[f->n_posts] = fn;
    f->job[f->n_posts] = job;
    f->n_posts++;
    return RP_OK;
}

static rp_amqp_publisher *no_publisher(void *ctx) {
    (void)ctx;
    return NULL; /* stopping */
}

static void fake_on_loop(void *ctx) { ((fake *)ctx)->on_loop++; }

static void fake_settled(void *ctx, int64_t seq, rp_publish_outcome o) {
    fake *f = ctx;
    f->settled++;
    f->seq = seq;
    f->outcome = o;
}

static rp_metrics metrics;

static rp_amqp_feed *feed(fake *f) {
    memset(f, 0, sizeof *f);
    rp_metrics_init(&metrics, "0.0.0", "test");
    assert_int_equal(rp_metrics_vhost_register(&metrics, "/"), RP_OK);
    assert_int_equal(rp_metrics_vhost_register(&metrics, "tenant-b"), RP_OK);
    rp_amqp_feed_hooks h = {.post = fake_post,
                            .publisher = no_publisher,
                            .on_loop = fake_on_loop,
                            .on_settled = fake_settled,
                            .ctx = f};
    rp_amqp_feed *fd = rp_amqp_feed_new("reaper.events", RP_ENC_JSON, &metrics, &h);
    assert_non_null(fd);
    return fd;
}

static bool rendered_has(const char *line) {
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(rp_metrics_render(&metrics, &text, &len), RP_OK);
    bool has = strstr(text, line) != NULL;
    free(text);
    return has;
}

static void parked(rp_verdict *v) {
    rp_verdict_init(v);
    v->condition = RP_COND_DEAD_LETTER;
    v->action = RP_ACTION_PARKED;
    v->source = RP_SOURCE_BROKER;
    assert_int_equal(rp_verdict_set_object(v, "queue:/:vibey.dlq"), RP_OK);
}

static void test_counted_and_posted_then_dropped_when_stopping(void **state) {
    (void)state;
    fake f;
    rp_amqp_feed *fd = feed(&f);
    rp_publisher_port port;
    rp_amqp_feed_port(fd, &port);
    rp_verdict v;
    parked(&v);
    rp_ledger_event ev = {.seq = 77, .at = 1700000000000LL, .kind = RP_LEDGER_QUEUE_REAPED,
                          .verdict = &v};
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"/\"} 0"));
    assert_int_equal(port.publish(port.self, &ev), RP_OK);
    /* Counted on the committing thread, before the loop sees it, under
     * the vhost its object names. */
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"/\"} 1"));
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"tenant-b\"} 0"));
    assert_true(rendered_has(
        "reaper_reaped_total{source=\"broker\",condition=\"dead_letter\",action=\"parked\"} 1"));
    assert_int_equal(f.n_posts, 1);
    assert_int_equal(f.settled, 0);
    /* On the loop, with no publisher (stopping): dropped, with its seq. */
    f.fn[0](f.job[0], false);
    assert_int_equal(f.on_loop, 1);
    assert_int_equal(f.settled, 1);
    assert_int_equal(f.seq, 77);
    assert_int_equal(f.outcome, RP_PUBLISH_DROPPED);
    /* Not a failed publish: none was tried (as the daemon always counted). */
    assert_true(rendered_has("reaper_feed_publish_failures_total 0"));
    rp_verdict_cleanup(&v);
    rp_amqp_feed_free(fd);
}

static void test_cancelled_post_is_dropped_without_loop_work(void **state) {
    (void)state;
    fake f;
    rp_amqp_feed *fd = feed(&f);
    rp_publisher_port port;
    rp_amqp_feed_port(fd, &port);
    rp_verdict v;
    parked(&v);
    rp_ledger_event ev = {.seq = 5, .at = 1700000000000LL, .kind = RP_LEDGER_QUEUE_REAPED,
                          .verdict = &v};
    assert_int_equal(port.publish(port.self, &ev), RP_OK);
    f.fn[0](f.job[0], true);
    assert_int_equal(f.on_loop, 0);
    assert_int_equal(f.settled, 1);
    assert_int_equal(f.seq, 5);
    assert_int_equal(f.outcome, RP_PUBLISH_DROPPED);
    rp_verdict_cleanup(&v);
    rp_amqp_feed_free(fd);
}

static void test_refused_post_and_bad_event_reach_nobody(void **state) {
    (void)state;
    fake f;
    rp_amqp_feed *fd = feed(&f);
    rp_publisher_port port;
    rp_amqp_feed_port(fd, &port);
    rp_verdict v;
    parked(&v);
    rp_ledger_event ev = {.seq = 9, .at = 1700000000000LL, .kind = RP_LEDGER_QUEUE_REAPED,
                          .verdict = &v};
    f.post_status = RP_ERR_CLOSED;
    assert_int_equal(port.publish(port.self, &ev), RP_ERR_CLOSED);
    f.post_status = RP_OK;
    rp_ledger_event bad = {.seq = 10, .kind = RP_LEDGER_QUEUE_REAPED}; /* no payload */
    assert_int_equal(port.publish(port.self, &bad), RP_ERR_INVALID);
    assert_int_equal(f.n_posts, 0);
    assert_int_equal(f.settled, 0);
    rp_verdict_cleanup(&v);
    rp_amqp_feed_free(fd);
}

/* Issue 21: events published while the committing thread holds the port
 * are posted to the loop as one job at the release, in order; without a
 * hold each is posted alone. A refused post of a held run loses nothing
 * but the publish (and leaks nothing: the sanitizer run). */
static void test_held_events_posted_once_in_order(void **state) {
    (void)state;
    fake f;
    rp_amqp_feed *fd = feed(&f);
    rp_publisher_port port;
    rp_amqp_feed_port(fd, &port);
    assert_non_null(port.hold);
    rp_verdict v;
    parked(&v);
    port.hold(port.self, true);
    for (int64_t seq = 1; seq <= 3; seq++) {
        rp_ledger_event ev = {.seq = seq, .at = 1700000000000LL,
                              .kind = RP_LEDGER_QUEUE_REAPED, .verdict = &v};
        assert_int_equal(port.publish(port.self, &ev), RP_OK);
    }
    assert_int_equal(f.n_posts, 0);
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"/\"} 3"));
    port.hold(port.self, false);
    assert_int_equal(f.n_posts, 1);
    f.fn[0](f.job[0], false);
    assert_int_equal(f.on_loop, 1);
    assert_int_equal(f.settled, 3);
    assert_int_equal(f.seq, 3); /* the last one settled last */
    /* Released: the next one is posted alone. */
    rp_ledger_event ev = {.seq = 4, .at = 1700000000000LL, .kind = RP_LEDGER_QUEUE_REAPED,
                          .verdict = &v};
    assert_int_equal(port.publish(port.self, &ev), RP_OK);
    assert_int_equal(f.n_posts, 2);
    f.fn[1](f.job[1], false);
    assert_int_equal(f.settled, 4);
    /* A held run whose post is refused: freed, nothing settled. */
    port.hold(port.self, true);
    assert_int_equal(port.publish(port.self, &ev), RP_OK);
    assert_int_equal(port.publish(port.self, &ev), RP_OK);
    f.post_status = RP_ERR_CLOSED;
    port.hold(port.self, false);
    assert_int_equal(f.n_posts, 2);
    assert_int_equal(f.settled, 4);
    /* An empty hold posts nothing. */
    f.post_status = RP_OK;
    port.hold(port.self, true);
    port.hold(port.self, false);
    assert_int_equal(f.n_posts, 2);
    rp_verdict_cleanup(&v);
    rp_amqp_feed_free(fd);
}

/* Issue 19 item 1: a parked dead letter counts under its own vhost (read
 * from its verdict's object); one whose vhost has no metrics slot counts
 * under vhost="" (never lost). */
static void test_parked_counted_per_vhost(void **state) {
    (void)state;
    fake f;
    rp_amqp_feed *fd = feed(&f);
    rp_publisher_port port;
    rp_amqp_feed_port(fd, &port);
    const char *objects[] = {"queue:tenant-b:orders.dlq", "queue:tenant-b:orders.dlq",
                             "queue:/:vibey.dlq", "queue:nowhere:x.dlq"};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++) {
        rp_verdict v;
        parked(&v);
        assert_int_equal(rp_verdict_set_object(&v, objects[i]), RP_OK);
        rp_ledger_event ev = {.seq = (int64_t)i + 1, .at = 1700000000000LL,
                              .kind = RP_LEDGER_QUEUE_REAPED, .verdict = &v};
        assert_int_equal(port.publish(port.self, &ev), RP_OK);
        f.fn[i](f.job[i], true);
        rp_verdict_cleanup(&v);
    }
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"tenant-b\"} 2\n"));
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"/\"} 1\n"));
    assert_true(rendered_has("reaper_dead_letters_parked_total{vhost=\"\"} 1\n"));
    assert_false(rendered_has("nowhere"));
    rp_amqp_feed_free(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counted_and_posted_then_dropped_when_stopping),
        cmocka_unit_test(test_cancelled_post_is_dropped_without_loop_work),
        cmocka_unit_test(test_refused_post_and_bad_event_reach_nobody),
        cmocka_unit_test(test_held_events_posted_once_in_order),
        cmocka_unit_test(test_parked_counted_per_vhost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
