/*
 * The tap under a storm of dead letters, with failures in the middle:
 * reaperd killed with SIGKILL while 10,000 dead letters arrive, then
 * started again; PostgreSQL stopped while 5,000 arrive, then started
 * again. Every dead letter is parked exactly once, none is lost, and the
 * broker's dead-letter queue keeps every copy. The storm is made with a
 * message TTL of 0 on an owned queue nobody consumes, so the broker
 * dead-letters each message as it arrives.
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
#include <time.h>
#include <unistd.h>

#include "tap_common.h"

static void storm_setup(const char *what, char *work, char *dlq, size_t n) {
    char x[128], name[96];
    snprintf(name, sizeof name, "%s.dlx", what);
    tap_plain(x, sizeof x, name);
    tap_exchange(x, "fanout");
    snprintf(name, sizeof name, "%s.dlq", what);
    tap_owned(dlq, n, name);
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    snprintf(name, sizeof name, "%s.work", what);
    tap_owned(work, n, name);
    tap_queue(work, x, NULL, 0);
}

static long parked(const char *prefix) {
    return tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '%s-%%'",
                    prefix);
}

static void assert_consistent(void) {
    long rows = tap_sqln("SELECT count(*) FROM dead_letter");
    assert_int_equal(tap_sqln("SELECT count(*) FROM job WHERE kind = 'bus.dead_letter'"), rows);
    assert_int_equal(tap_sqln("SELECT count(*) FROM gate WHERE kind = 'bus_dead_lettered'"), rows);
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE payload->>'condition' = "
                              "'DEAD_LETTER' AND payload->>'action' = 'PARKED'"),
                     rows);
}

static void wait_all(const char *prefix, long want, int timeout_ms) {
    char q[256];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '%s-%%'", prefix);
    long got = tap_wait_count(want, timeout_ms, q);
    if (got != want && T.reaperd) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, want);
}

static void test_kill9_mid_storm(void **state) {
    (void)state;
    char work[128], dlq[128];
    storm_setup("kill", work, dlq, sizeof work);
    tap_start_reaperd();
    tap_publish(work, "s", 10000);
    /* Kill it while it parks: some parked, most not. */
    long seen = 0;
    for (int i = 0; i < 300 && (seen = parked("s")) < 500; i++) usleep(20 * 1000);
    tap_stop_reaperd(SIGKILL);
    long at_kill = parked("s");
    fprintf(stderr, "parked when killed: %ld of 10000\n", at_kill);
    assert_true(at_kill > 0);
    assert_true(at_kill < 10000);
    tap_start_reaperd();
    wait_all("s", 10000, 60000);
    assert_consistent();
    assert_int_equal(tap_depth(dlq), 10000);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_stop_reaperd(SIGTERM);
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

static int count_in(const char *log, const char *needle) {
    int n = 0;
    for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void services(const char *verb) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services %s postgres >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"), verb);
    assert_int_equal(system(cmd), 0);
}

static void test_store_down_mid_storm(void **state) {
    (void)state;
    char work[128], dlq[128];
    storm_setup("pgdown", work, dlq, sizeof work);
    tap_start_reaperd();
    tap_publish(work, "p", 2500);
    for (int i = 0; i < 300 && parked("p") < 200; i++) usleep(20 * 1000);
    services("stop");
    tap_publish(work, "p2", 2500);
    /* Down for 6 s: the tap holds, without a loop of attempts. */
    rp_child_drain(T.reaperd, 6000);
    assert_non_null(strstr(T.reaperd->log, "the tap holds its dead letters unacked"));
    int tries = count_in(T.reaperd->log, "\"op\":\"park");
    fprintf(stderr, "park attempts logged while the store was down: %d\n", tries);
    assert_true(tries >= 1);
    assert_true(tries <= 10); /* backoff 1, 2, 4 s: about four in 6 s */
    size_t before = strlen(T.reaperd->log);
    services("start");
    PQreset(T.pg);
    wait_all("p", 2500, 60000);
    wait_all("p2", 2500, 60000);
    assert_non_null(strstr(T.reaperd->log + before, "the tap parks again"));
    assert_consistent();
    assert_int_equal(tap_depth(dlq), 5000);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_stop_reaperd(SIGTERM);
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("tapstorm");
}

static int teardown(void **state) {
    (void)state;
    /* A failed store-down test must not leave the database stopped. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services start postgres >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"));
    if (system(cmd) != 0) fprintf(stderr, "could not start postgres again\n");
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_mid_storm),
        cmocka_unit_test(test_store_down_mid_storm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
