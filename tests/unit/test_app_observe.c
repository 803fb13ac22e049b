/* The metrics glue (app/rp_observe.c) on a real event_base with a fake
 * store-job runner and a fake gauges port: ledger events in a burst cause
 * one recount, not one each, and not before the debounce has passed; a
 * recount is not started while one waits; what it counted lands in the
 * registry. Readiness says what it waits for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rp_observe.h"

typedef struct fake {
    /* Store jobs handed over, not yet run. */
    rp_work_fn fn[16];
    rp_done_fn done[16];
    void *job[16];
    int queued, submitted;
    int gate_counts, sighting_counts;
    int gates_take_ms; /* how long a count of the open gates takes */
    bool store_up;
    bool tap_bound;
} fake;

static rp_status fake_store_job(void *arg, rp_work_fn fn, rp_done_fn done, void *job) {
    fake *f = arg;
    if (f->queued == 16) return RP_ERR_NOMEM;
    f->fn[f->queued] = fn;
    f->done[f->queued] = done;
    f->job[f->queued] = job;
    f->queued++;
    f->submitted++;
    return RP_OK;
}

/* Runs the oldest job as the store thread would, then its done. */
static void fake_run_one(fake *f) {
    assert_true(f->queued > 0);
    f->fn[0](NULL, f->job[0]);
    f->done[0](f->job[0], false);
    memmove(f->fn, f->fn + 1, sizeof f->fn[0] * (size_t)(f->queued - 1));
    memmove(f->done, f->done + 1, sizeof f->done[0] * (size_t)(f->queued - 1));
    memmove(f->job, f->job + 1, sizeof f->job[0] * (size_t)(f->queued - 1));
    f->queued--;
}

static bool fake_up(void *self) { return ((fake *)self)->store_up; }

static rp_status fake_gates(void *self, int64_t by_kind[RP_GATE_KIND_COUNT_],
                            int64_t age_ms[RP_GATE_KIND_COUNT_]) {
    fake *f = self;
    f->gate_counts++;
    if (f->gates_take_ms > 0) usleep((useconds_t)f->gates_take_ms * 1000);
    for (int k = 0; k < RP_GATE_KIND_COUNT_; k++) {
        by_kind[k] = k + 1;
        age_ms[k] = 1000;
    }
    return RP_OK;
}

static rp_status fake_sightings(void *self, int64_t by_condition[RP_COND_COUNT_]) {
    fake *f = self;
    f->sighting_counts++;
    for (int c = 0; c < RP_COND_COUNT_; c++) by_condition[c] = 10 + c;
    return RP_OK;
}

static bool fake_tap_bound(void *arg) { return ((fake *)arg)->tap_bound; }

static rp_time_ms fixed_now(void *self) {
    (void)self;
    return 5000000;
}

static int64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void turn(struct event_base *base, int ms) {
    int64_t until = mono_ms() + ms;
    for (;;) { /* the loop turns once more after the time is up */
        event_base_loop(base, EVLOOP_NONBLOCK);
        if (mono_ms() >= until) return;
        usleep(1000);
    }
}

typedef struct rig {
    fake f;
    rp_metrics m;
    bool stopping, broker_up, store_up;
    struct event_base *base;
    rp_observe *o;
} rig;

static void rig_up(rig *r, int gauges_ms) {
    memset(r, 0, sizeof *r);
    r->f.store_up = true;
    r->f.tap_bound = true;
    rp_metrics_init(&r->m, "test", "rev");
    r->base = event_base_new();
    assert_non_null(r->base);
    rp_observe_deps deps = {
        .metrics = &r->m,
        .stopping = &r->stopping,
        .broker_up = &r->broker_up,
        .store_up = &r->store_up,
        .clock = {.now_ms = fixed_now},
        .tap_bound = fake_tap_bound,
        .tap_arg = &r->f,
        .gauges = {.self = &r->f,
                   .store_up = fake_up,
                   .open_gates_aged = fake_gates,
                   .open_sightings = fake_sightings},
        .store_job = fake_store_job,
        .store_job_arg = &r->f,
        .gauges_ms = gauges_ms,
    };
    r->o = rp_observe_new(r->base, &deps);
    assert_non_null(r->o);
}

static void rig_down(rig *r) {
    while (r->f.queued > 0) fake_run_one(&r->f);
    rp_observe_free(r->o);
    event_base_free(r->base);
}

static void test_a_burst_is_counted_once_after_the_debounce(void **state) {
    (void)state;
    rig r;
    rig_up(&r, 300);
    for (int i = 0; i < 20; i++) rp_observe_gauges_soon(r.o);
    /* Not at once: the debounce holds the recount. */
    turn(r.base, 50);
    assert_int_equal(r.f.submitted, 0);
    turn(r.base, 500);
    assert_int_equal(r.f.submitted, 1);
    /* More events while that recount waits on the store thread: the timer
     * runs again, but no second recount is queued behind the first. */
    rp_observe_gauges_soon(r.o);
    turn(r.base, 500);
    assert_int_equal(r.f.submitted, 1);
    fake_run_one(&r.f);
    assert_int_equal(r.f.gate_counts, 1);
    assert_int_equal(r.f.sighting_counts, 1);
    for (int c = 0; c < RP_COND_COUNT_; c++) assert_int_equal(r.m.sightings_open[c], 10 + c);
    for (int k = 0; k < RP_GATE_KIND_COUNT_; k++) assert_int_equal(r.m.gates_open[k], k + 1);
    /* Done: the next event leads to the next recount. */
    rp_observe_gauges_soon(r.o);
    turn(r.base, 500);
    assert_int_equal(r.f.submitted, 2);
    /* Stopping: no recount starts. */
    fake_run_one(&r.f);
    r.stopping = true;
    rp_observe_gauges_soon(r.o);
    turn(r.base, 500);
    assert_int_equal(r.f.submitted, 2);
    rig_down(&r);
}

/* A recount that took long spaces the next ones out: at least
 * RP_OBSERVE_GAUGES_SPACING times its time, not gauges_ms. */
static void test_a_slow_count_spaces_the_next_out(void **state) {
    (void)state;
    rig r;
    rig_up(&r, 100);
    r.f.gates_take_ms = 20; /* the next waits at least 1,000 ms */
    rp_observe_gauges_soon(r.o);
    turn(r.base, 150);
    assert_int_equal(r.f.queued, 1);
    fake_run_one(&r.f);
    assert_int_equal(r.f.gate_counts, 1);
    r.f.gates_take_ms = 0;
    int64_t soon = mono_ms();
    rp_observe_gauges_soon(r.o);
    turn(r.base, 600); /* past gauges_ms many times over: still held */
    assert_int_equal(r.f.submitted, 1);
    /* It goes once 50 times the count's time (20 ms or more, on a loaded
     * machine more) has passed, and not before. */
    for (int i = 0; i < 100 && r.f.submitted < 2; i++) turn(r.base, 50);
    assert_int_equal(r.f.submitted, 2);
    assert_true(mono_ms() - soon >= 20 * RP_OBSERVE_GAUGES_SPACING);
    fake_run_one(&r.f);
    /* That one was quick: the debounce is gauges_ms again. */
    rp_observe_gauges_soon(r.o);
    turn(r.base, 250);
    assert_int_equal(r.f.submitted, 3);
    rig_down(&r);
}

static void test_the_wait_is_spaced_and_capped(void **state) {
    (void)state;
    assert_int_equal(rp_observe_gauges_wait_ms(2000, 0), 2000);
    assert_int_equal(rp_observe_gauges_wait_ms(2000, 40), 2000);
    assert_int_equal(rp_observe_gauges_wait_ms(2000, 41), 41 * RP_OBSERVE_GAUGES_SPACING);
    assert_int_equal(rp_observe_gauges_wait_ms(2000, 124), 6200);
    /* A count stalled for minutes: the next waits a minute, not hours. */
    assert_int_equal(rp_observe_gauges_wait_ms(2000, 300000), RP_OBSERVE_GAUGES_MAX_MS);
    assert_int_equal(rp_observe_gauges_wait_ms(90000, 300000), 90000);
}

static void test_ready_says_what_it_waits_for(void **state) {
    (void)state;
    rig r;
    rig_up(&r, 300);
    char why[64];
    assert_false(rp_observe_ready(r.o, why, sizeof why));
    assert_string_equal(why, "broker down, store down");
    r.broker_up = true;
    assert_false(rp_observe_ready(r.o, why, sizeof why));
    assert_string_equal(why, "store down");
    r.store_up = true;
    r.f.tap_bound = false;
    assert_false(rp_observe_ready(r.o, why, sizeof why));
    assert_string_equal(why, "dead-letter tap not bound yet");
    r.f.tap_bound = true;
    assert_true(rp_observe_ready(r.o, why, sizeof why));
    r.stopping = true;
    assert_false(rp_observe_ready(r.o, why, sizeof why));
    assert_string_equal(why, "stopping");
    rig_down(&r);
}

/* ---- the taps of broker.vhosts (app/rp_observe_vhost_taps.h) ---- */

static struct {
    rp_observe_tap taps[2];
    size_t n;
} VT;

static bool fake_tap_gauges(void *arg, int64_t *held, bool *paused) {
    (void)arg;
    *held = 100;
    *paused = false;
    return true;
}

static bool fake_vhost_tap(void *arg, size_t i, rp_observe_tap *out) {
    (void)arg;
    if (i >= VT.n) return false;
    *out = VT.taps[i];
    return true;
}

/* Two vhost taps besides the daemon's (broker.url's vhost "/"): each one's
 * gauges are its own vhost's series (issue 19 item 1: the vhost label),
 * and /readyz waits for each, naming the vhost. */
static void test_vhost_taps_in_gauges_and_ready(void **state) {
    (void)state;
    rig r;
    rig_up(&r, 300);
    rp_observe_free(r.o);
    VT.taps[0] = (rp_observe_tap){.vhost = "b", .held_bytes = 50, .ready = true};
    VT.taps[1] = (rp_observe_tap){.vhost = "tenant c", .held_bytes = 7, .paused = true};
    VT.n = 2;
    assert_int_equal(rp_metrics_vhost_register(&r.m, "/"), RP_OK);
    assert_int_equal(rp_metrics_vhost_register(&r.m, "b"), RP_OK);
    assert_int_equal(rp_metrics_vhost_register(&r.m, "tenant c"), RP_OK);
    const char *url_vhost = "/";
    rp_observe_deps deps = {
        .metrics = &r.m,
        .stopping = &r.stopping,
        .broker_up = &r.broker_up,
        .store_up = &r.store_up,
        .clock = {.now_ms = fixed_now},
        .tap_gauges = fake_tap_gauges,
        .tap_bound = fake_tap_bound,
        .tap_arg = &r.f,
        .tap_vhost = &url_vhost,
        .vhost_tap = fake_vhost_tap,
        .gauges = {.self = &r.f,
                   .store_up = fake_up,
                   .open_gates_aged = fake_gates,
                   .open_sightings = fake_sightings},
        .store_job = fake_store_job,
        .store_job_arg = &r.f,
        .gauges_ms = 300,
    };
    r.o = rp_observe_new(r.base, &deps);
    assert_non_null(r.o);
    rp_observe_refresh(r.o);
    const rp_metrics_vhost *root = &r.m.vhosts[rp_metrics_vhost_slot(&r.m, "/")];
    const rp_metrics_vhost *b = &r.m.vhosts[rp_metrics_vhost_slot(&r.m, "b")];
    const rp_metrics_vhost *c = &r.m.vhosts[rp_metrics_vhost_slot(&r.m, "tenant c")];
    assert_int_equal(root->tap_held_bytes, 100);
    assert_int_equal(root->tap_paused, 0);
    assert_int_equal(b->tap_held_bytes, 50);
    assert_int_equal(b->tap_paused, 0);
    assert_int_equal(c->tap_held_bytes, 7);
    assert_int_equal(c->tap_paused, 1);
    assert_int_equal(r.m.overflowed, 0);
    r.broker_up = r.store_up = true;
    char why[96];
    assert_false(rp_observe_ready(r.o, why, sizeof why));
    assert_string_equal(why, "dead-letter tap of vhost tenant c down or not bound yet");
    VT.taps[1].ready = true;
    VT.taps[1].paused = false;
    assert_true(rp_observe_ready(r.o, why, sizeof why));
    rp_observe_refresh(r.o);
    assert_int_equal(c->tap_paused, 0);
    VT.n = 0;
    rig_down(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_burst_is_counted_once_after_the_debounce),
        cmocka_unit_test(test_a_slow_count_spaces_the_next_out),
        cmocka_unit_test(test_the_wait_is_spaced_and_capped),
        cmocka_unit_test(test_ready_says_what_it_waits_for),
        cmocka_unit_test(test_vhost_taps_in_gauges_and_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
