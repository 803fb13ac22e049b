/* Dead-letter identity, origin, reason and first death (core/rp_deadletter.h),
 * including hostile headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_deadletter.h"

/* Independently computed digests, each with the command that gives it:
 *   printf 'vibey.x\n1700000000\nhello' | sha256sum */
#define HELLO_AT_1700000000 \
    "sha256:311b7b0feb8b1618f2bb98228fa28dc4a924e203811adfed8b3692785ce59fb1"
/*   printf 'vibey.x\n\nhello' | sha256sum   (first death unknown: empty) */
#define HELLO_UNKNOWN_TIME \
    "sha256:a58e1d995a49070a11c364f82e894d31b13490088acc4cff8027b41b3a5ab93d"
/*   printf '\n\n' | sha256sum */
#define ALL_EMPTY "sha256:75a11da44c802486bc6f65640aa48a730f0f684c5c07a42ba3cd1735eb3fb070"
/* The identities of the first two in vhost "/" (ESC gives "%2F"). */
#define IDENT_HELLO_AT \
    "sha256:%2F/311b7b0feb8b1618f2bb98228fa28dc4a924e203811adfed8b3692785ce59fb1"
#define IDENT_HELLO_UNKNOWN \
    "sha256:%2F/a58e1d995a49070a11c364f82e894d31b13490088acc4cff8027b41b3a5ab93d"
/*   printf 'vibey.x\n-5\n\x00\xff' | sha256sum */
#define BINARY_BODY_NEGATIVE_TIME \
    "sha256:79dff58bb9638f424f2a7a20814edcefff2dbaf31b1a14384ea7d659f0509dd1"

static rp_opt_str str(const char *s) {
    rp_opt_str o = {true, {(const uint8_t *)s, strlen(s)}};
    return o;
}

static rp_opt_i64 i64(int64_t v) {
    rp_opt_i64 o = {true, v};
    return o;
}

static rp_bytes bytes(const char *s) {
    rp_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static pcre2_code *compile(const char *pattern) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(re);
    return re;
}

/* Examines in vhost "/" and returns the result (the caller cleans it up). */
static rp_dead_letter examine_in(const rp_dl_headers *h, const char *vhost, const char *dlq,
                                 const pcre2_code *re, rp_bytes body) {
    rp_dead_letter d;
    assert_int_equal(rp_dead_letter_examine(h, vhost, dlq, re, body, &d), RP_OK);
    assert_non_null(d.death);
    assert_non_null(d.identity);
    assert_non_null(d.origin_queue);
    assert_non_null(d.reason);
    return d;
}

static rp_dead_letter examine(const rp_dl_headers *h, const char *dlq, const pcre2_code *re,
                              rp_bytes body) {
    return examine_in(h, "/", dlq, re, body);
}

static void test_identity_by_message_id(void **state) {
    (void)state;
    rp_dl_headers h = {.message_id = str("order-7f3a"), .first_death_queue = str("vibey.x")};
    rp_dead_letter d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, "id:%2F/vibey.x/order-7f3a");
    assert_true(d.identity_by_id);
    rp_dead_letter_cleanup(&d);
    /* A non-ASCII id is fine as long as it is clean UTF-8. */
    h.message_id = str("caf\xc3\xa9-1");
    d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, "id:%2F/vibey.x/caf\xc3\xa9-1");
    rp_dead_letter_cleanup(&d);
}

static void test_identity_by_digest_known_vector(void **state) {
    (void)state;
    rp_xdeath e = {.queue = str("vibey.x"), .reason = str("rejected"), .time = i64(1700000000)};
    rp_dl_headers h = {.first_death_queue = str("vibey.x"), .x_death = &e, .n_x_death = 1};
    rp_dead_letter d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, IDENT_HELLO_AT);
    assert_false(d.identity_by_id);
    assert_true(d.first_death_known);
    assert_int_equal(d.first_death_at, 1700000000);
    rp_dead_letter_cleanup(&d);

    /* No x-death at all: the first death is unknown and renders empty. */
    rp_dl_headers h2 = {.first_death_queue = str("vibey.x")};
    d = examine(&h2, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, IDENT_HELLO_UNKNOWN);
    assert_false(d.first_death_known);
    rp_dead_letter_cleanup(&d);

    /* The digest function alone, over raw bytes with NULs and a negative time. */
    char out[RP_DL_DIGEST_IDENTITY_LEN + 1];
    static const uint8_t body[] = {0x00, 0xff};
    assert_int_equal(rp_dl_digest_identity(bytes("vibey.x"), true, -5, (rp_bytes){body, 2}, out),
                     RP_OK);
    assert_string_equal(out, BINARY_BODY_NEGATIVE_TIME);
    assert_int_equal(rp_dl_digest_identity((rp_bytes){NULL, 0}, false, 0, (rp_bytes){NULL, 0}, out),
                     RP_OK);
    assert_string_equal(out, ALL_EMPTY);
    assert_int_equal(rp_dl_digest_identity((rp_bytes){NULL, 3}, false, 0, (rp_bytes){NULL, 0}, out),
                     RP_ERR_INVALID);
}

static void test_empty_or_unusable_message_id_falls_back_to_digest(void **state) {
    (void)state;
    rp_xdeath e = {.queue = str("vibey.x"), .time = i64(1700000000)};
    rp_dl_headers h = {.first_death_queue = str("vibey.x"), .x_death = &e, .n_x_death = 1};
    const char *unusable[] = {"", "a\nb", "tab\there", "bell\x07", "del\x7f",
                              "bad\xff utf8", "overlong \xc0\xaf", "rtl \xe2\x80\xae override",
                              "c1 \xc2\x85"};
    for (size_t i = 0; i < sizeof unusable / sizeof *unusable; i++) {
        h.message_id = str(unusable[i]);
        rp_dead_letter d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
        assert_string_equal(d.identity, IDENT_HELLO_AT);
        rp_dead_letter_cleanup(&d);
    }
    /* A NUL inside the id (the slice is longer than the C string). */
    h.message_id = (rp_opt_str){true, {(const uint8_t *)"ab\0cd", 5}};
    rp_dead_letter d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, IDENT_HELLO_AT);
    rp_dead_letter_cleanup(&d);
    /* 255 bytes is the longest usable id (an AMQP short string), 256 is not. */
    char id[257];
    memset(id, 'm', 256);
    id[256] = '\0';
    h.message_id = (rp_opt_str){true, {(const uint8_t *)id, 256}};
    d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, IDENT_HELLO_AT);
    rp_dead_letter_cleanup(&d);
    h.message_id = (rp_opt_str){true, {(const uint8_t *)id, 255}};
    d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_true(d.identity_by_id);
    assert_int_equal(strlen(d.identity), strlen("id:%2F/vibey.x/") + 255);
    rp_dead_letter_cleanup(&d);
    /* Present but flagged absent (wrong type): the digest. */
    h.message_id = (rp_opt_str){false, {(const uint8_t *)"x", 1}};
    d = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    assert_string_equal(d.identity, IDENT_HELLO_AT);
    rp_dead_letter_cleanup(&d);
}

static void test_digest_ignores_reason_and_dead_letter_queue(void **state) {
    (void)state;
    rp_xdeath e = {.queue = str("vibey.x"), .reason = str("rejected"), .time = i64(1700000000)};
    rp_dl_headers h = {.first_death_queue = str("vibey.x"),
                       .first_death_reason = str("rejected"),
                       .x_death = &e,
                       .n_x_death = 1};
    rp_dead_letter a = examine(&h, "vibey.x.dlq", NULL, bytes("hello"));
    e.reason = str("expired");
    h.first_death_reason = str("expired");
    rp_dead_letter b = examine(&h, "other.dead", NULL, bytes("hello"));
    assert_string_equal(a.identity, b.identity);
    assert_string_equal(a.identity, IDENT_HELLO_AT);
    assert_string_equal(a.reason, "rejected");
    assert_string_equal(b.reason, "expired");
    rp_dead_letter_cleanup(&a);
    rp_dead_letter_cleanup(&b);
}

static void test_digest_depends_on_origin_time_and_body(void **state) {
    (void)state;
    rp_xdeath e = {.queue = str("vibey.x"), .time = i64(1700000000)};
    rp_dl_headers h = {.first_death_queue = str("vibey.x"), .x_death = &e, .n_x_death = 1};
    rp_dead_letter base = examine(&h, "q.dlq", NULL, bytes("hello"));
    e.time = i64(1700000001); /* one second later */
    rp_dead_letter later = examine(&h, "q.dlq", NULL, bytes("hello"));
    assert_string_not_equal(base.identity, later.identity);
    e.time = i64(1700000000);
    h.first_death_queue = str("vibey.y");
    rp_dead_letter other_origin = examine(&h, "q.dlq", NULL, bytes("hello"));
    assert_string_not_equal(base.identity, other_origin.identity);
    h.first_death_queue = str("vibey.x");
    rp_dead_letter other_body = examine(&h, "q.dlq", NULL, bytes("hellp"));
    assert_string_not_equal(base.identity, other_body.identity);
    /* The "\n" separators keep origin and time apart: "vibey.x1" + "700000000"
     * is not "vibey.x" + "1700000000". */
    e.time = i64(700000000);
    h.first_death_queue = str("vibey.x1");
    rp_dead_letter shifted = examine(&h, "q.dlq", NULL, bytes("hello"));
    assert_string_not_equal(base.identity, shifted.identity);
    rp_dead_letter_cleanup(&base);
    rp_dead_letter_cleanup(&later);
    rp_dead_letter_cleanup(&other_origin);
    rp_dead_letter_cleanup(&other_body);
    rp_dead_letter_cleanup(&shifted);
}

/* Issue 14 item 3: the origin queue and the vhost are part of the identity,
 * so one message_id reused on two origins (or vhosts) is two dead letters. */
static void test_identity_names_vhost_and_origin(void **state) {
    (void)state;
    rp_dl_headers h = {.message_id = str("m-1"), .first_death_queue = str("vibey.a")};
    rp_dead_letter a = examine(&h, "vibey.a.dlq", NULL, bytes("one"));
    h.first_death_queue = str("vibey.b");
    rp_dead_letter b = examine(&h, "vibey.b.dlq", NULL, bytes("two"));
    rp_dead_letter c = examine_in(&h, "other", "vibey.b.dlq", NULL, bytes("two"));
    assert_string_equal(a.identity, "id:%2F/vibey.a/m-1");
    assert_string_equal(b.identity, "id:%2F/vibey.b/m-1");
    assert_string_equal(c.identity, "id:other/vibey.b/m-1");
    /* The dead-letter queue it is found on is not part of it. */
    rp_dead_letter b2 = examine(&h, "elsewhere.dead", NULL, bytes("two"));
    assert_string_equal(b2.identity, b.identity);
    rp_dead_letter_cleanup(&a);
    rp_dead_letter_cleanup(&b);
    rp_dead_letter_cleanup(&c);
    rp_dead_letter_cleanup(&b2);
    /* '/' and '%' in a name are escaped, so the parts cannot run together:
     * vhost "a/b" + origin "c" is not vhost "a" + origin "b/c". */
    h.first_death_queue = str("c");
    rp_dead_letter x = examine_in(&h, "a/b", "q", NULL, bytes(""));
    h.first_death_queue = str("b/c");
    rp_dead_letter y = examine_in(&h, "a", "q", NULL, bytes(""));
    assert_string_equal(x.identity, "id:a%2Fb/c/m-1");
    assert_string_equal(y.identity, "id:a/b%2Fc/m-1");
    rp_dead_letter_cleanup(&x);
    rp_dead_letter_cleanup(&y);
    /* Raw bytes of a hostile origin: printable ASCII only. */
    h.first_death_queue = (rp_opt_str){true, {(const uint8_t *)"q \x00%\xff\xc3\xa9", 7}};
    x = examine(&h, "q", NULL, bytes(""));
    assert_string_equal(x.identity, "id:%2F/q%20%00%25%FF%C3%A9/m-1");
    rp_dead_letter_cleanup(&x);
    /* An origin longer than any queue name: the digest, not the id. */
    char longq[RP_DL_ORIGIN_ID_MAX + 2];
    memset(longq, 'q', sizeof longq - 1);
    longq[sizeof longq - 1] = '\0';
    h.first_death_queue = str(longq);
    x = examine(&h, "q", NULL, bytes(""));
    assert_false(x.identity_by_id);
    assert_int_equal(strncmp(x.identity, "sha256:%2F/", 11), 0);
    rp_dead_letter_cleanup(&x);
    longq[RP_DL_ORIGIN_ID_MAX] = '\0';
    h.first_death_queue = str(longq);
    x = examine(&h, "q", NULL, bytes(""));
    assert_true(x.identity_by_id);
    rp_dead_letter_cleanup(&x);
    /* The digest form names the vhost too. */
    rp_xdeath e = {.queue = str("vibey.x"), .time = i64(1700000000)};
    rp_dl_headers hd = {.first_death_queue = str("vibey.x"), .x_death = &e, .n_x_death = 1};
    x = examine_in(&hd, "vh", "q", NULL, bytes("hello"));
    assert_string_equal(x.identity,
                        "sha256:vh/311b7b0feb8b1618f2bb98228fa28dc4a924e203811adfed8b3692785ce59fb1");
    rp_dead_letter_cleanup(&x);
}

static void test_escape(void **state) {
    (void)state;
    char *s = NULL;
    assert_int_equal(rp_dl_escape(bytes(""), &s), RP_OK);
    assert_string_equal(s, "");
    free(s);
    assert_int_equal(rp_dl_escape(bytes("!~aZ09.-_:"), &s), RP_OK);
    assert_string_equal(s, "!~aZ09.-_:");
    free(s);
    assert_int_equal(rp_dl_escape(bytes("/% \x7f\n"), &s), RP_OK);
    assert_string_equal(s, "%2F%25%20%7F%0A");
    free(s);
    assert_int_equal(rp_dl_escape((rp_bytes){NULL, 2}, &s), RP_ERR_INVALID);
    assert_null(s);
}

/* DEATH: the same headers give the same death; a death with its headers
 * kept (count + 1) or a new x-death (a replay: new time) give new ones. */
static void test_death(void **state) {
    (void)state;
    rp_xdeath e = {.queue = str("vibey.x"), .reason = str("rejected"), .time = i64(1700000000),
                   .count = i64(1)};
    rp_dl_headers h = {.message_id = str("m-1"), .x_death = &e, .n_x_death = 1};
    rp_dead_letter a = examine(&h, "vibey.x.dlq", NULL, bytes("b"));
    rp_dead_letter a2 = examine(&h, "elsewhere.dlq", NULL, bytes("b"));
    assert_string_equal(a.death, "1700000000/1");
    assert_int_equal(a.deaths, 1);
    assert_string_equal(a2.death, a.death);
    e.count = i64(2); /* died there again, headers kept */
    rp_dead_letter b = examine(&h, "vibey.x.dlq", NULL, bytes("b"));
    assert_string_equal(b.death, "1700000000/2");
    assert_string_equal(b.identity, a.identity);
    e.count = i64(1);
    e.time = i64(1700000042); /* replayed (no headers) and dead again */
    rp_dead_letter c = examine(&h, "vibey.x.dlq", NULL, bytes("b"));
    assert_string_equal(c.death, "1700000042/1");
    assert_string_equal(c.identity, a.identity);
    rp_dead_letter_cleanup(&a);
    rp_dead_letter_cleanup(&a2);
    rp_dead_letter_cleanup(&b);
    rp_dead_letter_cleanup(&c);

    /* Counts of every entry add up; absent or below 1 counts 1; the first
     * part is the oldest time; no entries give "/0"; the sum saturates. */
    rp_xdeath two[3] = {
        {.queue = str("b"), .time = i64(20), .count = i64(3)},
        {.queue = str("a"), .time = i64(10)},
        {.queue = str("c"), .count = i64(-4)},
    };
    rp_dl_headers h2 = {.x_death = two, .n_x_death = 3};
    a = examine(&h2, "q", NULL, bytes(""));
    assert_string_equal(a.death, "10/5");
    rp_dead_letter_cleanup(&a);
    rp_dl_headers none = {0};
    a = examine(&none, "q", NULL, bytes(""));
    assert_string_equal(a.death, "/0");
    rp_dead_letter_cleanup(&a);
    two[0].count = i64(INT64_MAX);
    two[1].count = i64(INT64_MAX);
    assert_int_equal(rp_dl_death_count(&h2), INT64_MAX);
}

static void test_origin_rules(void **state) {
    (void)state;
    pcre2_code *suffix = compile("(\\.dlq|\\.dead)$");
    rp_xdeath e = {.queue = str("from.entry"), .time = i64(10)};
    rp_dl_headers h = {.first_death_queue = str("from.header"), .x_death = &e, .n_x_death = 1};
    rp_dead_letter d = examine(&h, "vibey.x.dlq", suffix, bytes(""));
    assert_string_equal(d.origin_queue, "from.header");
    assert_int_equal(d.origin_from, RP_DL_ORIGIN_FIRST_DEATH_HEADER);
    rp_dead_letter_cleanup(&d);

    h.first_death_queue = str(""); /* present but empty: not an origin */
    d = examine(&h, "vibey.x.dlq", suffix, bytes(""));
    assert_string_equal(d.origin_queue, "from.entry");
    assert_int_equal(d.origin_from, RP_DL_ORIGIN_X_DEATH);
    rp_dead_letter_cleanup(&d);

    e.queue.present = false; /* the oldest entry has no queue: the name */
    d = examine(&h, "vibey.x.dlq", suffix, bytes(""));
    assert_string_equal(d.origin_queue, "vibey.x");
    assert_int_equal(d.origin_queue_len, 7);
    assert_int_equal(d.origin_from, RP_DL_ORIGIN_QUEUE_NAME);
    rp_dead_letter_cleanup(&d);

    d = examine(&h, "vibey.y.dead", suffix, bytes(""));
    assert_string_equal(d.origin_queue, "vibey.y");
    rp_dead_letter_cleanup(&d);
    d = examine(&h, "plain", suffix, bytes("")); /* no match: whole name */
    assert_string_equal(d.origin_queue, "plain");
    rp_dead_letter_cleanup(&d);
    d = examine(&h, ".dlq", suffix, bytes("")); /* the cut would leave nothing */
    assert_string_equal(d.origin_queue, ".dlq");
    rp_dead_letter_cleanup(&d);
    d = examine(&h, "vibey.x.dlq", NULL, bytes("")); /* no pattern: whole name */
    assert_string_equal(d.origin_queue, "vibey.x.dlq");
    rp_dead_letter_cleanup(&d);
    pcre2_code *prefix = compile("^dlq\\.");
    d = examine(&h, "dlq.vibey.z", prefix, bytes(""));
    assert_string_equal(d.origin_queue, "vibey.z");
    rp_dead_letter_cleanup(&d);
    pcre2_code_free(prefix);
    pcre2_code_free(suffix);
}

static void test_oldest_entry_and_first_death(void **state) {
    (void)state;
    /* The broker keeps the newest entry first. */
    rp_xdeath e[3] = {
        {.queue = str("c"), .reason = str("expired"), .time = i64(300)},
        {.queue = str("a"), .reason = str("rejected"), .time = i64(100)},
        {.queue = str("b"), .reason = str("maxlen"), .time = i64(200)},
    };
    rp_dl_headers h = {.x_death = e, .n_x_death = 3};
    rp_dead_letter d = examine(&h, "q.dlq", NULL, bytes("x"));
    assert_string_equal(d.origin_queue, "a");
    assert_string_equal(d.reason, "rejected");
    assert_int_equal(d.reason_from, RP_DL_REASON_X_DEATH);
    assert_true(d.first_death_known);
    assert_int_equal(d.first_death_at, 100);
    rp_dead_letter_cleanup(&d);

    /* A tie goes to the later entry. */
    e[2].time = i64(100);
    assert_ptr_equal(rp_dl_oldest_entry(&h), &e[2]);
    /* Entries without a time are passed over while any entry has one... */
    e[1].time.present = false;
    e[2].time.present = false;
    assert_ptr_equal(rp_dl_oldest_entry(&h), &e[0]);
    /* ...and only when none has one is the last entry the oldest, with the
     * first death unknown. */
    e[0].time.present = false;
    assert_ptr_equal(rp_dl_oldest_entry(&h), &e[2]);
    d = examine(&h, "q.dlq", NULL, bytes("x"));
    assert_string_equal(d.origin_queue, "b");
    assert_false(d.first_death_known);
    rp_dead_letter_cleanup(&d);
    rp_dl_headers none = {0};
    assert_null(rp_dl_oldest_entry(&none));
}

static void test_reason_rules(void **state) {
    (void)state;
    rp_xdeath e = {.queue = str("a"), .reason = str("expired"), .time = i64(5)};
    rp_dl_headers h = {.first_death_reason = str("rejected"), .x_death = &e, .n_x_death = 1};
    rp_dead_letter d = examine(&h, "q.dlq", NULL, bytes(""));
    assert_string_equal(d.reason, "rejected");
    assert_int_equal(d.reason_from, RP_DL_REASON_FIRST_DEATH_HEADER);
    rp_dead_letter_cleanup(&d);
    h.first_death_reason = str("");
    d = examine(&h, "q.dlq", NULL, bytes(""));
    assert_string_equal(d.reason, "expired");
    rp_dead_letter_cleanup(&d);
    e.reason.present = false;
    d = examine(&h, "q.dlq", NULL, bytes(""));
    assert_string_equal(d.reason, "unknown");
    assert_int_equal(d.reason_from, RP_DL_REASON_UNKNOWN);
    rp_dead_letter_cleanup(&d);
}

static void test_hostile_headers_all_absent(void **state) {
    (void)state;
    pcre2_code *suffix = compile("(\\.dlq|\\.dead)$");
    /* Every header of the wrong type: the adapter models each as absent. */
    rp_xdeath broken[2];
    memset(broken, 0, sizeof broken);
    rp_dl_headers h = {.x_death = broken, .n_x_death = 2};
    rp_dead_letter d = examine(&h, "vibey.x.dlq", suffix, bytes("hello"));
    assert_string_equal(d.origin_queue, "vibey.x");
    assert_string_equal(d.reason, "unknown");
    assert_false(d.first_death_known);
    /* Same digest as origin vibey.x, unknown time, body hello. */
    assert_string_equal(d.identity, IDENT_HELLO_UNKNOWN);
    rp_dead_letter_cleanup(&d);
    pcre2_code_free(suffix);
    /* Malformed models are refused, not read. */
    rp_dl_headers bad = {.n_x_death = 3};
    assert_int_equal(rp_dead_letter_examine(&bad, "/", "q", NULL, bytes(""), &d), RP_ERR_INVALID);
    rp_dead_letter_cleanup(&d);
    assert_int_equal(rp_dead_letter_examine(NULL, "/", "q", NULL, bytes(""), &d), RP_ERR_INVALID);
    rp_dead_letter_cleanup(&d);
    assert_int_equal(rp_dead_letter_examine(&h, "/", NULL, NULL, bytes(""), &d), RP_ERR_INVALID);
    rp_dead_letter_cleanup(&d);
    assert_int_equal(rp_dead_letter_examine(&h, NULL, "q", NULL, bytes(""), &d), RP_ERR_INVALID);
    rp_dead_letter_cleanup(&d);
    assert_int_equal(rp_dead_letter_examine(&h, "/", "q", NULL, (rp_bytes){NULL, 4}, &d),
                     RP_ERR_INVALID);
    rp_dead_letter_cleanup(&d);
}

static void test_hostile_huge_values(void **state) {
    (void)state;
    size_t n = 1u << 20; /* a 1 MiB queue name with NULs in it */
    uint8_t *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++) big[i] = (uint8_t)(i % 7 == 0 ? 0 : 'q');
    rp_dl_headers h = {.first_death_queue = {true, {big, n}},
                       .first_death_reason = {true, {big, n}}};
    rp_dead_letter d = examine(&h, "q.dlq", NULL, (rp_bytes){big, n});
    assert_int_equal(d.origin_queue_len, n);
    assert_int_equal(d.reason_len, n);
    assert_memory_equal(d.origin_queue, big, n);
    assert_int_equal(d.origin_queue[n], '\0');
    assert_int_equal(strlen(d.identity), RP_DL_DIGEST_IDENTITY_LEN + strlen("%2F/"));
    rp_dead_letter_cleanup(&d);
    free(big);
}

static void test_hostile_ten_thousand_entries(void **state) {
    (void)state;
    size_t n = 10000;
    rp_xdeath *e = calloc(n, sizeof *e);
    assert_non_null(e);
    for (size_t i = 0; i < n; i++) {
        e[i].queue = str("newer");
        e[i].reason = str("expired");
        e[i].count = i64((int64_t)i);
        /* Every third entry has no time; times otherwise go down the array
         * and one entry in the middle is the oldest of all. */
        if (i % 3 != 0) e[i].time = i64(2000000000 - (int64_t)(i % 1000));
    }
    e[5000].time = i64(-7);
    e[5000].queue = str("oldest");
    rp_dl_headers h = {.x_death = e, .n_x_death = n};
    rp_dead_letter d = examine(&h, "q.dlq", NULL, bytes("b"));
    assert_string_equal(d.origin_queue, "oldest");
    assert_true(d.first_death_known);
    assert_int_equal(d.first_death_at, -7);
    rp_dead_letter_cleanup(&d);
    free(e);
}

static void test_render_time_is_canonical(void **state) {
    (void)state;
    char buf[RP_DL_TIME_BUF];
    assert_int_equal(rp_dl_render_time(true, 1700000000, buf), 10);
    assert_string_equal(buf, "1700000000");
    rp_dl_render_time(true, 0, buf);
    assert_string_equal(buf, "0");
    rp_dl_render_time(true, -5, buf);
    assert_string_equal(buf, "-5");
    rp_dl_render_time(true, INT64_MIN, buf);
    assert_string_equal(buf, "-9223372036854775808");
    assert_int_equal(rp_dl_render_time(false, 1700000000, buf), 0);
    assert_string_equal(buf, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_by_message_id),
        cmocka_unit_test(test_identity_by_digest_known_vector),
        cmocka_unit_test(test_empty_or_unusable_message_id_falls_back_to_digest),
        cmocka_unit_test(test_digest_ignores_reason_and_dead_letter_queue),
        cmocka_unit_test(test_digest_depends_on_origin_time_and_body),
        cmocka_unit_test(test_origin_rules),
        cmocka_unit_test(test_oldest_entry_and_first_death),
        cmocka_unit_test(test_reason_rules),
        cmocka_unit_test(test_hostile_headers_all_absent),
        cmocka_unit_test(test_hostile_huge_values),
        cmocka_unit_test(test_hostile_ten_thousand_entries),
        cmocka_unit_test(test_render_time_is_canonical),
        cmocka_unit_test(test_identity_names_vhost_and_origin),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_death),
    };
    return cmocka_run_group_tests_name("deadletter", tests, NULL, NULL);
}
