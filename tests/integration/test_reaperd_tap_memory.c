/*
 * The tap's memory is bounded in bytes, not only by its prefetch count
 * (app/rp_tap.h, RP_TAP_HOLD_BYTES): 150 dead letters of 1 MiB arrive
 * while parking is blocked (the dead_letter table locked by this test), so
 * everything the broker hands over stays in reaperd. Past 32 MiB the tap
 * stops consuming: the rest waits on the broker (what it had already sent
 * is returned to it), and reaperd's peak memory stays far below the
 * storm's 150 MiB.
 * Once the lock is gone, every dead letter is parked exactly once, the tap
 * drains, and the broker's dead-letter queue keeps every copy. And SIGTERM
 * in that state (reading held, a park waiting on the lock) exits 0.
 * While the tap holds, the connection goes on: the broker keeps it longer
 * than its 30 s write time-out (it closed it when reaperd stopped reading
 * its socket instead), and control requests are answered; a connection
 * lost meanwhile is followed by one that consumes again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap_common.h"

#define N_DEAD 150
#define BODY_BYTES (1024 * 1024)

/* Dead letters parked from publish_big(..., prefix, ...): all, and with
 * distinct bodies. */
#define PARKED(prefix)                                                                             \
    "SELECT count(*) FROM dead_letter WHERE encode(substring(body FROM 1 FOR 16), 'escape') "     \
    "LIKE '" prefix "-%'"
#define PARKED_DISTINCT(prefix)                                                                    \
    "SELECT count(DISTINCT substring(body FROM 1 FOR 16)) FROM dead_letter WHERE "                \
    "encode(substring(body FROM 1 FOR 16), 'escape') LIKE '" prefix "-%'"

#define STOPS "it stops consuming until parks bring it to half"
#define CONSUMES_AGAIN "the tap consumes again"

/* The "messages" of reaperd's last "stops consuming" line, -1 if none. */
static long held_when_stopped(void) {
    const char *at = NULL;
    for (const char *p = T.reaperd->log; (p = strstr(p, STOPS)); p++) at = p;
    if (at == NULL) return -1;
    const char *m = strstr(at, "\"messages\":\"");
    return m ? atol(m + strlen("\"messages\":\"")) : -1;
}

/* Peak resident memory of pid in KiB, -1 when unreadable. */
#define peak_rss_kib(pid) itest_proc_status_kib(pid, "VmHWM")

/* n persistent messages of BODY_BYTES to queue, each beginning
 * "<prefix>-<i> ". */
static void publish_big(const char *queue, const char *prefix, int n) {
    char *body = malloc(BODY_BYTES);
    assert_non_null(body);
    memset(body, 'x', BODY_BYTES);
    for (int i = 0; i < n; i++) {
        int k = snprintf(body, 32, "%s-%d ", prefix, i);
        body[k] = 'x'; /* snprintf's NUL */
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
        p.delivery_mode = 2;
        assert_int_equal(amqp_basic_publish(T.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(queue), 0, 0, &p,
                                            (amqp_bytes_t){BODY_BYTES, body}),
                         AMQP_STATUS_OK);
    }
    free(body);
}

static void test_held_in_bytes(void **state) {
    (void)state;
    char dlq[128], work[128];
    tap_dead_letter_source("mem", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    long base_kib = peak_rss_kib(T.reaperd->pid);
    assert_true(base_kib > 0);

    /* Parking blocked: the tap's first transaction waits on the lock. */
    tap_block_parking();

    publish_big(work, "h", N_DEAD);
    /* Not asserted here: without the bound there is no such line, and the
     * memory below tells. Then let whatever was on the way arrive. */
    (void)rp_child_wait_for(T.reaperd, STOPS, 30000);
    rp_child_drain(T.reaperd, 3000);
    long held = held_when_stopped();
    long peak_kib = peak_rss_kib(T.reaperd->pid);
    fprintf(stderr, "while parking is blocked: the tap stopped consuming with %ld of %d held; its "
                    "peak memory %ld KiB (%ld KiB at the start)\n",
            held, N_DEAD, peak_kib, base_kib);
    assert_int_equal(tap_sqln("%s", PARKED("h")), 0);
    /* Peak memory grew by far less than the storm's 150 MiB (without the
     * bound reaperd reads all of it, the prefetch being 4,000: seen 260 MiB
     * more; with it 52 MiB here and 77 MiB once parking runs, when
     * PostgreSQL's send buffers hold two transactions' bodies too). */
    assert_true(peak_kib - base_kib < 110 * 1024);
    /* It stopped just past 32 MiB of 1 MiB bodies (each counted with its
     * bookkeeping). */
    assert_in_range(held, 30, 34);
    /* The metrics say so too: past 32 MiB held, paused, nothing parked. */
    int port = itest_reaperd_http_port(T.reaperd, 10000);
    assert_true(port > 0);
    char *text = itest_scrape(port);
    assert_true(itest_metric(text, "reaper_tap_held_bytes{vhost=\"/\"}") > 32.0 * 1024 * 1024);
    assert_true(itest_metric(text, "reaper_tap_paused{vhost=\"/\"}") == 1);
    assert_true(itest_metric(text, "reaper_tap_park_delay_seconds_count{vhost=\"/\"}") == 0);
    free(text);

    tap_unblock_parking();
    long got = tap_wait_count(N_DEAD, 120000, PARKED("h"));
    if (got != N_DEAD) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, N_DEAD);
    assert_true(rp_child_wait_for(T.reaperd, CONSUMES_AGAIN, 10000));
    /* Every park timed, from arrival to commit: the first waited behind the
     * lock for a second or more; the tap holds little and consumes again. */
    text = itest_scrape(port);
    assert_true(itest_metric(text, "reaper_tap_park_delay_seconds_count{vhost=\"/\"}") >= N_DEAD);
    assert_true(itest_metric(text, "reaper_tap_park_delay_seconds_bucket{vhost=\"/\",le=\"0.5\"}") <
                itest_metric(text, "reaper_tap_park_delay_seconds_count{vhost=\"/\"}"));
    assert_true(itest_metric(text, "reaper_tap_paused{vhost=\"/\"}") == 0);
    assert_true(itest_metric(text, "reaper_tap_held_bytes{vhost=\"/\"}") < 16.0 * 1024 * 1024);
    assert_true(itest_metric(text, "reaper_dead_letters_parked_total{vhost=\"/\"}") == N_DEAD);
    free(text);
    /* Once each, whole. */
    assert_int_equal(tap_sqln("%s", PARKED_DISTINCT("h")), N_DEAD);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE length(body) <> %d OR "
                              "body_truncated",
                              BODY_BYTES),
                     0);
    assert_int_equal(tap_sqln("SELECT count(*) FROM gate WHERE kind = 'bus_dead_lettered'"),
                     N_DEAD);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    assert_int_equal(tap_depth(dlq), N_DEAD);
    peak_kib = peak_rss_kib(T.reaperd->pid);
    fprintf(stderr, "after the storm: reaperd's peak memory %ld KiB\n", peak_kib);
    assert_true(peak_kib - base_kib < 110 * 1024);
    tap_source_done(work, dlq);
}

/* SIGTERM while reading is held and the tap's park waits on the lock:
 * reaperd cancels the park once its stop grace (10 s) runs out and exits 0;
 * nothing was acked, so a restart parks every dead letter once. */
static void test_sigterm_while_held(void **state) {
    (void)state;
    char dlq[128], work[128];
    tap_dead_letter_source("memt", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    tap_block_parking();
    publish_big(work, "s", 60);
    assert_true(rp_child_wait_for(T.reaperd, STOPS, 30000));
    long long t0 = itest_mono_ms();
    tap_stop_reaperd(SIGTERM); /* asserts exit 0 within 20 s */
    fprintf(stderr, "reaperd stopped %lld ms after SIGTERM\n", itest_mono_ms() - t0);
    tap_unblock_parking();
    assert_int_equal(tap_sqln("%s", PARKED("s")), 0);
    tap_start_reaperd();
    long got = tap_wait_count(60, 60000, PARKED("s"));
    assert_int_equal(got, 60);
    assert_int_equal(tap_sqln("%s", PARKED_DISTINCT("s")), 60);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    assert_int_equal(tap_depth(dlq), 60);
    tap_source_done(work, dlq);
}

/* How many times needle is in reaperd's log. */
static int log_count(const char *needle) {
    int n = 0;
    for (const char *p = T.reaperd->log; (p = strstr(p, needle)); p++) n++;
    return n;
}

/* A hold longer than the broker's 30 s write time-out (RabbitMQ closes a
 * connection whose writes wait that long; it did, every time, when the tap
 * held by not reading its socket): one connection all along, a control
 * request answered in the middle of it, and everything parked once the
 * lock is gone. */
static void test_long_hold(void **state) {
    (void)state;
    char dlq[128], work[128], control[160];
    tap_dead_letter_source("memhb", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    assert_int_equal(log_count("\"broker connected\""), 1);
    tap_block_parking();
    publish_big(work, "b", 60);
    assert_true(rp_child_wait_for(T.reaperd, STOPS, 30000));
    long long t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 10000) rp_child_drain(T.reaperd, 500);
    snprintf(control, sizeof control, "%s.control", T.tag);
    itest_reply r;
    long long asked = itest_mono_ms();
    int rc = itest_request(T.amqp, control, "application/json", "{\"v\":1,\"op\":\"status\"}",
                           strlen("{\"v\":1,\"op\":\"status\"}"), NULL, true, "hold-status", &r,
                           10000);
    fprintf(stderr, "status answered during the hold in %lld ms\n", itest_mono_ms() - asked);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(r.body, "\"ok\":true"));
    itest_reply_free(&r);
    while (itest_mono_ms() - t0 < 33000) rp_child_drain(T.reaperd, 500);
    if (log_count("\"broker unreachable") != 0) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(log_count("\"broker unreachable"), 0);
    tap_unblock_parking();
    assert_int_equal(tap_wait_count(60, 60000, PARKED("b")), 60);
    assert_true(rp_child_wait_for(T.reaperd, CONSUMES_AGAIN, 10000));
    assert_int_equal(tap_sqln("%s", PARKED_DISTINCT("b")), 60);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    assert_int_equal(tap_depth(dlq), 60);
    assert_int_equal(log_count("\"broker unreachable"), 0);
    assert_int_equal(log_count("\"broker connected\""), 1);
    tap_source_done(work, dlq);
}

/* The broker closes every connection while the tap holds (parking
 * blocked). reaperd connects again and the new connection consumes (the
 * stop belongs to the connection it was sent on); once
 * the lock is gone, every dead letter is parked exactly once (those the
 * broker hands over again are parked already, and acked) and the tap
 * drains. */
static void test_lost_while_held(void **state) {
    (void)state;
    char dlq[128], work[128];
    tap_dead_letter_source("memlost", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    tap_block_parking();
    publish_big(work, "l", 60);
    assert_true(rp_child_wait_for(T.reaperd, STOPS, 30000));
    assert_int_equal(itest_broker_ctl("close_all_connections itest-tap-lost-while-held"), 0);
    itest_amqp_close(T.amqp); /* this test's own went too */
    T.amqp = itest_amqp_connect();
    assert_non_null(T.amqp);
    long long t0 = itest_mono_ms();
    while (log_count("\"broker connected\"") < 2 && itest_mono_ms() - t0 < 60000)
        rp_child_drain(T.reaperd, 200);
    fprintf(stderr, "reaperd connected again %lld ms after the broker closed its connection\n",
            itest_mono_ms() - t0);
    assert_int_equal(log_count("\"broker connected\""), 2);
    tap_unblock_parking();
    long got = tap_wait_count(60, 60000, PARKED("l"));
    if (got != 60) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, 60);
    assert_int_equal(tap_sqln("%s", PARKED_DISTINCT("l")), 60);
    for (int i = 0; i < 150 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    assert_int_equal(tap_depth(dlq), 60);
    tap_source_done(work, dlq);
}

/* Dead letters whose park fails on their own (a trigger refuses them) are
 * held unacked until the next reconnect, but not their bodies: 20 of 1
 * MiB stuck must not keep the tap from consuming again (they would weigh
 * more than half of its 32 MiB), so the 40 good ones after them are all
 * parked. */
static void test_stuck_weigh_nothing(void **state) {
    (void)state;
    char dlq[128], work[128];
    tap_dead_letter_source("memstuck", 0, work, dlq, sizeof work);
    tap_refuse_parks("encode(substring(NEW.body FROM 1 FOR 2), 'escape') = 'k-'");
    tap_start_reaperd();
    publish_big(work, "k", 20);
    long long t0 = itest_mono_ms();
    while (log_count("could not be parked") < 20 && itest_mono_ms() - t0 < 60000)
        rp_child_drain(T.reaperd, 200);
    assert_int_equal(log_count("could not be parked"), 20);
    publish_big(work, "g", 40);
    long got = tap_wait_count(40, 60000, PARKED("g"));
    if (got != 40) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, 40);
    assert_int_equal(tap_sqln("%s", PARKED("k")), 0);
    tap_stop_reaperd(SIGTERM);
    tap_accept_parks();
    /* The broker has the 20 back; they are parked at the next start. */
    tap_start_reaperd();
    assert_int_equal(tap_wait_count(20, 60000, PARKED("k")), 20);
    tap_source_done(work, dlq);
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("tapmem");
}

static int teardown(void **state) {
    (void)state;
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_in_bytes),
        cmocka_unit_test(test_sigterm_while_held),
        cmocka_unit_test(test_long_hold),
        cmocka_unit_test(test_lost_while_held),
        cmocka_unit_test(test_stuck_weigh_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
