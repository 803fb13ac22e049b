/* The broker-event part (app/rp_events.h) on a real event_base, its
 * threads and timers, over a runner port (core/rp_runner_port.h) filled
 * with the memory adapter:
 *  - a consumer.deleted event on an owned queue leads to a check that
 *    judges the queue with the events' consumer count (the memory broker
 *    still reports the stale consumer, as the management API does for a
 *    statistics interval), opens the sighting and publishes its ledger
 *    event to deps.publisher; the sweep's wrapped broker port then reads
 *    the events' count too;
 *  - the debounce holds: a burst of events on two queues is one check job,
 *    begun no earlier than RP_CONSUMERS_NOW_MS after the events, reading
 *    each queue once;
 *  - a seed merges: the listing after a (re)connect announces the owned
 *    queues (not the others), and the next listing announces what came and
 *    what went. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>

#include "rp_clock.h"
#include "rp_consumers.h"
#include "rp_events.h"
#include "rp_memory.h"
#include "rp_pass_setup.h"

#define NOW ((rp_time_ms)1700000000000LL)

/* ---- the fake runner port over the memory adapter ---------------------------- */

typedef struct fixture fixture;

struct rp_runner_set {
    fixture *f;
    bool with_store;
    rp_ports ports;
};

struct fixture {
    struct event_base *base;
    rp_config cfg;
    const rp_config *cfg_now;
    bool stopping;
    rp_memory *m;
    rp_ports mem;
    rp_events *e;
    /* Counted on the part's threads (atomics). */
    int connects;        /* one per check job */
    int64_t first_connect_ms;
    int get_queue;       /* reads of a queue by the checks */
    int listings;
    int reconciles;
    int published;
    int opened, closed;
    /* What the queue hook said, on the loop. */
    char said[2048];
    int watched_asked; /* the watched hook's calls (loop) */
};

/* broker.vhosts: only "/" (the URL's) is watched. */
static bool fake_watched(void *arg, const char *vhost) {
    ((fixture *)arg)->watched_asked++;
    return strcmp(vhost, "/") == 0;
}

static rp_status fake_get_queue(void *self, const char *vhost, const char *name,
                                rp_queue_facts *out) {
    rp_runner_set *s = self;
    __atomic_add_fetch(&s->f->get_queue, 1, __ATOMIC_ACQ_REL);
    return s->f->mem.broker.get_queue(s->f->mem.broker.self, vhost, name, out);
}

static rp_runner_set *fake_open(void *self, const rp_config *cfg, bool with_store,
                                const rp_publisher_port *publisher) {
    fixture *f = self;
    assert_non_null(cfg);
    rp_runner_set *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->f = f;
    s->with_store = with_store;
    s->ports = f->mem;
    if (!with_store) {
        memset(&s->ports.store, 0, sizeof s->ports.store);
        memset(&s->ports.publisher, 0, sizeof s->ports.publisher);
    } else if (publisher != NULL) {
        s->ports.publisher = *publisher;
    }
    s->ports.broker.self = s;
    s->ports.broker.get_queue = fake_get_queue;
    /* The memory broker's other functions take the memory store as self. */
    s->ports.broker.list_queues = NULL;
    s->ports.broker.get_timeout_in_force = NULL;
    s->ports.broker.exchange_exists = NULL;
    s->ports.broker.exchange_bound = NULL;
    f->opened++;
    return s;
}

static const rp_ports *fake_ports(void *self, rp_runner_set *s) {
    (void)self;
    return &s->ports;
}

static rp_status fake_connect(void *self, rp_runner_set *s, char *err, size_t n) {
    fixture *f = self;
    (void)err;
    (void)n;
    assert_true(s->with_store);
    int64_t t = rp_clock_mono_ms();
    int64_t zero = 0;
    __atomic_compare_exchange_n(&f->first_connect_ms, &zero, t, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    __atomic_add_fetch(&f->connects, 1, __ATOMIC_ACQ_REL);
    return RP_OK;
}

static void fake_pass_options(void *self, const rp_config *cfg, rp_pass_options *opt) {
    (void)self;
    rp_pass_options_from_config(cfg, opt);
}

static rp_status fake_list(void *self, rp_runner_set *s, size_t page, rp_queue_page *out) {
    fixture *f = self;
    assert_false(s->with_store);
    __atomic_add_fetch(&f->listings, 1, __ATOMIC_ACQ_REL);
    return f->mem.broker.list_queues(f->mem.broker.self, page, out);
}

static const char *fake_last_error(void *self, rp_runner_set *s) {
    (void)self;
    (void)s;
    return "";
}

static rp_status fake_reconcile(void *self, rp_runner_set *s, const rp_config *cfg,
                                rp_report *report, rp_pass_policy_stats *stats) {
    fixture *f = self;
    (void)s;
    (void)cfg;
    (void)report;
    memset(stats, 0, sizeof *stats);
    __atomic_add_fetch(&f->reconciles, 1, __ATOMIC_ACQ_REL);
    return RP_OK;
}

static void fake_close(void *self, rp_runner_set *s) {
    fixture *f = self;
    f->closed++;
    free(s);
}

static rp_status fake_publish(void *self, const rp_ledger_event *ev) {
    fixture *f = self;
    (void)ev;
    __atomic_add_fetch(&f->published, 1, __ATOMIC_ACQ_REL);
    return RP_OK;
}

static void on_queue(void *arg, const char *vhost, const char *name, bool dlq, bool created) {
    fixture *f = arg;
    size_t n = strlen(f->said);
    snprintf(f->said + n, sizeof f->said - n, "%sQ%c %s/%s%s", n ? "; " : "", created ? '+' : '-',
             vhost, name ? name : "*", dlq ? "[dlq]" : "");
}

/* ---- the fixture --------------------------------------------------------------- */

static void put(fixture *f, const char *name, int64_t ready, int64_t unacked, int64_t consumers) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = name,
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = true,
        .ready = ready,
        .unacked = unacked,
        .consumers_known = true,
        .consumers = consumers,
    };
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    assert_int_equal(rp_config_validate(&f->cfg, &problems), RP_OK); /* compiles the patterns */
    rp_config_problems_cleanup(&problems);
    f->cfg_now = &f->cfg;
    f->m = rp_memory_new();
    assert_non_null(f->m);
    rp_memory_set_now(f->m, NOW);
    rp_memory_ports(f->m, &f->mem);
    rp_events_deps deps = {
        .cfg = &f->cfg_now,
        .runner = {.self = f,
                   .open = fake_open,
                   .ports = fake_ports,
                   .connect = fake_connect,
                   .pass_options = fake_pass_options,
                   .list_queues = fake_list,
                   .last_error = fake_last_error,
                   .reconcile = fake_reconcile,
                   .close = fake_close},
        .publisher = {.self = f, .publish = fake_publish},
        .stopping = &f->stopping,
        .mono_ms = rp_clock_mono_ms,
        .wall_ms = rp_clock_wall_ms,
        .watched = fake_watched,
        .watched_arg = f,
    };
    f->e = rp_events_new(f->base, &deps);
    assert_non_null(f->e);
    assert_int_equal(f->opened, 2); /* the checks' set and the policy thread's */
    assert_int_equal(rp_events_add_queue_hook(f->e, on_queue, f), RP_OK);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_events_free(f->e);
    assert_int_equal(f->closed, 2);
    rp_memory_free(f->m);
    rp_config_cleanup(&f->cfg);
    event_base_free(f->base);
    free(f);
    return 0;
}

/* Turns the loop in slices of 10 ms until pred holds or ms have passed. */
static bool run_until(fixture *f, bool (*pred)(fixture *), int64_t ms) {
    int64_t end = rp_clock_mono_ms() + ms;
    while (!pred(f)) {
        if (rp_clock_mono_ms() >= end) return false;
        struct timeval tv = {0, 10 * 1000};
        event_base_loopexit(f->base, &tv);
        event_base_dispatch(f->base);
    }
    return true;
}

static bool never(fixture *f) {
    (void)f;
    return false;
}

static int loaded(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

static bool seeded_a(fixture *f) { return strstr(f->said, "Q+ //vibey.a") != NULL; }
static bool opened_sighting(fixture *f) {
    return loaded(&f->published) >= 1;
}
static bool checked(fixture *f) { return loaded(&f->connects) >= 1; }

static rp_broker_event consumer_deleted(const char *queue, const char *tag) {
    rp_broker_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = RP_BEV_CONSUMER_DELETED;
    snprintf(ev.routing_key, sizeof ev.routing_key, "consumer.deleted");
    snprintf(ev.vhost, sizeof ev.vhost, "/");
    snprintf(ev.name, sizeof ev.name, "%s", queue);
    snprintf(ev.consumer_tag, sizeof ev.consumer_tag, "%s", tag);
    snprintf(ev.pid, sizeof ev.pid, "<rabbit@h.1.2.3>");
    snprintf(ev.user, sizeof ev.user, "worker");
    ev.has_timestamp = true;
    ev.timestamp_ms = rp_clock_wall_ms();
    return ev;
}

/* ---- the tests -------------------------------------------------------------------- */

/* The memory broker keeps saying 1 consumer (the statistics lag the
 * cancel), with 3 deliveries unacknowledged. The seed reads the consumer
 * as the base; consumer.deleted lowers it to 0; the check made at once
 * judges with that 0: HOLDER_GONE is surfaced, its sighting opened and its
 * ledger event published. With the reading's count instead (the rule
 * broken) nothing would be judged. */
static void test_consumer_deleted_checked_with_event_count(void **state) {
    fixture *f = *state;
    put(f, "vibey.a", 0, 3, 1);
    rp_events_on_up(f->e);
    assert_true(run_until(f, seeded_a, 5000));
    assert_int_equal(loaded(&f->listings), 1);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);

    rp_broker_event ev = consumer_deleted("vibey.a", "ctag-1");
    rp_events_on_event(f->e, &ev);
    assert_true(run_until(f, opened_sighting, 5000));
    /* Let the check's done function run on the loop. */
    (void)run_until(f, never, 100);
    assert_int_equal(loaded(&f->connects), 1);
    assert_int_equal(loaded(&f->get_queue), 1);
    assert_int_equal(rp_memory_n_sightings(f->m), 1);
    assert_non_null(rp_memory_sighting(f->m, "broker|HOLDER_GONE|queue:/:vibey.a"));
    assert_int_equal(rp_memory_n_ledger(f->m), 1);
    assert_int_equal(rp_memory_ledger(f->m, 0)->verdict.condition, RP_COND_HOLDER_GONE);
    assert_int_equal(loaded(&f->published), 1);

    /* The sweep's broker port, wrapped, uses the events' count too for a
     * statistics interval (the memory broker still says 1). */
    rp_broker_port sweep = f->mem.broker;
    rp_events_wrap_sweep_port(f->e, &sweep);
    rp_queue_facts q;
    assert_int_equal(sweep.get_queue(sweep.self, "/", "vibey.a", &q), RP_OK);
    assert_true(q.consumers_known);
    assert_int_equal(q.consumers, 0);
    rp_queue_page pg;
    assert_int_equal(sweep.list_queues(sweep.self, 1, &pg), RP_OK);
    assert_int_equal(pg.n, 1);
    assert_int_equal(pg.queues[0].consumers, 0);
    /* The memory broker itself is unchanged. */
    assert_int_equal(f->mem.broker.get_queue(f->mem.broker.self, "/", "vibey.a", &q), RP_OK);
    assert_int_equal(q.consumers, 1);
}

/* A consumer.deleted on a queue that is not owned is no check at all. */
static void test_unowned_queue_not_checked(void **state) {
    fixture *f = *state;
    put(f, "vibey.a", 0, 3, 1);
    put(f, "other.q", 0, 3, 1);
    rp_events_on_up(f->e);
    assert_true(run_until(f, seeded_a, 5000));
    rp_broker_event ev = consumer_deleted("other.q", "ctag-1");
    rp_events_on_event(f->e, &ev);
    (void)run_until(f, never, RP_CONSUMERS_NOW_MS + 250);
    assert_int_equal(loaded(&f->connects), 0);
    assert_int_equal(loaded(&f->get_queue), 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
}

/* Six events on two owned queues in a burst: one check job, begun no
 * earlier than RP_CONSUMERS_NOW_MS after them, reading each queue once. */
/* Issue 19: the one event exchange carries every vhost's events; those of
 * a vhost reaperd does not watch are dropped before any decision: an owned
 * queue created and a consumer cancelled there are neither inventoried nor
 * checked, while the same in the watched vhost are. */
static void test_unwatched_vhost_ignored(void **state) {
    fixture *f = *state;
    put(f, "vibey.a", 0, 3, 1);
    rp_events_on_up(f->e);
    assert_true(run_until(f, seeded_a, 5000));
    rp_broker_event created;
    memset(&created, 0, sizeof created);
    created.kind = RP_BEV_QUEUE_CREATED;
    snprintf(created.routing_key, sizeof created.routing_key, "queue.created");
    snprintf(created.vhost, sizeof created.vhost, "tenant-c");
    snprintf(created.name, sizeof created.name, "vibey.c");
    rp_events_on_event(f->e, &created);
    rp_broker_event ev = consumer_deleted("vibey.a", "ctag-1");
    snprintf(ev.vhost, sizeof ev.vhost, "tenant-c");
    rp_events_on_event(f->e, &ev);
    (void)run_until(f, never, RP_CONSUMERS_NOW_MS + 250);
    assert_int_equal(f->watched_asked, 2);
    assert_null(strstr(f->said, "tenant-c"));
    assert_int_equal(loaded(&f->connects), 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    /* The same in "/": taken. */
    snprintf(created.vhost, sizeof created.vhost, "/");
    rp_events_on_event(f->e, &created);
    assert_non_null(strstr(f->said, "Q+ //vibey.c"));
    ev = consumer_deleted("vibey.a", "ctag-1");
    rp_events_on_event(f->e, &ev);
    assert_true(run_until(f, checked, 5000));
}

static void test_debounce_holds(void **state) {
    fixture *f = *state;
    put(f, "vibey.a", 0, 3, 5);
    put(f, "vibey.b", 0, 2, 1);
    rp_events_on_up(f->e);
    assert_true(run_until(f, seeded_a, 5000));
    int64_t t0 = rp_clock_mono_ms();
    char tag[16];
    for (int i = 0; i < 5; i++) {
        snprintf(tag, sizeof tag, "ctag-%d", i);
        rp_broker_event ev = consumer_deleted("vibey.a", tag);
        rp_events_on_event(f->e, &ev);
    }
    rp_broker_event evb = consumer_deleted("vibey.b", "ctag-b");
    rp_events_on_event(f->e, &evb);
    assert_true(run_until(f, checked, 5000));
    int64_t began = __atomic_load_n(&f->first_connect_ms, __ATOMIC_ACQUIRE);
    assert_true(began - t0 >= RP_CONSUMERS_NOW_MS);
    /* Long enough for a second check at once, well before the late one. */
    (void)run_until(f, never, 600);
    assert_int_equal(loaded(&f->connects), 1);
    assert_int_equal(loaded(&f->get_queue), 2);
    /* vibey.b's one consumer is gone by the events: surfaced; vibey.a has
     * 5 - 5 = 0 too. */
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
}

static bool seeded_twice(fixture *f) { return strstr(f->said, "Q+ //vibey.c") != NULL; }

/* The seed announces the owned queues of its listing (a dead-letter queue
 * as such, never a queue reaper does not own); after a reconnect the next
 * listing is merged: what came is announced, what went is said gone, what
 * stayed is not said again. */
static void test_seed_merges(void **state) {
    fixture *f = *state;
    put(f, "vibey.a", 0, 0, 1);
    put(f, "vibey.a.dlq", 4, 0, 0);
    put(f, "other.q", 0, 0, 0);
    rp_events_on_up(f->e);
    assert_true(run_until(f, seeded_a, 5000));
    (void)run_until(f, never, 50);
    assert_string_equal(f->said, "Q+ //vibey.a; Q+ //vibey.a.dlq[dlq]");

    f->said[0] = '\0';
    assert_int_equal(rp_memory_remove_queue(f->m, "/", "vibey.a.dlq"), RP_OK);
    put(f, "vibey.c", 0, 0, 0);
    rp_events_on_down(f->e);
    rp_events_on_up(f->e);
    assert_true(run_until(f, seeded_twice, 5000));
    (void)run_until(f, never, 50);
    assert_string_equal(f->said, "Q+ //vibey.c; Q- //vibey.a.dlq[dlq]");
    assert_int_equal(loaded(&f->listings), 2);
    assert_int_equal(loaded(&f->reconciles), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_consumer_deleted_checked_with_event_count, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unowned_queue_not_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwatched_vhost_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_debounce_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seed_merges, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
