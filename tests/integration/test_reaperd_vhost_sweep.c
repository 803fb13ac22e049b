/*
 * The sweep per watched vhost (issue #19 item 1, step 2), on a running
 * reaperd against the real broker and database: with broker.vhosts = B,
 * the sweep lists broker.url's vhost and B (GET /api/queues/VHOST), so
 * the dead letters already sitting in B's dead-letter queue are
 * backfilled (parked once each, with B in their job, identity and rows,
 * their verdicts' `vhost` B),
 * reaper's policy is written in B, and the fleet's sweep turn of each
 * watched vhost is taken (a PostgreSQL advisory lock per vhost); an
 * unwatched vhost C is neither listed, backfilled nor given a policy.
 * Then the events: a consumer of B cancelled while holding deliveries is
 * judged for B (HOLDER_GONE on queue:B:..., its verdict's vhost B); one of
 * C is judged nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap_common.h"
#include "test_mgmt_common.h"

static char vh_b[64], vh_c[64];

static long parked_in(const char *vhost, const char *origin) {
    rp_child_drain(T.reaperd, 50);
    return tap_sqln("SELECT count(*) FROM dead_letter d JOIN job j ON j.id = d.job_id "
                    "WHERE j.payload->>'vhost' = '%s' AND d.origin_queue = '\"%s\"' "
                    "AND d.identity LIKE '%%:%s/%%'",
                    vhost, origin, vhost);
}

static long rows_in(const char *vhost) {
    return tap_sqln("SELECT count(*) FROM dead_letter d JOIN job j ON j.id = d.job_id "
                    "WHERE j.payload->>'vhost' = '%s' OR d.identity LIKE '%%:%s/%%'",
                    vhost, vhost);
}

/* Whether reaper's policy exists in vhost (management API). */
static bool policy_in(const char *vhost) {
    char *ev = mt_enc(vhost), path[256];
    snprintf(path, sizeof path, "/api/policies/%s/vibey-reap", ev);
    free(ev);
    char *body = NULL;
    long code = mt_http("GET", path, NULL, &body);
    free(body);
    return code == 200;
}

/* Sweep turns held by any session, for vhost. */
static long turns_held(const char *vhost) {
    return tap_sqln("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND objsubid = 2 AND classid = hashtext('reaper.sweep_turn')::oid "
                    "AND objid = hashtext('%s' || '/' || '%s')::oid",
                    T.schema, vhost);
}

/* HOLDER_GONE SURFACED verdicts on the ledger for object naming vhost. */
static long holder_gone(const char *object, const char *vhost) {
    rp_child_drain(T.reaperd, 50);
    return tap_sqln("SELECT count(*) FROM ledger WHERE payload->>'object' = '%s' AND "
                    "payload->>'condition' = 'HOLDER_GONE' AND payload->>'action' = 'SURFACED' "
                    "AND payload->>'vhost' = '%s'",
                    object, vhost);
}

/* Three deliveries of queue q (declared on c's vhost) held unacked by a
 * consumer "itest.victim" on channel 2 of c. */
static void hold_three(amqp_connection_state_t c, const char *q) {
    mt_declare(c, q, "classic");
    for (int i = 0; i < 3; i++) mt_publish(c, q, "work", 0);
    mt_hold(c, 2, q, "itest.victim", 3);
}

static void test_sweep_lists_the_watched_vhosts(void **state) {
    (void)state;
    mt_vhost_create(vh_b);
    mt_vhost_create(vh_c);
    /* Dead letters sitting in B's and C's dead-letter queues before
     * reaperd starts: only a sweep's backfill can find them. */
    char work_b[128], dlq_b[128], work_c[128], dlq_c[128], what[64];
    tap_owned(work_b, sizeof work_b, "b.work");
    snprintf(what, sizeof what, "b.%s-dlq", T.tag);
    tap_owned(dlq_b, sizeof dlq_b, what);
    tap_owned(work_c, sizeof work_c, "c.work");
    snprintf(what, sizeof what, "c.%s-dlq", T.tag);
    tap_owned(dlq_c, sizeof dlq_c, what);
    amqp_connection_state_t cb = mt_amqp(vh_b), cc = mt_amqp(vh_c);
    itest_dead_letters(cb, work_b, dlq_b, 3, 0);
    itest_dead_letters(cc, work_c, dlq_c, 2, 0);
    assert_false(policy_in(vh_b));
    assert_false(policy_in(vh_c));
    /* Their counts in the statistics (a sweep judges no queue before). */
    assert_true(mt_wait_queue_field(vh_b, dlq_b, "messages", "#", 3, 30000));
    assert_true(mt_wait_queue_field(vh_c, dlq_c, "messages", "#", 2, 30000));

    char env_vhosts[128], env_dlq[128];
    snprintf(env_vhosts, sizeof env_vhosts, "REAPER_BROKER_VHOSTS=%s", vh_b);
    snprintf(env_dlq, sizeof env_dlq, "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=\\.%s-dlq$", T.tag);
    char *env[] = {env_vhosts, env_dlq, NULL};
    T.reaperd = tap_daemon_start(
        (itest_daemon_opts){.env = env, .ready = {ITEST_READY_BROKER, ITEST_READY_PASS}});

    /* B's backlog parked once each by the backfill, with B. */
    ITEST_POLL(parked_in(vh_b, work_b) >= 3, 30000);
    if (parked_in(vh_b, work_b) != 3) {
        fprintf(stderr, "%s", T.reaperd->log);
        fail_msg("B's 3 dead letters were not backfilled");
    }
    assert_int_equal(rows_in(vh_b), 3);
    /* Their verdicts name B (the ledger keeps each verdict as it was
     * published: proto/SCHEMA.md section 5.2's `vhost`). */
    long named = tap_sqln("SELECT count(*) FROM ledger WHERE payload->>'object' LIKE "
                          "'dead_letter:%%' AND payload->>'vhost' = '%s'",
                          vh_b);
    if (named != 3) {
        fprintf(stderr, "ledger: %ld of 3 name %s\n", named, vh_b);
        tap_sqln("SELECT 0 FROM ledger WHERE false");
        fail();
    }
    /* The policy written in B; the turn of both watched vhosts taken. */
    ITEST_POLL(policy_in(vh_b), 10000);
    assert_true(policy_in(vh_b));
    assert_int_equal(turns_held("/"), 1);
    assert_int_equal(turns_held(vh_b), 1);

    /* C is not watched: not listed, so nothing backfilled, no policy, no
     * turn; its dead-letter queue keeps both. */
    assert_int_equal(rows_in(vh_c), 0);
    assert_false(policy_in(vh_c));
    assert_int_equal(turns_held(vh_c), 0);
    assert_int_equal(itest_queue_depth(cc, 1, dlq_c), 2);

    /* Events: a consumer of B cancelled while it holds deliveries is
     * judged for B (its object, sighting and verdict name B); the same in
     * unwatched C is judged nothing. */
    char held_b[128], held_c[128];
    tap_owned(held_b, sizeof held_b, "b.held");
    tap_owned(held_c, sizeof held_c, "c.held");
    hold_three(cb, held_b);
    hold_three(cc, held_c);
    amqp_basic_cancel(cc, 2, amqp_cstring_bytes("itest.victim"));
    assert_int_equal(amqp_get_rpc_reply(cc).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_cancel(cb, 2, amqp_cstring_bytes("itest.victim"));
    assert_int_equal(amqp_get_rpc_reply(cb).reply_type, AMQP_RESPONSE_NORMAL);
    char ob[200];
    snprintf(ob, sizeof ob, "queue:%s:%s", vh_b, held_b);
    ITEST_POLL(holder_gone(ob, vh_b) == 1, 10000);
    if (holder_gone(ob, vh_b) != 1) {
        fprintf(stderr, "%s", T.reaperd->log);
        fail_msg("no HOLDER_GONE naming %s on the ledger", vh_b);
    }
    assert_int_equal(tap_sqln("SELECT count(*) FROM sighting WHERE key = "
                              "'broker|HOLDER_GONE|%s'",
                              ob),
                     1);
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE payload->>'object' LIKE "
                              "'queue:%s:%%'",
                              vh_c),
                     0);
    mt_amqp_close(cb);
    mt_amqp_close(cc);
    tap_stop_reaperd(SIGTERM);
}

/* /readyz's code, its body into why (n bytes). */
static int readyz(int port, char *why, size_t n) {
    char *body = NULL;
    int code = itest_http(port, "GET", "/readyz", &body, 5000);
    snprintf(why, n, "%s", body ? body : "");
    free(body);
    return code;
}

/* Issue 19 item 1: the tap of a watched vhost counts in /readyz: ready
 * with B's tap up; B deleted (its tap's connection closed, and refused
 * while B is missing): not ready, the reason naming B; B created again:
 * ready once its tap is back. */
static void test_vhost_tap_in_readyz(void **state) {
    (void)state;
    mt_vhost_create(vh_b);
    char env_vhosts[128];
    snprintf(env_vhosts, sizeof env_vhosts, "REAPER_BROKER_VHOSTS=%s", vh_b);
    char *env[] = {env_vhosts, "REAPER_HTTP_LISTEN=127.0.0.1:0", NULL};
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});
    int port = itest_reaperd_http_port(T.reaperd, 10000);
    assert_true(port > 0);
    char why[200];
    ITEST_POLL(readyz(port, why, sizeof why) == 200, 20000);
    if (readyz(port, why, sizeof why) != 200) {
        fprintf(stderr, "%s", T.reaperd->log);
        fail_msg("not ready with B's tap up: %s", why);
    }
    mt_vhost_delete(vh_b);
    ITEST_POLL(readyz(port, why, sizeof why) == 503, 20000);
    assert_int_equal(readyz(port, why, sizeof why), 503);
    if (strstr(why, vh_b) == NULL) fail_msg("the reason does not name %s: %s", vh_b, why);
    mt_vhost_create(vh_b);
    ITEST_POLL(readyz(port, why, sizeof why) == 200, 30000);
    if (readyz(port, why, sizeof why) != 200) {
        fprintf(stderr, "%s", T.reaperd->log);
        fail_msg("not ready again once B is back: %s", why);
    }
    tap_stop_reaperd(SIGTERM);
}

static rp_child *second; /* the second replica, stopped at teardown */

/* Whether the tap queue of vhost is bound to exchange (management API). */
static bool tap_bound_to(const char *vhost, const char *exchange) {
    return mt_queue_bound_to(vhost, T.tap, exchange);
}

/* Lines of log holding both needles. */
static int lines_with(const char *log, const char *a, const char *b) {
    int n = 0;
    for (const char *l = log; l != NULL && *l != '\0';) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = strndup(l, len);
        if (line != NULL && strstr(line, a) != NULL && strstr(line, b) != NULL) n++;
        free(line);
        l = end ? end + 1 : NULL;
    }
    return n;
}

/* Dead letters parked from origin (once each: as many rows as distinct
 * identities, else -1). */
static long parked_once(const char *origin) {
    long rows = tap_sqln("SELECT count(*) FROM dead_letter WHERE origin_queue = '\"%s\"'", origin);
    long ids = tap_sqln("SELECT count(DISTINCT identity) FROM dead_letter WHERE "
                        "origin_queue = '\"%s\"'",
                        origin);
    return rows == ids ? rows : -1;
}

/* Issue 19 items 1 and 3: two replicas, two watched vhosts ("/" and B),
 * sweeps every 2 s: a backlog in each vhost's dead-letter queue (the
 * sweep's backfill) and live dead letters in each (the taps, which both
 * replicas consume) are parked once each; each vhost's sweep turn is held
 * by one session, taken once over the run: the other replica's passes
 * are lease reaps. */
static void test_two_replicas_two_vhosts(void **state) {
    (void)state;
    mt_vhost_create(vh_b);
    const char *vh[2] = {"/", vh_b};
    char work[2][128], dlq[2][128], live[2][128], ldlq[2][128], what[64];
    amqp_connection_state_t c[2];
    for (int i = 0; i < 2; i++) {
        c[i] = mt_amqp(vh[i]);
        snprintf(what, sizeof what, "r%d.work", i);
        tap_owned(work[i], sizeof work[i], what);
        snprintf(what, sizeof what, "r%d.%s-dlq", i, T.tag);
        tap_owned(dlq[i], sizeof dlq[i], what);
        snprintf(what, sizeof what, "r%d.live", i);
        tap_owned(live[i], sizeof live[i], what);
        snprintf(what, sizeof what, "r%d.live.%s-dlq", i, T.tag);
        tap_owned(ldlq[i], sizeof ldlq[i], what);
        itest_dead_letters(c[i], work[i], dlq[i], 3 + i, 0);
        itest_dead_letters(c[i], live[i], ldlq[i], 0, 0);
        assert_true(mt_wait_queue_field(vh[i], dlq[i], "messages", "#", 3 + i, 30000));
    }
    char env_vhosts[128], env_dlq[128];
    snprintf(env_vhosts, sizeof env_vhosts, "REAPER_BROKER_VHOSTS=%s", vh_b);
    snprintf(env_dlq, sizeof env_dlq, "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=\\.%s-dlq$", T.tag);
    char *env[] = {env_vhosts, env_dlq, "REAPER_REAP_INTERVAL_SECONDS=2", NULL};
    T.reaperd = tap_daemon_start(
        (itest_daemon_opts){.env = env, .ready = {ITEST_READY_BROKER, ITEST_READY_PASS}});
    second = tap_daemon_start(
        (itest_daemon_opts){.env = env, .ready = {ITEST_READY_BROKER, ITEST_READY_PASS}});
    for (int i = 0; i < 2; i++) {
        char dlx[300];
        snprintf(dlx, sizeof dlx, "%s.dlx", live[i]);
        ITEST_POLL(tap_bound_to(vh[i], dlx), 30000);
        assert_true(tap_bound_to(vh[i], dlx));
    }
    for (int i = 0; i < 2; i++) itest_dead_letters(c[i], live[i], ldlq[i], 5, 0);
    for (int i = 0; i < 2; i++) {
        ITEST_POLL(parked_once(work[i]) == 3 + i && parked_once(live[i]) == 5, 30000);
        if (parked_once(work[i]) != 3 + i || parked_once(live[i]) != 5) {
            fprintf(stderr, "%s\n----\n%s", T.reaperd->log, second->log);
            fail_msg("vhost %s: backlog %ld of %d, live %ld of 5", vh[i], parked_once(work[i]),
                     3 + i, parked_once(live[i]));
        }
    }
    /* A few more sweeps: still once each, and one holder per vhost. */
    mt_sleep_ms(4500);
    rp_child_drain(T.reaperd, 50);
    rp_child_drain(second, 50);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(parked_once(work[i]), 3 + i);
        assert_int_equal(parked_once(live[i]), 5);
        assert_int_equal(turns_held(vh[i]), 1);
        char v[96];
        snprintf(v, sizeof v, "\"vhost\":\"%s\"", vh[i]);
        int taken = lines_with(T.reaperd->log, "sweep turn taken", v) +
                    lines_with(second->log, "sweep turn taken", v);
        if (taken != 1) {
            fprintf(stderr, "%s\n----\n%s", T.reaperd->log, second->log);
            fail_msg("vhost %s: the sweep turn was taken %d times", vh[i], taken);
        }
    }
    /* Whoever holds no turn reaps leases only. */
    int lease_only = lines_with(T.reaperd->log, "pass finished", "another replica sweeps") +
                     lines_with(second->log, "pass finished", "another replica sweeps");
    fprintf(stderr, "# lease reaps while the other replica swept: %d\n", lease_only);
    for (int i = 0; i < 2; i++) mt_amqp_close(c[i]);
    assert_int_equal(itest_daemon_stop_sig(second, SIGTERM), 0);
    second = NULL;
    tap_stop_reaperd(SIGTERM);
}

static int setup(void **state) {
    (void)state;
    if (tap_world_setup("vhsweep") != 0) return -1;
    snprintf(vh_b, sizeof vh_b, "%s-sb", T.tag);
    snprintf(vh_c, sizeof vh_c, "%s-sc", T.tag);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.reaperd) tap_stop_reaperd(SIGKILL);
    if (second) itest_daemon_stop_sig(second, SIGKILL);
    mt_vhost_delete(vh_b);
    mt_vhost_delete(vh_c);
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_lists_the_watched_vhosts),
        cmocka_unit_test(test_vhost_tap_in_readyz),
        cmocka_unit_test(test_two_replicas_two_vhosts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
