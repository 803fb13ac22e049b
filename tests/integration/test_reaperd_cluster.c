/*
 * reaperd on a 3-node RabbitMQ cluster (label `cluster`: scripts/test
 * runs it with `scripts/services env cluster`, three 3.10 nodes, and
 * `env cluster4`, three 4.0 nodes, whose broker.url and
 * broker.management_url list the three nodes, node 1 first).
 *
 *  1. A dead-letter storm while the node reaperd is connected to is killed
 *     with SIGKILL: the storm (RP_CLUSTER_STORM dead letters, 20,000 unless
 *     set) is made through node 2 (its source and dead-letter queues live
 *     there) and waits in the tap queue, a quorum queue reaperd declared
 *     through node 1 (so its leader starts there) with
 *     x-quorum-initial-group-size 3; reaperd starts, connected to node 1,
 *     and once it has parked a tenth of the storm node 1's Erlang VM is
 *     killed with SIGKILL. reaperd reconnects to another host of its list,
 *     and every dead letter is parked exactly once, none lost (rows against
 *     the messages published; the dead-letter queue keeps every copy); node
 *     1 is started again and rejoins.
 *  2. A consumer cancelled on node 3 while reaperd is connected to node 1
 *     is judged (HOLDER_GONE surfaced, under a second after the cancel):
 *     the events of every node reach reaperd.
 *
 * The test's own AMQP and HTTP clients talk to one node at a time (the
 * helpers take one URL: REAPER_BROKER_URL is set to that node's); reaperd
 * gets the whole list.
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

#include <jansson.h>

#include "rp_hostlist.h"
#include "tap_common.h"
#include "test_mgmt_common.h"

static char amqp_list[1024], mgmt_list[1024];
static char env_amqp[1100], env_mgmt[1100];

/* Points the test's own helpers at node n (1..3) of the lists. */
static void use_node(int n) {
    char one[1024];
    assert_true(rp_hostlist_pick(amqp_list, (size_t)n - 1, one, sizeof one));
    setenv("REAPER_BROKER_URL", one, 1);
    assert_true(rp_hostlist_pick(mgmt_list, (size_t)n - 1, one, sizeof one));
    setenv("REAPER_BROKER_MANAGEMENT_URL", one, 1);
}

/* "127.0.0.1:PORT" of node n's AMQP listener, into buf. */
static const char *node_hostport(int n, char *buf, size_t len) {
    char one[1024];
    assert_true(rp_hostlist_pick(amqp_list, (size_t)n - 1, one, sizeof one));
    const char *at = strchr(one, '@');
    assert_non_null(at);
    snprintf(buf, len, "%.*s", (int)strcspn(at + 1, "/"), at + 1);
    return buf;
}

/* The log line that starts at p (a "broker connected" found in the log),
 * in a static buffer. */
static const char *line_at(const char *p) {
    static char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(p, "\n"), p);
    return line;
}

/* A reaperd given the whole host lists (node 1 first). */
static void start_reaperd(void) {
    if (T.reaperd) tap_stop_reaperd(SIGTERM);
    char *env[] = {env_amqp, env_mgmt, "REAPER_REAP_INTERVAL_SECONDS=3600",
                   "REAPER_CONTROL_REAP_RATE_SECONDS=0", NULL};
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});
}

/* scripts/services VERB <the cluster under test: cluster or cluster4> REST. */
static int services(const char *verb, const char *rest) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services %s %s %s >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"), verb, itest_broker_service(), rest);
    return system(cmd);
}

static long node_pid(int n) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services pid %s %d", itest_env("REAPER_SOURCE_DIR"),
             itest_broker_service(), n);
    FILE *f = popen(cmd, "r");
    long pid = -1;
    if (f == NULL) return -1;
    if (fscanf(f, "%ld", &pid) != 1) pid = -1;
    pclose(f);
    return pid;
}

static long parked(const char *prefix) {
    return tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '%s-%%'",
                    prefix);
}

static void assert_once(const char *prefix, long want) {
    assert_int_equal(parked(prefix), want);
    assert_int_equal(tap_sqln("SELECT count(DISTINCT body) FROM dead_letter WHERE "
                              "encode(body, 'escape') LIKE '%s-%%'",
                              prefix),
                     want);
    long rows = tap_sqln("SELECT count(*) FROM dead_letter");
    assert_int_equal(tap_sqln("SELECT count(*) FROM job WHERE kind = 'bus.dead_letter'"), rows);
    assert_int_equal(tap_sqln("SELECT count(*) FROM gate WHERE kind = 'bus_dead_lettered'"), rows);
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE payload->>'condition' = "
                              "'DEAD_LETTER' AND payload->>'action' = 'PARKED'"),
                     rows);
    assert_int_equal(tap_sqln("SELECT count(*) FROM (SELECT job_id FROM dead_letter GROUP BY "
                              "job_id HAVING count(*) > 1) x"),
                     0);
}

/* The tap queue as node 2's management API shows it. */
static void show_tap(const char *when) {
    json_t *q = mt_queue("/", T.tap);
    if (q == NULL) {
        fprintf(stderr, "# tap queue %s: not readable\n", when);
        return;
    }
    json_t *members = json_object_get(q, "members");
    char *m = members ? json_dumps(members, JSON_COMPACT) : NULL;
    json_t *args = json_object_get(q, "arguments");
    char *a = args ? json_dumps(args, JSON_COMPACT) : NULL;
    fprintf(stderr, "# tap queue %s: type %s, leader %s, members %s, arguments %s\n", when,
            json_string_value(json_object_get(q, "type")),
            json_string_value(json_object_get(q, "leader")), m ? m : "?", a ? a : "?");
    free(m);
    free(a);
    json_decref(q);
}

static int setup(void **state) {
    (void)state;
    snprintf(amqp_list, sizeof amqp_list, "%s", itest_env("REAPER_BROKER_URL"));
    snprintf(mgmt_list, sizeof mgmt_list, "%s", itest_env("REAPER_BROKER_MANAGEMENT_URL"));
    if (rp_hostlist_count(amqp_list) != 3 || rp_hostlist_count(mgmt_list) != 3) {
        fprintf(stderr, "test_reaperd_cluster: REAPER_BROKER_URL and _MANAGEMENT_URL must list "
                        "the 3 nodes: run it through scripts/test (scripts/services env cluster)\n");
        return -1;
    }
    snprintf(env_amqp, sizeof env_amqp, "REAPER_BROKER_URL=%s", amqp_list);
    snprintf(env_mgmt, sizeof env_mgmt, "REAPER_BROKER_MANAGEMENT_URL=%s", mgmt_list);
    use_node(2);
    return tap_world_setup("cl");
}

static int teardown(void **state) {
    (void)state;
    use_node(2);
    /* A failed storm test may have left node 1 killed. */
    if (services("status", "") != 0)
        (void)services("start", "1");
    return tap_world_teardown();
}

static void test_storm_while_connected_node_killed(void **state) {
    (void)state;
    const char *ns = getenv("RP_CLUSTER_STORM");
    long n = ns && *ns ? strtol(ns, NULL, 10) : 20000;
    assert_true(n >= 100);
    use_node(2);
    /* The storm's source and dead-letter queue, through node 2; reaperd
     * declares the tap through node 1 (its first host) and binds it to the
     * source's dead-letter exchange, then stops. */
    char work[128], dlq[128];
    tap_dead_letter_source("storm", 0, work, dlq, sizeof work);
    start_reaperd();
    show_tap("declared");
    json_t *q = mt_queue("/", T.tap);
    assert_non_null(q);
    assert_string_equal(json_string_value(json_object_get(q, "type")), "quorum");
    json_t *gs = json_object_get(json_object_get(q, "arguments"), "x-quorum-initial-group-size");
    assert_int_equal(json_integer_value(gs), 3);
    assert_int_equal(json_array_size(json_object_get(q, "members")), 3);
    json_decref(q);
    /* The control queue too: a quorum queue, so that a node's loss does
     * not take it away. */
    q = mt_queue("/", T.control);
    assert_non_null(q);
    assert_string_equal(json_string_value(json_object_get(q, "type")), "quorum");
    json_decref(q);
    tap_stop_reaperd(SIGTERM);

    /* The storm waits in the tap (3 replicas) before reaperd starts again. */
    long long t0 = itest_mono_ms();
    tap_publish(work, "c", (int)n);
    for (int i = 0; i < 1200 && (tap_depth(T.tap) < n || tap_depth(dlq) < n); i++)
        usleep(50 * 1000);
    assert_int_equal(tap_depth(T.tap), n);
    assert_int_equal(tap_depth(dlq), n);
    fprintf(stderr, "# %ld dead letters in the tap after %lld ms\n", n, itest_mono_ms() - t0);

    long pid = node_pid(1); /* before: the script takes a while */
    assert_true(pid > 0);
    start_reaperd();
    const char *conn = strstr(T.reaperd->log, "\"msg\":\"broker connected\"");
    assert_non_null(conn);
    conn = line_at(conn);
    char node1[64];
    node_hostport(1, node1, sizeof node1);
    fprintf(stderr, "# reaperd connected: %.160s\n", conn);
    assert_non_null(strstr(conn, node1));

    long long t1 = itest_mono_ms();
    for (int i = 0; i < 30000 && parked("c") < n / 10; i++) usleep(2 * 1000);
    size_t log_at_kill = T.reaperd->log_len;
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    long at_kill = parked("c");
    fprintf(stderr, "# node 1 (pid %ld) killed with SIGKILL at %ld of %ld parked\n", pid, at_kill,
            n);
    assert_true(at_kill < n);

    tap_wait_parked("c", n, 180000);
    long long took = itest_mono_ms() - t1;
    fprintf(stderr, "# all %ld parked %lld ms after reaperd started (%.0f parks/s overall)\n", n,
            took, took > 0 ? n * 1000.0 / (double)took : 0.0);
    const char *again = NULL;
    for (int i = 0; i < 300 && again == NULL; i++) {
        again = strstr(T.reaperd->log + log_at_kill, "\"msg\":\"broker connected\"");
        if (again == NULL) rp_child_drain(T.reaperd, 100);
    }
    if (again == NULL) fprintf(stderr, "reaperd's log since the kill:\n%s\n", T.reaperd->log + log_at_kill);
    assert_non_null(again);
    again = line_at(again);
    fprintf(stderr, "# reaperd reconnected: %.160s\n", again);
    assert_null(strstr(again, node1));
    show_tap("after the kill");
    assert_once("c", n);
    assert_int_equal(tap_depth(dlq), n);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_stop_reaperd(SIGTERM);
    /* Node 1 again: it rejoins, and the cluster is whole for what follows. */
    long long t2 = itest_mono_ms();
    assert_int_equal(services("start", "1"), 0);
    fprintf(stderr, "# node 1 back in %lld ms\n", itest_mono_ms() - t2);
    assert_int_equal(services("status", ""), 0);
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

static long wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void test_cancel_on_node3_judged(void **state) {
    (void)state;
    use_node(2);
    start_reaperd();
    const char *conn = strstr(T.reaperd->log, "\"msg\":\"broker connected\"");
    assert_non_null(conn);
    conn = line_at(conn);
    fprintf(stderr, "# reaperd connected: %.160s\n", conn);
    char node1[64];
    node_hostport(1, node1, sizeof node1);
    assert_non_null(strstr(conn, node1));

    /* The consumer: on node 3, an owned classic queue there, 3 unacked. */
    use_node(3);
    amqp_connection_state_t c = itest_amqp_connect_plain();
    char q[128], object[200];
    tap_owned(q, sizeof q, "held");
    snprintf(object, sizeof object, "queue:/:%s", q);
    amqp_queue_declare(c, 1, amqp_cstring_bytes(q), 0, 1, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(q), 0,
                                            0, NULL, amqp_cstring_bytes("work")),
                         AMQP_STATUS_OK);
    amqp_channel_open(c, 2);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_qos(c, 2, 0, 10, 0);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(c, 2, amqp_cstring_bytes(q), amqp_cstring_bytes("itest.victim"), 0, 0, 0,
                       amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    for (int i = 0; i < 3; i++) {
        amqp_envelope_t env;
        struct timeval tv = {10, 0};
        amqp_maybe_release_buffers(c);
        assert_int_equal(amqp_consume_message(c, &env, &tv, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_destroy_envelope(&env);
    }
    json_t *qj = mt_queue("/", q);
    assert_non_null(qj);
    fprintf(stderr, "# the held queue lives on %s\n", json_string_value(json_object_get(qj, "node")));
    assert_non_null(strstr(json_string_value(json_object_get(qj, "node")), "-3@"));
    json_decref(qj);
    assert_true(mt_wait_queue_field("/", q, "messages_unacknowledged", "#", 3, 30000));
    assert_true(mt_wait_queue_field("/", q, "consumers", "#", 1, 30000));
    rp_child_drain(T.reaperd, 200);

    long t0 = wall_ms();
    amqp_basic_cancel(c, 2, amqp_cstring_bytes("itest.victim"));
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    long at = -1;
    for (int i = 0; i < 100 && at < 0; i++) {
        at = tap_sqln("SELECT coalesce(min((extract(epoch FROM at) * 1000)::bigint), -1) FROM "
                      "ledger WHERE payload->>'object' = '%s' AND payload->>'condition' = "
                      "'HOLDER_GONE' AND payload->>'action' = 'SURFACED'",
                      object);
        if (at < 0) rp_child_drain(T.reaperd, 50);
    }
    if (at < 0) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_true(at > 0);
    fprintf(stderr, "# HOLDER_GONE on the ledger %ld ms after the cancel on node 3\n", at - t0);
    rp_child_drain(T.reaperd, 100);
    for (const char *l = T.reaperd->log; (l = strstr(l, "\"msg\":\"event check\"")) != NULL; l++)
        if (strstr(line_at(l), q)) fprintf(stderr, "# %s\n", line_at(l));
    assert_true(at - t0 >= 0);
    assert_true(at - t0 < 1000);
    amqp_channel_close(c, 2, AMQP_REPLY_SUCCESS);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
    itest_amqp_close(c);
    use_node(2);
    tap_stop_reaperd(SIGTERM);
}

/* A control queue made earlier as a classic queue (by a reaper given one
 * host): a reaperd given the host list is refused the quorum declaration
 * (406), warns, and uses the queue as it is: it answers a request on it. */
static void test_classic_control_queue_kept(void **state) {
    (void)state;
    use_node(2);
    char ctl[128], env_ctl[200];
    tap_plain(ctl, sizeof ctl, "classic-control");
    snprintf(env_ctl, sizeof env_ctl, "REAPER_BROKER_CONTROL_QUEUE=%s", ctl);
    amqp_queue_declare(T.amqp, 1, amqp_cstring_bytes(ctl), 0, 1, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(T.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    char *env[] = {env_amqp, env_mgmt, env_ctl, "REAPER_REAP_INTERVAL_SECONDS=3600", NULL};
    rp_child *r = tap_daemon_start((itest_daemon_opts){.env = env});
    assert_non_null(strstr(r->log, "the control queue exists as a classic queue"));
    json_t *q = mt_queue("/", ctl);
    assert_non_null(q);
    assert_string_equal(json_string_value(json_object_get(q, "type")), "classic");
    json_decref(q);
    amqp_connection_state_t c = itest_amqp_connect();
    itest_reply rep;
    const char *req = "{\"v\":1,\"op\":\"status\"}";
    assert_int_equal(itest_request(c, ctl, "application/json", req, strlen(req), NULL, true,
                                   "cl-status", &rep, 30000),
                     0);
    assert_non_null(strstr(rep.body, "\"ok\":true"));
    itest_reply_free(&rep);
    itest_amqp_close(c);
    assert_int_equal(itest_daemon_stop(r), 0);
    amqp_queue_delete(T.amqp, 1, amqp_cstring_bytes(ctl), 0, 0);
    assert_int_equal(amqp_get_rpc_reply(T.amqp).reply_type, AMQP_RESPONSE_NORMAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classic_control_queue_kept),
        cmocka_unit_test(test_cancel_on_node3_judged),
        cmocka_unit_test(test_storm_while_connected_node_killed),
    };
    return cmocka_run_group_tests_name("reaperd_cluster", tests, setup, teardown);
}
