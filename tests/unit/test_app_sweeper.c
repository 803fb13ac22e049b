/* The pass scheduling (app/rp_sweeper.c) on a real event_base and store
 * thread, with a fake pass port, a fake lease LISTEN and a fake wall clock:
 * a timer that fires during a pass leaves a wish the end of the pass
 * fulfils; a sweep wish covers a lease wish; a notification of an earlier
 * lease brings the deadline timer forward (a later one does not); the
 * store's news reaches the loop; a stop closes the LISTEN and takes no
 * new pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rp_sweeper.h"

#define NOW 1000000000LL

typedef struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold; /* a pass blocks on the store thread while set */
    int started;
    rp_pass_scope scopes[64];
    /* What the next pass finds. */
    bool deadline_known;
    rp_time_ms deadline_at;
    /* Loop side. */
    int finished, cancelled;
    rp_lease_listen_hooks hooks;
    int opened, closed;
    int store_news, store_up_news;
    rp_time_ms now;
} fake;

static int started(fake *f) {
    pthread_mutex_lock(&f->mu);
    int n = f->started;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void hold(fake *f, bool on) {
    pthread_mutex_lock(&f->mu);
    f->hold = on;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void fake_run(void *self, rp_sweep_run *run) {
    fake *f = self;
    pthread_mutex_lock(&f->mu);
    if (f->started < 64) f->scopes[f->started] = run->scope;
    f->started++;
    while (f->hold) pthread_cond_wait(&f->cv, &f->mu);
    run->deadline_known = f->deadline_known;
    run->deadline_at = f->deadline_at;
    run->clock_offset_ms = 0;
    pthread_mutex_unlock(&f->mu);
}

static void fake_finish(void *self, rp_sweep_run *run, bool cancelled) {
    fake *f = self;
    (void)run;
    if (cancelled) f->cancelled++;
    else f->finished++;
}

static bool fake_store(void *self, bool check, char *detail, size_t cap) {
    (void)self;
    (void)check;
    snprintf(detail, cap, "fake store");
    return true;
}

static void *fake_open(void *self, const rp_lease_listen_hooks *hooks) {
    fake *f = self;
    f->hooks = *hooks;
    f->opened++;
    return f;
}

static void fake_close(void *self, void *listener) {
    fake *f = self;
    if (listener != NULL) f->closed++;
}

static rp_time_ms fake_now(void *self) { return ((fake *)self)->now; }

static void fake_on_store(void *arg, bool up) {
    fake *f = arg;
    f->store_news++;
    if (up) f->store_up_news++;
}

typedef struct rig {
    fake f;
    rp_config cfg;
    const rp_config *cfgp;
    bool stopping;
    struct event_base *base;
    rp_sweeper *s;
} rig;

static void rig_up(rig *r, bool enabled, int64_t interval_s, int64_t grace_s) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->f.mu, NULL);
    pthread_cond_init(&r->f.cv, NULL);
    r->f.now = NOW;
    assert_int_equal(rp_config_init(&r->cfg), RP_OK);
    r->cfg.reap.enabled = enabled;
    r->cfg.reap.interval_seconds = interval_s;
    r->cfg.reap.lease_grace_seconds = grace_s;
    r->cfgp = &r->cfg;
    r->base = event_base_new();
    assert_non_null(r->base);
    rp_sweeper_deps deps = {
        .cfg = &r->cfgp,
        .stopping = &r->stopping,
        .clock = {.self = &r->f, .now_ms = fake_now},
        .pass = {.self = &r->f, .run = fake_run, .finish = fake_finish, .store = fake_store},
        .listen = {.self = &r->f, .open = fake_open, .close = fake_close},
        .on_store = fake_on_store,
        .arg = &r->f,
    };
    r->s = rp_sweeper_new(r->base, &deps);
    assert_non_null(r->s);
}

static void rig_down(rig *r) {
    hold(&r->f, false);
    rp_sweeper_free(r->s);
    event_base_free(r->base);
    rp_config_cleanup(&r->cfg);
    pthread_cond_destroy(&r->f.cv);
    pthread_mutex_destroy(&r->f.mu);
}

static int64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Turns the loop for ms milliseconds, or until *count reaches at_least
 * (count NULL: the whole time). Returns whether it did. */
static bool turn(rig *r, int ms, int (*count)(rig *), int at_least) {
    int64_t until = mono_ms() + ms;
    for (;;) { /* the loop turns once more after the time is up */
        event_base_loop(r->base, EVLOOP_NONBLOCK);
        if (count != NULL && count(r) >= at_least) return true;
        if (mono_ms() >= until) return count == NULL;
        usleep(1000);
    }
}

static int n_started(rig *r) { return started(&r->f); }
static int n_finished(rig *r) { return r->f.finished; }
static int n_wish_sweep(rig *r) {
    rp_sweeper_state st;
    rp_sweeper_state_get(r->s, &st);
    return st.want_sweep;
}

static void test_a_timer_during_a_pass_leaves_a_wish(void **state) {
    (void)state;
    rig r;
    rig_up(&r, false, 3600, 0);
    hold(&r.f, true);
    assert_int_equal(rp_sweeper_start(r.s), RP_OK);
    assert_true(turn(&r, 5000, n_started, 1));
    assert_int_equal(r.f.scopes[0], RP_PASS_LEASES); /* reap.enabled false: leases only */
    /* A lease expiring 20 ms from now is heard: the deadline timer fires
     * while the first pass still runs. */
    r.f.hooks.on_deadline(r.f.hooks.arg, NOW + 20);
    turn(&r, 150, NULL, 0);
    rp_sweeper_state st;
    rp_sweeper_state_get(r.s, &st);
    assert_true(st.pass_running);
    assert_true(st.want_leases);
    assert_int_equal(st.deadline_rearms, 1);
    assert_int_equal(started(&r.f), 1); /* one pass at a time */
    /* The end of the pass fulfils the wish. */
    hold(&r.f, false);
    assert_true(turn(&r, 5000, n_started, 2));
    assert_int_equal(r.f.scopes[1], RP_PASS_LEASES);
    assert_true(turn(&r, 5000, n_finished, 2));
    rp_sweeper_state_get(r.s, &st);
    assert_false(st.want_leases);
    /* The store thread's news reached the loop (up, once: it did not change). */
    assert_int_equal(r.f.store_up_news, 1);
    assert_int_equal(r.f.store_news, 1);
    rig_down(&r);
}

static void test_a_sweep_wish_covers_a_lease_wish(void **state) {
    (void)state;
    rig r;
    rig_up(&r, true, 1, 0);
    hold(&r.f, true);
    assert_int_equal(rp_sweeper_start(r.s), RP_OK);
    assert_true(turn(&r, 5000, n_started, 1));
    assert_int_equal(r.f.scopes[0], RP_PASS_FULL);
    /* The LISTEN comes up while the sweep runs: a lease wish... */
    r.f.hooks.on_up(r.f.hooks.arg);
    rp_sweeper_state st;
    rp_sweeper_state_get(r.s, &st);
    assert_true(st.want_leases);
    /* ...then the sweep timer (1 s) fires: a sweep wish. */
    assert_true(turn(&r, 5000, n_wish_sweep, 1));
    hold(&r.f, false);
    assert_true(turn(&r, 5000, n_finished, 2));
    /* One more pass ran, a sweep, and no lease reap after it: the sweep
     * reaped the leases too. Later passes are the sweep timer's. */
    turn(&r, 200, NULL, 0);
    assert_int_equal(r.f.scopes[1], RP_PASS_FULL);
    int n = started(&r.f);
    for (int i = 0; i < n && i < 64; i++) assert_int_equal(r.f.scopes[i], RP_PASS_FULL);
    rp_sweeper_state_get(r.s, &st);
    assert_false(st.want_leases);
    rig_down(&r);
}

static void test_a_notification_brings_the_deadline_forward(void **state) {
    (void)state;
    rig r;
    rig_up(&r, false, 3600, 5);
    assert_int_equal(rp_sweeper_start(r.s), RP_OK);
    assert_true(turn(&r, 5000, n_finished, 1));
    /* No lease in the table: the deadline timer waits the interval. */
    rp_sweeper_state st;
    rp_sweeper_state_get(r.s, &st);
    assert_int_equal(st.deadline_fire_ms, NOW + 3600 * 1000);
    /* A lease expiring later than that changes nothing. */
    r.f.hooks.on_deadline(r.f.hooks.arg, NOW + 3600 * 1000);
    rp_sweeper_state_get(r.s, &st);
    assert_int_equal(st.deadline_rearms, 0);
    assert_int_equal(st.deadline_fire_ms, NOW + 3600 * 1000);
    /* One that expires (with the 5 s grace) 30 ms from now brings it
     * forward, strictly past the grace. */
    r.f.hooks.on_deadline(r.f.hooks.arg, NOW - 5000 + 30);
    rp_sweeper_state_get(r.s, &st);
    assert_int_equal(st.deadline_rearms, 1);
    assert_int_equal(st.deadline_fire_ms, NOW + 31);
    assert_true(turn(&r, 5000, n_started, 2));
    assert_int_equal(r.f.scopes[1], RP_PASS_LEASES);
    assert_true(turn(&r, 5000, n_finished, 2));
    /* A pass that finds a lease arms the timer for it (database clock +
     * offset, strictly past). */
    r.f.deadline_known = true;
    r.f.deadline_at = NOW + 40;
    r.f.hooks.on_deadline(r.f.hooks.arg, NOW - 5000);
    assert_true(turn(&r, 5000, n_finished, 3));
    rp_sweeper_state_get(r.s, &st);
    assert_int_equal(st.deadline_fire_ms, NOW + 41);
    /* A stop: the LISTEN closes, no pass is taken. */
    r.stopping = true;
    rp_sweeper_stop(r.s);
    assert_int_equal(r.f.closed, 1);
    int before = started(&r.f);
    r.f.hooks.on_up(r.f.hooks.arg);
    turn(&r, 100, NULL, 0);
    assert_int_equal(started(&r.f), before);
    rig_down(&r);
}

int main(void) {
    evthread_use_pthreads();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_timer_during_a_pass_leaves_a_wish),
        cmocka_unit_test(test_a_sweep_wish_covers_a_lease_wish),
        cmocka_unit_test(test_a_notification_brings_the_deadline_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
