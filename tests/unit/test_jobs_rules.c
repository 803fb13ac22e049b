/* Job triage's rules (core/rp_jobs.c): which states a cancel takes, and the
 * sentences its refusals are given; the records' cleanups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rp_jobs_port.h"

static void test_only_ready_and_leased_cancel(void **state) {
    (void)state;
    bool want[RP_JOB_STATE_COUNT_] = {
        [RP_JOB_READY] = true,
        [RP_JOB_LEASED] = true,
        [RP_JOB_SUCCEEDED] = false,
        [RP_JOB_FAILED] = false,
        [RP_JOB_AWAITING_HUMAN] = false,
    };
    for (int s = 0; s < RP_JOB_STATE_COUNT_; s++)
        assert_int_equal(rp_job_cancellable((rp_job_state)s), want[s]);
    assert_false(rp_job_cancellable(RP_JOB_STATE_COUNT_));
    assert_false(rp_job_cancellable((rp_job_state)-1));
}

static void test_refusal_texts(void **state) {
    (void)state;
    char buf[200];
    rp_job_cancel_refusal(buf, sizeof buf, 42, RP_JOB_SUCCEEDED);
    assert_string_equal(buf, "job 42 is succeeded; only a ready or leased job can be cancelled");
    rp_job_cancel_refusal(buf, sizeof buf, 7, RP_JOB_AWAITING_HUMAN);
    assert_string_equal(buf, "job 7 is awaiting_human; only a ready or leased job can be cancelled "
                             "(answer its gate: reaperctl gates, reaperctl answer)");
    rp_job_cancel_refusal(buf, 10, 42, RP_JOB_FAILED); /* cut to fit, terminated */
    assert_int_equal(strlen(buf), 9);
    rp_job_not_found_text(buf, sizeof buf, 9223372036854775807);
    assert_string_equal(buf, "job 9223372036854775807 does not exist");
    assert_string_equal(rp_jobs_refusal(RP_ERR_UNAVAILABLE), "the store is unreachable");
    assert_non_null(rp_jobs_refusal(RP_ERR_INTERNAL));
}

static void test_cleanups_free_everything(void **state) {
    (void)state;
    rp_job_page p;
    rp_job_page_init(&p);
    rp_job_page_cleanup(&p); /* empty: nothing to free */
    p.jobs = calloc(2, sizeof *p.jobs);
    assert_non_null(p.jobs);
    p.n = 2;
    p.jobs[0].project = strdup("a");
    p.jobs[1].payload = strdup("{}");
    p.jobs[1].lease_owner = strdup("w");
    rp_job_page_cleanup(&p); /* the sanitizer build sees a leak if not */
    assert_null(p.jobs);
    assert_int_equal(p.n, 0);
    rp_job_cancel_result r;
    rp_job_cancel_result_init(&r);
    r.was_owner = strdup("w");
    r.job.kind = strdup("k");
    rp_job_cancel_result_cleanup(&r);
    assert_null(r.was_owner);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_ready_and_leased_cancel),
        cmocka_unit_test(test_refusal_texts),
        cmocka_unit_test(test_cleanups_free_everything),
    };
    return cmocka_run_group_tests_name("jobs_rules", tests, NULL, NULL);
}
