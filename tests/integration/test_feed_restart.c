/*
 * The daemon's events feed across a broker restart with events in flight
 * (issue #4: a publish that fails is retried, never blocks the loop, never
 * loses the ledger row). A subscriber's durable queue bound to `#` outlives
 * the restart; reaperd reaps one batch of leases as the broker goes down
 * and a second batch, on its lease deadline, while the broker is away
 * (the test prints how long before that deadline the stop was done).
 * Afterwards every ledger row has arrived at least once (counted by
 * message_id); duplicates are allowed only across the reconnect and are
 * printed. And reaperd --once losing its feed connection mid-pass (the
 * broker closes every connection): its end-of-pass retry sends what was
 * not confirmed. Stops the broker and closes every connection on it:
 * RUN_SERIAL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "feed_common.h"
#include "itest.h"
#include "test_daemon.h"

#define BATCH 1500

static PGconn *pg;
static char schema[64];

static void test_feed_across_broker_restart(void **state) {
    (void)state;
    char exchange[128], queue[128], control[128];
    snprintf(exchange, sizeof exchange, "vibey.reap.events.itest.restart.%d", (int)getpid());
    snprintf(queue, sizeof queue, "itest.feed.restart.%d", (int)getpid());
    snprintf(control, sizeof control, "vibey.reap.control.itest.restart.%d", (int)getpid());
    char env_exchange[192], env_owned[128];
    itest_env_owned(env_owned, sizeof env_owned, "fr"); /* no queue of other tests */
    snprintf(env_exchange, sizeof env_exchange, "REAPER_BROKER_EVENTS_EXCHANGE=%s", exchange);
    char *env[] = {env_exchange, env_owned, NULL};
    assert_int_equal(itest_migrate(schema), 0);

    /* Batch B expires in 15 s: the daemon's first pass arms its lease
     * deadline, and it is reaped then, with the broker away. */
    long long t_b = itest_mono_ms() + 15000;
    itest_sql(
        pg, schema,
        "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner, "
        "lease_expires_at) SELECT 'feedrestart', 'k', 'leased', 1, 7, 'w', now() + interval '15 "
        "seconds' FROM generate_series(1, %d)",
        BATCH);
    feed_sub sub;
    feed_sub_open(&sub, exchange, queue); /* durable: it outlives the restart */
    rp_child *d =
        itest_daemon_start(&(itest_daemon_opts){.schema = schema, .control = control, .env = env});

    /* Batch A expired now: reaped on request, as the broker goes down. */
    itest_sql(
        pg, schema,
        "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner, "
        "lease_expires_at) SELECT 'feedrestart', 'k', 'leased', 1, 7, 'w', now() - interval '1 "
        "minute' FROM generate_series(1, %d)",
        BATCH);
    amqp_connection_state_t c = itest_amqp_connect();
    const char *reap = "{\"v\":1,\"op\":\"reap\",\"project\":\"feedrestart\"}";
    itest_reply r;
    /* No wait for the reply: the broker goes down while the pass runs and
     * publishes (the reply is lost with it). */
    (void)itest_request(c, control, "application/json", reap, strlen(reap), NULL, false, "r1",
                        &r, 1);
    itest_reply_free(&r);
    assert_true(rp_child_wait_for(d, "\"msg\":\"work reaped\"", 10000));
    itest_amqp_close(c);
    feed_sub_close(&sub);
    size_t mark = strlen(d->log);
    assert_int_equal(itest_services("stop", itest_broker_service()), 0);
    long long stopped = itest_mono_ms();
    fprintf(stderr, "broker stopped %lld ms before batch B's deadline\n", t_b - stopped);
    assert_true(rp_child_wait_for(d, "broker unreachable", 30000));
    /* Batch B is reaped while the broker is away. */
    bool b_done = false;
    for (int i = 0; i < 400 && !b_done; i++) {
        rp_child_drain(d, 100);
        b_done = strcmp(itest_sql(pg, schema, "SELECT count(*) FROM job WHERE state = 'ready'"),
                        "3000") == 0;
    }
    assert_true(b_done);
    assert_false(d->exited);
    assert_int_equal(itest_services("start", itest_broker_service()), 0);
    bool back = false;
    for (int i = 0; i < 120 && !back; i++) {
        rp_child_drain(d, 500);
        back = strstr(d->log + mark, "\"msg\":\"broker connected\"") != NULL;
    }
    assert_true(back);

    char **ids, **kinds;
    size_t n = feed_ledger(pg, schema, &ids, &kinds);
    assert_true(n >= 2 * BATCH);
    feed_sub_reconnect(&sub);
    feed_msgs got = {0};
    feed_sub_read(&sub, &got, n, 5000, 60000);
    size_t missing = 0, dup = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = feed_msgs_count(&got, ids[i]);
        if (k == 0) {
            missing++;
            if (missing < 10) fprintf(stderr, "never arrived: %s\n", ids[i]);
        }
        if (k > 1) dup += k - 1;
    }
    /* Nothing that is not on the ledger. */
    assert_int_equal(feed_msgs_distinct(&got), n - missing);
    fprintf(stderr,
            "ledger rows %zu, messages %zu, distinct %zu, missing %zu, duplicates %zu "
            "(allowed across the reconnect)\n",
            n, got.n, feed_msgs_distinct(&got), missing, dup);
    assert_int_equal(missing, 0);
    assert_null(strstr(d->log, "\"outcome\":\"dropped\""));
    feed_msgs_free(&got);
    feed_ids_free(ids, n);
    feed_ids_free(kinds, n);

    assert_int_equal(itest_daemon_stop(d), 0);
    feed_sub_delete(&sub);
    c = itest_amqp_connect();
    amqp_queue_delete(c, 1, amqp_cstring_bytes(control), 0, 0);
    itest_amqp_close(c);
}

static void ctl(const char *args) { assert_int_equal(itest_broker_ctl(args), 0); }

/* reaperd --once loses its feed connection in the middle of a pass (the
 * broker closes every connection): the events after it wait, the end of
 * the pass connects again and sends what was not confirmed, and every
 * ledger row arrives at least once; no note, exit 0. */
static void test_once_connection_closed_mid_pass(void **state) {
    (void)state;
    char schema2[96], exchange[128], queue[128];
    snprintf(schema2, sizeof schema2, "%s_mid", schema);
    snprintf(exchange, sizeof exchange, "vibey.reap.events.itest.mid.%d", (int)getpid());
    snprintf(queue, sizeof queue, "itest.feed.mid.%d", (int)getpid());
    char env_exchange[192];
    snprintf(env_exchange, sizeof env_exchange, "REAPER_BROKER_EVENTS_EXCHANGE=%s", exchange);
    char *env[] = {env_exchange, NULL};
    assert_int_equal(itest_migrate(schema2), 0);
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.job (project_id, kind, state, attempts, max_attempts, lease_owner, "
             "lease_expires_at) SELECT 'feedmid', 'k', 'leased', 1, 7, 'w', now() - interval '1 "
             "minute' FROM generate_series(1, 10000)",
             schema2);
    PQclear(PQexec(pg, sql));
    feed_sub sub;
    feed_sub_open(&sub, exchange, queue);
    char *args[] = {"--once", "--json", "--project", "feedmid", NULL};
    rp_child *o = itest_daemon_start(
        &(itest_daemon_opts){.schema = schema2, .env = env, .args = args, .no_wait = true});
    assert_true(rp_child_wait_for(o, "\"msg\":\"work reaped\"", 30000));
    ctl("close_all_connections itest-feed-mid-pass");
    int rc = rp_child_wait_exit(o, 120000);
    rp_child_drain(o, 100);
    assert_int_equal(rc, 0);
    const char *line = strstr(o->log, "\"msg\":\"ledger events published to the events exchange\"");
    if (line == NULL) fprintf(stderr, "%s\n", o->log + (strlen(o->log) > 2000 ? strlen(o->log) - 2000 : 0));
    assert_non_null(line);
    const char *r = strstr(line, "\"retried\":\"");
    assert_non_null(r);
    long retried = atol(r + strlen("\"retried\":\""));
    fprintf(stderr, "once: connection closed mid-pass, %ld events sent again at the end\n",
            retried);
    assert_true(retried > 0);
    assert_null(strstr(o->log, "not published"));
    rp_child_free(o);

    char **ids, **kinds;
    size_t n = feed_ledger(pg, schema2, &ids, &kinds);
    assert_int_equal(n, 10000);
    feed_sub_reconnect(&sub);
    feed_msgs got = {0};
    feed_sub_read(&sub, &got, n, 3000, 60000);
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        if (feed_msgs_count(&got, ids[i]) == 0) missing++;
    fprintf(stderr, "ledger rows %zu, messages %zu, distinct %zu, missing %zu\n", n, got.n,
            feed_msgs_distinct(&got), missing);
    assert_int_equal(missing, 0);
    assert_int_equal(feed_msgs_distinct(&got), n);
    feed_msgs_free(&got);
    feed_ids_free(ids, n);
    feed_ids_free(kinds, n);
    feed_sub_delete(&sub);
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema2);
    PQclear(PQexec(pg, sql));
}

static int group_setup(void **state) {
    (void)state;
    pg = itest_pg_connect();
    snprintf(schema, sizeof schema, "itest_feedrs_%d", (int)getpid());
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    /* Whatever happened, the broker is left running for the next test. */
    assert_int_equal(itest_services("start", itest_broker_service()), 0);
    char sql[160];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    PQclear(PQexec(pg, sql));
    PQfinish(pg);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed_across_broker_restart),
        cmocka_unit_test(test_once_connection_closed_mid_pass),
    };
    return cmocka_run_group_tests_name("feed_restart", tests, group_setup, group_teardown);
}
