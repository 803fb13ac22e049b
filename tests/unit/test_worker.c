/* The store thread's worker: jobs run in order off the loop thread, their
 * done functions run on the loop thread, the loop keeps turning while a job
 * blocks, and jobs left at shutdown are cancelled, not lost silently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

typedef struct job {
    int id;
    pthread_t ran_on;
    int *order;
    int *n_done;
    int *n_cancelled;
    int sleep_ms;
    int started; /* set (atomically) when work begins */
    struct event_base *base;
    int stop_after;
} job;

static pthread_t loop_thread;

static void work(void *ctx, void *arg) {
    (void)ctx;
    job *j = arg;
    j->ran_on = pthread_self();
    __atomic_store_n(&j->started, 1, __ATOMIC_SEQ_CST);
    /* Deliberate: a job that takes this long. */
    if (j->sleep_ms) usleep((useconds_t)j->sleep_ms * 1000);
}

static void done(void *arg, bool cancelled) {
    job *j = arg;
    assert_true(pthread_equal(pthread_self(), loop_thread));
    if (cancelled) {
        (*j->n_cancelled)++;
        return;
    }
    assert_false(pthread_equal(j->ran_on, loop_thread));
    j->order[(*j->n_done)++] = j->id;
    if (*j->n_done == j->stop_after) event_base_loopbreak(j->base);
}

/* Asks whether *flag has reached at_least every 5 ms, for up to 5 s. */
static void wait_for_count(const int *flag, int at_least) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) >= at_least) return;
        usleep(5 * 1000);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 5);
}

static int ticks;
static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    ticks++;
}

static void test_jobs_run_in_order_off_the_loop(void **state) {
    (void)state;
    loop_thread = pthread_self();
    struct event_base *base = event_base_new();
    rp_worker *w = rp_worker_new(base, "test", NULL, NULL, 1000);
    assert_non_null(w);
    int order[10] = {0}, n_done = 0, n_cancelled = 0;
    job jobs[10];
    for (int i = 0; i < 10; i++) {
        jobs[i] = (job){.id = i + 1, .order = order, .n_done = &n_done,
                        .n_cancelled = &n_cancelled, .base = base, .stop_after = 10,
                        .sleep_ms = i == 0 ? 300 : 0};
        assert_int_equal(rp_worker_submit(w, work, done, &jobs[i]), RP_OK);
    }
    /* The loop keeps turning while the first job blocks for 300 ms. */
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 20000};
    event_add(tick, &tv);
    ticks = 0;
    event_base_dispatch(base);
    assert_int_equal(n_done, 10);
    for (int i = 0; i < 10; i++) assert_int_equal(order[i], i + 1);
    assert_true(ticks >= 5);
    event_free(tick);
    rp_worker_free(w);
    event_base_free(base);
}

static void test_pending_jobs_are_cancelled_at_free(void **state) {
    (void)state;
    loop_thread = pthread_self();
    struct event_base *base = event_base_new();
    rp_worker *w = rp_worker_new(base, "test", NULL, NULL, 1000);
    int order[10] = {0}, n_done = 0, n_cancelled = 0;
    job jobs[5];
    for (int i = 0; i < 5; i++) {
        jobs[i] = (job){.id = i + 1, .order = order, .n_done = &n_done,
                        .n_cancelled = &n_cancelled, .base = base, .stop_after = 99,
                        .sleep_ms = 100};
        assert_int_equal(rp_worker_submit(w, work, done, &jobs[i]), RP_OK);
    }
    wait_for_count(&jobs[0].started, 1); /* until the first job is running */
    rp_worker_free(w);
    /* Every job got exactly one done call: finished or cancelled. */
    assert_int_equal(n_done + n_cancelled, 5);
    assert_true(n_done >= 1);
    assert_true(n_cancelled >= 1);
    event_base_free(base);
}

static int idle_calls;
static void on_idle(rp_worker *w, void *ctx) {
    (void)w;
    (void)ctx;
    __atomic_add_fetch(&idle_calls, 1, __ATOMIC_SEQ_CST);
}

static void test_idle_runs_when_nothing_waits(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    idle_calls = 0;
    rp_worker *w = rp_worker_new(base, "test", on_idle, NULL, 20);
    wait_for_count(&idle_calls, 3); /* until idle has run three times */
    rp_worker_free(w);
    assert_true(__atomic_load_n(&idle_calls, __ATOMIC_SEQ_CST) >= 3);
    event_base_free(base);
}

int main(void) {
    evthread_use_pthreads();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_run_in_order_off_the_loop),
        cmocka_unit_test(test_pending_jobs_are_cancelled_at_free),
        cmocka_unit_test(test_idle_runs_when_nothing_waits),
    };
    return cmocka_run_group_tests_name("worker", tests, NULL, NULL);
}
