/* The console's sign-in brake (core/rp_login_limit.h): five refusals a
 * minute per client, then a wait until the window ends; other clients and
 * a full table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_login_limit.h"

static void test_five_then_wait(void **state) {
    (void)state;
    rp_login_limit *l = malloc(sizeof *l);
    assert_non_null(l);
    rp_login_limit_init(l);
    int64_t t0 = 1000000;
    for (int i = 0; i < RP_LOGIN_LIMIT_FAILURES; i++) {
        assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.1", t0 + i * 100), 0);
        rp_login_limit_refused(l, "10.0.0.1", t0 + i * 100);
    }
    /* The sixth waits for the end of the window opened by the first. */
    assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.1", t0 + 1000),
                     RP_LOGIN_LIMIT_WINDOW_MS - 1000);
    assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.1", t0 + RP_LOGIN_LIMIT_WINDOW_MS - 1), 1);
    /* Another client is not held back. */
    assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.2", t0 + 1000), 0);
    /* Refusals while held do not lengthen the wait. */
    rp_login_limit_refused(l, "10.0.0.1", t0 + 2000);
    assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.1", t0 + 2000),
                     RP_LOGIN_LIMIT_WINDOW_MS - 2000);
    /* The window over: free again, and a new window counts from one. */
    assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.1", t0 + RP_LOGIN_LIMIT_WINDOW_MS), 0);
    rp_login_limit_refused(l, "10.0.0.1", t0 + RP_LOGIN_LIMIT_WINDOW_MS);
    assert_int_equal(rp_login_limit_wait_ms(l, "10.0.0.1", t0 + RP_LOGIN_LIMIT_WINDOW_MS + 1), 0);
    free(l);
}

static void test_below_limit_and_empty_key(void **state) {
    (void)state;
    rp_login_limit *l = malloc(sizeof *l);
    assert_non_null(l);
    rp_login_limit_init(l);
    for (int i = 0; i < RP_LOGIN_LIMIT_FAILURES - 1; i++) rp_login_limit_refused(l, "::1", 5);
    assert_int_equal(rp_login_limit_wait_ms(l, "::1", 6), 0);
    /* An empty key is never counted nor held. */
    for (int i = 0; i < 10; i++) rp_login_limit_refused(l, "", 5);
    assert_int_equal(rp_login_limit_wait_ms(l, "", 6), 0);
    free(l);
}

static void test_full_table(void **state) {
    (void)state;
    rp_login_limit *l = malloc(sizeof *l);
    assert_non_null(l);
    rp_login_limit_init(l);
    char key[32];
    /* The held client first (the oldest window), then a table full of others. */
    for (int i = 0; i < RP_LOGIN_LIMIT_FAILURES; i++) rp_login_limit_refused(l, "held", 100);
    for (int k = 0; k < RP_LOGIN_LIMIT_KEYS - 1; k++) {
        snprintf(key, sizeof key, "c%d", k);
        rp_login_limit_refused(l, key, 200 + k);
    }
    assert_true(rp_login_limit_wait_ms(l, "held", 1000) > 0);
    /* One more client: the oldest window (held's) is the one forgotten. */
    rp_login_limit_refused(l, "newcomer", 1000);
    assert_int_equal(rp_login_limit_wait_ms(l, "held", 1001), 0);
    for (int i = 1; i < RP_LOGIN_LIMIT_FAILURES; i++) rp_login_limit_refused(l, "newcomer", 1000);
    assert_true(rp_login_limit_wait_ms(l, "newcomer", 1001) > 0);
    /* Over windows are the oldest: they go first, the held stay held. */
    int64_t later = 300 + RP_LOGIN_LIMIT_WINDOW_MS;
    rp_login_limit_refused(l, "late", later); /* c0..c100's windows are over */
    assert_true(rp_login_limit_wait_ms(l, "newcomer", later) > 0);
    snprintf(key, sizeof key, "c%d", RP_LOGIN_LIMIT_KEYS - 2);
    for (int i = 0; i < RP_LOGIN_LIMIT_FAILURES; i++) rp_login_limit_refused(l, key, later);
    assert_true(rp_login_limit_wait_ms(l, key, later) > 0);
    assert_true(rp_login_limit_wait_ms(l, "newcomer", 1001 + 1) > 0);
    /* A key longer than a slot is counted under its cut. */
    char long_key[RP_LOGIN_LIMIT_KEY_MAX + 20];
    memset(long_key, 'x', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    for (int i = 0; i < RP_LOGIN_LIMIT_FAILURES; i++) rp_login_limit_refused(l, long_key, later);
    assert_true(rp_login_limit_wait_ms(l, long_key, later) > 0);
    free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_five_then_wait),
        cmocka_unit_test(test_below_limit_and_empty_key),
        cmocka_unit_test(test_full_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
