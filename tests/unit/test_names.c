/* The small pure pieces: rendering untrusted values, strict UTF-8, object
 * names, sighting keys, pattern matching, job state names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <cmocka.h>

#include "rp_job.h"
#include "rp_match.h"
#include "rp_object.h"
#include "rp_sighting.h"
#include "rp_untrusted.h"
#include "rp_utf8.h"

static char *render(const char *s, size_t len) {
    char *out = NULL;
    assert_int_equal(rp_untrusted_render((rp_bytes){(const uint8_t *)s, len}, &out), RP_OK);
    assert_non_null(out);
    return out;
}

static void assert_render(const char *in, size_t len, const char *want) {
    char *got = render(in, len);
    assert_string_equal(got, want);
    free(got);
}

static void test_render_quotes_and_escapes(void **state) {
    (void)state;
    assert_render("abc", 3, "\"abc\"");
    assert_render("", 0, "\"\"");
    assert_render(NULL, 0, "\"\"");
    assert_render("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    assert_render("l1\nl2\r\t", 7, "\"l1\\nl2\\r\\t\"");
    assert_render("\x01\x1f\x7f", 3, "\"\\u0001\\u001F\\u007F\"");
    assert_render("a\0b", 3, "\"a\\u0000b\"");
    /* C1 control U+0085, RIGHT-TO-LEFT OVERRIDE U+202E, LINE SEPARATOR U+2028. */
    assert_render("\xc2\x85|\xe2\x80\xae|\xe2\x80\xa8", 10, "\"\\u0085|\\u202E|\\u2028\"");
    /* Clean UTF-8 is kept as it is. */
    assert_render("caf\xc3\xa9 \xf0\x9f\x92\x80", 10, "\"caf\xc3\xa9 \xf0\x9f\x92\x80\"");
    /* Invalid bytes one by one: a stray byte, an overlong '/', a surrogate. */
    assert_render("\xff", 1, "\"\\xFF\"");
    assert_render("\xc0\xaf", 2, "\"\\xC0\\xAF\"");
    assert_render("\xed\xa0\x80", 3, "\"\\xED\\xA0\\x80\"");
    assert_render("\xe2\x82", 2, "\"\\xE2\\x82\""); /* truncated sequence */
    /* A value that really ends in "..." is told apart from a cut one. */
    assert_render("abc...", 6, "\"abc...\"");
    char *out = (char *)1;
    assert_int_equal(rp_untrusted_render((rp_bytes){NULL, 3}, &out), RP_ERR_INVALID);
    assert_null(out);
}

static void test_render_cuts_at_200_characters(void **state) {
    (void)state;
    char in[1200], want[1300];
    memset(in, 'a', 201);
    want[0] = '"';
    memset(want + 1, 'a', 200);
    memcpy(want + 201, "\"", 2);
    assert_render(in, 200, want); /* exactly 200: whole, no mark */
    memcpy(want + 201, "\"...", 5);
    assert_render(in, 201, want); /* 201: cut and marked */

    /* Characters, not bytes: 250 two-byte characters keep 200 whole ones. */
    for (int i = 0; i < 250; i++) memcpy(in + 2 * i, "\xc3\xa9", 2);
    char *got = render(in, 500);
    assert_int_equal(strlen(got), 1 + 400 + 1 + 3);
    assert_true(rp_utf8_valid((const uint8_t *)got, strlen(got)));
    assert_memory_equal(got + 401, "\"...", 4);
    free(got);
    /* Escapes count as the one character they stand for. */
    for (int i = 0; i < 300; i++) memcpy(in + 3 * i, "\xe2\x80\xae", 3);
    got = render(in, 900);
    assert_int_equal(strlen(got), 1 + 200 * 6 + 1 + 3);
    free(got);
}

/* The rendering's buffer is sized to its input (issue 21): the longest
 * renderings per input byte (a control as \u00XX, a stray byte as \xXX,
 * a quote escaped) at every short length, byte for byte (the ASan build
 * checks the writes stay inside). */
static void test_render_worst_short_inputs(void **state) {
    (void)state;
    static const struct {
        char in;
        const char *out;
    } worst[] = {{'\x01', "\\u0001"}, {'\xff', "\\xFF"}, {'"', "\\\""}, {'\0', "\\u0000"}};
    for (size_t k = 0; k < sizeof worst / sizeof *worst; k++)
        for (size_t len = 0; len <= 12; len++) {
            char in[16], want[128];
            size_t w = 0;
            want[w++] = '"';
            for (size_t i = 0; i < len; i++) {
                in[i] = worst[k].in;
                memcpy(want + w, worst[k].out, strlen(worst[k].out));
                w += strlen(worst[k].out);
            }
            memcpy(want + w, "\"", 2);
            assert_render(in, len, want);
        }
}

static void test_render_never_emits_controls(void **state) {
    (void)state;
    /* Pseudo-random byte strings: the rendering is always one line of clean
     * UTF-8 with no control byte. */
    uint32_t x = 12345;
    uint8_t in[600];
    for (int round = 0; round < 2000; round++) {
        size_t len = (size_t)(round % 600);
        for (size_t i = 0; i < len; i++) {
            x = x * 1664525u + 1013904223u;
            in[i] = (uint8_t)(x >> 24);
        }
        char *got = render((const char *)in, len);
        size_t n = strlen(got);
        assert_true(rp_utf8_valid((const uint8_t *)got, n));
        for (size_t i = 0; i < n; i++) assert_true((uint8_t)got[i] >= 0x20 && got[i] != 0x7f);
        free(got);
    }
}

static void test_utf8_strict(void **state) {
    (void)state;
    uint32_t cp;
    assert_int_equal(rp_utf8_next((const uint8_t *)"\xf4\x8f\xbf\xbf", 4, &cp), 4);
    assert_int_equal(cp, 0x10FFFF);
    assert_int_equal(rp_utf8_next((const uint8_t *)"\xf4\x90\x80\x80", 4, &cp), 0); /* > U+10FFFF */
    assert_int_equal(rp_utf8_next((const uint8_t *)"\xf0\x8f\xbf\xbf", 4, &cp), 0); /* overlong */
    assert_int_equal(rp_utf8_next((const uint8_t *)"\xe0\x9f\xbf", 3, &cp), 0);     /* overlong */
    assert_int_equal(rp_utf8_next((const uint8_t *)"\xc1\xbf", 2, &cp), 0);         /* overlong */
    assert_int_equal(rp_utf8_next((const uint8_t *)"\xed\x9f\xbf", 3, &cp), 3);     /* U+D7FF */
    assert_int_equal(rp_utf8_next((const uint8_t *)"\x80", 1, &cp), 0);
    assert_true(rp_utf8_valid((const uint8_t *)"", 0));
    assert_false(rp_utf8_valid((const uint8_t *)"ok\xf5", 3));
    assert_true(rp_utf8_is_control(0x2066));
    assert_false(rp_utf8_is_control(0x2065));
    assert_false(rp_utf8_is_control('a'));
}

static void test_object_names(void **state) {
    (void)state;
    char *s;
    assert_int_equal(rp_object_job(42, &s), RP_OK);
    assert_string_equal(s, "job:42");
    free(s);
    assert_int_equal(rp_object_dead_letter("id:m", &s), RP_OK);
    assert_string_equal(s, "dead_letter:id:m");
    free(s);
    assert_int_equal(rp_object_project("alpha", &s), RP_OK);
    assert_string_equal(s, "project:alpha");
    free(s);
    assert_int_equal(rp_object_queue("/", "vibey.x", &s), RP_OK);
    assert_string_equal(s, "queue:/:vibey.x");
    free(s);

    /* Two queues that a naive "vhost:name" would merge stay apart. */
    char *a, *b;
    assert_int_equal(rp_object_queue("a:b", "c", &a), RP_OK);
    assert_int_equal(rp_object_queue("a", "b:c", &b), RP_OK);
    assert_string_not_equal(a, b);
    char *vh, *nm;
    assert_int_equal(rp_object_queue_split(a, &vh, &nm), RP_OK);
    assert_string_equal(vh, "a:b");
    assert_string_equal(nm, "c");
    free(vh);
    free(nm);
    assert_int_equal(rp_object_queue_split(b, &vh, &nm), RP_OK);
    assert_string_equal(vh, "a");
    assert_string_equal(nm, "b:c");
    free(vh);
    free(nm);
    free(a);
    free(b);
    assert_int_equal(rp_object_queue("%3A%", "x|y", &a), RP_OK);
    assert_string_equal(a, "queue:%253A%25:x|y");
    assert_int_equal(rp_object_queue_split(a, &vh, &nm), RP_OK);
    assert_string_equal(vh, "%3A%");
    assert_string_equal(nm, "x|y");
    free(vh);
    free(nm);
    free(a);
    assert_int_equal(rp_object_queue_split("job:1", &vh, &nm), RP_ERR_INVALID);
    assert_int_equal(rp_object_queue_split("queue:nosep", &vh, &nm), RP_ERR_INVALID);
    assert_int_equal(rp_object_queue_split("queue:%zz:x", &vh, &nm), RP_ERR_INVALID);
    assert_null(vh);
    assert_null(nm);
}

static void test_sighting_keys(void **state) {
    (void)state;
    rp_verdict v;
    rp_verdict_init(&v);
    v.source = RP_SOURCE_BROKER;
    v.condition = RP_COND_HOLDER_GONE;
    assert_int_equal(rp_verdict_set_object(&v, "queue:/:vibey.x"), RP_OK);
    char *key;
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_OK);
    assert_string_equal(key, "broker|HOLDER_GONE|queue:/:vibey.x");
    free(key);
    /* Stale ready in the job table is sighted per project, not per job. */
    v.source = RP_SOURCE_JOB_QUEUE;
    v.condition = RP_COND_STALE_READY;
    assert_int_equal(rp_verdict_set_object(&v, "job:9"), RP_OK);
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_ERR_INVALID); /* no project */
    assert_int_equal(rp_verdict_set_project(&v, "alpha"), RP_OK);
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_OK);
    assert_string_equal(key, "job_queue|STALE_READY|project:alpha");
    free(key);
    rp_verdict_cleanup(&v);

    rp_sighting_key_parts parts;
    assert_true(rp_sighting_key_split("broker|DEAD_LETTER|queue:/:a|b", &parts));
    assert_int_equal(parts.source, RP_SOURCE_BROKER);
    assert_int_equal(parts.condition, RP_COND_DEAD_LETTER);
    assert_string_equal(parts.subject, "queue:/:a|b");
    const char *bad[] = {"", "broker", "broker|HOLDER_GONE", "broker|HOLDER_GONE|",
                         "nope|HOLDER_GONE|x", "broker|NONE|x", "broker|holder_gone|x",
                         "broker_is_a_very_long_source_name_indeed|HOLDER_GONE|x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(rp_sighting_key_split(bad[i], &parts));
    assert_false(rp_sighting_key_split(NULL, &parts));
    assert_int_equal(rp_sighting_key(RP_SOURCE_BROKER, RP_COND_NONE, "x", &key), RP_ERR_INVALID);
    assert_int_equal(rp_sighting_key(RP_SOURCE_BROKER, RP_COND_HOLDER_GONE, "", &key),
                     RP_ERR_INVALID);
    assert_int_equal(rp_sighting_key(RP_SOURCE_COUNT_, RP_COND_HOLDER_GONE, "x", &key),
                     RP_ERR_INVALID);
}

static pcre2_code *compile(const char *pattern, uint32_t options) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options, &err, &off, NULL);
    assert_non_null(re);
    return re;
}

static void test_match(void **state) {
    (void)state;
    pcre2_code *owned = compile("^vibey\\.", 0);
    bool m;
    assert_int_equal(rp_match_name(owned, "vibey.x", &m), RP_OK);
    assert_true(m);
    assert_int_equal(rp_match_name(owned, "x.vibey.y", &m), RP_OK);
    assert_false(m);
    pcre2_code *unanchored = compile("vibey", 0); /* as the broker: unanchored */
    assert_int_equal(rp_match_name(unanchored, "x.vibey.y", &m), RP_OK);
    assert_true(m);
    assert_int_equal(rp_match_name(NULL, "x", &m), RP_ERR_INVALID);
    assert_int_equal(rp_match_name(owned, NULL, &m), RP_ERR_INVALID);

    char *cut;
    pcre2_code *suffix = compile("(\\.dlq|\\.dead)$", 0);
    assert_int_equal(rp_match_cut(suffix, "vibey.x.dlq", &cut), RP_OK);
    assert_string_equal(cut, "vibey.x");
    free(cut);
    assert_int_equal(rp_match_cut(suffix, "vibey.x", &cut), RP_OK);
    assert_string_equal(cut, "vibey.x");
    free(cut);
    assert_int_equal(rp_match_cut(NULL, "vibey.x.dlq", &cut), RP_OK);
    assert_string_equal(cut, "vibey.x.dlq");
    free(cut);

    /* A UTF pattern cannot read invalid UTF-8: an error, and a cut keeps the
     * name whole. */
    pcre2_code *utf = compile("\\.dlq$", PCRE2_UTF);
    assert_int_equal(rp_match_name(utf, "bad\xff.dlq", &m), RP_ERR_INVALID);
    assert_false(m);
    assert_int_equal(rp_match_cut(utf, "bad\xff.dlq", &cut), RP_OK);
    assert_string_equal(cut, "bad\xff.dlq");
    free(cut);
    pcre2_code_free(utf);
    pcre2_code_free(suffix);
    pcre2_code_free(unanchored);
    pcre2_code_free(owned);
}

/* Matches run under rp_match.h's limits: a catastrophic pattern against a
 * 255-byte name is an error (unknown) after a bounded cost, not half a
 * second of work nor a match, while the patterns reaper composes or is
 * configured with still match such a name. Patterns from outside are
 * compiled with a length cap. */
static void test_match_limits(void **state) {
    (void)state;
    char name[256];
    memcpy(name, "vibey.", 6);
    memset(name + 6, 'a', 248);
    name[254] = '!';
    name[255] = '\0';
    int err;
    size_t off;
    pcre2_code *evil = rp_match_compile_untrusted("(a+)+$", &err, &off);
    assert_non_null(evil);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool m = true;
    assert_int_equal(rp_match_name(evil, name, &m), RP_ERR_INVALID);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_false(m);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    fprintf(stderr, "# (a+)+$ on a 255-byte name: %ld ms to hit the limit\n", ms);
    assert_true(ms < 100);
    pcre2_code_free(evil);

    /* reaperd's own combined policy pattern (one literal split over two
     * lines, named apart: clang warns of a concatenation in an array). */
    const char *own = "^(?!(?:vibey\\.reap\\.control|vibey\\.reap\\.tap)\\z)(?!(?s:.*?)(?:(\\.dlq|"
                      "\\.dead)$))(?=(?s:.*?)(?:^vibey\\.))";
    const char *fine[] = {own, "^vibey\\.", "a!$", "(?i)A+!", ".*a.*a.*!"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
        pcre2_code *re = rp_match_compile_untrusted(fine[i], &err, &off);
        assert_non_null(re);
        assert_int_equal(rp_match_name(re, name, &m), RP_OK);
        assert_true(m);
        pcre2_code_free(re);
    }

    char longer[RP_MATCH_MAX_PATTERN + 2];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_null(rp_match_compile_untrusted(longer, &err, &off));
    assert_int_equal(err, PCRE2_ERROR_PATTERN_STRING_TOO_LONG);
    longer[RP_MATCH_MAX_PATTERN] = '\0';
    pcre2_code *max = rp_match_compile_untrusted(longer, &err, &off);
    assert_non_null(max);
    pcre2_code_free(max);
}

static void test_job_state_names(void **state) {
    (void)state;
    for (int s = 0; s < RP_JOB_STATE_COUNT_; s++) {
        rp_job_state back;
        assert_true(rp_job_state_parse(rp_job_state_string((rp_job_state)s), &back));
        assert_int_equal(back, s);
    }
    rp_job_state st;
    assert_false(rp_job_state_parse("LEASED", &st));
    assert_false(rp_job_state_parse(NULL, &st));
    assert_string_equal(rp_job_state_string(RP_JOB_AWAITING_HUMAN), "awaiting_human");
    assert_string_equal(rp_job_state_string(RP_JOB_STATE_COUNT_), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_quotes_and_escapes),
        cmocka_unit_test(test_render_cuts_at_200_characters),
        cmocka_unit_test(test_render_worst_short_inputs),
        cmocka_unit_test(test_render_never_emits_controls),
        cmocka_unit_test(test_utf8_strict),
        cmocka_unit_test(test_object_names),
        cmocka_unit_test(test_sighting_keys),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_match_limits),
        cmocka_unit_test(test_job_state_names),
    };
    return cmocka_run_group_tests_name("names", tests, NULL, NULL);
}
