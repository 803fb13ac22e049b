/* The browser console's decisions (core/rp_console.h): which ops it sends,
 * when a sign-in is needed, and the HTTP Basic header parsed strictly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rp_console.h"

static void test_access_strings_complete(void **state) {
    (void)state;
    for (int a = 0; a < RP_CONSOLE_ACCESS_COUNT_; a++)
        assert_non_null(rp_console_access_string((rp_console_access)a));
    assert_string_equal(rp_console_access_string(RP_CONSOLE_ACCESS_COUNT_), "unknown");
    assert_string_equal(rp_console_access_string(RP_CONSOLE_SIGN_IN),
                        "sign in with a broker user and password");
}

static void test_decide(void **state) {
    (void)state;
    /* Reads: anonymous only when the key says so. */
    assert_int_equal(rp_console_decide("gates", false, false), RP_CONSOLE_SIGN_IN);
    assert_int_equal(rp_console_decide("gates", false, true), RP_CONSOLE_AS_SELF);
    assert_int_equal(rp_console_decide("gate", false, true), RP_CONSOLE_AS_SELF);
    assert_int_equal(rp_console_decide("status", false, true), RP_CONSOLE_AS_SELF);
    assert_int_equal(rp_console_decide("gates", true, true), RP_CONSOLE_AS_USER);
    assert_int_equal(rp_console_decide("gate", true, false), RP_CONSOLE_AS_USER);
    /* An answer always needs a sign-in, anonymous reads or not. */
    assert_int_equal(rp_console_decide("answer", false, true), RP_CONSOLE_SIGN_IN);
    assert_int_equal(rp_console_decide("answer", false, false), RP_CONSOLE_SIGN_IN);
    assert_int_equal(rp_console_decide("answer", true, false), RP_CONSOLE_AS_USER);
    /* What the console does not offer, signed in or not. */
    assert_int_equal(rp_console_decide("reap", true, true), RP_CONSOLE_NOT_OFFERED);
    assert_int_equal(rp_console_decide("cancel", true, false), RP_CONSOLE_NOT_OFFERED);
    assert_int_equal(rp_console_decide("doctor", false, true), RP_CONSOLE_NOT_OFFERED);
    assert_int_equal(rp_console_decide("Gates", false, true), RP_CONSOLE_NOT_OFFERED);
    assert_int_equal(rp_console_decide(NULL, true, true), RP_CONSOLE_NOT_OFFERED);
    assert_true(rp_console_op_is_read("gate"));
    assert_false(rp_console_op_is_read("answer"));
    assert_true(rp_console_op_offered("answer"));
}

static void test_basic_parse(void **state) {
    (void)state;
    char u[64], p[64];
    /* "ops:s3cr:et" : the password may hold a colon. */
    assert_true(rp_console_basic_parse("Basic b3BzOnMzY3I6ZXQ=", u, sizeof u, p, sizeof p));
    assert_string_equal(u, "ops");
    assert_string_equal(p, "s3cr:et");
    /* Scheme case-insensitive, spaces around. */
    assert_true(rp_console_basic_parse("basic   cmVhcGVyOnB3  ", u, sizeof u, p, sizeof p));
    assert_string_equal(u, "reaper");
    assert_string_equal(p, "pw");
    /* "a:" : an empty password is the broker's to refuse. */
    assert_true(rp_console_basic_parse("Basic YTo=", u, sizeof u, p, sizeof p));
    assert_string_equal(u, "a");
    assert_string_equal(p, "");
    const char *bad[] = {
        NULL,
        "",
        "Bearer b3BzOnB3",
        "Basic",
        "Basicb3BzOnB3",
        "Basic b3BzOnB3=",     /* bad length */
        "Basic b3Bz",          /* "ops": no colon */
        "Basic OnB3",          /* ":pw": empty user */
        "Basic b3Bz!nB3",      /* not base64 */
        "Basic b3=zOnB3",      /* padding in the middle */
        "Basic b3BzCjpwdw==",  /* "ops\n:pw": a control character */
        "Basic b3BzAHg6cHc=",  /* "ops\0x:pw": a NUL */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        strcpy(u, "left");
        strcpy(p, "left");
        assert_false(rp_console_basic_parse(bad[i], u, sizeof u, p, sizeof p));
        assert_string_equal(u, "");
        assert_string_equal(p, "");
    }
    /* A user that does not fit. */
    char small[3];
    assert_false(rp_console_basic_parse("Basic b3BzOnB3", small, sizeof small, p, sizeof p));
}

/* A group's bulk answer: answer_many (its dry run too) and answer_set (its
 * progress, or a cancel) are writes: signed in only. */
static void test_decide_bulk(void **state) {
    (void)state;
    assert_int_equal(rp_console_decide("answer_many", true, false), RP_CONSOLE_AS_USER);
    assert_int_equal(rp_console_decide("answer_set", true, true), RP_CONSOLE_AS_USER);
    assert_int_equal(rp_console_decide("answer_many", false, true), RP_CONSOLE_SIGN_IN);
    assert_int_equal(rp_console_decide("answer_set", false, true), RP_CONSOLE_SIGN_IN);
    assert_false(rp_console_op_is_read("answer_many"));
    assert_true(rp_console_op_offered("answer_set"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_access_strings_complete),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_decide_bulk),
        cmocka_unit_test(test_basic_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
