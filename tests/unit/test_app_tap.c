/*
 * The dead-letter tap's part (app/rp_tap.h) on a real event_base, with its
 * own threads, the memory park batch (adapters/memory) behind its store
 * port and fakes behind its consumer and bind ports (core/rp_tap_port.h).
 *
 * The rules each test holds the part to:
 *   - a delivery is parked, then acked, never acked before its commit: the
 *     fake consumer checks at every ack that the event of every message it
 *     acks was already published (the tap publishes after the commit);
 *   - the store unreachable: nothing is acked, the deliveries are held and
 *     the tap pauses; once the store answers they are parked and acked;
 *   - a dead letter that fails on its own is held, never acked; the others
 *     of its batch are acked;
 *   - the deliveries of one read are parked in one transaction;
 *   - binding reconciles are coalesced (a request while one runs makes
 *     exactly one more), and the tap is bound only for the connection its
 *     last successful reconcile was asked for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>

#include "rp_clock.h"
#include "rp_config.h"
#include "rp_memory.h"
#include "rp_memory_park_batch.h"
#include "rp_metrics.h"
#include "rp_tap.h"

#define MAX_TAGS 64

/* ---- the test's deliveries and examiner -------------------------------------- */

typedef struct test_item {
    rp_tap_item base;
    char msg_id[32];
    char body[16];
} test_item;

static size_t items_dropped;

static void t_drop(void *ctx, rp_tap_item *it) {
    (void)ctx;
    __atomic_add_fetch(&items_dropped, 1, __ATOMIC_SEQ_CST);
    free(it);
}

static size_t t_shed(void *ctx, rp_tap_item *it) {
    (void)ctx;
    (void)it;
    return 8;
}

typedef struct t_own {
    rp_dl_headers h;
} t_own;

static rp_status t_inspect(void *ctx, rp_tap_item *base, rp_tap_prep *p, bool *death) {
    (void)ctx;
    (void)base;
    (void)p;
    *death = true;
    return RP_OK;
}

static rp_status t_capture(void *ctx, rp_tap_item *base, rp_tap_prep *p) {
    (void)ctx;
    test_item *it = (test_item *)base;
    t_own *o = calloc(1, sizeof *o);
    if (o == NULL) return RP_ERR_NOMEM;
    o->h.message_id = (rp_opt_str){true, {(const uint8_t *)it->msg_id, strlen(it->msg_id)}};
    o->h.first_death_queue = (rp_opt_str){true, {(const uint8_t *)"vibey.orders", 12}};
    p->own = o;
    p->msg = (rp_dl_message){.headers = o->h,
                             .body = {(const uint8_t *)it->body, strlen(it->body)},
                             .handle = NULL};
    p->bytes = 0;
    return RP_OK;
}

static void t_release(void *ctx, rp_tap_prep *p) {
    (void)ctx;
    free(p->own);
}

/* ---- the feed: what was committed (the tap's thread publishes after it) -------- */

typedef struct fake_feed {
    pthread_mutex_t mu;
    bool committed[MAX_TAGS + 1]; /* by the message's number */
    size_t n;
} fake_feed;

static rp_status feed_publish(void *self, const rp_ledger_event *ev) {
    fake_feed *f = self;
    /* dead_letter:id:%2F/vibey.orders/order-<n> */
    const char *obj = ev->verdict ? ev->verdict->object : NULL;
    const char *at = obj ? strstr(obj, "/order-") : NULL;
    if (at == NULL) return RP_OK;
    unsigned long n = strtoul(at + 7, NULL, 10);
    pthread_mutex_lock(&f->mu);
    if (n <= MAX_TAGS) f->committed[n] = true;
    f->n++;
    pthread_mutex_unlock(&f->mu);
    return RP_OK;
}

static bool feed_has(fake_feed *f, uint64_t n) {
    pthread_mutex_lock(&f->mu);
    bool r = n <= MAX_TAGS && f->committed[n];
    pthread_mutex_unlock(&f->mu);
    return r;
}

/* ---- the consumer: acks checked against the commits ----------------------------- */

typedef struct fake_consumer {
    rp_tap_consumer_hooks hooks;
    bool started;
    fake_feed *feed;
    bool acked[MAX_TAGS + 1];
    size_t n_acked;       /* deliveries acked (a multiple ack counts each) */
    size_t early;         /* acked before its commit */
    size_t twice;         /* acked again */
    size_t cancels, consumes;
} fake_consumer;

static rp_status c_start(void *self, const rp_tap_consumer_hooks *hooks) {
    fake_consumer *c = self;
    c->hooks = *hooks;
    c->started = true;
    return RP_OK;
}

static void c_ack_one(fake_consumer *c, uint64_t tag) {
    if (tag > MAX_TAGS) return;
    if (c->acked[tag]) c->twice++;
    c->acked[tag] = true;
    c->n_acked++;
    /* Tag n carries message order-n (deliver() below). */
    if (!feed_has(c->feed, tag)) c->early++;
}

static bool c_ack(void *self, uint64_t tag, bool multiple) {
    fake_consumer *c = self;
    if (!multiple) {
        c_ack_one(c, tag);
        return true;
    }
    for (uint64_t k = 1; k <= tag && k <= MAX_TAGS; k++)
        if (!c->acked[k]) c_ack_one(c, k);
    return true;
}

static bool c_cancel(void *self, const char *tag) {
    (void)tag;
    ((fake_consumer *)self)->cancels++;
    return true;
}

static bool c_consume(void *self, const char *tag) {
    (void)tag;
    ((fake_consumer *)self)->consumes++;
    return true;
}

/* ---- the bindings ---------------------------------------------------------------- */

typedef struct fake_bind {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool gate_open;
    size_t runs;
    rp_status st;
} fake_bind;

static rp_status b_reconcile(void *self, const rp_config *cfg, const char *vhost,
                             rp_tap_bind_stats *stats, const char **reason) {
    (void)cfg;
    (void)vhost;
    fake_bind *b = self;
    pthread_mutex_lock(&b->mu);
    while (!b->gate_open) pthread_cond_wait(&b->cv, &b->mu);
    b->runs++;
    rp_status st = b->st;
    pthread_mutex_unlock(&b->mu);
    *stats = (rp_tap_bind_stats){.exchanges = 1};
    *reason = "";
    return st;
}

static size_t bind_runs(fake_bind *b) {
    pthread_mutex_lock(&b->mu);
    size_t n = b->runs;
    pthread_mutex_unlock(&b->mu);
    return n;
}

static void bind_gate(fake_bind *b, bool open) {
    pthread_mutex_lock(&b->mu);
    b->gate_open = open;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* ---- the fixture ------------------------------------------------------------------ */

typedef struct fixture {
    struct event_base *base;
    struct event *tick;
    rp_config cfg;
    const rp_config *cfgp;
    bool stopping;
    const char *vhost;
    unsigned generation;
    bool broker_up;
    rp_metrics metrics;
    rp_memory *m;
    rp_memory_park_batch *pb;
    fake_feed feed;
    fake_consumer consumer;
    fake_bind bind;
    rp_tap_bind_port bind_port;
    rp_tap *tap;
} fixture;

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
}

static int setup(void **state) {
    static bool threads;
    if (!threads) {
        assert_int_equal(evthread_use_pthreads(), 0);
        threads = true;
    }
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->tick = event_new(f->base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 10 * 1000};
    event_add(f->tick, &tv);
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    f->cfgp = &f->cfg;
    f->vhost = "/";
    f->generation = 1;
    f->broker_up = true;
    rp_metrics_init(&f->metrics, "test", "test");
    f->m = rp_memory_new();
    f->pb = rp_memory_park_batch_new(f->m, 2);
    assert_non_null(f->pb);
    pthread_mutex_init(&f->feed.mu, NULL);
    f->consumer.feed = &f->feed;
    pthread_mutex_init(&f->bind.mu, NULL);
    pthread_cond_init(&f->bind.cv, NULL);
    f->bind.gate_open = true;
    f->bind.st = RP_OK;
    f->bind_port = (rp_tap_bind_port){.self = &f->bind, .reconcile = b_reconcile};
    rp_tap_deps deps = {
        .cfg = &f->cfgp,
        .stopping = &f->stopping,
        .vhost = &f->vhost,
        .broker_generation = &f->generation,
        .broker_up = &f->broker_up,
        .metrics = &f->metrics,
        .feed = {.self = &f->feed, .publish = feed_publish},
        .consumer = {.self = &f->consumer,
                     .start = c_start,
                     .ack = c_ack,
                     .cancel = c_cancel,
                     .consume = c_consume,
                     .items = {.ctx = NULL, .drop = t_drop, .shed = t_shed},
                     .examiner = {NULL, t_inspect, t_capture, t_release}},
        .bind = &f->bind_port,
    };
    rp_memory_park_batch_port(f->pb, &deps.store.batch);
    rp_memory_park_batch_ports(f->pb, &deps.store.ports);
    f->tap = rp_tap_new(f->base, &deps);
    assert_non_null(f->tap);
    assert_int_equal(rp_tap_connect(f->tap), RP_OK);
    assert_true(f->consumer.started);
    items_dropped = 0;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    bind_gate(&f->bind, true);
    rp_tap_free(f->tap);
    rp_memory_park_batch_free(f->pb);
    rp_memory_free(f->m);
    rp_config_cleanup(&f->cfg);
    event_free(f->tick);
    event_base_free(f->base);
    pthread_mutex_destroy(&f->feed.mu);
    pthread_mutex_destroy(&f->bind.mu);
    pthread_cond_destroy(&f->bind.cv);
    free(f);
    return 0;
}

/* Runs the loop until cond(f) or ms have passed; whether cond held. */
static bool run_until(fixture *f, bool (*cond)(fixture *f, void *arg), void *arg, int ms) {
    int64_t end = rp_clock_mono_ms() + ms;
    while (!cond(f, arg)) {
        if (rp_clock_mono_ms() > end) return false;
        event_base_loop(f->base, EVLOOP_ONCE);
    }
    return true;
}

static bool never(fixture *f, void *arg) {
    (void)f;
    (void)arg;
    return false;
}

static bool acked_at_least(fixture *f, void *arg) {
    return f->consumer.n_acked >= *(size_t *)arg;
}

static bool paused_idle(fixture *f, void *arg) {
    (void)arg;
    int64_t held;
    bool paused;
    rp_tap_gauges(f->tap, &held, &paused);
    return paused && !rp_tap_busy(f->tap);
}

/* The consumer hands deliveries tag first..first+n-1, message order-<tag>. */
static void deliver(fixture *f, uint64_t first, size_t n) {
    for (size_t i = 0; i < n; i++) {
        test_item *it = calloc(1, sizeof *it);
        assert_non_null(it);
        uint64_t tag = first + i;
        it->base.tag = tag;
        it->base.weight = 100;
        snprintf(it->msg_id, sizeof it->msg_id, "order-%llu", (unsigned long long)tag);
        snprintf(it->body, sizeof it->body, "b%llu", (unsigned long long)tag);
        f->consumer.hooks.on_item(f->consumer.hooks.arg, &it->base);
    }
}

/* ---- the tests --------------------------------------------------------------------- */

/* Deliveries are parked, then acked (each once, each after its commit). */
static void test_parked_then_acked_after_commit(void **state) {
    fixture *f = *state;
    f->consumer.hooks.on_up(f->consumer.hooks.arg);
    deliver(f, 1, 12);
    size_t want = 12;
    assert_true(run_until(f, acked_at_least, &want, 5000));
    rp_tap_stop(f->tap); /* joins the tap's thread */
    assert_int_equal(f->consumer.n_acked, 12);
    assert_int_equal(f->consumer.early, 0);
    assert_int_equal(f->consumer.twice, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 12);
    for (uint64_t k = 1; k <= 12; k++) assert_true(f->consumer.acked[k]);
    int64_t held;
    bool paused;
    rp_tap_gauges(f->tap, &held, &paused);
    assert_int_equal(held, 0);
    assert_false(paused);
    assert_int_equal(items_dropped, 12);
}

/* The store unreachable: held unacked and paused; once it answers, parked
 * and acked. */
static void test_store_down_holds_and_retries(void **state) {
    fixture *f = *state;
    rp_memory_park_batch_set_down(f->pb, true);
    f->consumer.hooks.on_up(f->consumer.hooks.arg);
    deliver(f, 1, 5);
    assert_true(run_until(f, paused_idle, NULL, 3000));
    run_until(f, never, NULL, 300);
    assert_int_equal(f->consumer.n_acked, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 0);
    int64_t held;
    bool paused;
    rp_tap_gauges(f->tap, &held, &paused);
    assert_int_equal(held, 5 * 100);
    assert_true(paused);
    /* The store comes back while the tap's thread is idle: paused with
     * nothing in flight, and the loop (which would hand it a batch) is
     * not running. */
    assert_true(run_until(f, paused_idle, NULL, 3000));
    rp_memory_park_batch_set_down(f->pb, false);
    size_t want = 5;
    assert_true(run_until(f, acked_at_least, &want, 10000));
    rp_tap_stop(f->tap);
    assert_int_equal(f->consumer.n_acked, 5);
    assert_int_equal(f->consumer.early, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 5);
    rp_tap_gauges(f->tap, &held, &paused);
    assert_int_equal(held, 0);
    assert_false(paused);
}

/* One that fails on its own is held, never acked; the others are acked
 * after their commit. */
static void test_failed_one_held_never_acked(void **state) {
    fixture *f = *state;
    rp_memory_park_batch_fail_identity(f->pb, "id:%2F/vibey.orders/order-3");
    f->consumer.hooks.on_up(f->consumer.hooks.arg);
    deliver(f, 1, 6);
    size_t want = 5;
    assert_true(run_until(f, acked_at_least, &want, 5000));
    run_until(f, never, NULL, 300);
    rp_tap_stop(f->tap);
    assert_int_equal(f->consumer.n_acked, 5);
    assert_false(f->consumer.acked[3]);
    assert_int_equal(f->consumer.early, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 5);
    int64_t held;
    bool paused;
    rp_tap_gauges(f->tap, &held, &paused);
    assert_true(held > 0); /* the stuck one, shed to its tag */
}

/* The deliveries of one read (handed on one after the other in one call,
 * as the consumer's drain does) go to the tap's thread together: one
 * transaction, not the first alone and the rest after it; a delivery that
 * comes alone later is parked in a transaction of its own without waiting
 * for more. */
static void test_one_read_one_transaction(void **state) {
    fixture *f = *state;
    f->consumer.hooks.on_up(f->consumer.hooks.arg);
    deliver(f, 1, 12);
    size_t want = 12;
    assert_true(run_until(f, acked_at_least, &want, 5000));
    rp_memory_park_batch_stats st = rp_memory_park_batch_stats_of(f->pb);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.committed, 1);
    deliver(f, 13, 1);
    want = 13;
    assert_true(run_until(f, acked_at_least, &want, 5000));
    st = rp_memory_park_batch_stats_of(f->pb);
    assert_int_equal(st.sent, 2);
    rp_tap_stop(f->tap);
    assert_int_equal(f->consumer.early, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 13);
}

static bool runs_at_least(fixture *f, void *arg) {
    return bind_runs(&f->bind) >= *(size_t *)arg;
}

/* Reconciles asked for while one runs make exactly one more; bound only for
 * the connection the last good one was asked for. */
static void test_bindings_coalesced_and_bound(void **state) {
    fixture *f = *state;
    assert_false(rp_tap_bound(f->tap));
    bind_gate(&f->bind, false);
    rp_tap_bind_soon(f->tap);
    rp_tap_bind_soon(f->tap);
    rp_tap_bind_soon(f->tap);
    bind_gate(&f->bind, true);
    size_t want = 2;
    assert_true(run_until(f, runs_at_least, &want, 3000));
    run_until(f, never, NULL, 300);
    assert_int_equal(bind_runs(&f->bind), 2);
    assert_true(rp_tap_bound(f->tap));
    /* A new connection: not bound until a reconcile for it succeeds. */
    f->generation = 2;
    assert_false(rp_tap_bound(f->tap));
    pthread_mutex_lock(&f->bind.mu);
    f->bind.st = RP_ERR_UNAVAILABLE; /* the binding thread is idle */
    pthread_mutex_unlock(&f->bind.mu);
    rp_tap_bind_soon(f->tap);
    want = 3;
    assert_true(run_until(f, runs_at_least, &want, 3000));
    run_until(f, never, NULL, 200);
    assert_false(rp_tap_bound(f->tap));
    pthread_mutex_lock(&f->bind.mu);
    f->bind.st = RP_OK;
    pthread_mutex_unlock(&f->bind.mu);
    rp_tap_bind_soon(f->tap);
    want = 4;
    assert_true(run_until(f, runs_at_least, &want, 3000));
    run_until(f, never, NULL, 200);
    assert_true(rp_tap_bound(f->tap));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parked_then_acked_after_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_down_holds_and_retries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_one_held_never_acked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_read_one_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bindings_coalesced_and_bound, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
