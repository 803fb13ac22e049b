/* The pass keeps its queue listing for the policy reconcile (issue 19
 * item 5, rp_pass_options.keep_listing, core/rp_queue_listing.h): every
 * page of a full pass's listing goes to it, ended whole at the last page;
 * a listing that stopped early, failed, or came without the policy fields
 * is not usable. Against the in-memory ports, with a broker port wrapped
 * to lend policy fields the way the management adapter does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_memory.h"
#include "rp_pass.h"
#include "rp_queue_listing.h"

#define NOW ((rp_time_ms)1700000000000LL)

#include "pass_fixture.h"

/* The memory broker's pages with policy fields (vibey-reap on each). */
typedef struct wrap {
    rp_broker_port real;
    rp_policy_queue pq[64];
    bool no_fields;
    bool fail;
    unsigned calls;
} wrap;

static rp_status w_list(void *self, size_t page, rp_queue_page *out) {
    wrap *w = self;
    w->calls++;
    if (w->fail) return RP_ERR_UNAVAILABLE;
    rp_status st = w->real.list_queues(w->real.self, page, out);
    if (st != RP_OK || w->no_fields) return st;
    assert_true(out->n <= 64);
    for (size_t i = 0; i < out->n; i++)
        w->pq[i] = (rp_policy_queue){.vhost = out->queues[i].vhost,
                                     .name = out->queues[i].name,
                                     .type = out->queues[i].type,
                                     .policy_known = true,
                                     .policy = "vibey-reap",
                                     .effective_known = true};
    out->policy = out->n ? w->pq : NULL;
    return RP_OK;
}

static void put(fixture *f, const char *name) {
    rp_queue_facts q = {.vhost = "/", .name = name, .type = RP_QUEUE_TYPE_QUORUM,
                        .counts_known = true, .consumers_known = true, .consumers = 1};
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

static rp_queue_listing_state pass(fixture *f, wrap *w, rp_queue_listing **out) {
    w->real = f->ports.broker;
    f->ports.broker.self = w;
    f->ports.broker.list_queues = w_list;
    rp_queue_listing *l = rp_queue_listing_new(f->owned, 0);
    assert_non_null(l);
    f->opt.keep_listing = l;
    rp_report r;
    rp_status st = rp_pass_run(&f->ports, &f->opt, &r);
    assert_int_equal(st, RP_OK);
    rp_report_cleanup(&r);
    f->ports.broker = w->real;
    *out = l;
    return rp_queue_listing_get_state(l);
}

static void test_full_pass_keeps_its_listing(void **state) {
    fixture *f = *state;
    put(f, "vibey.a");
    put(f, "vibey.b");
    put(f, "other.c");
    wrap w = {0};
    rp_queue_listing *l;
    assert_int_equal(pass(f, &w, &l), RP_QUEUE_LISTING_WHOLE);
    assert_true(w.calls >= 1);
    assert_int_equal(rp_queue_listing_seen(l), 3);
    assert_int_equal(rp_queue_listing_kept(l), 3); /* other.c carries vibey-reap: kept */
    rp_policy_queue_page pg;
    assert_int_equal(rp_queue_listing_page(l, 1, &pg), RP_OK);
    assert_int_equal(pg.n, 3);
    assert_true(pg.last);
    rp_queue_listing_free(l);
}

static void test_listing_not_usable(void **state) {
    fixture *f = *state;
    put(f, "vibey.a");
    rp_queue_listing *l;
    /* The adapter gives no policy fields. */
    wrap w = {.no_fields = true};
    assert_int_equal(pass(f, &w, &l), RP_QUEUE_LISTING_UNTOLD);
    assert_false(rp_queue_listing_usable(l));
    rp_queue_listing_free(l);
    /* The listing failed. */
    wrap w2 = {.fail = true};
    assert_int_equal(pass(f, &w2, &l), RP_QUEUE_LISTING_PARTIAL);
    rp_queue_listing_free(l);
    /* A pass narrowed to a project lists nothing: never begun. */
    wrap w3 = {0};
    f->opt.project = "p";
    assert_int_equal(pass(f, &w3, &l), RP_QUEUE_LISTING_EMPTY);
    assert_int_equal(w3.calls, 0);
    f->opt.project = NULL;
    rp_queue_listing_free(l);
}

static bool stop_now(void *arg) {
    (void)arg;
    return true;
}

static void test_stopped_listing_not_usable(void **state) {
    fixture *f = *state;
    put(f, "vibey.a");
    f->opt.should_stop = stop_now;
    wrap w = {0};
    rp_queue_listing *l;
    rp_queue_listing_state s = pass(f, &w, &l);
    assert_int_not_equal(s, RP_QUEUE_LISTING_WHOLE);
    assert_false(rp_queue_listing_usable(l));
    rp_queue_listing_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_full_pass_keeps_its_listing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing_not_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_listing_not_usable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
