/*
 * reaperd on a 3-node RabbitMQ cluster (label `cluster`: scripts/test
 * runs it with `scripts/services env cluster`, three 3.10 nodes, and
 * `env cluster4`, three 4.0 nodes, whose broker.url and
 * broker.management_url list the three nodes, node 1 first).
 *
 *  1. A dead-letter storm while the node reaperd is connected to is killed
 *     with SIGKILL: the storm (RP_CLUSTER_STORM dead letters, 8,000 unless
 *     set: twice what the tap holds unacknowledged, 4,000 in CI's runs, so
 *     that at the kill deliveries are in flight and more wait on the
 *     broker) is made through node 2 (its source and dead-letter queues live
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
 *  3. The tap queue's leader node stopped mid-storm: the tap declared
 *     through node 3 (its leader there), reaperd consuming through node 1;
 *     once a tenth is parked the test holds the next parks uncommitted (a
 *     SHARE lock on dead_letter, which reaperd's inserts wait for), node 3
 *     is stopped (rabbitmqctl stop), the parks go on under the new leader.
 *  4. A node restarted mid-storm: the tap's leader again on node 3,
 *     reaperd's node 1 stopped with rabbitmqctl stop_app while parks are
 *     held uncommitted (its connections are closed: the tap reconnects to
 *     another node and is given the held deliveries again while the first
 *     delivery's parks still wait to commit); the parks go on through
 *     node 2 to half the storm, are held again while node 1 is started
 *     again (start_app) and rejoins, and the other half is parked with it
 *     back; reaperd parks what comes after.
 *     In 3 and 4, none acked before its commit: while the parks are held,
 *     before and after the node's stop, the tap still holds every dead
 *     letter not committed (its messages, ready and unacked, as the
 *     management API counts them, >= the storm - the rows), some delivered
 *     and unacked. Every dead letter is parked exactly once, none lost, as
 *     in 1. Their storm: RP_CLUSTER_STORM_EVENTS dead letters, 10,000
 *     unless set (the node's stop and start take most of their time).
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
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "rp_hostlist.h"
#include "tap_common.h"
#include "test_mgmt_common.h"

static char amqp_list[1024], mgmt_list[1024];
/* The session holding the parks (hold_parks), released by release_parks
 * or, after a failure, by storm_teardown. */
static PGconn *held;
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

/* url's host list turned so that node `first` (1..3) comes first, then the
 * others in order, into out. */
static void rotate_hosts(const char *url, int first, char *out, size_t len) {
    const char *a = strstr(url, "://");
    assert_non_null(a);
    a += 3;
    const char *at = strchr(a, '@');
    const char *slash = strchr(a, '/');
    if (at != NULL && (slash == NULL || at < slash)) a = at + 1;
    size_t alen = slash ? (size_t)(slash - a) : strlen(a);
    char hosts[3][128];
    const char *p = a;
    for (int i = 0; i < 3; i++) {
        size_t k = strcspn(p, ",/");
        if (p + k > a + alen) k = (size_t)(a + alen - p);
        snprintf(hosts[i], sizeof hosts[i], "%.*s", (int)k, p);
        p += k + 1;
    }
    snprintf(out, len, "%.*s%s,%s,%s%s", (int)(a - url), url, hosts[first - 1],
             hosts[first % 3], hosts[(first + 1) % 3], slash ? slash : "");
}

/* A reaperd given the host lists turned to start at node `first`, parks
 * allowed to wait for the test's lock on dead_letter (hold_parks) well past
 * the default lock_timeout. */
static void start_reaperd_first(int first) {
    if (T.reaperd) tap_stop_reaperd(SIGTERM);
    static char amqp_env[1100], mgmt_env[1100];
    char list[1024];
    rotate_hosts(amqp_list, first, list, sizeof list);
    snprintf(amqp_env, sizeof amqp_env, "REAPER_BROKER_URL=%s", list);
    rotate_hosts(mgmt_list, first, list, sizeof list);
    snprintf(mgmt_env, sizeof mgmt_env, "REAPER_BROKER_MANAGEMENT_URL=%s", list);
    char *env[] = {amqp_env,
                   mgmt_env,
                   "REAPER_REAP_INTERVAL_SECONDS=3600",
                   "REAPER_CONTROL_REAP_RATE_SECONDS=0",
                   "REAPER_STORE_LOCK_TIMEOUT_MS=300000",
                   "REAPER_STORE_STATEMENT_TIMEOUT_MS=300000",
                   NULL};
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

/* A failed storm test may have left a node killed, stopped, or with its
 * RabbitMQ application stopped: the three nodes running again. */
static void cluster_whole(void) {
    if (services("status", "") != 0) {
        for (int n = 1; n <= 3; n++) {
            char rest[32];
            snprintf(rest, sizeof rest, "%d start_app", n);
            (void)services("ctl", rest);
            snprintf(rest, sizeof rest, "%d", n);
            (void)services("start", rest);
        }
    }
}

static int teardown(void **state) {
    (void)state;
    use_node(2);
    cluster_whole();
    return tap_world_teardown();
}

/* After each storm test of 3 and 4, whatever happened: the parks let go,
 * reaperd stopped, the cluster whole, the tap empty for the next. */
static int storm_teardown(void **state) {
    (void)state;
    if (held) PQfinish(held); /* its transaction and lock end with it */
    held = NULL;
    if (T.reaperd) tap_stop_reaperd(SIGKILL);
    use_node(2);
    cluster_whole();
    amqp_queue_delete(T.amqp, 1, amqp_cstring_bytes(T.tap), 0, 0);
    if (amqp_get_rpc_reply(T.amqp).reply_type != AMQP_RESPONSE_NORMAL) {
        itest_amqp_close(T.amqp);
        T.amqp = itest_amqp_connect();
        amqp_channel_open(T.amqp, 2);
    }
    return 0;
}

static void test_storm_while_connected_node_killed(void **state) {
    (void)state;
    const char *ns = getenv("RP_CLUSTER_STORM");
    long n = ns && *ns ? strtol(ns, NULL, 10) : 8000;
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

/* ---- storms with a node stopped or restarted (3 and 4) ---------------------- */

static long storm_size(void) {
    const char *ns = getenv("RP_CLUSTER_STORM_EVENTS");
    long n = ns && *ns ? strtol(ns, NULL, 10) : 10000;
    assert_true(n >= 100);
    return n;
}

/* scripts/services VERB <cluster> REST in a child of its own, so that the
 * test drains reaperd's log and checks the tap while it runs. */
static pid_t services_bg(const char *verb, const char *rest) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services %s %s %s >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"), verb, itest_broker_service(), rest);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits for the services child, draining reaperd's log; its exit status. */
static int services_wait(pid_t pid) {
    long long until = itest_mono_ms() + 240000;
    int st = 0;
    for (;;) {
        pid_t got = waitpid(pid, &st, WNOHANG);
        assert_true(got >= 0);
        if (got == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        assert_true(itest_mono_ms() < until);
        if (T.reaperd) rp_child_drain(T.reaperd, 200);
        else usleep(200 * 1000);
    }
}

/* Waits until all n of prefix are parked, then that they were parked once
 * each and the broker kept every copy. */
static void wait_storm_parked(const char *prefix, long n, const char *dlq) {
    tap_wait_parked(prefix, n, 240000);
    assert_once(prefix, n);
    assert_int_equal(tap_depth(dlq), n);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
}

/* n dead letters of prefix made through node 2 and waiting in the tap; the
 * management API counts them (so that its later counts are of later
 * moments). */
static void fill_tap(const char *work, const char *dlq, const char *prefix, long n) {
    long long t0 = itest_mono_ms();
    tap_publish(work, prefix, (int)n);
    for (int i = 0; i < 1200 && (tap_depth(T.tap) < n || tap_depth(dlq) < n); i++)
        usleep(50 * 1000);
    assert_int_equal(tap_depth(T.tap), n);
    assert_int_equal(tap_depth(dlq), n);
    assert_true(mt_wait_queue_field("/", T.tap, "messages", "#", n, 30000));
    fprintf(stderr, "# %ld dead letters in the tap after %lld ms\n", n, itest_mono_ms() - t0);
}

/* The session holding the parks (hold_parks), released by release_parks
 * or, after a failure, by the teardown. */
static PGconn *held;

/* The parks held uncommitted: a SHARE lock on dead_letter (reaperd's
 * inserts wait for it), taken once a park waits for it. */
static PGconn *hold_parks(void) {
    PGconn *pg = held = itest_pg_connect();
    char sql[256];
    snprintf(sql, sizeof sql, "LOCK TABLE %s.dead_letter IN SHARE MODE", T.schema);
    PQclear(PQexec(pg, "BEGIN"));
    PGresult *r = PQexec(pg, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    assert_true(itest_pg_wait_lock_waiters(1, 30000));
    return pg;
}

static void release_parks(PGconn *pg) {
    held = NULL;
    PGresult *r = PQexec(pg, "COMMIT");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(pg);
}

/* While parks are held: nothing was acked before its commit. The broker's
 * count of the tap's messages (ready and unacked, the management API's,
 * refreshed every few seconds, so of a moment before) is never below the
 * storm minus the rows committed (read after, and steady while held); the
 * count waited for is one made after reaperd took deliveries (some
 * unacked). A batch is acked as a whole after its last commit, so the tap
 * may hold more than that (committed, not yet acked): never less. */
static void assert_held(const char *when, long n, long rows) {
    json_t *q = NULL;
    long messages = -1, unacked = -1;
    for (int waited = 0; waited <= 30000; waited += 200) {
        json_decref(q);
        q = mt_queue("/", T.tap);
        json_t *m = q ? json_object_get(q, "messages") : NULL;
        json_t *u = q ? json_object_get(q, "messages_unacknowledged") : NULL;
        messages = json_is_integer(m) ? (long)json_integer_value(m) : -1;
        unacked = json_is_integer(u) ? (long)json_integer_value(u) : -1;
        if (messages >= 0 && messages < n && unacked > 0) break;
        rp_child_drain(T.reaperd, 200);
    }
    fprintf(stderr, "# %s: %ld committed, the tap holds %ld (%ld unacked), leader %s\n", when, rows,
            messages, unacked, q ? json_string_value(json_object_get(q, "leader")) : "?");
    json_decref(q);
    if (messages < n - rows)
        fail_msg("%ld dead letters gone from the tap, only %ld committed", n - messages, rows);
    assert_true(unacked > 0);
}

/* The first log line with `what` from reaperd's log offset `from` on,
 * waiting up to ms; NULL when none. */
static const char *wait_log_since(size_t from, const char *what, int ms) {
    const char *l = NULL;
    for (int waited = 0; (l = strstr(T.reaperd->log + from, what)) == NULL && waited < ms;
         waited += 100)
        rp_child_drain(T.reaperd, 100);
    return l ? line_at(l) : NULL;
}

static void assert_leader_on(int node, bool on) {
    char want[16];
    snprintf(want, sizeof want, "-%d@", node);
    json_t *q = mt_queue("/", T.tap);
    assert_non_null(q);
    const char *leader = json_string_value(json_object_get(q, "leader"));
    assert_non_null(leader);
    if ((strstr(leader, want) != NULL) != on)
        fail_msg("the tap's leader is %s: expected %s node %d", leader, on ? "on" : "off", node);
    json_decref(q);
}

static void test_storm_while_tap_leader_stopped(void **state) {
    (void)state;
    long n = storm_size();
    use_node(2);
    char work[128], dlq[128], node1[64];
    tap_dead_letter_source("lead", 0, work, dlq, sizeof work);
    /* The tap made afresh through node 3 (reaperd given node 3 first): its
     * leader is there. */
    tap_delete_queue(T.tap);
    start_reaperd_first(3);
    tap_stop_reaperd(SIGTERM);
    show_tap("declared through node 3");
    assert_leader_on(3, true);
    fill_tap(work, dlq, "l", n);

    start_reaperd_first(1);
    const char *conn = wait_log_since(0, "\"msg\":\"tap connected\"", 1000);
    assert_non_null(conn);
    fprintf(stderr, "# reaperd's tap connected: %.160s\n", conn);
    assert_non_null(strstr(conn, node_hostport(1, node1, sizeof node1)));
    long long t1 = itest_mono_ms();
    while (parked("l") < n / 10 && itest_mono_ms() - t1 < 60000)
        rp_child_drain(T.reaperd, 50);
    PGconn *lock = hold_parks();
    long rows = parked("l");
    assert_true(rows < n);
    assert_held("parks held, before node 3's stop", n, rows);

    size_t log_at_stop = T.reaperd->log_len;
    long long t2 = itest_mono_ms();
    assert_int_equal(services_wait(services_bg("stop", "3")), 0);
    fprintf(stderr, "# node 3 (the tap's leader) stopped in %lld ms\n", itest_mono_ms() - t2);
    assert_leader_on(3, false);
    assert_held("parks held, node 3 stopped", n, rows);
    release_parks(lock);
    long long t4 = itest_mono_ms();
    wait_storm_parked("l", n, dlq);
    long long took = itest_mono_ms() - t1;
    fprintf(stderr,
            "# all %ld parked %lld ms after reaperd started (%.0f parks/s overall), the last %ld "
            "in %lld ms under the new leader\n",
            n, took, took > 0 ? n * 1000.0 / (double)took : 0.0, n - rows, itest_mono_ms() - t4);
    const char *again = wait_log_since(log_at_stop, "\"msg\":\"tap connected\"", 0);
    fprintf(stderr, "# reaperd's tap %s\n", again ? again : "kept its connection to node 1");
    show_tap("after the leader's stop");
    tap_stop_reaperd(SIGTERM);

    long long t3 = itest_mono_ms();
    assert_int_equal(services("start", "3"), 0);
    fprintf(stderr, "# node 3 back in %lld ms\n", itest_mono_ms() - t3);
    assert_int_equal(services("status", ""), 0);
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

static void test_storm_while_node_restarted(void **state) {
    (void)state;
    long n = storm_size();
    use_node(2);
    char work[128], dlq[128], node1[64];
    tap_dead_letter_source("restart", 0, work, dlq, sizeof work);
    /* The tap made afresh through node 3, its leader there (reaperd binds
     * it to the source's dead-letter exchange). */
    tap_delete_queue(T.tap);
    start_reaperd_first(3);
    tap_stop_reaperd(SIGTERM);
    assert_leader_on(3, true);
    fill_tap(work, dlq, "r", n);
    show_tap("before the restart");

    start_reaperd_first(1);
    const char *conn = wait_log_since(0, "\"msg\":\"tap connected\"", 1000);
    assert_non_null(conn);
    fprintf(stderr, "# reaperd's tap connected: %.160s\n", conn);
    assert_non_null(strstr(conn, node_hostport(1, node1, sizeof node1)));
    long long t1 = itest_mono_ms();
    while (parked("r") < n / 10 && itest_mono_ms() - t1 < 60000)
        rp_child_drain(T.reaperd, 50);
    PGconn *lock = hold_parks();
    long rows = parked("r");
    assert_true(rows < n);
    assert_held("parks held, before node 1's restart", n, rows);

    /* Node 1's RabbitMQ stops: it closes reaperd's connections; the tap's
     * reconnects to another node and is given the held deliveries again,
     * while the parks of the first delivery still wait to commit. */
    size_t log_at_stop = T.reaperd->log_len;
    long long t2 = itest_mono_ms();
    assert_int_equal(services_wait(services_bg("ctl", "1 stop_app")), 0);
    fprintf(stderr, "# node 1 stop_app in %lld ms\n", itest_mono_ms() - t2);
    const char *again = wait_log_since(log_at_stop, "\"msg\":\"tap connected\"", 60000);
    assert_non_null(again);
    fprintf(stderr, "# reaperd's tap reconnected: %.160s\n", again);
    assert_null(strstr(again, node1));
    assert_held("parks held, node 1 stopped, the tap reconnected", n, rows);

    /* The parks go on through node 2 until half the storm is parked, and
     * are held again while node 1 starts and rejoins: the other half is
     * parked with node 1 back. */
    release_parks(lock);
    long long t3 = itest_mono_ms();
    while (parked("r") < n / 2 && itest_mono_ms() - t3 < 120000) rp_child_drain(T.reaperd, 50);
    lock = hold_parks();
    rows = parked("r");
    assert_true(rows < n);
    fprintf(stderr, "# %ld parked (node 1 stopped) %lld ms after the parks were let go\n", rows,
            itest_mono_ms() - t3);
    assert_held("parks held again, node 1 stopped", n, rows);
    long long t4 = itest_mono_ms();
    assert_int_equal(services_wait(services_bg("ctl", "1 start_app")), 0);
    for (int i = 0; i < 600 && services("status", "") != 0; i++) rp_child_drain(T.reaperd, 200);
    assert_int_equal(services("status", ""), 0);
    fprintf(stderr, "# node 1 started again and rejoined in %lld ms\n", itest_mono_ms() - t4);
    assert_held("parks held, node 1 back", n, rows);
    release_parks(lock);
    long long t5 = itest_mono_ms();
    wait_storm_parked("r", n, dlq);
    long long took = itest_mono_ms() - t1;
    fprintf(stderr,
            "# all %ld parked %lld ms after reaperd started (%.0f parks/s overall), the last %ld "
            "in %lld ms with node 1 back\n",
            n, took, took > 0 ? n * 1000.0 / (double)took : 0.0, n - rows, itest_mono_ms() - t5);
    show_tap("after node 1's restart");
    /* Acks of the first connection's deliveries never reached the second's
     * channel (that would be a 406 "unknown delivery tag"). */
    assert_null(strstr(T.reaperd->log, "unknown delivery tag"));
    assert_null(strstr(T.reaperd->log, "UNKNOWN_DELIVERY_TAG"));

    /* Node 1 back in the cluster: reaperd parks what comes next. */
    tap_publish(work, "r2", 100);
    tap_wait_parked("r2", 100, 60000);
    assert_once("r", n);
    tap_stop_reaperd(SIGTERM);
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
        cmocka_unit_test_teardown(test_storm_while_tap_leader_stopped, storm_teardown),
        cmocka_unit_test_teardown(test_storm_while_node_restarted, storm_teardown),
    };
    if (getenv("RP_ONLY") != NULL) cmocka_set_test_filter(getenv("RP_ONLY"));
    return cmocka_run_group_tests_name("reaperd_cluster", tests, setup, teardown);
}
