/*
 * The tap under a storm of dead letters, with failures in the middle:
 * reaperd killed with SIGKILL while 10,000 dead letters arrive, then
 * started again; PostgreSQL stopped while 5,000 arrive, then started
 * again; SIGTERM (and SIGINT) while 6,000 (3,000) arrive: reaperd exits 0
 * within its bound and a restart parks the rest; one of the tap's two
 * PostgreSQL sessions terminated while 6,000 arrive. Every dead letter is parked
 * exactly once, none is lost, and the broker's dead-letter queue keeps every
 * copy. After each storm the metrics agree with the database:
 * reaper_dead_letters_parked_total and reaper_reaped_total{dead_letter,
 * parked} count the parks this process made, once each, and
 * reaper_gates_open{kind="bus_dead_lettered"} after the next pass counts the
 * open gates. The storm is made with a
 * message TTL of 0 on an owned queue nobody consumes, so the broker
 * dead-letters each message as it arrives.
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
#include <time.h>
#include <unistd.h>

#include "tap_common.h"

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

/* Every dead letter of prefix parked once: one row per message body (no
 * second identity for one message), and no job or gate of the tap's kind
 * without its row. */
static void assert_once(const char *prefix, long want) {
    assert_int_equal(parked(prefix), want);
    assert_int_equal(tap_sqln("SELECT count(DISTINCT body) FROM dead_letter WHERE "
                              "encode(body, 'escape') LIKE '%s-%%'",
                              prefix),
                     want);
    assert_int_equal(tap_sqln("SELECT count(*) FROM job j WHERE kind = 'bus.dead_letter' AND "
                              "NOT EXISTS (SELECT 1 FROM dead_letter d WHERE d.job_id = j.id)"),
                     0);
    assert_int_equal(tap_sqln("SELECT count(*) FROM gate g WHERE kind = 'bus_dead_lettered' AND "
                              "NOT EXISTS (SELECT 1 FROM dead_letter d WHERE d.gate_id = g.id)"),
                     0);
    assert_int_equal(tap_sqln("SELECT count(*) FROM (SELECT job_id FROM dead_letter GROUP BY "
                              "job_id HAVING count(*) > 1) x"),
                     0);
    assert_int_equal(tap_sqln("SELECT count(*) FROM (SELECT gate_id FROM dead_letter GROUP BY "
                              "gate_id HAVING count(*) > 1) x"),
                     0);
}

#define PARKED_SERIES                                                                              \
    "reaper_reaped_total{source=\"broker\",condition=\"dead_letter\",action=\"parked\"}"

/* The running reaperd's counters: it made `parks` parks (absent series
 * count as 0: reaper_reaped_total shows only what happened); never more,
 * and exactly that many unless !exact. */
static void assert_parks_counted_as(long parks, bool exact) {
    int port = itest_reaperd_http_port(T.reaperd, 10000);
    assert_true(port > 0);
    char *text = itest_scrape(port);
    double total = itest_metric(text, "reaper_dead_letters_parked_total");
    double reaped = itest_metric(text, PARKED_SERIES);
    if (reaped < 0) reaped = 0;
    fprintf(stderr, "parks %ld: dead_letters_parked_total %.0f, reaped_total %.0f\n", parks, total,
            reaped);
    assert_true(reaped == total);
    assert_true(total <= (double)parks);
    if (exact) assert_true(total == (double)parks);
    free(text);
}

static void assert_parks_counted(long parks) { assert_parks_counted_as(parks, true); }

/* After a pass that started once every park was in: the gauge counts the
 * open bus_dead_lettered gates. */
static void assert_gates_gauge_after_next_pass(void) {
    size_t from = T.reaperd->log_len;
    const char *needle = "\"msg\":\"pass finished\"";
    for (int i = 0; i < 300 && strstr(T.reaperd->log + from, needle) == NULL; i++)
        rp_child_drain(T.reaperd, 100);
    assert_non_null(strstr(T.reaperd->log + from, needle));
    int port = itest_reaperd_http_port(T.reaperd, 10000);
    char *text = itest_scrape(port);
    double open = itest_metric(text, "reaper_gates_open{kind=\"bus_dead_lettered\"}");
    long want = tap_sqln("SELECT count(*) FROM gate WHERE kind = 'bus_dead_lettered' AND "
                         "answer IS NULL");
    fprintf(stderr, "gates_open{bus_dead_lettered} %.0f, open gates in the database %ld\n", open,
            want);
    assert_true(want > 0);
    assert_true(open == (double)want);
    free(text);
}

static void test_kill9_mid_storm(void **state) {
    (void)state;
    char work[128], dlq[128];
    tap_dead_letter_source("kill", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    tap_publish(work, "s", 10000);
    /* Kill it while it parks: some parked, most not. */
    long seen = 0;
    ITEST_POLL((seen = parked("s")) >= 500, 6000);
    tap_stop_reaperd(SIGKILL);
    /* The killed reaperd's server sessions live on until they notice: a
     * transaction it had already sent whole (BEGIN, the parks, COMMIT in one
     * pipeline) still commits, seen here up to a second after the kill.
     * Count once they are gone. */
    long long t0 = itest_mono_ms();
    long sessions = -1;
    ITEST_POLL((sessions = tap_sqln("SELECT count(*) FROM pg_stat_activity WHERE "
                                    "application_name = 'reaperd'")) == 0,
               10000);
    assert_int_equal(sessions, 0);
    long at_kill = parked("s");
    fprintf(stderr, "the killed reaperd's sessions ended %lld ms after the kill\n",
            itest_mono_ms() - t0);
    fprintf(stderr, "parked when killed: %ld of 10000\n", at_kill);
    assert_true(at_kill > 0);
    assert_true(at_kill < 10000);
    long seq0 = tap_sqln("SELECT coalesce(max(seq), 0) FROM ledger");
    tap_start_reaperd();
    tap_wait_parked("s", 10000, 60000);
    /* The restarted reaperd's parks are the ledger events after the kill. */
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE seq > %ld", seq0),
                     10000 - at_kill);
    assert_consistent();
    assert_once("s", 10000);
    assert_parks_counted(10000 - at_kill);
    /* The dead-letter queue keeps every copy. The restarted reaperd's
     * first pass may be peeking at it (the backfill's basic.get holds what
     * it reads unacked until it closes the channel, and a passive declare
     * counts only the ready ones), so the depth is read once a peek in
     * flight is over: a copy taken for good never comes back. */
    long dlq_depth = tap_depth(dlq);
    if (dlq_depth != 10000)
        fprintf(stderr, "dead-letter queue at %ld right after the parks (a peek in flight)\n",
                dlq_depth);
    ITEST_POLL((dlq_depth = tap_depth(dlq)) == 10000, 15000);
    assert_int_equal(dlq_depth, 10000);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_source_done(work, dlq);
}

/* SIGTERM or SIGINT while n dead letters arrive: no new work, what is in
 * flight commits (or stays unacked for the broker to deliver again), exit 0
 * within the bound (RP_STOP_GRACE_MS 10 s, then 5 s to cancel the store's
 * command: cmd/reaperd/signals.c); a restart parks the rest, once. */
static void stop_mid_storm(int sig, const char *what, const char *prefix, int n) {
    char work[128], dlq[128];
    tap_dead_letter_source(what, 0, work, dlq, sizeof work);
    tap_start_reaperd();
    tap_publish(work, prefix, n);
    ITEST_POLL(parked(prefix) >= n / 20, 6000);
    long before = parked(prefix);
    size_t log_from = T.reaperd->log_len;
    long long t0 = itest_mono_ms();
    assert_int_equal(kill(T.reaperd->pid, sig), 0);
    int rc = rp_child_wait_exit(T.reaperd, 20000);
    long long took = itest_mono_ms() - t0;
    long at_stop = parked(prefix);
    fprintf(stderr, "%s: parked %ld of %d at the signal, %ld at exit; exit %d after %lld ms\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", before, n, at_stop, rc, took);
    if (rc != 0) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(rc, 0);
    assert_true(took < 15000);
    assert_non_null(strstr(T.reaperd->log + log_from, "\"msg\":\"stopping\""));
    /* Nothing in flight was cut off: the stop did not run out of grace. */
    assert_null(strstr(T.reaperd->log + log_from, "stop grace ran out"));
    rp_child_free(T.reaperd);
    T.reaperd = NULL;
    assert_true(at_stop > 0);
    assert_true(at_stop < n);
    /* What the stopped reaperd committed is whole: no half park. */
    assert_consistent();
    assert_once(prefix, at_stop);

    long seq0 = tap_sqln("SELECT coalesce(max(seq), 0) FROM ledger");
    tap_start_reaperd_every(2);
    tap_wait_parked(prefix, n, 60000);
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE seq > %ld", seq0), n - at_stop);
    assert_consistent();
    assert_once(prefix, n);
    assert_int_equal(tap_depth(dlq), n);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    assert_parks_counted(n - at_stop);
    assert_gates_gauge_after_next_pass();
    tap_source_done(work, dlq);
}

static void test_sigterm_mid_storm(void **state) {
    (void)state;
    stop_mid_storm(SIGTERM, "term", "t", 6000);
}

static void test_sigint_mid_storm(void **state) {
    (void)state;
    stop_mid_storm(SIGINT, "int", "i", 3000);
}

static int count_in(const char *log, const char *needle) {
    int n = 0;
    for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void test_store_down_mid_storm(void **state) {
    (void)state;
    char work[128], dlq[128];
    tap_dead_letter_source("pgdown", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    tap_publish(work, "p", 2500);
    ITEST_POLL(parked("p") >= 200, 6000);
    assert_int_equal(itest_services("stop", "postgres"), 0);
    tap_publish(work, "p2", 2500);
    /* Down for 6 s: the tap holds, without a loop of attempts. */
    rp_child_drain(T.reaperd, 6000);
    assert_non_null(strstr(T.reaperd->log, "the tap holds its dead letters unacked"));
    int tries = count_in(T.reaperd->log, "\"op\":\"park");
    fprintf(stderr, "park attempts logged while the store was down: %d\n", tries);
    assert_true(tries >= 1);
    assert_true(tries <= 10); /* backoff 1, 2, 4 s: about four in 6 s */
    size_t before = strlen(T.reaperd->log);
    assert_int_equal(itest_services("start", "postgres"), 0);
    PQreset(T.pg);
    tap_wait_parked("p", 2500, 60000);
    tap_wait_parked("p2", 2500, 60000);
    assert_non_null(strstr(T.reaperd->log + before, "the tap parks again"));
    assert_consistent();
    assert_once("p", 2500);
    assert_once("p2", 2500);
    /* Not exact: when the database goes away while a batch's COMMIT is in
     * flight, the commit may have happened without the tap hearing of it;
     * the tap holds those dead letters, parks them again once the store is
     * back, finds them parked already, and neither counts nor publishes
     * their events (seen on RabbitMQ 4.0: 4,950 counted of 5,000). Never
     * more than parked, though. */
    assert_parks_counted_as(5000, false);
    assert_int_equal(tap_depth(dlq), 5000);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_source_done(work, dlq);
}

/* The tap parks on two sessions: one of them lost mid-storm (its backend
 * terminated while it parks) costs nothing. What was in flight on it is
 * held and parked again; the other session's commits stand; every dead
 * letter is parked exactly once and every delivery is acked. */
static void test_one_tap_session_lost_mid_storm(void **state) {
    (void)state;
    char work[128], dlq[128];
    tap_dead_letter_source("onelost", 0, work, dlq, sizeof work);
    tap_start_reaperd();
    tap_publish(work, "o", 6000);
    ITEST_POLL(parked("o") >= 300, 6000);
    /* A backend busy with the tap's park statement (the store thread's
     * session sits idle: no pass runs). */
    long killed = 0;
    for (int i = 0; i < 200 && killed == 0; i++) {
        killed = tap_sqln("SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
                          "pg_stat_activity WHERE application_name = 'reaperd' AND state <> "
                          "'idle' AND query LIKE '%%INSERT INTO%%dead_letter%%' LIMIT 1) x");
        if (killed == 0) usleep(5 * 1000);
    }
    assert_int_equal(killed, 1);
    long at_kill = parked("o");
    fprintf(stderr, "one tap session terminated with %ld of 6000 parked\n", at_kill);
    assert_true(at_kill < 6000);
    tap_wait_parked("o", 6000, 60000);
    assert_non_null(strstr(T.reaperd->log, "the tap holds its dead letters unacked"));
    assert_consistent();
    assert_once("o", 6000);
    assert_int_equal(tap_depth(dlq), 6000);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_source_done(work, dlq);
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("tapstorm");
}

static int teardown(void **state) {
    (void)state;
    /* A failed store-down test must not leave the database stopped. */
    if (itest_services("start", "postgres") != 0)
        fprintf(stderr, "could not start postgres again\n");
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_mid_storm),
        cmocka_unit_test(test_store_down_mid_storm),
        cmocka_unit_test(test_one_tap_session_lost_mid_storm),
        cmocka_unit_test(test_sigterm_mid_storm),
        cmocka_unit_test(test_sigint_mid_storm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
