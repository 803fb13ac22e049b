/* The sweep's queue listing kept for the policy reconcile
 * (core/rp_queue_listing.c): what it keeps, how it lends it back, when it
 * may be read, and its bound. The reconcile's reuse of it is in
 * test_pass_policy.c (test_listing_*). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_queue_listing.h"

#define OWNED "^vibey\\."

static pcre2_code *owned(void) {
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)OWNED, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    assert_non_null(re);
    return re;
}

/* n queues "vibey.q<i>" (owned) on vhost v<i/1000>, quorum, carrying
 * vibey-reap with three effective keys of which two are kept. */
typedef struct gen {
    rp_policy_queue q[1000];
    rp_policy_key keys[1000][3];
    char names[1000][32], vhosts[1000][32];
} gen;

static void gen_page(gen *g, size_t from, size_t n, const char *prefix) {
    for (size_t i = 0; i < n; i++) {
        snprintf(g->names[i], sizeof g->names[i], "%s%zu", prefix, from + i);
        snprintf(g->vhosts[i], sizeof g->vhosts[i], "v%zu", (from + i) / 1000);
        g->keys[i][0] = (rp_policy_key){(char *)"delivery-limit", true, (int64_t)(from + i), false};
        g->keys[i][1] = (rp_policy_key){(char *)"max-length", true, 7, false};
        g->keys[i][2] = (rp_policy_key){(char *)"dead-letter-exchange", false, 0, true};
        g->q[i] = (rp_policy_queue){.vhost = g->vhosts[i],
                                    .name = g->names[i],
                                    .type = RP_QUEUE_TYPE_QUORUM,
                                    .policy_known = true,
                                    .policy = "vibey-reap",
                                    .operator_policy = i % 2 ? "ops" : NULL,
                                    .effective_known = true,
                                    .effective = g->keys[i],
                                    .n_effective = 3,
                                    .dlx_argument = i % 3 == 0};
    }
}

static void test_keeps_and_lends_pages(void **state) {
    (void)state;
    pcre2_code *re = owned();
    rp_queue_listing *l = rp_queue_listing_new(re, 0);
    assert_non_null(l);
    assert_false(rp_queue_listing_usable(l));
    gen *g = calloc(1, sizeof *g);
    rp_queue_listing_begin(l);
    /* 1,200 owned queues in pages of 1000 and 200, and queues it does not
     * own: one carrying reaper's policy (kept: the check reports it), one
     * not (counted, not kept). */
    gen_page(g, 0, 1000, "vibey.q");
    rp_queue_listing_add(l, g->q, 1000);
    gen_page(g, 1000, 200, "vibey.q");
    g->q[198].name = "other.dlq"; /* carries vibey-reap */
    g->q[199].name = "other.work";
    g->q[199].policy = "their-policy";
    rp_queue_listing_add(l, g->q, 200);
    assert_false(rp_queue_listing_usable(l)); /* not ended yet */
    rp_queue_listing_end(l, true);
    assert_true(rp_queue_listing_usable(l));
    assert_int_equal(rp_queue_listing_get_state(l), RP_QUEUE_LISTING_WHOLE);
    assert_int_equal(rp_queue_listing_seen(l), 1200);
    assert_int_equal(rp_queue_listing_kept(l), 1199);
    /* Strings stored once per run of equal ones: well under 100 bytes a
     * queue with its record. */
    assert_true(rp_queue_listing_bytes(l) < 1199 * 100);

    rp_policy_queue_page pg;
    size_t total = 0;
    for (size_t page = 1;; page++) {
        assert_int_equal(rp_queue_listing_page(l, page, &pg), RP_OK);
        assert_true(pg.n <= RP_QUEUE_LISTING_PAGE);
        for (size_t i = 0; i < pg.n; i++, total++) {
            const rp_policy_queue *q = &pg.queues[i];
            if (total == 1198) {
                assert_string_equal(q->name, "other.dlq");
                continue;
            }
            char want[32], vh[32];
            snprintf(want, sizeof want, "vibey.q%zu", total);
            snprintf(vh, sizeof vh, "v%zu", total / 1000);
            assert_string_equal(q->name, want);
            assert_string_equal(q->vhost, vh);
            assert_int_equal(q->type, RP_QUEUE_TYPE_QUORUM);
            assert_true(q->policy_known && q->effective_known);
            assert_string_equal(q->policy, "vibey-reap");
            size_t in_page = total < 1000 ? total : total - 1000;
            if (in_page % 2) assert_string_equal(q->operator_policy, "ops");
            else assert_null(q->operator_policy);
            assert_int_equal(q->dlx_argument, in_page % 3 == 0);
            /* max-length is not a key the reconcile reads: not kept. */
            assert_int_equal(q->n_effective, 2);
            assert_string_equal(q->effective[0].key, "delivery-limit");
            assert_true(q->effective[0].is_int);
            assert_int_equal(q->effective[0].value, (int64_t)total);
            assert_string_equal(q->effective[1].key, "dead-letter-exchange");
            assert_true(q->effective[1].is_string);
            assert_false(q->effective[1].is_int);
        }
        if (pg.last) break;
    }
    assert_int_equal(total, 1199);
    /* Past the last page: empty and last. */
    assert_int_equal(rp_queue_listing_page(l, 9, &pg), RP_OK);
    assert_int_equal(pg.n, 0);
    assert_true(pg.last);
    /* Begun again: forgets it all. */
    rp_queue_listing_begin(l);
    assert_false(rp_queue_listing_usable(l));
    assert_int_equal(rp_queue_listing_kept(l), 0);
    rp_queue_listing_end(l, true);
    assert_int_equal(rp_queue_listing_page(l, 1, &pg), RP_OK);
    assert_int_equal(pg.n, 0);
    assert_true(pg.last);
    rp_queue_listing_free(l);
    pcre2_code_free(re);
    free(g);
}

static void test_not_usable(void **state) {
    (void)state;
    pcre2_code *re = owned();
    gen *g = calloc(1, sizeof *g);
    gen_page(g, 0, 10, "vibey.q");
    rp_policy_queue_page pg;

    /* Never begun. */
    rp_queue_listing *l = rp_queue_listing_new(re, 0);
    assert_int_equal(rp_queue_listing_get_state(l), RP_QUEUE_LISTING_EMPTY);
    assert_int_equal(rp_queue_listing_page(l, 1, &pg), RP_ERR_INVALID);
    rp_queue_listing_add(l, g->q, 10); /* ignored */
    rp_queue_listing_end(l, true);
    assert_false(rp_queue_listing_usable(l));

    /* Stopped before its last page. */
    rp_queue_listing_begin(l);
    rp_queue_listing_add(l, g->q, 10);
    rp_queue_listing_end(l, false);
    assert_int_equal(rp_queue_listing_get_state(l), RP_QUEUE_LISTING_PARTIAL);
    assert_int_equal(rp_queue_listing_kept(l), 0);
    assert_int_equal(rp_queue_listing_page(l, 1, &pg), RP_ERR_INVALID);
    /* ended twice (the pass ends it once whole, once after): stays */
    rp_queue_listing_begin(l);
    rp_queue_listing_end(l, true);
    rp_queue_listing_end(l, false);
    assert_true(rp_queue_listing_usable(l));

    /* A page without the policy fields (an adapter that cannot tell). */
    rp_queue_listing_begin(l);
    rp_queue_listing_add(l, g->q, 10);
    rp_queue_listing_add(l, NULL, 5);
    rp_queue_listing_add(l, g->q, 10);
    rp_queue_listing_end(l, true);
    assert_int_equal(rp_queue_listing_get_state(l), RP_QUEUE_LISTING_UNTOLD);
    assert_false(rp_queue_listing_usable(l));
    rp_queue_listing_free(l);

    /* Past its bound: dropped at once, nothing held. */
    l = rp_queue_listing_new(re, 4096);
    rp_queue_listing_begin(l);
    for (int k = 0; k < 10 && rp_queue_listing_get_state(l) == RP_QUEUE_LISTING_KEEPING; k++)
        rp_queue_listing_add(l, g->q, 10);
    assert_int_equal(rp_queue_listing_get_state(l), RP_QUEUE_LISTING_TOO_LARGE);
    assert_int_equal(rp_queue_listing_bytes(l), 0);
    assert_int_equal(rp_queue_listing_kept(l), 0);
    rp_queue_listing_end(l, true);
    assert_false(rp_queue_listing_usable(l));
    rp_queue_listing_free(l);

    assert_null(rp_queue_listing_new(NULL, 0));
    assert_false(rp_queue_listing_usable(NULL));
    rp_queue_listing_free(NULL);
    pcre2_code_free(re);
    free(g);
}

static void test_state_strings(void **state) {
    (void)state;
    for (int s = RP_QUEUE_LISTING_EMPTY; s <= RP_QUEUE_LISTING_NOMEM; s++)
        assert_string_not_equal(rp_queue_listing_state_string((rp_queue_listing_state)s), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keeps_and_lends_pages),
        cmocka_unit_test(test_not_usable),
        cmocka_unit_test(test_state_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
