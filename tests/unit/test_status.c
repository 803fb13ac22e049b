/* The status, condition, action and source tables name every value, and the
 * report owns what it is given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rp_report.h"
#include "rp_status.h"
#include "rp_verdict.h"

static void test_every_status_has_a_distinct_name(void **state) {
    (void)state;
    for (int a = 0; a > RP_STATUS_MIN_; a--) {
        const char *na = rp_status_string((rp_status)a);
        assert_string_not_equal(na, "unknown_status");
        for (int b = a - 1; b > RP_STATUS_MIN_; b--)
            assert_string_not_equal(na, rp_status_string((rp_status)b));
    }
    assert_string_equal(rp_status_string(RP_STATUS_MIN_), "unknown_status");
    assert_string_equal(rp_status_string((rp_status)1), "unknown_status");
    /* The protocol's error codes are the status names. */
    assert_string_equal(rp_status_string(RP_ERR_BAD_REQUEST), "bad_request");
    assert_string_equal(rp_status_string(RP_ERR_UNKNOWN_OP), "unknown_op");
    assert_string_equal(rp_status_string(RP_ERR_FORBIDDEN), "forbidden");
    assert_string_equal(rp_status_string(RP_ERR_NOT_FOUND), "not_found");
    assert_string_equal(rp_status_string(RP_ERR_CONFLICT), "conflict");
    assert_string_equal(rp_status_string(RP_ERR_UNAVAILABLE), "unavailable");
    assert_string_equal(rp_status_string(RP_ERR_INTERNAL), "internal");
}

static void test_enum_names_round_trip(void **state) {
    (void)state;
    for (int c = 0; c < RP_COND_COUNT_; c++) {
        rp_condition back;
        assert_true(rp_condition_parse(rp_condition_string((rp_condition)c), &back));
        assert_int_equal(back, c);
    }
    for (int a = 0; a < RP_ACTION_COUNT_; a++) {
        rp_action back;
        assert_true(rp_action_parse(rp_action_string((rp_action)a), &back));
        assert_int_equal(back, a);
    }
    for (int s = 0; s < RP_SOURCE_COUNT_; s++) {
        rp_source back;
        assert_true(rp_source_parse(rp_source_string((rp_source)s), &back));
        assert_int_equal(back, s);
    }
    rp_condition c;
    assert_false(rp_condition_parse("hung_handler", &c));
    assert_false(rp_condition_parse(NULL, &c));
    assert_string_equal(rp_condition_string(RP_COND_COUNT_), "unknown");
    assert_string_equal(rp_condition_string(RP_COND_HOLDER_GONE), "HOLDER_GONE");
    assert_string_equal(rp_action_string(RP_ACTION_SURFACED), "SURFACED");
    assert_string_equal(rp_source_string(RP_SOURCE_BROKER), "broker");
}

static void test_report_takes_ownership(void **state) {
    (void)state;
    rp_report r;
    rp_report_init(&r, true);
    assert_true(r.ok);
    for (int i = 0; i < 100; i++) {
        rp_verdict v;
        rp_verdict_init(&v);
        assert_int_equal(rp_verdict_set_object(&v, "job:1"), RP_OK);
        assert_int_equal(rp_verdict_set_detail(&v, "d"), RP_OK);
        v.condition = RP_COND_STALE_READY;
        assert_int_equal(rp_report_add_verdict(&r, &v), RP_OK);
        assert_null(v.object); /* moved */
    }
    assert_int_equal(r.n_verdicts, 100);
    assert_string_equal(r.verdicts[99].object, "job:1");
    assert_int_equal(rp_report_add_note(&r, "quorum queues report no head age"), RP_OK);
    assert_true(r.ok);
    assert_int_equal(rp_report_add_unreadable(&r, "store"), RP_OK);
    assert_false(r.ok);
    assert_int_equal(rp_report_add_policy(&r, "vibey-reap", true, "in force"), RP_OK);
    assert_string_equal(r.policies[0].name, "vibey-reap");

    rp_verdict copy;
    assert_int_equal(rp_verdict_copy(&copy, &r.verdicts[3]), RP_OK);
    assert_string_equal(copy.object, "job:1");
    assert_ptr_not_equal(copy.object, r.verdicts[3].object);
    rp_verdict_cleanup(&copy);
    rp_report_cleanup(&r);
    assert_int_equal(r.n_verdicts, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_status_has_a_distinct_name),
        cmocka_unit_test(test_enum_names_round_trip),
        cmocka_unit_test(test_report_takes_ownership),
    };
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
