/* rp_amqp_publisher's hand-over (rp_publish.release) without a broker: a
 * publish handed over is released once, after its done callback, when the
 * publisher is done with it (settled DROPPED at once past the limit, or when
 * the publisher is freed with it still queued), never at the publish call;
 * a publish that is copied is never released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_publisher.h"

typedef struct owned {
    int done, released;
    int order; /* 1: done before release */
    rp_publish_outcome outcome;
    char body[16];
} owned;

static void on_done(void *arg, rp_publish_outcome o) {
    owned *w = arg;
    w->done++;
    w->outcome = o;
}

static void on_release(void *arg) {
    owned *w = arg;
    w->released++;
    if (w->done == 1) w->order = 1;
    memset(w->body, 0, sizeof w->body); /* the caller's to reuse from now on */
}

static rp_amqp_conn *conn_down(struct event_base *base) {
    rp_amqp_params prm = {.url = "amqp://guest@127.0.0.1:1/", .password = "guest"};
    rp_amqp_hooks hooks = {0};
    const char *err = NULL;
    rp_amqp_conn *c = rp_amqp_conn_new(base, &prm, &hooks, &err);
    assert_non_null(c); /* never started: the publisher queues and waits */
    return c;
}

static rp_publish handed(owned *w) {
    snprintf(w->body, sizeof w->body, "event");
    return (rp_publish){.exchange = "reaper.events",
                        .routing_key = "tap.dead_letter.parked",
                        .body = {(const uint8_t *)w->body, 5},
                        .retry = true,
                        .done = on_done,
                        .arg = w,
                        .release = on_release,
                        .owner = w};
}

static void test_released_after_done(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    rp_amqp_conn *c = conn_down(base);
    rp_amqp_publisher *p = rp_amqp_publisher_new(c);
    assert_non_null(p);
    rp_amqp_publisher_set_limit(p, 1);
    owned queued = {0}, over = {0}, copied = {0};
    rp_publish a = handed(&queued);
    assert_int_equal(rp_amqp_publisher_publish(p, &a), RP_OK);
    rp_publish b = handed(&over);
    assert_int_equal(rp_amqp_publisher_publish(p, &b), RP_OK);
    rp_publish k = handed(&copied);
    k.release = NULL;
    k.owner = NULL;
    assert_int_equal(rp_amqp_publisher_publish(p, &k), RP_OK);
    /* Nothing released inside the calls. */
    assert_int_equal(queued.released + over.released + copied.released, 0);
    assert_int_equal(queued.done + over.done + copied.done, 0);
    /* The loop turn: the ones past the limit are settled DROPPED, then
     * released; the queued one waits for a connection. */
    event_base_loop(base, EVLOOP_NONBLOCK);
    assert_int_equal(over.done, 1);
    assert_int_equal(over.outcome, RP_PUBLISH_DROPPED);
    assert_int_equal(over.released, 1);
    assert_int_equal(over.order, 1);
    assert_int_equal(copied.done, 1);
    assert_int_equal(copied.released, 0);
    assert_int_equal(queued.done, 0);
    assert_int_equal(queued.released, 0);
    assert_int_equal(rp_amqp_publisher_pending(p), 1);
    /* Freed with it queued: DROPPED, then released, once. */
    rp_amqp_publisher_free(p);
    assert_int_equal(queued.done, 1);
    assert_int_equal(queued.outcome, RP_PUBLISH_DROPPED);
    assert_int_equal(queued.released, 1);
    assert_int_equal(queued.order, 1);
    assert_int_equal(over.released, 1);
    rp_amqp_conn_free(c);
    event_base_free(base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_released_after_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
