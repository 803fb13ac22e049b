/* The replay decision: undoing the untrusted rendering, and refusing what
 * is not owned, cut or not whole (core/rp_replay.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_gate.h"
#include "rp_replay.h"
#include "rp_untrusted.h"

static pcre2_code *compile(const char *pattern) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(re);
    return re;
}

/* Renders bytes and parses them back: the same bytes. */
static void roundtrip(const char *s, size_t len) {
    char *shown = NULL, *back = NULL;
    const char *why = NULL;
    assert_int_equal(rp_untrusted_render((rp_bytes){(const uint8_t *)s, len}, &shown), RP_OK);
    assert_int_equal(rp_replay_origin_parse(shown, &back, &why), RP_OK);
    assert_int_equal(strlen(back), len);
    assert_memory_equal(back, s, len);
    free(shown);
    free(back);
}

static void test_origin_roundtrip(void **state) {
    (void)state;
    roundtrip("vibey.orders", 12);
    roundtrip("a\"b\\c", 5);
    roundtrip("tab\there\nnew\rcr", 15);
    roundtrip("bell\x07 del\x7f", 10);
    roundtrip("bad\xff\xfe utf8", 10);
    roundtrip("caf\xc3\xa9 \xe2\x80\xae rlo", 13); /* U+202E is escaped \u202E */
    /* Every byte but NUL, 200 at a time (the rendering's bound). */
    char all[255];
    for (int i = 0; i < 255; i++) all[i] = (char)(i + 1);
    roundtrip(all, 200);
    roundtrip(all + 55, 200);
}

static void test_origin_refused(void **state) {
    (void)state;
    char *name = NULL;
    const char *why = NULL;
    const char *bad[] = {
        NULL, "", "\"", "vibey.x", "\"vibey.x", "vibey.x\"", "\"a\"b\"", "\"a\\\"",
        "\"a\\q\"", "\"\\x4\"", "\"\\xZZ\"", "\"\\u12\"", "\"\\u00zz\"", "\"\"",
        "\"\\u0000\"", "\"a\\x00b\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rp_replay_origin_parse(bad[i], &name, &why), RP_ERR_INVALID);
        assert_null(name);
        assert_non_null(why);
    }
    /* A cut rendering: 300 characters shown as 200 and "...". */
    char longname[301];
    memset(longname, 'a', 300);
    longname[300] = '\0';
    memcpy(longname, "vibey.", 6);
    char *shown = NULL;
    assert_int_equal(rp_untrusted_render((rp_bytes){(const uint8_t *)longname, 300}, &shown), RP_OK);
    assert_int_equal(rp_replay_origin_parse(shown, &name, &why), RP_ERR_INVALID);
    assert_non_null(strstr(why, "cut"));
    free(shown);
    /* A value that itself ends in "..." inside the quotes is whole. */
    assert_int_equal(rp_replay_origin_parse("\"vibey.x...\"", &name, &why), RP_OK);
    assert_string_equal(name, "vibey.x...");
    free(name);
}

static void test_decide(void **state) {
    (void)state;
    pcre2_code *owned = compile("^vibey\\.");
    char *q = NULL;
    const char *why = NULL;
    assert_int_equal(rp_replay_decide("\"vibey.orders\"", false, owned, &q, &why), RP_OK);
    assert_string_equal(q, "vibey.orders");
    free(q);
    /* Forged headers naming a foreign queue. */
    assert_int_equal(rp_replay_decide("\"celery\"", false, owned, &q, &why), RP_ERR_CONFLICT);
    assert_null(q);
    assert_non_null(strstr(why, "not owned"));
    /* A name that only looks owned once unescaped wrongly. */
    assert_int_equal(rp_replay_decide("\"x\\nvibey.orders\"", false, owned, &q, &why),
                     RP_ERR_CONFLICT);
    /* Not stored whole. */
    assert_int_equal(rp_replay_decide("\"vibey.orders\"", true, owned, &q, &why), RP_ERR_CONFLICT);
    assert_non_null(strstr(why, "whole"));
    /* Not a rendering. */
    assert_int_equal(rp_replay_decide("vibey.orders", false, owned, &q, &why), RP_ERR_CONFLICT);
    /* No pattern: nothing is owned. */
    assert_int_equal(rp_replay_decide("\"vibey.orders\"", false, NULL, &q, &why), RP_ERR_CONFLICT);
    pcre2_code_free(owned);
}

/* The expiration the broker takes: decimal digits, 0..4294967295. */
static void test_expiration(void **state) {
    (void)state;
#define EXP(s) rp_replay_expiration_valid(s, strlen(s))
    assert_true(EXP("0"));
    assert_true(EXP("60000"));
    assert_true(EXP("4294967295"));
    assert_false(EXP("4294967296"));
    assert_false(EXP("99999999999"));
    assert_false(EXP(""));
    assert_false(EXP("-1"));
    assert_false(EXP("+5"));
    assert_false(EXP("1.5"));
    assert_false(EXP(" 5"));
    assert_false(EXP("soon"));
    assert_false(rp_replay_expiration_valid("12\0003", 4));
    assert_false(rp_replay_expiration_valid(NULL, 0));
#undef EXP
}

/* reaper's own queues are never a destination, whatever the pattern. */
static void test_reserved(void **state) {
    (void)state;
    const char *own[] = {"vibey.reap.control", NULL, "vibey.reap.tap"};
    assert_true(rp_replay_reserved_queue("vibey.reap.control", own, 3));
    assert_true(rp_replay_reserved_queue("vibey.reap.tap", own, 3));
    assert_true(rp_replay_reserved_queue("amq.gen-JzTY20BRgKO-HjmUJj0wLg", own, 3));
    assert_false(rp_replay_reserved_queue("vibey.reap.control2", own, 3));
    assert_false(rp_replay_reserved_queue("vibey.orders", own, 3));
    assert_false(rp_replay_reserved_queue("vibey.orders", NULL, 0));
}

/* A replay's claim on a gate (rp_gate.h): live until the bound has passed
 * on the store's clock, stale from then on, whatever the claimer. */
static void test_claim_judge(void **state) {
    (void)state;
    const rp_time_ms t = 1700000000000;
    assert_int_equal(rp_gate_claim_judge(false, t, t + 999999, 60), RP_GATE_CLAIM_NONE);
    assert_int_equal(rp_gate_claim_judge(true, t, t, 60), RP_GATE_CLAIM_LIVE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 59999, 60), RP_GATE_CLAIM_LIVE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 60000, 60), RP_GATE_CLAIM_STALE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 86400000, 60), RP_GATE_CLAIM_STALE);
    /* A claim "from the future" (a clock that went back) is live. */
    assert_int_equal(rp_gate_claim_judge(true, t + 5000, t, 1), RP_GATE_CLAIM_LIVE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 1000, 1), RP_GATE_CLAIM_STALE);
    /* No bound: every claim is stale; extremes do not overflow. */
    assert_int_equal(rp_gate_claim_judge(true, t, t, 0), RP_GATE_CLAIM_STALE);
    assert_int_equal(rp_gate_claim_judge(true, INT64_MIN, INT64_MAX, 60), RP_GATE_CLAIM_STALE);
    assert_int_equal(rp_gate_claim_judge(true, 0, INT64_MAX - 1, INT64_MAX), RP_GATE_CLAIM_LIVE);
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_NONE), "none");
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_LIVE), "live");
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_STALE), "stale");
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_STATE_COUNT_), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origin_roundtrip),
        cmocka_unit_test(test_origin_refused),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_expiration),
        cmocka_unit_test(test_reserved),
        cmocka_unit_test(test_claim_judge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
