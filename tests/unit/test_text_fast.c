/* Issue 21's faster texts give the bytes the slower ones gave:
 * rp_untrusted_render's printable-ASCII path against the decoding it skips
 * (the renderer as it was, kept here as the reference) on 200,000 generated
 * inputs, and rp_text_join against printf's "%s%s..." (and the tap's
 * question against its old format). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_text.h"
#include "rp_untrusted.h"
#include "rp_utf8.h"

/* rp_untrusted_render before issue 21: every character decoded. */
static char *reference_render(const uint8_t *p, size_t len) {
    size_t cap = 2 + (size_t)RP_UNTRUSTED_MAX_CHARS * 6 + 3 + 1;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t w = 0, i = 0, chars = 0;
    s[w++] = '"';
    while (i < len && chars < RP_UNTRUSTED_MAX_CHARS) {
        uint32_t cp;
        size_t n = rp_utf8_next(p + i, len - i, &cp);
        if (n == 0) {
            w += (size_t)snprintf(s + w, cap - w, "\\x%02X", (unsigned)p[i]);
            n = 1;
        } else if (cp == '"' || cp == '\\') {
            s[w++] = '\\';
            s[w++] = (char)cp;
        } else if (cp == '\n') {
            memcpy(s + w, "\\n", 2);
            w += 2;
        } else if (cp == '\r') {
            memcpy(s + w, "\\r", 2);
            w += 2;
        } else if (cp == '\t') {
            memcpy(s + w, "\\t", 2);
            w += 2;
        } else if (rp_utf8_is_control(cp)) {
            w += (size_t)snprintf(s + w, cap - w, "\\u%04X", (unsigned)cp);
        } else {
            memcpy(s + w, p + i, n);
            w += n;
        }
        i += n;
        chars++;
    }
    s[w++] = '"';
    if (i < len) {
        memcpy(s + w, "...", 3);
        w += 3;
    }
    s[w] = '\0';
    return s;
}

static uint32_t rng = 2166136261u;
static uint32_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Mostly printable ASCII (queue names, reasons), with quotes, backslashes,
 * controls, DEL, valid multi-byte characters and stray bytes mixed in. */
static size_t gen(uint8_t *b, size_t cap) {
    size_t len = next() % cap;
    size_t i = 0;
    while (i < len) {
        uint32_t r = next() % 100;
        if (r < 70) b[i++] = (uint8_t)(0x20 + next() % 95);
        else if (r < 74) b[i++] = '"';
        else if (r < 78) b[i++] = '\\';
        else if (r < 84) b[i++] = (uint8_t)(next() % 0x20);
        else if (r < 86) b[i++] = 0x7F;
        else if (r < 92 && i + 2 <= len) {
            b[i++] = 0xC3; /* é */
            b[i++] = 0xA9;
        } else if (r < 95 && i + 3 <= len) {
            b[i++] = 0xE2; /* U+2028, a control to the renderer */
            b[i++] = 0x80;
            b[i++] = 0xA8;
        } else b[i++] = (uint8_t)(0x80 + next() % 0x80);
    }
    return len;
}

static void test_untrusted_render_as_before(void **state) {
    (void)state;
    uint8_t buf[300];
    for (int k = 0; k < 200000; k++) {
        size_t len = gen(buf, sizeof buf);
        char *want = reference_render(buf, len);
        char *got = NULL;
        assert_int_equal(rp_untrusted_render((rp_bytes){buf, len}, &got), RP_OK);
        assert_string_equal(got, want);
        free(got);
        free(want);
    }
}

static void test_join_as_printf(void **state) {
    (void)state;
    char *out = NULL;
    const char *none[1] = {NULL};
    assert_int_equal(rp_text_join(&out, none, 0), RP_OK);
    assert_string_equal(out, "");
    free(out);
    /* More parts than the lengths it remembers (16). */
    const char *many[20];
    for (int i = 0; i < 20; i++) many[i] = i % 2 ? "ab" : "c";
    assert_int_equal(rp_text_join(&out, many, 20), RP_OK);
    assert_string_equal(out, "cabcabcabcabcabcabcabcabcabcab");
    free(out);
    uint8_t a[300], b[300], c[300];
    for (int k = 0; k < 20000; k++) {
        size_t la = gen(a, sizeof a), lb = gen(b, sizeof b), lc = gen(c, sizeof c);
        for (size_t i = 0; i < la; i++) a[i] = a[i] ? a[i] : 'x';
        for (size_t i = 0; i < lb; i++) b[i] = b[i] ? b[i] : 'x';
        for (size_t i = 0; i < lc; i++) c[i] = c[i] ? c[i] : 'x';
        a[la] = b[lb] = c[lc] = '\0';
        const char *parts[] = {"A message that died on ", (char *)a, " (reason ", (char *)b,
                               ") was found on dead-letter queue ", (char *)c,
                               " and parked: replay it to the queue it died on, or dismiss it?"};
        char *want = NULL;
        assert_int_equal(
            rp_text_format(&want,
                           "A message that died on %s (reason %s) was found on dead-letter "
                           "queue %s and parked: replay it to the queue it died on, or "
                           "dismiss it?",
                           (char *)a, (char *)b, (char *)c),
            RP_OK);
        assert_int_equal(rp_text_join(&out, parts, 7), RP_OK);
        assert_string_equal(out, want);
        free(out);
        free(want);
    }
}

/* rp_text_i64 writes what printf's "%" PRId64 writes. */
static void test_i64_as_printf(void **state) {
    (void)state;
    static const int64_t fixed[] = {0, 1, -1, 9, 10, -10, INT64_MAX, INT64_MIN, INT64_MIN + 1,
                                    1700000000, -62135596800LL, 253402300799LL};
    for (int i = 0; i < 200000; i++) {
        int64_t v = i < (int)(sizeof fixed / sizeof *fixed) ? fixed[i] : (int64_t)next();
        if (i % 3 == 0) v >>= next() % 63;
        char want[32], got[RP_TEXT_I64_BUF];
        int n = snprintf(want, sizeof want, "%" PRId64, v);
        assert_int_equal(rp_text_i64(v, got), (size_t)n);
        assert_string_equal(got, want);
    }
}

/* rp_utf8_valid, eight ASCII bytes at a time (issue 21), against the
 * decoding of every character, on generated bytes with what is not ASCII
 * at every position of a word. */
static void test_utf8_valid_as_decoding(void **state) {
    (void)state;
    uint8_t buf[300];
    for (int k = 0; k < 200000; k++) {
        size_t len = gen(buf, k % 2 ? 40 : sizeof buf);
        if (k % 4 == 0) /* mostly ASCII, one odd byte somewhere */
            for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(0x20 + next() % 95);
        if (k % 4 == 0 && len > 0) buf[next() % len] = (uint8_t)(0x80 + next() % 0x80);
        bool want = true;
        for (size_t i = 0; i < len;) {
            uint32_t cp;
            size_t n = rp_utf8_next(buf + i, len - i, &cp);
            if (n == 0) {
                want = false;
                break;
            }
            i += n;
        }
        assert_int_equal(rp_utf8_valid(buf, len), want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untrusted_render_as_before),
        cmocka_unit_test(test_join_as_printf),
        cmocka_unit_test(test_i64_as_printf),
        cmocka_unit_test(test_utf8_valid_as_decoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
