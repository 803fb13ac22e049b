/*
 * The tap's decisions beside its batching (core/rp_tap_rules.h): what a
 * bindings' reconcile means, and how a dead letter whose stored form is not
 * the whole message is marked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rp_tap_rules.h"

typedef struct bind_case {
    const char *name;
    rp_status st;
    rp_tap_bind_stats s;
    rp_tap_bind_outcome want;
    bool in_place;
} bind_case;

static const bind_case bind_cases[] = {
    {"nothing to change", RP_OK, {.exchanges = 2}, RP_TAP_BIND_IN_PLACE, true},
    {"one added", RP_OK, {.added = 1}, RP_TAP_BIND_CHANGED, true},
    {"one removed", RP_OK, {.removed = 1}, RP_TAP_BIND_CHANGED, true},
    {"a write failed", RP_OK, {.added = 1, .failed = 1}, RP_TAP_BIND_FAILED, false},
    {"a read failed", RP_ERR_UNAVAILABLE, {0}, RP_TAP_BIND_FAILED, false},
    {"a read failed, tap said missing", RP_ERR_TIMEOUT, {.tap_missing = true},
     RP_TAP_BIND_FAILED, false},
    {"tap not declared yet", RP_OK, {.tap_missing = true}, RP_TAP_BIND_TAP_MISSING, false},
    {"tap not declared yet, a write failed", RP_OK, {.tap_missing = true, .failed = 1},
     RP_TAP_BIND_TAP_MISSING, false},
    {"unbindable queues do not fail it", RP_OK, {.unbindable = 3}, RP_TAP_BIND_IN_PLACE, true},
};

static void test_bind_judge(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bind_cases / sizeof bind_cases[0]; i++) {
        const bind_case *c = &bind_cases[i];
        rp_tap_bind_outcome o = rp_tap_bind_judge(c->st, &c->s);
        if (o != c->want) fail_msg("%s: outcome %d, want %d", c->name, (int)o, (int)c->want);
        if (rp_tap_bind_in_place(o) != c->in_place) fail_msg("%s: in place", c->name);
    }
}

static void test_stored_partial(void **state) {
    (void)state;
    assert_false(rp_tap_stored_partial(false, true, 0));
    assert_true(rp_tap_stored_partial(true, true, 0));
    assert_true(rp_tap_stored_partial(false, false, 0));
    assert_true(rp_tap_stored_partial(false, true, 1));
}

static void test_death_entries(void **state) {
    (void)state;
    assert_int_equal(rp_tap_death_entries(3, 0), 0);
    assert_int_equal(rp_tap_death_entries(0, 0), 0);
    assert_int_equal(rp_tap_death_entries(3, 2), 5);
    assert_int_equal(rp_tap_death_entries(0, 1), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_judge),
        cmocka_unit_test(test_stored_partial),
        cmocka_unit_test(test_death_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
