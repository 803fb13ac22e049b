/*
 * Dead-letter routes the tap cannot follow (issue 14 item 1), surfaced as
 * a condition on the owned queue and not only a log line:
 *   - an owned queue dead-lettering through the default exchange "" with a
 *     routing key: a DEAD_LETTER / SURFACED sighting on the queue (one
 *     ledger event, reaper_sightings_open, one log line however many
 *     sweeps see it), and the queue the routing key names (not a
 *     dead-letter queue by name) backfilled: its dead letters are parked,
 *     each once, and stay on it; fixed (the queue declared again with a
 *     named dead-letter exchange bound to that queue), the sighting clears
 *     and later dead letters come through the tap;
 *   - an owned queue naming a dead-letter exchange that does not exist
 *     yet: surfaced; once the exchange is declared and a dead-letter queue
 *     bound to it, the sighting clears and its dead letters are tapped;
 *   - an owned queue naming a dead-letter exchange that exists with
 *     nothing bound to it (its dead letters are dropped: not parked
 *     either): surfaced; once a dead-letter queue is bound, cleared.
 * The dead-letter queue pattern matches nothing here (tap_common.h), so
 * only the route can make a queue backfilled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap_common.h"

#define SWEEP "\"msg\":\"pass finished\""

static int log_count(const char *needle) {
    int n = 0;
    for (const char *p = T.reaperd->log; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Drains reaperd's log until it has finished `sweeps` more passes. */
static void wait_sweeps(int sweeps) {
    int want = log_count(SWEEP) + sweeps;
    long long end = itest_mono_ms() + 60000;
    while (log_count(SWEEP) < want && itest_mono_ms() < end) rp_child_drain(T.reaperd, 100);
    if (log_count(SWEEP) < want) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_true(log_count(SWEEP) >= want);
}

static long sighting_of(const char *queue) {
    return tap_sqln("SELECT count(*) FROM sighting WHERE key = 'broker|DEAD_LETTER|queue:/:%s'",
                    queue);
}

static long events_of(const char *queue, const char *action) {
    return tap_sqln("SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND "
                    "payload->>'object' = 'queue:/:%s' AND payload->>'condition' = "
                    "'DEAD_LETTER' AND payload->>'action' = '%s'",
                    queue, action);
}

/* Waits until the sighting of queue is open (1) or gone (0). */
static void wait_sighting(const char *queue, long want) {
    char q[400];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM sighting WHERE key = 'broker|DEAD_LETTER|queue:/:%s'", queue);
    long got = tap_wait_count(want, 30000, q);
    if (got != want) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, want);
}

static void assert_detail(const char *queue, const char *part) {
    long n = tap_sqln("SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND "
                      "payload->>'object' = 'queue:/:%s' AND payload->>'action' = 'SURFACED' "
                      "AND strpos(payload->>'detail', '%s') > 0",
                      queue, part);
    if (n != 1) fprintf(stderr, "no SURFACED detail with \"%s\" on %s\n", part, queue);
    assert_int_equal(n, 1);
}

static double dead_letter_sightings_metric(void) {
    int port = itest_reaperd_http_port(T.reaperd, 5000);
    assert_true(port > 0);
    char *text = itest_scrape(port);
    double v = itest_metric(text, "reaper_sightings_open{condition=\"dead_letter\"}");
    free(text);
    return v;
}

/* The default exchange with a routing key to a queue: surfaced once,
 * that queue backfilled, cleared once fixed, then tapped. */
static void test_default_exchange_surfaced_and_backfilled(void **state) {
    (void)state;
    char work[128], failed[128], x[128], needle[200];
    tap_owned(work, sizeof work, "dx.work");
    tap_owned(failed, sizeof failed, "dx.failed");
    tap_plain(x, sizeof x, "dx.dlx");
    tap_queue(failed, NULL, NULL, -1);
    tap_queue(work, "", failed, -1);
    tap_publish(work, "dxa", 30);
    tap_reject(work, 30);
    ITEST_POLL(tap_depth(failed) >= 30, 10000);
    assert_int_equal(tap_depth(failed), 30);
    tap_start_reaperd_every(2);

    wait_sighting(work, 1);
    assert_detail(work, "default exchange");
    assert_detail(work, failed);
    /* The sweeps' backfill parks what went to that queue, and leaves it. */
    tap_wait_parked("dxa", 30, 30000);
    assert_int_equal(tap_sqln("SELECT count(DISTINCT identity) FROM dead_letter WHERE queue = "
                              "'%s'",
                              failed),
                     30);
    assert_int_equal(tap_depth(failed), 30);
    /* Recorded once, logged once, counted, however many sweeps see it. */
    wait_sweeps(3);
    assert_int_equal(sighting_of(work), 1);
    assert_int_equal(events_of(work, "SURFACED"), 1);
    snprintf(needle, sizeof needle, "\"object\":\"queue:/:%s\"", work);
    assert_int_equal(log_count(needle), 1);
    assert_true(dead_letter_sightings_metric() == 1);

    /* Fixed: the queue declared again with a named dead-letter exchange
     * that routes to the same queue. The sighting clears (one CLEARED
     * event) and new dead letters come through the tap. */
    tap_exchange(x, "fanout");
    tap_bind(failed, x, "", amqp_empty_table);
    tap_delete_queue(work);
    tap_queue(work, x, NULL, -1);
    wait_sighting(work, 0);
    assert_int_equal(events_of(work, "CLEARED"), 1);
    wait_sweeps(1);
    assert_true(dead_letter_sightings_metric() == 0);
    tap_publish(work, "dxb", 20);
    tap_reject(work, 20);
    tap_wait_parked("dxb", 20, 30000);
    ITEST_POLL(tap_depth(failed) >= 50, 10000);
    assert_int_equal(tap_depth(failed), 50);
    tap_stop_reaperd(SIGTERM);
    tap_delete_queue(work);
    tap_delete_queue(failed);
}

/* A dead-letter exchange that does not exist yet: surfaced; declared and
 * bound, the sighting clears and dead letters are tapped. */
static void test_missing_exchange_surfaced_then_cleared(void **state) {
    (void)state;
    char work[128], dlq[128], x[128];
    tap_owned(work, sizeof work, "nx.work");
    tap_owned(dlq, sizeof dlq, "nx.work.dead");
    tap_plain(x, sizeof x, "nx.dlx");
    tap_start_reaperd_every(2);
    tap_queue(work, x, NULL, -1);
    wait_sighting(work, 1);
    assert_detail(work, "does not exist");
    assert_detail(work, x);
    assert_int_equal(events_of(work, "SURFACED"), 1);

    tap_exchange(x, "fanout");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    wait_sighting(work, 0);
    assert_int_equal(events_of(work, "CLEARED"), 1);
    assert_int_equal(events_of(work, "SURFACED"), 1);
    tap_publish(work, "nx", 40);
    tap_reject(work, 40);
    /* The dead-letter queue is no dead-letter queue by name here, so only
     * the tap can park these. */
    tap_wait_parked("nx", 40, 30000);
    ITEST_POLL(tap_depth(dlq) >= 40, 10000);
    assert_int_equal(tap_depth(dlq), 40);
    tap_source_done(work, dlq);
}

/* A dead-letter exchange that exists with nothing bound to it: the
 * broker routes the queue's dead letters nowhere, and the tap, which
 * copies the dead-letter queues' bindings, is not bound either, so they
 * are lost: surfaced on the owned queue; once a dead-letter queue is
 * bound, the sighting clears and dead letters are tapped. */
static void test_unbound_exchange_surfaced_then_cleared(void **state) {
    (void)state;
    char work[128], dlq[128], x[128];
    tap_owned(work, sizeof work, "ux.work");
    tap_owned(dlq, sizeof dlq, "ux.work.dead");
    tap_plain(x, sizeof x, "ux.dlx");
    tap_exchange(x, "fanout");
    tap_start_reaperd_every(2);
    tap_queue(work, x, NULL, -1);
    wait_sighting(work, 1);
    assert_detail(work, "has nothing bound to it");
    assert_detail(work, x);
    assert_int_equal(events_of(work, "SURFACED"), 1);
    /* The loss is real: these are dropped by the broker, none parked. */
    tap_publish(work, "uxa", 10);
    tap_reject(work, 10);
    wait_sweeps(2);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') "
                              "LIKE 'uxa-%%'"),
                     0);
    assert_int_equal(sighting_of(work), 1);
    assert_int_equal(events_of(work, "SURFACED"), 1);

    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    wait_sighting(work, 0);
    assert_int_equal(events_of(work, "CLEARED"), 1);
    tap_publish(work, "uxb", 20);
    tap_reject(work, 20);
    tap_wait_parked("uxb", 20, 30000);
    ITEST_POLL(tap_depth(dlq) >= 20, 10000);
    assert_int_equal(tap_depth(dlq), 20);
    tap_source_done(work, dlq);
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("taproute");
}

static int teardown(void **state) {
    (void)state;
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_exchange_surfaced_and_backfilled),
        cmocka_unit_test(test_missing_exchange_surfaced_then_cleared),
        cmocka_unit_test(test_unbound_exchange_surfaced_then_cleared),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
