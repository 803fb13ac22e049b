/* The ledger payload of a verdict (adapters/postgres/rp_pg_payload.c): the
 * store encodes it itself, and the bytes stay what they were when the wire
 * codec made them (rp_proto_verdict_json, JSON_COMPACT). Pinned literally,
 * and compared with the codec over every condition, action and source and
 * over strings that are not UTF-8. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "rp_json_out.h"
#include "rp_pg_store_internal.h"
#include "rp_proto.h"

static char *proto_payload(const rp_verdict *v) {
    json_t *t = rp_proto_verdict_json(v);
    assert_non_null(t);
    char *s = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    assert_non_null(s);
    return s;
}

static void expect_payload(const rp_verdict *v, const char *want) {
    char *got = NULL;
    assert_int_equal(rp__pg_payload(v, &got), RP_OK);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_pinned(void **state) {
    (void)state;
    rp_verdict v = {.object = "job:42", .queue = "email.send", .project = "p1",
                    .condition = RP_COND_LEASE_EXPIRED, .measured = 912.5, .threshold = 300,
                    .unit = "seconds", .action = RP_ACTION_REQUEUED,
                    .source = RP_SOURCE_JOB_QUEUE, .detail = "lease expired \"twice\"\n",
                    .trusted = true};
    expect_payload(&v, "{\"object\":\"job:42\",\"queue\":\"email.send\",\"project\":\"p1\","
                       "\"condition\":\"LEASE_EXPIRED\",\"measured\":912.5,\"threshold\":300,"
                       "\"unit\":\"seconds\",\"action\":\"REQUEUED\",\"source\":\"job_queue\","
                       "\"detail\":\"lease expired \\\"twice\\\"\\n\",\"trusted\":true,"
                       "\"vhost\":null}");
    rp_verdict b = {.object = "queue:/:vibey.x", .condition = RP_COND_POISON, .measured = 3.0,
                    .threshold = 20, .action = RP_ACTION_SURFACED, .source = RP_SOURCE_BROKER,
                    .trusted = false};
    expect_payload(&b, "{\"object\":\"queue:/:vibey.x\",\"queue\":null,\"project\":null,"
                       "\"condition\":\"POISON\",\"measured\":3.0,\"threshold\":20,"
                       "\"unit\":null,\"action\":\"SURFACED\",\"source\":\"broker\","
                       "\"detail\":null,\"trusted\":false,\"vhost\":\"/\"}");
    /* Not finite: null. Bytes that are not UTF-8: U+FFFD each. */
    rp_verdict c = {.object = "dead_letter:\xff\xc3(", .condition = RP_COND_DEAD_LETTER,
                    .measured = NAN, .threshold = -1, .unit = "messages",
                    .action = RP_ACTION_NONE, .source = RP_SOURCE_BROKER,
                    .detail = "caf\xc3\xa9", .trusted = false};
    expect_payload(&c, "{\"object\":\"dead_letter:\xef\xbf\xbd\xef\xbf\xbd(\",\"queue\":null,"
                       "\"project\":null,\"condition\":\"DEAD_LETTER\",\"measured\":null,"
                       "\"threshold\":-1,\"unit\":\"messages\",\"action\":\"NONE\","
                       "\"source\":\"broker\",\"detail\":\"caf\xc3\xa9\",\"trusted\":false,"
                       "\"vhost\":null}");
}

static void test_same_as_the_codec(void **state) {
    (void)state;
    static const char *strings[] = {NULL, "", "vibey.orders", "\xed\xa0\x80 surrogate",
                                    "\xf4\x90\x80\x80 too high", "\xe0\x80\x80 overlong",
                                    "tab\there \x01 ctl", "\xf0\x9f\x90\x87 rabbit", "\xc3"};
    static const double measured[] = {0.0, 1.0 / 3.0, 1e300, -2.5, INFINITY, 7200.0};
    size_t n = sizeof strings / sizeof *strings, checked = 0;
    for (int c = 0; c < RP_COND_COUNT_; c++)
        for (int a = 0; a < RP_ACTION_COUNT_; a++)
            for (int s = 0; s < RP_SOURCE_COUNT_; s++) {
                size_t k = checked++;
                rp_verdict v = {.object = (char *)strings[k % n],
                                .queue = (char *)strings[(k + 1) % n],
                                .project = (char *)strings[(k + 2) % n],
                                .condition = (rp_condition)c,
                                .measured = measured[k % 6],
                                .threshold = (int64_t)k * 1000 - 5,
                                .unit = (char *)strings[(k + 3) % n],
                                .action = (rp_action)a,
                                .source = (rp_source)s,
                                .detail = (char *)strings[(k + 4) % n],
                                .trusted = (k % 2) == 0};
                char *want = proto_payload(&v), *got = NULL;
                assert_int_equal(rp__pg_payload(&v, &got), RP_OK);
                assert_string_equal(got, want);
                free(got);
                free(want);
            }
    assert_int_equal(checked, RP_COND_COUNT_ * RP_ACTION_COUNT_ * RP_SOURCE_COUNT_);
}

static void test_refused(void **state) {
    (void)state;
    char *out = (char *)"x";
    assert_int_equal(rp__pg_payload(NULL, &out), RP_ERR_INVALID);
    assert_null(out);
    rp_verdict v = {.object = "job:1", .condition = RP_COND_COUNT_};
    out = (char *)"x";
    assert_int_equal(rp__pg_payload(&v, &out), RP_ERR_INVALID);
    assert_null(out);
    v.condition = RP_COND_NONE;
    v.action = (rp_action)-1;
    assert_int_equal(rp__pg_payload(&v, &out), RP_ERR_INVALID);
    v.action = RP_ACTION_NONE;
    v.source = RP_SOURCE_COUNT_;
    assert_int_equal(rp__pg_payload(&v, &out), RP_ERR_INVALID);
}

/* Issue 21: the park appends every payload of a transaction to one writer:
 * each is the same text rp__pg_payload makes, one after the other; a
 * refused verdict appends nothing. */
static void test_appended(void **state) {
    (void)state;
    rp_verdict a = {.object = "dead_letter:sha256:%2F/ab", .queue = "orders.dlq",
                    .condition = RP_COND_DEAD_LETTER, .action = RP_ACTION_PARKED,
                    .source = RP_SOURCE_BROKER, .measured = 1, .threshold = 1,
                    .unit = "messages", .detail = "caf\xc3\xa9 \"q\" \x01"};
    rp_verdict b = a, bad = a;
    b.detail = "not \xff UTF-8";
    bad.condition = RP_COND_COUNT_;
    char *ta = NULL, *tb = NULL;
    assert_int_equal(rp__pg_payload(&a, &ta), RP_OK);
    assert_int_equal(rp__pg_payload(&b, &tb), RP_OK);
    rp_jout w;
    rp_jout_init(&w);
    assert_int_equal(rp__pg_payload_to(&w, &a), RP_OK);
    size_t first = w.len;
    assert_int_equal(rp__pg_payload_to(&w, &bad), RP_ERR_INVALID);
    assert_int_equal(w.len, first);
    assert_int_equal(rp__pg_payload_to(&w, &b), RP_OK);
    assert_int_equal(first, strlen(ta));
    assert_int_equal(w.len, strlen(ta) + strlen(tb));
    assert_memory_equal(w.buf, ta, strlen(ta));
    assert_memory_equal(w.buf + first, tb, strlen(tb));
    rp_jout_free(&w);
    free(ta);
    free(tb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_same_as_the_codec),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_appended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
