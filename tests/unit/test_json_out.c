/* The streaming JSON writer (support/rp_json_out.c) writes the bytes
 * jansson's json_dumps(JSON_COMPACT) writes for the same values: random
 * documents are built twice, once as a jansson tree and once through the
 * writer, and compared; then the failures that stick. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "rp_json_out.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A valid UTF-8 string with the bytes that need escaping mixed in. */
static size_t gen_string(char *buf, size_t cap, bool allow_nul) {
    static const char *pieces[] = {"a", "Z", "\"", "\\", "/", "\n", "\t", "\b", "\f", "\r",
                                   "\x01", "\x1f", "\x7f", " ", "\xc3\xa9", "\xe2\x82\xac",
                                   "\xf0\x9f\x98\x80", "\xed\x9f\xbf", "<script>", "'"};
    size_t n = 0, parts = next() % 12;
    for (size_t i = 0; i < parts; i++) {
        const char *p;
        size_t k;
        if (allow_nul && next() % 17 == 0) {
            p = "";
            k = 1; /* the NUL itself */
        } else {
            p = pieces[next() % (sizeof pieces / sizeof *pieces)];
            k = strlen(p);
        }
        if (n + k >= cap) break;
        memcpy(buf + n, p, k);
        n += k;
    }
    buf[n] = '\0';
    return n;
}

static double gen_real(void) {
    static const double fixed[] = {0.0,   -0.0,    0.1,     1.0,     -1.5,         1e20,
                                   1e-7,  1e15,    1e16,    1e17,    123456789.0,  5e-324,
                                   DBL_MAX, -DBL_MAX, DBL_MIN, 3.0e-5, 2.5e300,   1e100};
    if (next() % 2) return fixed[next() % (sizeof fixed / sizeof *fixed)];
    double d;
    do {
        uint64_t bits = next();
        memcpy(&d, &bits, sizeof d);
    } while (!isfinite(d));
    return d;
}

static int64_t gen_int(void) {
    static const int64_t fixed[] = {0, 1, -1, 9, 10, -10, INT64_MAX, INT64_MIN, 255, 65536};
    if (next() % 2) return fixed[next() % (sizeof fixed / sizeof *fixed)];
    return (int64_t)next() >> (next() % 64);
}

/* One value built both ways; depth limits the nesting. */
static json_t *gen_value(rp_jout *w, int depth) {
    int kind = (int)(next() % (depth > 0 ? 8 : 6));
    char s[256];
    switch (kind) {
    case 0: {
        size_t n = gen_string(s, sizeof s, true);
        /* Valid UTF-8 either way: the checked form writes the same bytes. */
        if (next() % 2)
            rp_jout_str_checked(w, s, n);
        else
            rp_jout_str(w, s, n);
        return json_stringn(s, n);
    }
    case 1: {
        int64_t v = gen_int();
        rp_jout_int(w, v);
        return json_integer(v);
    }
    case 2: {
        double d = gen_real();
        rp_jout_real(w, d);
        return json_real(d);
    }
    case 3: {
        bool b = next() % 2;
        rp_jout_bool(w, b);
        return json_boolean(b);
    }
    case 4: rp_jout_null(w); return json_null();
    case 5: {
        (void)gen_string(s, sizeof s, false);
        rp_jout_strz(w, s);
        return json_string(s);
    }
    case 6: {
        json_t *a = json_array();
        rp_jout_arr_open(w);
        size_t n = next() % 5;
        for (size_t i = 0; i < n; i++) json_array_append_new(a, gen_value(w, depth - 1));
        rp_jout_arr_close(w);
        return a;
    }
    default: {
        json_t *o = json_object();
        rp_jout_obj_open(w);
        size_t n = next() % 5;
        for (size_t i = 0; i < n; i++) {
            /* unique keys: jansson keeps one value per key */
            size_t k = gen_string(s, sizeof s - 8, false);
            k += (size_t)snprintf(s + k, 8, "#%zu", i);
            if (next() % 2)
                rp_jout_key_checked(w, s, k);
            else
                rp_jout_key(w, s, k);
            json_object_setn_new(o, s, k, gen_value(w, depth - 1));
        }
        rp_jout_obj_close(w);
        return o;
    }
    }
}

static void test_same_bytes_as_jansson(void **state) {
    (void)state;
    for (int round = 0; round < 20000; round++) {
        rp_jout w;
        rp_jout_init(&w);
        json_t *doc = gen_value(&w, 4);
        char *mine = rp_jout_take(&w);
        char *theirs = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
        assert_non_null(theirs);
        assert_non_null(mine);
        if (strcmp(mine, theirs) != 0) fail_msg("round %d:\n writer  %s\n jansson %s", round, mine, theirs);
        free(mine);
        free(theirs);
        json_decref(doc);
    }
}

/* d rendered by the writer as jansson renders it. */
static void assert_real_as_jansson(double d) {
    rp_jout w;
    rp_jout_init(&w);
    rp_jout_real(&w, d);
    char *mine = rp_jout_take(&w);
    json_t *j = json_real(d);
    char *theirs = json_dumps(j, JSON_ENCODE_ANY);
    assert_string_equal(mine, theirs);
    free(mine);
    free(theirs);
    json_decref(j);
}

static void test_reals_as_jansson(void **state) {
    (void)state;
    for (int i = 0; i < 100000; i++) {
        double d = gen_real();
        assert_real_as_jansson(d);
    }
}

static char *one_string(const char *s, size_t n);

/* Integral values, which the writer renders without snprintf (issue 21),
 * around the fast path's bounds. */
static void test_integral_reals_as_jansson(void **state) {
    (void)state;
    static const double fixed[] = {0.0, -0.0, 1.0, -1.0, 9007199254740992.0, 9007199254740994.0,
                                   99999999999999984.0, -99999999999999984.0, 1e17, -1e17,
                                   1e16, 123456789012.0, 4503599627370497.0};
    for (int i = 0; i < 100000; i++) {
        double d;
        if (i < (int)(sizeof fixed / sizeof *fixed))
            d = fixed[i];
        else if (i % 2)
            d = (double)((int64_t)(next() % 200000000000000000ull) - 100000000000000000ll);
        else
            d = (double)((int64_t)(next() % 2000001) - 1000000);
        assert_real_as_jansson(d);
    }
}

/* Strings quoted eight bytes at a time (issue 21): every byte to escape at
 * every position of strings of 0..80 bytes, and escapes around the 1,024
 * bytes the writer reserves room for at once, as jansson writes them. */
static void test_long_strings_as_jansson(void **state) {
    (void)state;
    static const char *const specials[] = {"\"", "\\", "\n", "\x01", "\x1f", "\x7f", "\xc3\xa9",
                                           "\xe2\x82\xac", " ", "!", "#", "[", "]", "\x21"};
    char buf[3200];
    for (size_t len = 0; len <= 80; len++)
        for (size_t pos = 0; pos <= len; pos++)
            for (size_t k = 0; k < sizeof specials / sizeof *specials; k++) {
                size_t sl = strlen(specials[k]);
                memset(buf, 'a' + (char)(len % 26), len);
                if (pos + sl <= len) memcpy(buf + pos, specials[k], sl);
                json_t *j = json_stringn(buf, len);
                assert_non_null(j);
                char *theirs = json_dumps(j, JSON_ENCODE_ANY);
                char *mine = one_string(buf, len);
                assert_non_null(mine);
                assert_string_equal(mine, theirs);
                free(mine);
                free(theirs);
                json_decref(j);
            }
    for (int round = 0; round < 200; round++) {
        size_t len = 900 + next() % 2300;
        for (size_t i = 0; i < len; i++) buf[i] = (char)(0x20 + next() % 95);
        for (int e = 0; e < 20; e++) {
            size_t at = next() % len;
            buf[at] = (char)(next() % 3 == 0 ? '"' : next() % 2 ? '\n' : '\x02');
        }
        json_t *j = json_stringn(buf, len);
        char *theirs = json_dumps(j, JSON_ENCODE_ANY);
        char *mine = one_string(buf, len);
        assert_string_equal(mine, theirs);
        free(mine);
        free(theirs);
        json_decref(j);
    }
}

static char *one_string(const char *s, size_t n) {
    rp_jout w;
    rp_jout_init(&w);
    rp_jout_str(&w, s, n);
    return rp_jout_take(&w);
}

static void test_failures_stick(void **state) {
    (void)state;
    /* not strict UTF-8: a lone continuation, an overlong, a surrogate */
    assert_null(one_string("\x80", 1));
    assert_null(one_string("\xc0\xaf", 2));
    assert_null(one_string("\xed\xa0\x80", 3));
    char *ok = one_string("\xc3\xa9", 2);
    assert_string_equal(ok, "\"\xc3\xa9\"");
    free(ok);

    rp_jout w;
    rp_jout_init(&w);
    rp_jout_obj_open(&w);
    rp_jout_keyz(&w, "m");
    rp_jout_real(&w, NAN);
    rp_jout_obj_close(&w);
    assert_null(rp_jout_take(&w));

    rp_jout_init(&w);
    rp_jout_obj_open(&w); /* never closed */
    assert_null(rp_jout_take(&w));

    rp_jout_init(&w);
    for (int i = 0; i <= RP_JOUT_MAX_DEPTH; i++) rp_jout_arr_open(&w);
    for (int i = 0; i <= RP_JOUT_MAX_DEPTH; i++) rp_jout_arr_close(&w);
    assert_null(rp_jout_take(&w));

    rp_jout_init(&w);
    rp_jout_obj_open(&w);
    rp_jout_key(&w, "a\0b", 3); /* a key with a NUL */
    rp_jout_null(&w);
    rp_jout_obj_close(&w);
    assert_null(rp_jout_take(&w));
}

/* A literal key is written as rp_jout_keyz writes it, commas included. */
static void test_literal_keys(void **state) {
    (void)state;
    rp_jout a, b;
    rp_jout_init(&a);
    rp_jout_init(&b);
    rp_jout_obj_open(&a);
    rp_jout_obj_open(&b);
    rp_jout_lit(&a, "$amqp");
    rp_jout_keyz(&b, "$amqp");
    rp_jout_int(&a, 1);
    rp_jout_int(&b, 1);
    rp_jout_lit(&a, "value");
    rp_jout_keyz(&b, "value");
    rp_jout_arr_open(&a);
    rp_jout_arr_open(&b);
    rp_jout_arr_close(&a);
    rp_jout_arr_close(&b);
    rp_jout_obj_close(&a);
    rp_jout_obj_close(&b);
    char *x = rp_jout_take(&a), *y = rp_jout_take(&b);
    assert_string_equal(x, "{\"$amqp\":1,\"value\":[]}");
    assert_string_equal(x, y);
    free(x);
    free(y);
    rp_jout_init(&a);
    rp_jout_lit(&a, "k"); /* a key outside an object */
    rp_jout_int(&a, 1);
    assert_null(rp_jout_take(&a));
    rp_jout_init(&a);
    rp_jout_key_checked(&a, "k", 1); /* checked or not: outside an object */
    rp_jout_int(&a, 1);
    assert_null(rp_jout_take(&a));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_as_jansson),
        cmocka_unit_test(test_reals_as_jansson),
        cmocka_unit_test(test_integral_reals_as_jansson),
        cmocka_unit_test(test_long_strings_as_jansson),
        cmocka_unit_test(test_failures_stick),
        cmocka_unit_test(test_literal_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
