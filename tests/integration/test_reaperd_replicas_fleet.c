/*
 * Two and three reaperd replicas on one broker and one database (issue #19
 * item 3): what each replica does alone is split or done once.
 *
 *   - the tap's deliveries split between replicas: a storm of dead letters
 *     parked by all of them, each once (rows, jobs, gates, ledger events;
 *     the replicas' reaper_dead_letters_parked_total add up to the rows);
 *   - one of three replicas killed with SIGKILL mid-storm: the other two
 *     park the rest, each dead letter once, the tap queue drains;
 *   - expired leases with three replicas reaping: each lease moved once
 *     (one event per job, the replicas' counters add up), and a stale
 *     ready job's sighting opened once over many sweeps;
 *   - sweeps not multiplied by the replica count: the management API calls
 *     are counted by a proxy in front of it (reaperd's management URL
 *     points at it): the sweep's queue listing (GET /api/queues/%2F?page=) per
 *     second with 1, 2 and 3 replicas sweeping every second, and the
 *     policy writes (PUT /api/policies/...) after reaper's policies were
 *     cleared: they do not grow with the replicas (core/rp_sweep_turn.h).
 *
 * The storms run again on the 3-node cluster (label cluster, broker.url
 * listing the three nodes): three replicas, one of them killed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rp_hostlist.h"
#include "tap_common.h"
#include "test_mgmt_common.h"

#define MAX_REPLICAS 3

static rp_child *R[MAX_REPLICAS];

/* ---- a counting proxy in front of the management API ------------------------ */

static struct {
    int listen_fd;
    int port;     /* the proxy's */
    int upstream; /* the management API's */
    pthread_t accept_thread;
    pthread_mutex_t mu;
    long listings;      /* GET /api/queues/%2F?page= (the sweep's listing of "/") */
    long policy_writes; /* PUT /api/policies/ or /api/operator-policies/ */
    long requests;      /* every request */
} P = {.listen_fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER};

/* The tap's binding check lists /api/queues/%2F too (columns
 * name,type,arguments,...): not the sweep's, taken off. */
static const char *const PATTERNS[] = {"GET /api/queues/%2F?page=", "PUT /api/policies/",
                                       "PUT /api/operator-policies/", " HTTP/1.1\r\n",
                                       "&columns=name,type,arguments,"};
#define N_PATTERNS 5
#define CARRY 40

/* Counts the patterns in what a client sent (carry: the end of its last
 * chunk, so a pattern cut between two chunks counts once). */
static void count_sent(char *carry, size_t *carry_n, const char *buf, size_t n) {
    char scan[CARRY + 65536];
    memcpy(scan, carry, *carry_n);
    memcpy(scan + *carry_n, buf, n);
    size_t len = *carry_n + n;
    long found[N_PATTERNS] = {0};
    for (int k = 0; k < N_PATTERNS; k++) {
        size_t pl = strlen(PATTERNS[k]);
        for (size_t i = 0; i + pl <= len; i++)
            if (memcmp(scan + i, PATTERNS[k], pl) == 0 && i + pl > *carry_n) found[k]++;
    }
    pthread_mutex_lock(&P.mu);
    P.listings += found[0] - found[4];
    P.policy_writes += found[1] + found[2];
    P.requests += found[3];
    pthread_mutex_unlock(&P.mu);
    size_t keep = len < CARRY ? len : CARRY;
    memmove(carry, scan + len - keep, keep);
    *carry_n = keep;
}

static void *relay(void *arg) {
    int client = (int)(intptr_t)arg;
    int up = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)P.upstream),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (up < 0 || connect(up, (struct sockaddr *)&a, sizeof a) != 0) {
        if (up >= 0) close(up);
        close(client);
        return NULL;
    }
    char carry[CARRY];
    size_t carry_n = 0;
    char buf[65536];
    struct pollfd pf[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
    for (;;) {
        if (poll(pf, 2, 1000) < 0 && errno != EINTR) break;
        bool done = false;
        for (int i = 0; i < 2 && !done; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = read(pf[i].fd, buf, sizeof buf);
            if (got <= 0) {
                done = true;
                break;
            }
            if (i == 0) count_sent(carry, &carry_n, buf, (size_t)got);
            for (ssize_t off = 0; off < got;) {
                ssize_t w = write(pf[1 - i].fd, buf + off, (size_t)(got - off));
                if (w <= 0) {
                    done = true;
                    break;
                }
                off += w;
            }
        }
        if (done) break;
    }
    close(client);
    close(up);
    return NULL;
}

static void *accept_loop(void *arg) {
    (void)arg;
    for (;;) {
        int c = accept(P.listen_fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR) continue;
            return NULL; /* closed: the proxy stops */
        }
        pthread_t t;
        if (pthread_create(&t, NULL, relay, (void *)(intptr_t)c) != 0) {
            close(c);
            continue;
        }
        pthread_detach(t);
    }
}

/* The first host's port of the management URL the tests were given. */
static int management_port(void) {
    const char *url = itest_env("REAPER_BROKER_MANAGEMENT_URL");
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    const char *colon = strchr(h, ':');
    return colon ? atoi(colon + 1) : 15672;
}

static void proxy_start(void) {
    P.upstream = management_port();
    P.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(P.listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(P.listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(P.listen_fd, 64), 0);
    assert_int_equal(getsockname(P.listen_fd, (struct sockaddr *)&a, &len), 0);
    P.port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&P.accept_thread, NULL, accept_loop, NULL), 0);
}

static void proxy_stop(void) {
    if (P.listen_fd < 0) return;
    shutdown(P.listen_fd, SHUT_RDWR);
    close(P.listen_fd);
    pthread_join(P.accept_thread, NULL);
    P.listen_fd = -1;
}

static void proxy_counts(long *listings, long *policy_writes, long *requests) {
    pthread_mutex_lock(&P.mu);
    *listings = P.listings;
    *policy_writes = P.policy_writes;
    *requests = P.requests;
    pthread_mutex_unlock(&P.mu);
}

/* ---- replicas ------------------------------------------------------------------ */

static char env_mgmt[96];
/* On the cluster: "REAPER_BROKER_URL=<the nodes' list>" for the replicas
 * (the test's own clients take one node); "" otherwise. */
static char env_amqp[1100];

/* Replica i of this world, sweeping every interval seconds, its
 * management API through the proxy. */
static void start_replica(int i, int interval) {
    char env_interval[64];
    snprintf(env_interval, sizeof env_interval, "REAPER_REAP_INTERVAL_SECONDS=%d", interval);
    snprintf(env_mgmt, sizeof env_mgmt, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:%d",
             P.port);
    char *env[] = {env_interval, env_mgmt, env_amqp[0] ? env_amqp : NULL, NULL};
    R[i] = tap_daemon_start((itest_daemon_opts){.env = env});
}

static void stop_replica(int i, int sig) {
    if (R[i] == NULL) return;
    int rc = itest_daemon_stop_sig(R[i], sig);
    R[i] = NULL;
    if (sig == SIGTERM) assert_int_equal(rc, 0);
}

static void stop_all(void) {
    for (int i = 0; i < MAX_REPLICAS; i++) stop_replica(i, SIGTERM);
}

/* A series of replica i's metrics (0 when absent). */
static double metric_of(int i, const char *series) {
    int port = itest_reaperd_http_port(R[i], 10000);
    assert_true(port > 0);
    char *text = itest_scrape(port);
    assert_non_null(text);
    double v = itest_metric(text, series);
    free(text);
    return v < 0 ? 0 : v;
}

/* Keeps the replicas' pipes drained while waiting. */
static void drain_all(int ms) {
    int each = ms / MAX_REPLICAS;
    for (int i = 0; i < MAX_REPLICAS; i++)
        if (R[i]) rp_child_drain(R[i], each > 0 ? each : 1);
}

static long wait_sql(long want, int timeout_ms, const char *q) {
    long v = -1;
    long long end = itest_mono_ms() + timeout_ms;
    do {
        v = tap_sqln("%s", q);
        if (v == want) return v;
        drain_all(200);
    } while (itest_mono_ms() < end);
    return v;
}

static long parked(const char *prefix) {
    return tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '%s-%%'",
                    prefix);
}

/* Every dead letter of prefix parked once: one row per body, one job and
 * one gate per row, one PARKED event per row. */
static void assert_parked_once(const char *prefix, long want) {
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

/* broker.url's vhost, "/": the only one watched here. */
#define PARKED_TOTAL "reaper_dead_letters_parked_total{vhost=\"/\"}"

/* ---- the tests ------------------------------------------------------------------ */

/* n replicas, a storm of `storm` dead letters: split between them, each
 * parked once. */
static void storm_split(int n, const char *prefix, int storm) {
    char what[32], work[128], dlq[128];
    snprintf(what, sizeof what, "split%d", n);
    tap_dead_letter_source(what, 0, work, dlq, sizeof work);
    for (int i = 0; i < n; i++) start_replica(i, 3600);
    long long t0 = itest_mono_ms();
    tap_publish(work, prefix, storm);
    char q[256];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '%s-%%'", prefix);
    long got = wait_sql(storm, 120000, q);
    assert_int_equal(got, storm);
    long long ms = itest_mono_ms() - t0;
    assert_parked_once(prefix, storm);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double mine = metric_of(i, PARKED_TOTAL);
        fprintf(stderr, "replica %d of %d parked %.0f of %d\n", i + 1, n, mine, storm);
        /* Split: every replica had its share of the deliveries. */
        assert_true(mine > 0);
        sum += mine;
    }
    /* Each park counted by the one replica that made it. */
    assert_true(sum == (double)storm);
    fprintf(stderr, "%d replicas: %d dead letters parked in %lld ms\n", n, storm, ms);
    for (int i = 0; i < 50 && tap_depth(T.tap) != 0; i++) drain_all(100);
    assert_int_equal(tap_depth(T.tap), 0);
    /* A replica's pass may be peeking at the dead-letter queue (basic.get
     * without ack holds what it reads until its channel closes): polled
     * until every copy is ready again. */
    ITEST_POLL(tap_depth(dlq) == storm, 20000);
    assert_int_equal(tap_depth(dlq), storm);
    stop_all();
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

static void test_two_replicas_split_the_tap(void **state) {
    (void)state;
    storm_split(2, "two", 4000);
}

static void test_three_replicas_split_the_tap(void **state) {
    (void)state;
    storm_split(3, "three", 6000);
}

/* One of three replicas killed with SIGKILL mid-storm: the others park
 * the rest, nothing lost, nothing twice. */
static void test_replica_killed_mid_storm(void **state) {
    (void)state;
    /* 5,000 (it was 10,000): the kill comes after 1,000 parks, so most
     * of the storm is still to park by the survivors either way. */
    const int storm = 5000;
    char work[128], dlq[128];
    tap_dead_letter_source("killed", 0, work, dlq, sizeof work);
    for (int i = 0; i < 3; i++) start_replica(i, 3600);
    tap_publish(work, "k", storm);
    long seen = 0;
    for (int i = 0; i < 600 && (seen = parked("k")) < 1000; i++) drain_all(50);
    stop_replica(0, SIGKILL);
    long at_kill = parked("k");
    fprintf(stderr, "parked when replica 1 of 3 was killed: %ld of %d\n", at_kill, storm);
    assert_true(at_kill < storm); /* the kill came mid-storm */
    char q[256];
    snprintf(q, sizeof q, "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE 'k-%%'");
    assert_int_equal(wait_sql(storm, 120000, q), storm);
    assert_parked_once("k", storm);
    double survivors = metric_of(1, PARKED_TOTAL) + metric_of(2, PARKED_TOTAL);
    fprintf(stderr, "the two survivors parked %.0f; the killed one the other %.0f\n", survivors,
            storm - survivors);
    assert_true(survivors > 0);
    assert_true(survivors <= storm);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) drain_all(100);
    assert_int_equal(tap_depth(T.tap), 0);
    /* A replica's pass may be peeking at the dead-letter queue (basic.get
     * without ack holds what it reads until its channel closes): polled
     * until every copy is ready again. */
    ITEST_POLL(tap_depth(dlq) == storm, 20000);
    assert_int_equal(tap_depth(dlq), storm);
    stop_all();
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

#define REQUEUED_SERIES                                                                            \
    "reaper_reaped_total{source=\"job_queue\",condition=\"lease_expired\",action=\"requeued\"}"

/* Expired leases with three replicas: each moved once; a stale ready job's
 * sighting opened once over many sweeps. */
static void test_leases_moved_once_sighting_opened_once(void **state) {
    (void)state;
    const int leases = 3000;
    long seq0 = tap_sqln("SELECT coalesce(max(seq), 0) FROM ledger");
    tap_sqln("WITH x AS (INSERT INTO job (project_id, kind, state, run_after) VALUES "
             "('fleet', 'k', 'ready', now() - interval '2 hours') RETURNING 1) "
             "SELECT count(*) FROM x");
    for (int i = 0; i < 3; i++) start_replica(i, 1);
    assert_int_equal(tap_sqln("WITH x AS (INSERT INTO job (project_id, kind, state, attempts, "
                              "max_attempts, lease_owner, lease_expires_at) SELECT 'fleet', "
                              "'send_mail', 'leased', 1, 9, 'worker-' || g, now() - interval "
                              "'30 seconds' FROM generate_series(1, %d) g RETURNING 1) SELECT "
                              "count(*) FROM x",
                              leases),
                     leases);
    assert_int_equal(wait_sql(leases, 60000,
                              "SELECT count(*) FROM job WHERE project_id = 'fleet' AND kind = "
                              "'send_mail' AND state = 'ready' AND lease_owner IS NULL"),
                     leases);
    /* Several more sweeps (one a second) over the stale ready job. */
    drain_all(4000);
    char q[512];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM ledger WHERE seq > %ld AND payload->>'condition' = "
             "'LEASE_EXPIRED' AND payload->>'action' = 'REQUEUED'",
             seq0);
    assert_int_equal(tap_sqln("%s", q), leases);
    assert_int_equal(tap_sqln("SELECT count(*) FROM (SELECT payload->>'object' FROM ledger WHERE "
                              "seq > %ld AND payload->>'condition' = 'LEASE_EXPIRED' GROUP BY 1 "
                              "HAVING count(*) > 1) x",
                              seq0),
                     0);
    assert_int_equal(tap_sqln("SELECT count(*) FROM job WHERE project_id = 'fleet' AND kind = "
                              "'send_mail' AND attempts <> 1"),
                     0);
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        double mine = metric_of(i, REQUEUED_SERIES);
        fprintf(stderr, "replica %d of 3 requeued %.0f of %d expired leases\n", i + 1, mine,
                leases);
        sum += mine;
    }
    assert_true(sum == (double)leases);
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE seq > %ld AND "
                              "payload->>'condition' = 'STALE_READY' AND payload->>'action' = "
                              "'SURFACED'",
                              seq0),
                     1);
    /* No sighting opened twice (one SURFACED event per object and
     * condition), whichever replica judged it. */
    assert_int_equal(tap_sqln("SELECT count(*) FROM (SELECT payload->>'object', "
                              "payload->>'condition' FROM ledger WHERE seq > %ld AND "
                              "payload->>'action' = 'SURFACED' GROUP BY 1, 2 HAVING count(*) > 1) x",
                              seq0),
                     0);
    stop_all();
    tap_sqln("WITH x AS (DELETE FROM job WHERE project_id = 'fleet' RETURNING 1) SELECT count(*) "
             "FROM x");
}

/* n replicas sweeping every second for `seconds`: the listings and policy
 * writes the proxy counted, per second. */
static void sweep_figures(int n, int seconds, double *listings_per_s, long *policy_writes,
                          double *full_passes_per_s) {
    /* reaper's policies cleared: the first sweep writes them again
     * (through the management API, straight to the broker, not through
     * the proxy: milliseconds, where a rabbitmqctl call takes about 2 s). */
    (void)mt_http("DELETE", "/api/policies/%2F/vibey-reap", NULL, NULL);
    (void)mt_http("DELETE", "/api/policies/%2F/vibey-reap-classic", NULL, NULL);
    for (int i = 0; i < n; i++) start_replica(i, 1);
    /* Counted from the moment every replica is up, over `seconds`. */
    long l0, w0, r0, l1, w1, r1;
    double full0 = 0, full1 = 0;
    proxy_counts(&l0, &w0, &r0);
    for (int i = 0; i < n; i++)
        full0 += metric_of(i, "reaper_passes_total{scope=\"full\",result=\"ok\"}");
    long long t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < seconds * 1000LL) drain_all(300);
    proxy_counts(&l1, &w1, &r1);
    for (int i = 0; i < n; i++)
        full1 += metric_of(i, "reaper_passes_total{scope=\"full\",result=\"ok\"}");
    double s = (double)(itest_mono_ms() - t0) / 1000.0;
    stop_all();
    long writes_total;
    proxy_counts(&l1, &writes_total, &r1);
    *listings_per_s = (double)(l1 - l0) / s;
    *policy_writes = writes_total; /* since the policies were cleared */
    *full_passes_per_s = (full1 - full0) / s;
    fprintf(stderr,
            "%d replica(s), a sweep a second each, %.1f s: %ld queue listings (%.2f/s), %.2f "
            "full sweeps/s fleet-wide, %ld management requests in all, %ld policy writes since "
            "the policies were cleared\n",
            n, s, l1 - l0, *listings_per_s, *full_passes_per_s, r1 - r0, writes_total);
    pthread_mutex_lock(&P.mu);
    P.listings = P.policy_writes = P.requests = 0;
    pthread_mutex_unlock(&P.mu);
}

static void test_sweeps_not_multiplied(void **state) {
    (void)state;
    double one, two, three, f1, f2, f3;
    long w1, w2, w3;
    sweep_figures(1, 8, &one, &w1, &f1);
    sweep_figures(2, 8, &two, &w2, &f2);
    sweep_figures(3, 8, &three, &w3, &f3);
    /* The proxy saw the sweeps (the management URL went through it). */
    assert_true(one > 0.3);
    /* Not multiplied: at most the single replica's rate and a half (a
     * sweep a second under this machine's load varies), where two or three
     * sweeping each on its own would be 2x and 3x. */
    assert_true(two <= one * 1.5);
    assert_true(three <= one * 1.5);
    assert_true(f2 <= f1 * 1.5 + 0.2);
    assert_true(f3 <= f1 * 1.5 + 0.2);
    /* reaper's two policies written once after being cleared, by the
     * replica sweeping, whatever the replica count; never again (no
     * flapping). */
    assert_true(w1 >= 1 && w1 <= 2);
    assert_int_equal(w2, w1);
    assert_int_equal(w3, w1);
}

static int setup(void **state) {
    (void)state;
    const char *list = itest_env("REAPER_BROKER_URL");
    if (rp_hostlist_count(list) > 1) {
        /* The replicas get every node; the test's helpers node 2's. */
        char one[1024];
        snprintf(env_amqp, sizeof env_amqp, "REAPER_BROKER_URL=%s", list);
        if (!rp_hostlist_pick(list, 1, one, sizeof one)) return -1;
        setenv("REAPER_BROKER_URL", one, 1);
        if (!rp_hostlist_pick(itest_env("REAPER_BROKER_MANAGEMENT_URL"), 1, one, sizeof one))
            return -1;
        setenv("REAPER_BROKER_MANAGEMENT_URL", one, 1);
    }
    int rc = tap_world_setup("fleet");
    if (rc == 0) proxy_start();
    return rc;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < MAX_REPLICAS; i++)
        if (R[i]) {
            rp_child_stop(R[i], SIGKILL, 5000);
            rp_child_free(R[i]);
            R[i] = NULL;
        }
    proxy_stop();
    return tap_world_teardown();
}

/* After each test: a replica a failed test left running is killed. */
static int kill_leftovers(void **state) {
    (void)state;
    for (int i = 0; i < MAX_REPLICAS; i++)
        if (R[i]) {
            rp_child_stop(R[i], SIGKILL, 5000);
            rp_child_free(R[i]);
            R[i] = NULL;
        }
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_sweeps_not_multiplied, kill_leftovers),
        cmocka_unit_test_teardown(test_two_replicas_split_the_tap, kill_leftovers),
        cmocka_unit_test_teardown(test_three_replicas_split_the_tap, kill_leftovers),
        cmocka_unit_test_teardown(test_replica_killed_mid_storm, kill_leftovers),
        cmocka_unit_test_teardown(test_leases_moved_once_sighting_opened_once, kill_leftovers),
    };
    /* The cluster run (replicas.cmake's test_reaperd_replicas_cluster)
     * takes the storms only (RP_FLEET_TESTS="*replica*"). */
    const char *only = getenv("RP_FLEET_TESTS");
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, setup, teardown);
}
