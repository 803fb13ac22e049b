/* Counting redeliveries of control requests (core/rp_redelivery.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rp_redelivery.h"

#define B(s) ((rp_bytes){(const uint8_t *)(s), strlen(s)})

static void test_key(void **state) {
    (void)state;
    rp_bytes a[] = {B("ab"), B("c")}, b[] = {B("a"), B("bc")};
    assert_int_not_equal(rp_redelivery_key(a, 2), rp_redelivery_key(b, 2));
    rp_bytes absent[] = {{NULL, 0}, B("x")}, empty[] = {B(""), B("x")};
    assert_int_not_equal(rp_redelivery_key(absent, 2), rp_redelivery_key(empty, 2));
    rp_bytes again[] = {B("ab"), B("c")};
    assert_int_equal(rp_redelivery_key(a, 2), rp_redelivery_key(again, 2));
}

/* Counts per key; forgetting starts over. */
static void test_count_and_forget(void **state) {
    (void)state;
    static rp_redelivery t;
    rp_redelivery_init(&t);
    assert_int_equal(rp_redelivery_note(&t, 7), 1);
    assert_int_equal(rp_redelivery_note(&t, 8), 1);
    assert_int_equal(rp_redelivery_note(&t, 7), 2);
    assert_int_equal(rp_redelivery_note(&t, 7), 3);
    assert_int_equal(rp_redelivery_note(&t, 7), 4);
    assert_true(rp_redelivery_note(&t, 7) > RP_REDELIVERY_MAX);
    assert_int_equal(rp_redelivery_note(&t, 8), 2);
    rp_redelivery_forget(&t, 7);
    assert_int_equal(rp_redelivery_note(&t, 7), 1);
    rp_redelivery_forget(&t, 12345); /* unknown: nothing */
    assert_int_equal(rp_redelivery_note(&t, 8), 3);
}

/* Bounded: past RP_REDELIVERY_SLOTS keys the least recently seen goes,
 * and a key that keeps coming back is kept. */
static void test_bounded(void **state) {
    (void)state;
    static rp_redelivery t;
    rp_redelivery_init(&t);
    assert_int_equal(rp_redelivery_note(&t, 1), 1);
    for (uint64_t k = 100; k < 100 + 3 * RP_REDELIVERY_SLOTS; k++) {
        (void)rp_redelivery_note(&t, k);
        assert_true(rp_redelivery_note(&t, 1) >= 2); /* seen again each time: kept */
    }
    /* The first of the many was pushed out long ago. */
    assert_int_equal(rp_redelivery_note(&t, 100), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_count_and_forget),
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
