/*
 * The tap follows the order in which applications really declare things
 * (issue #14): an owned queue is declared first, naming a dead-letter
 * exchange that does not exist yet; the exchange, the dead-letter queue and
 * its binding come a moment later. The tap's bindings must follow within
 * seconds (binding.* and exchange.* events), not at the next sweep: every
 * reaperd here sweeps once an hour, so only the events can bind the tap.
 * Also: a dead-letter queue's binding moved to another routing key while
 * messages flow; the dead-letter queue declared before its owned queue;
 * routes through exchange-to-exchange bindings, with a cycle; the owned
 * queue deleted and declared again with another dead-letter exchange; ten
 * topologies drawn at random.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap_common.h"

#define RECONCILED "\"msg\":\"tap bindings reconciled\""

/* How many times needle stands in reaperd's log so far. */
static int log_count(const char *needle) {
    int n = 0;
    for (const char *p = T.reaperd->log; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Reads reaperd's log until needle stands in it more than `after` times. */
static void wait_log_more(const char *needle, int after, int timeout_ms) {
    long long end = itest_mono_ms() + timeout_ms;
    while (log_count(needle) <= after && itest_mono_ms() < end) rp_child_drain(T.reaperd, 50);
    if (log_count(needle) <= after) {
        fprintf(stderr, "%s\n", T.reaperd->log);
        fail_msg("reaperd did not log %s again within %d ms", needle, timeout_ms);
    }
}

/* reaperd, once its first sweep is over (that sweep ends with a binding
 * reconcile of its own: what changes after it is left to the events). */
static void start_swept(void) {
    tap_start_reaperd();
    wait_log_more("\"msg\":\"pass finished\"", 0, 60000);
}

/* Queue first, naming a dead-letter exchange not declared yet; then the
 * exchange, the dead-letter queue and its binding: the tap is bound by the
 * events, and 200 rejects are all parked, with no sweep. */
static void test_dead_letter_queue_bound_after_its_queue(void **state) {
    (void)state;
    char x[128], work[128], dlq[128];
    tap_plain(x, sizeof x, "late.dlx");
    tap_owned(work, sizeof work, "late.work");
    tap_owned(dlq, sizeof dlq, "late.work.dlq");
    start_swept();
    tap_queue(work, x, NULL, -1);
    tap_exchange(x, "fanout");
    tap_queue(dlq, NULL, NULL, -1);
    /* "A moment later": the reconciles the queues' own events asked for
     * are over by then (they found no route to the dead-letter queue). */
    rp_child_drain(T.reaperd, 1500);
    int before = log_count(RECONCILED);
    tap_bind(dlq, x, "", amqp_empty_table);
    wait_log_more(RECONCILED, before, 15000);
    tap_publish(work, "late", 200);
    tap_reject(work, 200);
    tap_wait_parked("late", 200, 30000);
    assert_int_equal(tap_depth(dlq), 200);
    tap_source_done(work, dlq);
    tap_delete_exchange(x);
}

/* A direct dead-letter exchange whose dead-letter queue is first bound
 * under a key no dead letter carries, then under the one they carry (the
 * original routing key: the work queue's name), while the first messages
 * are already rejected: those after the new binding are parked. */
static void test_binding_moved_while_messages_flow(void **state) {
    (void)state;
    char x[128], work[128], dlq[128];
    tap_plain(x, sizeof x, "moved.dlx");
    tap_owned(work, sizeof work, "moved.work");
    tap_owned(dlq, sizeof dlq, "moved.work.dlq");
    tap_exchange(x, "direct");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "nothing-carries-this", amqp_empty_table);
    tap_queue(work, x, NULL, -1);
    start_swept();
    /* Routed nowhere by the broker itself (no queue under that key). */
    tap_publish(work, "early", 20);
    tap_reject(work, 20);
    int before = log_count(RECONCILED);
    tap_bind(dlq, x, work, amqp_empty_table);
    wait_log_more(RECONCILED, before, 15000);
    tap_publish(work, "moved", 100);
    tap_reject(work, 100);
    tap_wait_parked("moved", 100, 30000);
    assert_int_equal(tap_depth(dlq), 100);
    tap_wait_parked("early", 0, 100);
    tap_source_done(work, dlq);
    tap_delete_exchange(x);
}

/* The dead-letter queue, its exchange and binding first, the owned queue
 * last (queue.created binds the tap). */
static void test_dead_letter_queue_first(void **state) {
    (void)state;
    char x[128], work[128], dlq[128];
    tap_plain(x, sizeof x, "first.dlx");
    tap_owned(work, sizeof work, "first.work");
    tap_owned(dlq, sizeof dlq, "first.work.dlq");
    start_swept();
    tap_exchange(x, "fanout");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    int before = log_count(RECONCILED);
    tap_queue(work, x, NULL, -1);
    wait_log_more(RECONCILED, before, 15000);
    tap_publish(work, "first", 100);
    tap_reject(work, 100);
    tap_wait_parked("first", 100, 30000);
    assert_int_equal(tap_depth(dlq), 100);
    tap_source_done(work, dlq);
    tap_delete_exchange(x);
}

static void bind_exchange(const char *dest, const char *source, const char *key) {
    amqp_exchange_bind(T.amqp, 1, amqp_cstring_bytes(dest), amqp_cstring_bytes(source),
                       amqp_cstring_bytes(key), amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(T.amqp);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) fail_msg("exchange.bind failed");
}

/* The dead-letter exchange routes on to other exchanges (X -> E1 -> E2 ->
 * the dead-letter queue), with a cycle back to X: the tap follows the
 * routes at any depth and the cycle ends. */
static void test_exchange_to_exchange_routes(void **state) {
    (void)state;
    char x[128], e1[128], e2[128], work[128], dlq[128];
    tap_plain(x, sizeof x, "e2e.dlx");
    tap_plain(e1, sizeof e1, "e2e.one");
    tap_plain(e2, sizeof e2, "e2e.two");
    tap_owned(work, sizeof work, "e2e.work");
    tap_owned(dlq, sizeof dlq, "e2e.work.dlq");
    tap_exchange(x, "fanout");
    tap_exchange(e1, "topic");
    tap_exchange(e2, "direct");
    bind_exchange(e1, x, "");
    bind_exchange(e2, e1, "#");
    bind_exchange(x, e2, "never"); /* a cycle: routes nothing, must end */
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, e2, work, amqp_empty_table);
    tap_queue(work, x, NULL, -1);
    start_swept();
    tap_publish(work, "e2e", 100);
    tap_reject(work, 100);
    tap_wait_parked("e2e", 100, 30000);
    assert_int_equal(tap_depth(dlq), 100);
    tap_source_done(work, dlq);
    tap_delete_exchange(x);
    tap_delete_exchange(e1);
    tap_delete_exchange(e2);
}

/* Waits until reaperd has logged a binding reconcile's end after `after`
 * and then none for quiet_ms: every change made before is reconciled. */
static void wait_bindings_settled(int after, int quiet_ms, int timeout_ms) {
    static const char *needle = "\"msg\":\"tap bindings ";
    long long end = itest_mono_ms() + timeout_ms;
    int last = log_count(needle);
    long long since = itest_mono_ms();
    while (itest_mono_ms() < end) {
        rp_child_drain(T.reaperd, 100);
        int now = log_count(needle);
        if (now != last) {
            last = now;
            since = itest_mono_ms();
        } else if (now > after && itest_mono_ms() - since >= quiet_ms) {
            return;
        }
    }
    fprintf(stderr, "%s\n", T.reaperd->log);
    fail_msg("the tap's bindings did not settle within %d ms", timeout_ms);
}

/* The owned queue deleted and declared again with another dead-letter
 * exchange while reaperd runs: the new route is tapped. */
static void test_owned_queue_recreated(void **state) {
    (void)state;
    char x1[128], x2[128], work[128], dlq1[128], dlq2[128];
    tap_plain(x1, sizeof x1, "again.dlx1");
    tap_plain(x2, sizeof x2, "again.dlx2");
    tap_owned(work, sizeof work, "again.work");
    tap_owned(dlq1, sizeof dlq1, "again.work.dlq1");
    tap_owned(dlq2, sizeof dlq2, "again.work.dlq2");
    tap_exchange(x1, "fanout");
    tap_exchange(x2, "fanout");
    tap_queue(dlq1, NULL, NULL, -1);
    tap_queue(dlq2, NULL, NULL, -1);
    tap_bind(dlq1, x1, "", amqp_empty_table);
    tap_bind(dlq2, x2, "", amqp_empty_table);
    tap_queue(work, x1, NULL, -1);
    start_swept();
    tap_publish(work, "before", 30);
    tap_reject(work, 30);
    tap_wait_parked("before", 30, 30000);
    int before = log_count(RECONCILED);
    tap_delete_queue(work);
    tap_queue(work, x2, NULL, -1);
    wait_log_more(RECONCILED, before, 15000);
    wait_bindings_settled(before, 1500, 30000);
    tap_publish(work, "after", 40);
    tap_reject(work, 40);
    tap_wait_parked("after", 40, 30000);
    assert_int_equal(tap_depth(dlq1), 30);
    assert_int_equal(tap_depth(dlq2), 40);
    tap_stop_reaperd(SIGTERM);
    tap_delete_queue(work);
    tap_delete_queue(dlq1);
    tap_delete_queue(dlq2);
    tap_delete_exchange(x1);
    tap_delete_exchange(x2);
}

/* One topology drawn at random: the dead-letter exchange's type (fanout,
 * direct or topic), with or without a dead-letter routing key, reached
 * through 0 to 2 exchange-to-exchange hops, declared in one of three
 * orders (owned queue first, dead-letter queue first, or the owned queue
 * between the exchanges and the binding). */
typedef struct topo {
    char x[4][128]; /* x[0] the dead-letter exchange, x[1..hops] the hops */
    int hops;
    const char *type;
    char key[128];  /* the dead letters' routing key */
    bool dlrk;      /* key is the queue's x-dead-letter-routing-key */
    char work[128], dlq[128], prefix[16];
    int order, n;
} topo;

static const char *topo_bind_key(const topo *t) {
    if (strcmp(t->type, "fanout") == 0) return "";
    if (strcmp(t->type, "topic") == 0) return "#";
    return t->key;
}

static void topo_declare(topo *t) {
    if (t->order == 0) tap_queue(t->work, t->x[0], t->dlrk ? t->key : NULL, -1);
    for (int h = 0; h <= t->hops; h++) tap_exchange(t->x[h], t->type);
    if (t->order == 2) tap_queue(t->work, t->x[0], t->dlrk ? t->key : NULL, -1);
    for (int h = 1; h <= t->hops; h++) {
        amqp_exchange_bind(T.amqp, 1, amqp_cstring_bytes(t->x[h]), amqp_cstring_bytes(t->x[h - 1]),
                           amqp_cstring_bytes(topo_bind_key(t)), amqp_empty_table);
        amqp_rpc_reply_t r = amqp_get_rpc_reply(T.amqp);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) fail_msg("exchange.bind failed");
    }
    tap_queue(t->dlq, NULL, NULL, -1);
    tap_bind(t->dlq, t->x[t->hops], topo_bind_key(t), amqp_empty_table);
    if (t->order == 1) tap_queue(t->work, t->x[0], t->dlrk ? t->key : NULL, -1);
}

/* Ten topologies drawn at random (seeded; the seed is printed, and
 * RP_TOPOLOGY_SEED replays one): every dead letter of each is parked
 * exactly once, and each dead-letter queue keeps all of its own. */
static void test_random_topologies(void **state) {
    (void)state;
    static const char *const types[] = {"fanout", "direct", "topic"};
    const char *fixed = getenv("RP_TOPOLOGY_SEED");
    unsigned seed = fixed && *fixed ? (unsigned)strtoul(fixed, NULL, 10)
                                    : (unsigned)time(NULL) ^ (unsigned)getpid();
    fprintf(stderr, "random topologies: seed %u (RP_TOPOLOGY_SEED=%u replays it)\n", seed, seed);
    srand(seed);
    enum { N = 10 };
    static topo t[N];
    start_swept();
    int before = log_count("\"msg\":\"tap bindings ");
    for (int i = 0; i < N; i++) {
        topo *p = &t[i];
        memset(p, 0, sizeof *p);
        p->type = types[rand() % 3];
        p->hops = rand() % 3;
        p->order = rand() % 3;
        p->n = 20 + rand() % 60;
        snprintf(p->prefix, sizeof p->prefix, "r%d", i);
        char name[64];
        for (int h = 0; h <= p->hops; h++) {
            snprintf(name, sizeof name, "rnd%d.x%d", i, h);
            tap_plain(p->x[h], sizeof p->x[h], name);
        }
        snprintf(name, sizeof name, "rnd%d.work", i);
        tap_owned(p->work, sizeof p->work, name);
        snprintf(name, sizeof name, "rnd%d.work.dlq", i);
        tap_owned(p->dlq, sizeof p->dlq, name);
        p->dlrk = rand() % 2;
        if (p->dlrk)
            snprintf(p->key, sizeof p->key, "dl.%d", i);
        else
            memcpy(p->key, p->work, sizeof p->key); /* the original key (same size) */
        fprintf(stderr, "  %d: %s, %d hop(s), order %d, key %s, %d dead letters\n", i, p->type,
                p->hops, p->order, p->dlrk ? p->key : "(original)", p->n);
        topo_declare(p);
    }
    wait_bindings_settled(before, 2000, 60000);
    for (int i = 0; i < N; i++) {
        tap_publish(t[i].work, t[i].prefix, t[i].n);
        tap_reject(t[i].work, t[i].n);
    }
    for (int i = 0; i < N; i++) {
        tap_wait_parked(t[i].prefix, t[i].n, 30000);
        assert_int_equal(tap_sqln("SELECT count(DISTINCT body) FROM dead_letter WHERE "
                                  "encode(body, 'escape') LIKE '%s-%%'",
                                  t[i].prefix),
                         t[i].n);
        assert_int_equal(tap_depth(t[i].dlq), t[i].n);
    }
    tap_stop_reaperd(SIGTERM);
    for (int i = 0; i < N; i++) {
        tap_delete_queue(t[i].work);
        tap_delete_queue(t[i].dlq);
        for (int h = 0; h <= t[i].hops; h++) tap_delete_exchange(t[i].x[h]);
    }
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("topo");
}

static int teardown(void **state) {
    (void)state;
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_letter_queue_bound_after_its_queue),
        cmocka_unit_test(test_binding_moved_while_messages_flow),
        cmocka_unit_test(test_dead_letter_queue_first),
        cmocka_unit_test(test_exchange_to_exchange_routes),
        cmocka_unit_test(test_owned_queue_recreated),
        cmocka_unit_test(test_random_topologies),
    };
    return cmocka_run_group_tests_name("reaperd_tap_topology", tests, setup, teardown);
}
