/*
 * Issue 18 item 4's broker half against the real database (migration
 * 0010): when an owned queue's ack counter last moved (queue_counter.
 * acked_at, kept by the counter sampling of migration 9: moved acks ->
 * this reading's time; unmoved, or a counter reset to 0 -> kept; an older
 * reading -> nothing), and the restart-loop breaker's claim
 * (claim_wedge_restart): nothing without a wedge_check row; core's
 * decision handed the restarts kept (pruned before prune_before) and the
 * loop mark; a restart and a loop each committed with their ledger event;
 * a decision of NONE or an error writes nothing; the loop mark goes with
 * the row when a healthy check deletes it; a second store claiming while
 * the first holds the lock waits and then sees the first one's restart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "pg_fixture.h"

#define T0 ((rp_time_ms)1700000000000LL)
#define SUBJECT "queue:/:vibey.work"

static int setup(void **state) {
    *state = pgfx_new("wrestart");
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

static rp_queue_rates sample(pgfx *f, int64_t acked, rp_time_ms at) {
    rp_queue_counter_reading r = {.vhost = "/", .name = "vibey.work", .published_total = 10,
                                  .acked_total = acked, .read_at = at, .window_seconds = 3600};
    rp_queue_rates out;
    const rp_store_port *s = &f->ports.store;
    assert_int_equal(s->sample_queue_counters(s->self, &r, &out), RP_OK);
    return out;
}

static void test_acked_at_moves_only_with_acks(void **state) {
    pgfx *f = *state;
    rp_queue_rates r = sample(f, 5, T0); /* the first reading */
    assert_true(r.ack_known);
    assert_int_equal(r.acked_at, T0);
    r = sample(f, 5, T0 + 1000); /* no ack since */
    assert_int_equal(r.acked_at, T0);
    r = sample(f, 7, T0 + 2000); /* two acks */
    assert_int_equal(r.acked_at, T0 + 2000);
    r = sample(f, 7, T0 + 1500); /* an older reading (another replica's): nothing */
    assert_int_equal(r.acked_at, T0 + 2000);
    r = sample(f, 0, T0 + 3000); /* reset to 0 (the broker restarted): no ack */
    assert_int_equal(r.acked_at, T0 + 2000);
    r = sample(f, 1, T0 + 4000); /* an ack after the reset */
    assert_int_equal(r.acked_at, T0 + 4000);
}

/* What the decision saw, and what it answers. */
typedef struct ask {
    rp_wedge_restart_choice answer;
    rp_status status;
    size_t n;
    rp_time_ms restarts[8];
    bool looped;
    int calls;
    unsigned hold_ms; /* sleep inside the decision (the lock held) */
} ask;

static rp_status decide(void *arg, const rp_time_ms *restarts, size_t n, bool looped,
                        rp_wedge_restart_choice *choice, rp_verdict *v) {
    ask *a = arg;
    __atomic_add_fetch(&a->calls, 1, __ATOMIC_SEQ_CST); /* polled by the race's test */
    a->n = n;
    for (size_t i = 0; i < n && i < 8; i++) a->restarts[i] = restarts[i];
    a->looped = looped;
    if (a->hold_ms) usleep(a->hold_ms * 1000);
    *choice = a->answer;
    if (a->status != RP_OK || a->answer == RP_WEDGE_RESTART_NONE) return a->status;
    rp_thresholds t;
    rp_thresholds_default(&t);
    t.wedge_restart = true;
    rp_wedge_restarts h;
    rp_wedge_restarts_from(restarts, n, looped, T0, 1800, &h);
    const char *conns[] = {"c1"};
    return rp_judge_wedge_restart("/", "vibey.work", a->answer, &h, &t, conns, 1, v);
}

static rp_status claim(pgfx *f, ask *a, rp_time_ms now, rp_time_ms prune,
                       rp_wedge_restart_choice *choice, rp_event_ref *ev) {
    const rp_store_port *s = &f->ports.store;
    rp_verdict v;
    rp_verdict_init(&v);
    rp_status st = s->claim_wedge_restart(s->self, SUBJECT, now, prune, decide, a, choice, &v, ev);
    rp_verdict_cleanup(&v);
    return st;
}

static int64_t ledger(pgfx *f, const char *action) {
    return pgfx_i64(f, "SELECT count(*) FROM ledger WHERE payload->>'condition' = 'WEDGED' AND"
                       " payload->>'action' = '%s' AND payload->>'object' = '%s'",
                    action, SUBJECT);
}

static void wedge_row(pgfx *f) {
    const rp_store_port *s = &f->ports.store;
    const char *subjects[] = {SUBJECT};
    int64_t counts[1];
    assert_int_equal(s->count_wedge_checks(s->self, "queue:", subjects, 1, false, counts), RP_OK);
}

static void test_claim_needs_a_wedge(void **state) {
    pgfx *f = *state;
    ask a = {.answer = RP_WEDGE_RESTART_GO};
    rp_wedge_restart_choice c = RP_WEDGE_RESTART_GO;
    rp_event_ref ev = {0};
    assert_int_equal(claim(f, &a, T0, T0 - 1800000, &c, &ev), RP_OK);
    assert_int_equal(c, RP_WEDGE_RESTART_NONE);
    assert_int_equal(a.calls, 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM wedge_restart"), 0);
    assert_int_equal(ledger(f, "RESTARTED"), 0);
}

static void test_restarts_loop_and_reset(void **state) {
    pgfx *f = *state;
    wedge_row(f);
    /* An old restart, outside the window: pruned before core sees it. */
    pgfx_exec(f, "INSERT INTO wedge_restart VALUES ('%s', %lld)", SUBJECT,
              (long long)(T0 - 3600000));
    ask a = {.answer = RP_WEDGE_RESTART_GO};
    rp_wedge_restart_choice c;
    rp_event_ref ev = {0};
    assert_int_equal(claim(f, &a, T0, T0 - 1800000, &c, &ev), RP_OK);
    assert_int_equal(c, RP_WEDGE_RESTART_GO);
    assert_int_equal(a.n, 0);
    assert_false(a.looped);
    assert_true(ev.seq > 0);
    assert_int_equal(ledger(f, "RESTARTED"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM wedge_restart WHERE subject = '%s' AND"
                                 " at = %lld", SUBJECT, (long long)T0), 1);
    /* NONE writes nothing. */
    a = (ask){.answer = RP_WEDGE_RESTART_NONE};
    assert_int_equal(claim(f, &a, T0 + 1000, T0 - 1800000, &c, &ev), RP_OK);
    assert_int_equal(c, RP_WEDGE_RESTART_NONE);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.restarts[0], T0);
    assert_int_equal(ledger(f, "RESTARTED"), 1);
    /* A failed decision writes nothing either. */
    a = (ask){.answer = RP_WEDGE_RESTART_GO, .status = RP_ERR_NOMEM};
    assert_int_equal(claim(f, &a, T0 + 2000, T0 - 1800000, &c, &ev), RP_ERR_NOMEM);
    assert_int_equal(c, RP_WEDGE_RESTART_NONE);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM wedge_restart"), 1);
    /* The loop: marked on the row, with its event. */
    a = (ask){.answer = RP_WEDGE_RESTART_LOOP};
    assert_int_equal(claim(f, &a, T0 + 3000, T0 - 1800000, &c, &ev), RP_OK);
    assert_int_equal(c, RP_WEDGE_RESTART_LOOP);
    assert_int_equal(ledger(f, "RESTART_LOOP"), 1);
    a = (ask){.answer = RP_WEDGE_RESTART_NONE};
    assert_int_equal(claim(f, &a, T0 + 4000, T0 - 1800000, &c, &ev), RP_OK);
    assert_true(a.looped);
    /* A healthy check deletes the row: the loop mark goes with it; the
     * restarts stay for the window. */
    const rp_store_port *s = &f->ports.store;
    assert_int_equal(s->count_wedge_checks(s->self, "queue:", NULL, 0, false, NULL), RP_OK);
    wedge_row(f);
    a = (ask){.answer = RP_WEDGE_RESTART_NONE};
    assert_int_equal(claim(f, &a, T0 + 5000, T0 - 1800000, &c, &ev), RP_OK);
    assert_false(a.looped);
    assert_int_equal(a.n, 1);
}

typedef struct racer {
    pgfx *f;
    ask a;
    rp_wedge_restart_choice c;
    rp_status st;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    rp_event_ref ev = {0};
    r->st = claim(r->f, &r->a, T0, T0 - 1800000, &r->c, &ev);
    return NULL;
}

static void test_second_store_waits_and_sees_the_first(void **state) {
    pgfx *f = *state;
    wedge_row(f);
    pgfx *g = pgfx_attach(f->schema);
    racer first = {.f = f, .a = {.answer = RP_WEDGE_RESTART_GO, .hold_ms = 1500}};
    racer second = {.f = g, .a = {.answer = RP_WEDGE_RESTART_NONE}};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, race, &first), 0);
    /* The first holds the lock once it is deciding (the decision is
     * called under it). */
    ITEST_POLL(__atomic_load_n(&first.a.calls, __ATOMIC_SEQ_CST) > 0, 5000);
    assert_int_equal(__atomic_load_n(&first.a.calls, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(pthread_create(&t2, NULL, race, &second), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_equal(first.st, RP_OK);
    assert_int_equal(first.c, RP_WEDGE_RESTART_GO);
    assert_int_equal(first.a.n, 0);
    assert_int_equal(second.st, RP_OK);
    assert_int_equal(second.a.n, 1); /* it decided after the first committed */
    assert_int_equal(second.a.restarts[0], T0);
    pgfx_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_acked_at_moves_only_with_acks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_needs_a_wedge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restarts_loop_and_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_store_waits_and_sees_the_first, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("pg_store_wedge_restart", tests, NULL, NULL);
}
