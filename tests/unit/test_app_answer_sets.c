/* The answer sets' runner (app/rp_answer_sets.h) stopping, on a real
 * event_base and store thread (support/worker.h) with a fake answer-set
 * port: a stop with a set in hand lets it go (the results in hand recorded,
 * then the lease cleared: finish with RUNNING) through the stop's own
 * submit, and starts nothing more; a stop while a store job is out (a take)
 * lets the set go once that job is back; a stop with no set does nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_answer_sets.h"
#include "worker.h"

/* ---- the fake port (store thread; read by the test after the loop) ------- */

typedef struct fake_port {
    bool have_set;          /* take finds set 7 */
    int take_ms;            /* a take's own time (a job out at the stop) */
    int takes, steps, finishes; /* atomic */
    int64_t marked[16];
    size_t n_marked;
    rp_answer_set_state finish_state;
    bool ids_given;
} fake_port;

static void fp_row(rp_answer_set_row *out) {
    memset(out, 0, sizeof *out);
    out->id = 7;
    out->choice = RP_CHOICE_DISMISS;
    out->rate = 1; /* one a second: the test stops it between two starts */
    out->state = RP_ANSWER_SET_RUNNING;
    out->total = 3;
    out->pending = 3;
    snprintf(out->requested_by, sizeof out->requested_by, "alice");
}

static rp_status fp_take(void *self, const char *owner, int64_t lease_ms, rp_answer_set_row *out,
                         bool *found) {
    fake_port *p = self;
    RP_UNUSED(owner), RP_UNUSED(lease_ms);
    __atomic_add_fetch(&p->takes, 1, __ATOMIC_SEQ_CST);
    if (p->take_ms > 0) {
        struct timespec ts = {0, (long)p->take_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    *found = p->have_set;
    if (*found) fp_row(out);
    return RP_OK;
}

static rp_status fp_step(void *self, int64_t id, const char *owner, int64_t lease_ms,
                         const rp_answer_set_mark *marks, size_t n_marks, int64_t after,
                         int64_t *ids, size_t max, size_t *n, rp_answer_set_row *out) {
    fake_port *p = self;
    RP_UNUSED(id), RP_UNUSED(owner), RP_UNUSED(lease_ms);
    __atomic_add_fetch(&p->steps, 1, __ATOMIC_SEQ_CST);
    for (size_t i = 0; i < n_marks && p->n_marked < RP_ARRAY_LEN(p->marked); i++)
        p->marked[p->n_marked++] = marks[i].gate;
    *n = 0;
    if (after == 0 && max >= 3 && !p->ids_given) {
        ids[0] = 1, ids[1] = 2, ids[2] = 3;
        *n = 3;
        p->ids_given = true;
    }
    fp_row(out);
    return RP_OK;
}

static rp_status fp_finish(void *self, int64_t id, const char *owner, rp_answer_set_state state,
                           const char *reason) {
    fake_port *p = self;
    RP_UNUSED(id), RP_UNUSED(owner), RP_UNUSED(reason);
    p->finish_state = state;
    __atomic_add_fetch(&p->finishes, 1, __ATOMIC_SEQ_CST);
    return RP_OK;
}

/* ---- the fixture ---------------------------------------------------------- */

typedef struct fixture {
    struct event_base *base;
    rp_worker *worker;
    fake_port port;
    rp_answer_sets *sets;
    bool stopping;          /* the daemon's stop: plain submits refused */
    int last_submits;       /* jobs that came through store_job_last */
    int answers;            /* answers started */
    int64_t answered[8];
} fixture;

static rp_status fx_store_job(void *self, rp_work_fn fn, rp_done_fn done, void *job) {
    fixture *f = self;
    if (f->stopping) return RP_ERR_CLOSED;
    return rp_worker_submit(f->worker, fn, done, job);
}

static rp_status fx_store_job_last(void *self, rp_work_fn fn, rp_done_fn done, void *job) {
    fixture *f = self;
    f->last_submits++;
    return rp_worker_submit(f->worker, fn, done, job);
}

typedef struct fx_pending {
    rp_answer_one_done_fn done;
    void *arg;
} fx_pending;

static void fx_answer_end(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd), RP_UNUSED(what);
    fx_pending *a = arg;
    a->done(a->arg, RP_OK, false, "dismissed", NULL);
    free(a);
}

/* Answers at once (done on the next loop turn). */
static rp_status fx_answer(void *self, int64_t gate, rp_choice choice, const char *by,
                           const char *note, rp_answer_one_done_fn done, void *arg) {
    fixture *f = self;
    RP_UNUSED(choice), RP_UNUSED(by), RP_UNUSED(note);
    if (f->answers < (int)RP_ARRAY_LEN(f->answered)) f->answered[f->answers] = gate;
    f->answers++;
    fx_pending *a = malloc(sizeof *a);
    assert_non_null(a);
    *a = (fx_pending){done, arg};
    assert_int_equal(event_base_once(f->base, -1, EV_TIMEOUT, fx_answer_end, a, NULL), 0);
    return RP_OK;
}

static int64_t fx_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->worker = rp_worker_new(f->base, "store", NULL, NULL, 1000);
    assert_non_null(f->worker);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_answer_sets_stop(f->sets);
    rp_worker_free(f->worker);
    rp_answer_sets_free(f->sets);
    event_base_free(f->base);
    free(f);
    return 0;
}

static void start(fixture *f) {
    rp_answer_sets_deps deps = {
        .port = {.self = &f->port, .take = fp_take, .step = fp_step, .finish = fp_finish},
        .store_job = fx_store_job,
        .store_job_last = fx_store_job_last,
        .store_job_self = f,
        .answer = fx_answer,
        .answer_self = f,
        .now_ms = fx_now_ms,
        .owner = "me",
        .idle_ms = 50,
    };
    f->sets = rp_answer_sets_new(f->base, &deps);
    assert_non_null(f->sets);
}

/* Turns the loop until *counter reaches n (read atomically) or 5 s pass. */
static void turn_until(fixture *f, const int *counter, int n) {
    int64_t end = fx_now_ms() + 5000;
    while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < n && fx_now_ms() < end)
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_true(__atomic_load_n(counter, __ATOMIC_SEQ_CST) >= n);
}

/* Turns the loop for ms. */
static void turn_for(fixture *f, int ms) {
    int64_t end = fx_now_ms() + ms;
    while (fx_now_ms() < end) event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* A set in hand, one gate answered (the next a second away): the stop
 * records that answer and clears the lease, and nothing more starts. */
static void test_stop_lets_the_set_go(void **state) {
    fixture *f = *state;
    f->port.have_set = true;
    start(f);
    turn_until(f, &f->answers, 1);
    turn_for(f, 100); /* its result back on the loop */
    int steps = __atomic_load_n(&f->port.steps, __ATOMIC_SEQ_CST);
    f->stopping = true;
    rp_answer_sets_stop(f->sets);
    turn_until(f, &f->port.finishes, 1);
    assert_int_equal(f->last_submits, 1);
    assert_int_equal(f->port.finish_state, RP_ANSWER_SET_RUNNING);
    /* The release's step recorded gate 1, read no ids. */
    assert_int_equal(__atomic_load_n(&f->port.steps, __ATOMIC_SEQ_CST), steps + 1);
    assert_true(f->port.n_marked >= 1);
    assert_int_equal(f->port.marked[f->port.n_marked - 1], 1);
    turn_for(f, 1200); /* past the pace's next start */
    assert_int_equal(f->answers, 1);
    assert_int_equal(f->port.finishes, 1);
    /* A second stop does nothing more. */
    rp_answer_sets_stop(f->sets);
    turn_for(f, 100);
    assert_int_equal(f->last_submits, 1);
}

/* A take out at the stop: the set it brings back is let go at once, never
 * stepped through. */
static void test_stop_with_a_take_out(void **state) {
    fixture *f = *state;
    f->port.have_set = true;
    f->port.take_ms = 300;
    start(f);
    turn_until(f, &f->port.takes, 1); /* the take is on the store thread now */
    f->stopping = true;
    rp_answer_sets_stop(f->sets);
    turn_until(f, &f->port.finishes, 1);
    assert_int_equal(f->last_submits, 1);
    assert_int_equal(f->port.finish_state, RP_ANSWER_SET_RUNNING);
    assert_int_equal(__atomic_load_n(&f->port.steps, __ATOMIC_SEQ_CST), 0); /* no marks */
    assert_int_equal(f->answers, 0);
}

/* No set: the stop has nothing to let go. */
static void test_stop_without_a_set(void **state) {
    fixture *f = *state;
    start(f);
    turn_until(f, &f->port.takes, 1);
    turn_for(f, 100);
    f->stopping = true;
    rp_answer_sets_stop(f->sets);
    turn_for(f, 200);
    assert_int_equal(f->last_submits, 0);
    assert_int_equal(f->port.finishes, 0);
}

int main(void) {
    evthread_use_pthreads();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stop_lets_the_set_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_with_a_take_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_without_a_set, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
