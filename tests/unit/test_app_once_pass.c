/* reaperd --once's run (app/rp_once_pass.c) on a real event_base and its
 * own store thread, over a pass-run port filled with the memory adapter:
 * the pass runs off the loop and the loop ends when it is done (at once, or
 * once the flush hook calls rp_once_pass_end); the project is copied; a
 * narrowed pass does not reconcile, a dry run reconciles as a dry run; the
 * exit code and the report written (0 and ok, 1 for a store that cannot be
 * reached); the feed's posts from the store thread run on the loop;
 * SIGTERM stops the pass between rows and says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "rp_config.h"
#include "rp_memory.h"
#include "rp_once_pass.h"
#include "rp_pass_request.h"

#define NOW ((rp_time_ms)1700000000000)
#define MIN_MS ((rp_time_ms)60000)

typedef struct fixture {
    rp_config cfg;
    rp_memory *m;
    rp_ports ports;
    struct event_base *base;
    rp_once_pass *o;
    rp_status connect_st;
    int reconciles;
    bool reconcile_dry_run;
    pthread_t loop_thread;
    bool pass_on_loop_thread; /* connect ran on the loop thread (it must not) */
    int flushes;
    int connects_at_flush;
    int connects;
    int posted;              /* feed posts run (loop) */
    bool post_on_loop;       /* and on the loop thread */
    bool raise_term;         /* connect raises SIGTERM and waits for it to be seen */
    bool term_seen;          /* the test's own SIGTERM event ran (atomic) */
} fixture;

static const rp_config *f_config(void *self) { return &((fixture *)self)->cfg; }

static void f_posted(void *job, bool cancelled) {
    fixture *f = job;
    assert_false(cancelled);
    f->posted++;
    f->post_on_loop = pthread_equal(pthread_self(), f->loop_thread);
}

static rp_status f_connect(void *self, char *err, size_t n) {
    fixture *f = self;
    f->connects++;
    if (pthread_equal(pthread_self(), f->loop_thread)) f->pass_on_loop_thread = true;
    /* The feed's posts come from the store thread (rp_amqp_pass_feed's post hook). */
    assert_int_equal(rp_once_pass_post(f->o, f_posted, f), RP_OK);
    if (f->raise_term) {
        raise(SIGTERM);
        for (int i = 0; i < 500 && !__atomic_load_n(&f->term_seen, __ATOMIC_ACQUIRE); i++)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        assert_true(__atomic_load_n(&f->term_seen, __ATOMIC_ACQUIRE));
        /* The part's own event ran in the same loop turn as the test's. */
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    if (f->connect_st != RP_OK) snprintf(err, n, "connection refused");
    return f->connect_st;
}

static const rp_ports *f_ports(void *self) { return &((fixture *)self)->ports; }

static rp_status f_reconcile(void *self, const rp_config *cfg, bool dry_run,
                             rp_queue_listing *listing, rp_report *report) {
    fixture *f = self;
    (void)cfg;
    (void)listing;
    (void)report;
    f->reconciles++;
    f->reconcile_dry_run = dry_run;
    return RP_OK;
}

static rp_pass_run_port f_port(fixture *f) {
    return (rp_pass_run_port){.self = f,
                              .config = f_config,
                              .connect = f_connect,
                              .ports = f_ports,
                              .reconcile = f_reconcile};
}

static void f_flush(void *self) {
    fixture *f = self;
    f->flushes++;
    f->connects_at_flush = f->connects;
    rp_once_pass_end(f->o);
}

static void f_on_term(evutil_socket_t sig, short what, void *arg) {
    (void)sig;
    (void)what;
    __atomic_store_n(&((fixture *)arg)->term_seen, true, __ATOMIC_RELEASE);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(evthread_use_pthreads(), 0);
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    assert_int_equal(rp_config_validate(&f->cfg, &problems), RP_OK);
    rp_config_problems_cleanup(&problems);
    f->m = rp_memory_new();
    assert_non_null(f->m);
    rp_memory_set_now(f->m, NOW);
    rp_memory_ports(f->m, &f->ports);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->loop_thread = pthread_self();
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_once_pass_free(f->o);
    event_base_free(f->base);
    rp_memory_free(f->m);
    rp_config_cleanup(&f->cfg);
    free(f);
    return 0;
}

static void add_expired(fixture *f, const char *project, int n) {
    for (int i = 0; i < n; i++) {
        rp_mem_job j = {.project = (char *)project, .kind = "send_mail", .state = RP_JOB_LEASED,
                        .attempts = 1, .max_attempts = 7, .lease_owner = "worker-1",
                        .lease_known = true, .lease_expires_at = NOW - MIN_MS,
                        .run_after = NOW - 10 * MIN_MS};
        int64_t id;
        assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
    }
}

static size_t leased(fixture *f, int64_t n) {
    size_t k = 0;
    for (int64_t id = 1; id <= n; id++)
        if (rp_memory_job(f->m, id)->state == RP_JOB_LEASED) k++;
    return k;
}

/* Runs the part to its end; returns the exit code, the JSON report in out. */
static int run(fixture *f, bool dry_run, const char *project, bool flush, char *out, size_t n) {
    f->o = rp_once_pass_new(f->base, dry_run);
    assert_non_null(f->o);
    assert_int_equal(rp_once_pass_signals(f->o), RP_OK);
    rp_pass_run_port port = f_port(f);
    char *copy = project ? strdup(project) : NULL;
    assert_int_equal(rp_once_pass_start(f->o, &port, copy, flush ? f_flush : NULL, f), RP_OK);
    free(copy); /* the part keeps its own (ASan says otherwise) */
    assert_int_equal(event_base_dispatch(f->base), 0);
    rp_once_pass_join(f->o);
    FILE *mem = fmemopen(out, n, "w");
    assert_non_null(mem);
    int rc = rp_once_pass_output(f->o, true, mem, true);
    fclose(mem);
    return rc;
}

static void a_pass_runs_off_the_loop_and_the_loop_ends(void **state) {
    fixture *f = *state;
    add_expired(f, "alpha", 3);
    char out[8192] = {0};
    assert_int_equal(run(f, false, NULL, false, out, sizeof out), 0);
    assert_int_equal(f->connects, 1);
    assert_false(f->pass_on_loop_thread);
    assert_int_equal(f->posted, 1);
    assert_true(f->post_on_loop);
    assert_int_equal(f->reconciles, 1);
    assert_false(f->reconcile_dry_run);
    assert_int_equal(leased(f, 3), 0); /* requeued */
    assert_non_null(strstr(out, "\"ok\":true"));
    assert_true(rp_once_pass_report(f->o)->ok);
}

static void the_flush_hook_ends_the_loop(void **state) {
    fixture *f = *state;
    char out[8192] = {0};
    assert_int_equal(run(f, false, NULL, true, out, sizeof out), 0);
    assert_int_equal(f->flushes, 1);
    assert_int_equal(f->connects_at_flush, 1); /* after the pass */
}

static void a_project_is_copied_and_not_reconciled(void **state) {
    fixture *f = *state;
    add_expired(f, "alpha", 2);
    add_expired(f, "beta", 2);
    char out[8192] = {0};
    assert_int_equal(run(f, false, "alpha", false, out, sizeof out), 0);
    assert_int_equal(f->reconciles, 0);
    assert_int_equal(rp_memory_job(f->m, 1)->state, RP_JOB_READY);
    assert_int_equal(rp_memory_job(f->m, 3)->state, RP_JOB_LEASED); /* beta: not this pass's */
    assert_int_equal(leased(f, 4), 2);
}

static void a_dry_run_writes_nothing(void **state) {
    fixture *f = *state;
    add_expired(f, "alpha", 2);
    char out[8192] = {0};
    assert_int_equal(run(f, true, NULL, false, out, sizeof out), 0);
    assert_int_equal(f->reconciles, 1);
    assert_true(f->reconcile_dry_run);
    assert_int_equal(leased(f, 2), 2);
    assert_int_equal(rp_memory_n_ledger(f->m), 0);
}

static void an_unreachable_store_exits_1(void **state) {
    fixture *f = *state;
    f->connect_st = RP_ERR_UNAVAILABLE;
    char out[8192] = {0};
    assert_int_equal(run(f, false, NULL, false, out, sizeof out), 1);
    assert_non_null(strstr(out, "\"ok\":false"));
    assert_non_null(strstr(out, "job_queue"));
    assert_int_equal(f->reconciles, 0);
}

static void sigterm_stops_the_pass_between_rows(void **state) {
    fixture *f = *state;
    add_expired(f, "alpha", 10);
    f->cfg.store.lease_batch_size = 1;
    f->raise_term = true;
    struct event *term = evsignal_new(f->base, SIGTERM, f_on_term, f);
    assert_non_null(term);
    assert_int_equal(event_add(term, NULL), 0);
    char out[16384] = {0};
    run(f, false, NULL, false, out, sizeof out);
    event_free(term);
    assert_true(leased(f, 10) > 0); /* not every row was reaped */
    bool noted = false;
    const rp_report *r = rp_once_pass_report(f->o);
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], "stopped early")) noted = true;
    assert_true(noted);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_pass_runs_off_the_loop_and_the_loop_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(the_flush_hook_ends_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(a_project_is_copied_and_not_reconciled, setup, teardown),
        cmocka_unit_test_setup_teardown(a_dry_run_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unreachable_store_exits_1, setup, teardown),
        cmocka_unit_test_setup_teardown(sigterm_stops_the_pass_between_rows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
