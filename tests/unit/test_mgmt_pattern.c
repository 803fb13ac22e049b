/* The policy pattern (rp_pass_policy_pattern): the joined pattern selects
 * exactly the names the owned pattern matches and the dead-letter pattern
 * does not, matched the way reaper's own PCRE2 matching does, for the
 * default patterns and for shapes an operator may write; and the joins that
 * cannot be made safely are refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "rp_mgmt_policy.h"
#include "rp_pass_policy.h"

static pcre2_code *compile(const char *p) {
    int code = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    if (re == NULL) fprintf(stderr, "does not compile: %s\n", p);
    assert_non_null(re);
    return re;
}

static bool matches(const pcre2_code *re, const char *s, size_t len) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    assert_true(rc >= 0 || rc == PCRE2_ERROR_NOMATCH);
    return rc >= 0;
}

/* Names that probe anchors, suffixes, case, newlines and near misses. */
static const char *const names[] = {
    "vibey.orders",       "vibey.orders.dlq",   "vibey.orders.dead",  "vibey.orders.dlq.x",
    "vibey.dlq",          "vibey.",             "vibey",              "x.vibey.orders",
    "VIBEY.orders",       "Vibey.Orders.DLQ",   "celery",             "amq.gen-x",
    "amq.rabbitmq.reply-to", "jobs.mail",       "jobs.mail.dlq",      "dlq.vibey.orders",
    "dlq.jobs.x",         "orders",             "orders.dlq",         "my.orders.v2",
    "",                   "vibey.a\n",          "vibey.a.dlq\n",      "a\nvibey.b",
    "vibey.a\n.dlq",      "vibey.\xc3\xa9t\xc3\xa9", "vibey.x.deadline", "vibey.x.dlqx",
};

/* For every name: the joined pattern matches iff owned does and the
 * dead-letter pattern does not. */
static void assert_selects_exactly(const char *owned, const char *dlq) {
    char *joined = NULL;
    char err[300] = "";
    rp_status st = rp_pass_policy_pattern(owned, dlq, &joined, err, sizeof err);
    if (st != RP_OK) fprintf(stderr, "refused %s / %s: %s\n", owned, dlq, err);
    assert_int_equal(st, RP_OK);
    assert_non_null(joined);
    pcre2_code *j = compile(joined), *o = compile(owned), *d = compile(dlq);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = strlen(names[i]);
        bool want = matches(o, names[i], len) && !matches(d, names[i], len);
        bool got = matches(j, names[i], len);
        if (want != got)
            fprintf(stderr, "owned %s dlq %s joined %s name '%s': want %d got %d\n", owned, dlq,
                    joined, names[i], want, got);
        assert_int_equal(got, want);
    }
    pcre2_code_free(j);
    pcre2_code_free(o);
    pcre2_code_free(d);
    free(joined);
}

static void test_default_patterns(void **state) {
    (void)state;
    char *joined = NULL;
    char err[200];
    assert_int_equal(rp_pass_policy_pattern("^vibey\\.", "(\\.dlq|\\.dead)$", &joined, err, sizeof err),
                     RP_OK);
    /* The exact text the broker gets (3.10.8 accepted it: 201). */
    assert_string_equal(joined, "^(?!(?s:.*?)(?:(\\.dlq|\\.dead)$))(?=(?s:.*?)(?:^vibey\\.))");
    free(joined);
    assert_selects_exactly("^vibey\\.", "(\\.dlq|\\.dead)$");
}

static void test_operator_shapes(void **state) {
    (void)state;
    /* Top-level alternation stays inside its group. */
    assert_selects_exactly("^vibey\\.|^jobs\\.", "\\.dlq$|\\.dead$");
    /* Inline options stay inside their group. */
    assert_selects_exactly("(?i)^vibey\\.", "\\.dlq$");
    assert_selects_exactly("^vibey\\.", "(?i)\\.dlq$");
    /* Unanchored, and a prefix-style dead-letter pattern. */
    assert_selects_exactly("orders", "^dlq\\.");
    assert_selects_exactly("^(?:vibey|jobs)\\.", "^dlq\\.|\\.dlq$");
    /* Named groups and a named back-reference are fine. */
    assert_selects_exactly("^(?<p>vibey)\\.", "(?<s>\\.dlq)$");
    assert_selects_exactly("^(?<w>[a-z])\\k<w>", "\\.dlq$");
    /* Option settings that look like calls are not calls. */
    assert_selects_exactly("(?-i)^vibey\\.", "(?i-x)\\.dlq$");
    /* A dead-letter pattern with its own numbered back-reference keeps its
     * numbers (it comes first). */
    assert_selects_exactly("^vibey\\.", "(\\.d)\\1?lq$");
    /* An owned back-reference is fine while the dead-letter pattern has no
     * groups to shift it. */
    assert_selects_exactly("^(v)ibey\\.\\1?", "\\.dlq$");
}

static void assert_refused(const char *owned, const char *dlq, const char *needle) {
    char *joined = (char *)1;
    char err[300] = "";
    assert_int_equal(rp_pass_policy_pattern(owned, dlq, &joined, err, sizeof err), RP_ERR_INVALID);
    assert_null(joined);
    if (strstr(err, needle) == NULL) fprintf(stderr, "reason: %s\n", err);
    assert_non_null(strstr(err, needle));
}

static void test_refused_joins(void **state) {
    (void)state;
    assert_refused("", "\\.dlq$", "must not be empty");
    assert_refused("^vibey\\.", "", "must not be empty");
    assert_refused("^vibey(", "\\.dlq$", "reap.owned_queue_pattern does not compile");
    assert_refused("^vibey\\.", "[", "reap.dead_letter_queue_pattern does not compile");
    /* Numbers that would shift. */
    assert_refused("^(v)ibey\\.\\1", "(\\.dlq)$", "numbered back-reference");
    assert_refused("^(v)(?1)ibey", "\\.dlq$", "subroutine");
    assert_refused("^(v)\\g<1>", "\\.dlq$", "subroutine");
    assert_refused("^vibey(?R)?", "\\.dlq$", "subroutine");
    assert_refused("^vibey", "(\\.dlq)(?-1)?$", "subroutine");
    /* A comment that would swallow the join. */
    assert_refused("(?x)^vibey # owned", "\\.dlq$", "");
    char *joined = NULL;
    assert_int_equal(rp_pass_policy_pattern(NULL, "x", &joined, NULL, 0), RP_ERR_INVALID);
    assert_int_equal(rp_pass_policy_pattern("x", "y", NULL, NULL, 0), RP_ERR_INVALID);
}

/* Reaper's own queues, by exact name: never selected, whatever the owned
 * pattern says; a near miss (a dot that is not a dot, a longer name, a
 * trailing newline) still is; the dead-letter exclusion stays. */
static void test_own_queues_excluded(void **state) {
    (void)state;
    const char *own[] = {"vibey.reap.control", NULL, "", "vibey.reap.tap", "vibey.a+(b)|c\\E$"};
    char *joined = NULL;
    char err[300] = "";
    assert_int_equal(rp_pass_policy_pattern_excluding("^vibey\\.", "(\\.dlq|\\.dead)$", own, 5,
                                                      &joined, err, sizeof err),
                     RP_OK);
    assert_string_equal(joined, "^(?!(?:vibey\\.reap\\.control|vibey\\.reap\\.tap|"
                                "vibey\\.a\\+\\(b\\)\\|c\\\\E\\$)\\z)"
                                "(?!(?s:.*?)(?:(\\.dlq|\\.dead)$))(?=(?s:.*?)(?:^vibey\\.))");
    pcre2_code *j = compile(joined);
    static const struct {
        const char *name;
        bool selected;
    } cases[] = {
        {"vibey.reap.control", false}, {"vibey.reap.tap", false},   {"vibey.a+(b)|c\\E$", false},
        {"vibey.reap.tap2", true},     {"vibey.reap.tap\n", true}, {"vibeyXreapXtap", false},
        {"vibey.reapXtap", true},      {"vibey.reap.ta", true},     {"vibey.a", true},
        {"vibey.reap.tap.dlq", false}, {"vibey.orders", true},      {"celery", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool got = matches(j, cases[i].name, strlen(cases[i].name));
        if (got != cases[i].selected) fprintf(stderr, "'%s': got %d\n", cases[i].name, got);
        assert_int_equal(got, cases[i].selected);
    }
    pcre2_code_free(j);
    free(joined);
    /* Nothing to exclude: the plain join. */
    assert_int_equal(rp_pass_policy_pattern_excluding("^vibey\\.", "(\\.dlq|\\.dead)$", NULL, 0,
                                                      &joined, err, sizeof err),
                     RP_OK);
    assert_string_equal(joined, "^(?!(?s:.*?)(?:(\\.dlq|\\.dead)$))(?=(?s:.*?)(?:^vibey\\.))");
    free(joined);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_patterns),
        cmocka_unit_test(test_operator_shapes),
        cmocka_unit_test(test_refused_joins),
        cmocka_unit_test(test_own_queues_excluded),
    };
    return cmocka_run_group_tests_name("mgmt_pattern", tests, NULL, NULL);
}
