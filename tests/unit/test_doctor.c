/* doctor's verdicts (core/rp_doctor.h): each check's ok, warn and fail, the
 * layer a failure names, the exit code, the JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rp_doctor.h"

static void healthy(rp_doctor_facts *f) {
    rp_doctor_facts_init(f);
    f->broker_url = "amqp://reaper@h:5672/%2f";
    f->management_url = "http://h:15672";
    f->user = "reaper";
    f->vhost = "/";
    f->schema = "reaper";
    f->tap_queue = "vibey.reap.tap";
    f->amqp = f->mgmt = f->event_exchange_read = f->whoami = f->policies_read = RP_REACH_OK;
    f->broker_version = "4.0.5";
    f->version_major = 4;
    f->version_minor = 0;
    f->event_exchange_present = true;
    f->tags = "management,policymaker,monitoring";
    f->policies_present = "other,vibey-reap,vibey-reap-classic";
    f->timeout_read = RP_REACH_OK;
    f->timeout_state = RP_WIDE_TIMEOUT_VALUE;
    f->consumer_timeout_seconds = 1800;
    f->timeout_ms = 1800000;
    f->tap_read = RP_REACH_OK;
    f->tap_owned = 3;
    f->tap_with_dlx = 2;
    f->tap_wanted = 2;
    f->store = f->schema_read = RP_REACH_OK;
    f->schema_version = f->schema_known = 7;
    rp_doctor_open *o[] = {&f->stalled, &f->waiting_depth, &f->wedged,
                           &f->divergent, &f->remainders, &f->gates};
    for (size_t i = 0; i < 6; i++) o[i]->read = RP_REACH_OK;
}

static rp_doctor_report judge(const rp_doctor_facts *f) {
    rp_doctor_report r;
    assert_int_equal(rp_doctor_judge(f, &r), RP_OK);
    return r;
}

static void check(const rp_doctor_report *r, int id, rp_doctor_status st, const char *needle) {
    if (r->checks[id].status != st)
        fail_msg("%s: %s, wanted %s: %s", rp_doctor_check_name(r->checks[id].id),
                 rp_doctor_status_string(r->checks[id].status), rp_doctor_status_string(st),
                 r->checks[id].detail);
    if (needle != NULL && strstr(r->checks[id].detail, needle) == NULL)
        fail_msg("%s: '%s' lacks '%s'", rp_doctor_check_name(r->checks[id].id),
                 r->checks[id].detail, needle);
}
#define CHECK(r, id, st, needle) check(&(r), (id), (st), (needle))

static void test_all_ok(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    rp_doctor_report r = judge(&f);
    for (size_t i = 0; i < RP_DOC_COUNT_; i++) {
        if (r.checks[i].status != RP_DOCTOR_OK)
            fail_msg("%s: %s", rp_doctor_check_name(r.checks[i].id), r.checks[i].detail);
        assert_string_equal(r.checks[i].fix, "");
    }
    CHECK(r, RP_DOC_WEDGED_QUEUE, RP_DOCTOR_OK, "no WEDGED sighting is open");
    CHECK(r, RP_DOC_DIVERGENT_QUEUE, RP_DOCTOR_OK, "no DIVERGENT sighting is open");
    assert_int_equal(r.n_fail, 0);
    assert_int_equal(r.n_warn, 0);
    assert_int_equal(rp_doctor_exit_code(&r), 0);
    rp_doctor_report_cleanup(&r);
}

static void test_broker_layers(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.amqp = RP_REACH_AUTH;
    f.amqp_why = "broker login: 403 ACCESS_REFUSED.";
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_BROKER_CONNECTION, RP_DOCTOR_FAIL, "refused the login of reaper");
    assert_non_null(strstr(r.checks[0].fix, "REAPER_BROKER_PASSWORD"));
    /* A quoted reason's own full stop is not doubled. */
    assert_null(strstr(r.checks[0].detail, ".."));
    assert_int_equal(rp_doctor_exit_code(&r), 1);
    rp_doctor_report_cleanup(&r);
    f.amqp = RP_REACH_REFUSED;
    r = judge(&f);
    CHECK(r, RP_DOC_BROKER_CONNECTION, RP_DOCTOR_FAIL, "connection refused");
    rp_doctor_report_cleanup(&r);
    /* The management API down: its dependants warn, they do not fail. */
    healthy(&f);
    f.mgmt = RP_REACH_UNREACHABLE;
    f.mgmt_why = "no route";
    f.event_exchange_read = f.whoami = f.policies_read = f.timeout_read = f.tap_read =
        RP_REACH_NOT_TRIED;
    r = judge(&f);
    CHECK(r, RP_DOC_MANAGEMENT_API, RP_DOCTOR_FAIL, "does not answer");
    for (int i = RP_DOC_EVENT_EXCHANGE; i <= RP_DOC_TAP_BINDINGS; i++)
        CHECK(r, i, RP_DOCTOR_WARN, "not checked");
    assert_int_equal(r.n_fail, 1);
    rp_doctor_report_cleanup(&r);
    healthy(&f);
    f.mgmt = RP_REACH_FORBIDDEN;
    r = judge(&f);
    CHECK(r, RP_DOC_MANAGEMENT_API, RP_DOCTOR_FAIL, "no management tag");
    assert_non_null(strstr(r.checks[RP_DOC_MANAGEMENT_API].fix, "set_user_tags reaper"));
    rp_doctor_report_cleanup(&r);
}

static void test_broker_setup(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.event_exchange_present = false;
    f.tags = "management";
    f.policies_present = "vibey-reap";
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_EVENT_EXCHANGE, RP_DOCTOR_FAIL, "does not exist in vhost /");
    assert_string_equal(r.checks[RP_DOC_EVENT_EXCHANGE].fix,
                        "rabbitmq-plugins enable rabbitmq_event_exchange");
    CHECK(r, RP_DOC_PERMISSIONS, RP_DOCTOR_FAIL, "but not policymaker");
    assert_string_equal(r.checks[RP_DOC_PERMISSIONS].fix,
                        "rabbitmqctl set_user_tags reaper management policymaker monitoring");
    /* 4.0 wants the classic policy too. */
    CHECK(r, RP_DOC_POLICIES, RP_DOCTOR_WARN, "vibey-reap-classic is not in place");
    rp_doctor_report_cleanup(&r);
    /* 3.10: vibey-reap alone is all; administrator stands for policymaker;
     * "policymakers" is not "policymaker". */
    f.version_major = 3;
    f.version_minor = 10;
    f.tags = "administrator";
    r = judge(&f);
    CHECK(r, RP_DOC_POLICIES, RP_DOCTOR_OK, "vibey-reap is in place");
    CHECK(r, RP_DOC_PERMISSIONS, RP_DOCTOR_OK, "administrator");
    rp_doctor_report_cleanup(&r);
    f.tags = "policymakers,management";
    f.policies_present = "";
    r = judge(&f);
    CHECK(r, RP_DOC_PERMISSIONS, RP_DOCTOR_FAIL, NULL);
    rp_doctor_report_cleanup(&r);
    /* policymaker without monitoring: its own channels only (broker
     * STALLED not judged): a warning with the tags to give. */
    f.tags = "management,policymaker";
    r = judge(&f);
    CHECK(r, RP_DOC_PERMISSIONS, RP_DOCTOR_WARN, "but not monitoring");
    assert_string_equal(r.checks[RP_DOC_PERMISSIONS].fix,
                        "rabbitmqctl set_user_tags reaper management policymaker monitoring");
    CHECK(r, RP_DOC_POLICIES, RP_DOCTOR_WARN, "vibey-reap is not in place");
    rp_doctor_report_cleanup(&r);
    /* Reading refused: the check fails with the permissions to give. */
    f.policies_read = RP_REACH_FORBIDDEN;
    r = judge(&f);
    CHECK(r, RP_DOC_POLICIES, RP_DOCTOR_FAIL, "cannot read the policies");
    rp_doctor_report_cleanup(&r);
}

static void test_consumer_timeout_boundaries(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.timeout_ms = 1800000; /* at */
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_CONSUMER_TIMEOUT, RP_DOCTOR_OK, "1800000 ms");
    rp_doctor_report_cleanup(&r);
    f.timeout_ms = 1799999; /* below */
    r = judge(&f);
    CHECK(r, RP_DOC_CONSUMER_TIMEOUT, RP_DOCTOR_OK, NULL);
    rp_doctor_report_cleanup(&r);
    f.timeout_ms = 1800001; /* above */
    r = judge(&f);
    CHECK(r, RP_DOC_CONSUMER_TIMEOUT, RP_DOCTOR_WARN, "longer than");
    rp_doctor_report_cleanup(&r);
    f.timeout_state = RP_WIDE_TIMEOUT_OFF;
    r = judge(&f);
    CHECK(r, RP_DOC_CONSUMER_TIMEOUT, RP_DOCTOR_WARN, "no broker-wide");
    rp_doctor_report_cleanup(&r);
    f.timeout_state = RP_WIDE_TIMEOUT_UNREADABLE;
    r = judge(&f);
    CHECK(r, RP_DOC_CONSUMER_TIMEOUT, RP_DOCTOR_WARN, "cannot be read");
    rp_doctor_report_cleanup(&r);
}

static void test_tap(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.tap_missing = true;
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_FAIL, "does not exist");
    rp_doctor_report_cleanup(&r);
    /* Nothing to tap yet: a warning. */
    f.tap_wanted = 0;
    r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN, "nothing is missed");
    rp_doctor_report_cleanup(&r);
    f.tap_wanted = 2;
    f.tap_missing = false;
    f.tap_absent = 1;
    r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_FAIL, "1 of the 2 bindings");
    rp_doctor_report_cleanup(&r);
    f.tap_absent = 0;
    f.tap_unbindable = 1;
    r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN, "1 owned queue dead-letters through the default");
    /* Counted, not named, when the probe named none. */
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN, "cannot be tapped; the other 2 bindings");
    rp_doctor_report_cleanup(&r);
}

/* The untappable queues are named (issue #18 item 6: "untappable ones
 * named"), quoted and escaped as untrusted, the first RP_DOCTOR_TAP_NAMED
 * of them, the rest counted. */
static void test_tap_names_untappable(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.tap_unbindable = 1;
    f.tap_unbindable_names[0] = "vibey.plain";
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN,
          "1 owned queue dead-letters through the default exchange, which cannot be tapped: "
          "\"vibey.plain\"; the other 2 bindings of the tap queue vibey.reap.tap are in place.");
    rp_doctor_report_cleanup(&r);
    /* Every one named when there are at most RP_DOCTOR_TAP_NAMED. */
    f.tap_unbindable = 3;
    f.tap_unbindable_names[1] = "vibey.b";
    f.tap_unbindable_names[2] = "vibey.c";
    r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN,
          "3 owned queues dead-letter through the default exchange, which cannot be tapped: "
          "\"vibey.plain\", \"vibey.b\", \"vibey.c\"; the other");
    rp_doctor_report_cleanup(&r);
    /* More than that: the rest counted. */
    f.tap_unbindable = 7;
    r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN,
          "\"vibey.plain\", \"vibey.b\", \"vibey.c\" and 4 more; the other");
    rp_doctor_report_cleanup(&r);
    /* A name the broker holds is untrusted: a line feed or an escape
     * cannot break the line (nor the JSON). */
    f.tap_unbindable = 1;
    f.tap_unbindable_names[0] = "vibey.x\n\x1b[2J";
    r = judge(&f);
    CHECK(r, RP_DOC_TAP_BINDINGS, RP_DOCTOR_WARN, "\"vibey.x\\n\\u001B[2J\"");
    assert_null(strchr(r.checks[RP_DOC_TAP_BINDINGS].detail, '\n'));
    assert_null(strchr(r.checks[RP_DOC_TAP_BINDINGS].detail, '\x1b'));
    rp_doctor_report_cleanup(&r);
}

static void test_store_layers(void **state) {
    (void)state;
    rp_doctor_facts f;
    static const struct {
        rp_doctor_reach reach;
        const char *layer;
    } cases[] = {{RP_REACH_UNREACHABLE, "layer: unreachable"},
                 {RP_REACH_REFUSED, "layer: refused"},
                 {RP_REACH_AUTH, "layer: authentication"}};
    for (size_t i = 0; i < 3; i++) {
        healthy(&f);
        f.store = cases[i].reach;
        f.store_why = "x";
        f.schema_read = RP_REACH_NOT_TRIED;
        f.stalled.read = f.waiting_depth.read = f.remainders.read = f.gates.read =
            RP_REACH_NOT_TRIED;
        rp_doctor_report r = judge(&f);
        CHECK(r, RP_DOC_STORE_CONNECTION, RP_DOCTOR_FAIL, cases[i].layer);
        CHECK(r, RP_DOC_SCHEMA_VERSION, RP_DOCTOR_WARN, "not checked");
        CHECK(r, RP_DOC_QUEUE_HEALTH, RP_DOCTOR_WARN, "not checked");
        CHECK(r, RP_DOC_DEAD_LETTER_BACKLOG, RP_DOCTOR_WARN, "not checked");
        assert_int_equal(r.n_fail, 1);
        rp_doctor_report_cleanup(&r);
    }
    /* The schema layer, and the version on each side of this binary's. */
    healthy(&f);
    f.schema_version = 0;
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_STORE_CONNECTION, RP_DOCTOR_FAIL, "layer: schema");
    CHECK(r, RP_DOC_SCHEMA_VERSION, RP_DOCTOR_FAIL, "migration 0 of this reaperd's 7");
    rp_doctor_report_cleanup(&r);
    f.schema_version = 6;
    r = judge(&f);
    CHECK(r, RP_DOC_STORE_CONNECTION, RP_DOCTOR_OK, NULL);
    CHECK(r, RP_DOC_SCHEMA_VERSION, RP_DOCTOR_FAIL, "migration 6 of this reaperd's 7");
    assert_string_equal(r.checks[RP_DOC_SCHEMA_VERSION].fix, "reaperd --migrate");
    rp_doctor_report_cleanup(&r);
    f.schema_version = 8;
    r = judge(&f);
    CHECK(r, RP_DOC_SCHEMA_VERSION, RP_DOCTOR_FAIL, "newer than");
    rp_doctor_report_cleanup(&r);
}

static void test_open_findings(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.waiting_depth.n = 2;
    f.waiting_depth.oldest_age_s = 59;
    f.waiting_depth.example = "WAITING_DEPTH/p/k";
    f.gates.n = 1;
    f.gates.oldest_age_s = 3600;
    f.remainders.n = 1;
    f.remainders.oldest_age_s = 86400;
    f.remainders.example = "POISON/x";
    rp_doctor_report r = judge(&f);
    CHECK(r, RP_DOC_QUEUE_HEALTH, RP_DOCTOR_WARN, "0 STALLED and 2 WAITING_DEPTH sightings are open");
    CHECK(r, RP_DOC_QUEUE_HEALTH, RP_DOCTOR_WARN, "(open 59 s)");
    CHECK(r, RP_DOC_DEAD_LETTER_BACKLOG, RP_DOCTOR_WARN, "1 gate is open");
    CHECK(r, RP_DOC_DEAD_LETTER_BACKLOG, RP_DOCTOR_WARN, "the oldest 1 h old");
    CHECK(r, RP_DOC_REMAINDERS, RP_DOCTOR_WARN, "POISON/x (the oldest open 1 d)");
    assert_int_equal(rp_doctor_exit_code(&r), 0);
    rp_doctor_report_cleanup(&r);
    /* A read that failed on a usable store fails. */
    f.gates.read = RP_REACH_ERROR;
    f.store_why = "relation gate does not exist";
    r = judge(&f);
    CHECK(r, RP_DOC_DEAD_LETTER_BACKLOG, RP_DOCTOR_FAIL, "relation gate does not exist");
    rp_doctor_report_cleanup(&r);
}

static void test_json(void **state) {
    (void)state;
    rp_doctor_facts f;
    healthy(&f);
    f.amqp = RP_REACH_ERROR;
    f.amqp_why = "a \"quoted\"\\ reason\nwith a newline and \xff";
    rp_doctor_report r = judge(&f);
    char *js = NULL;
    assert_int_equal(rp_doctor_json(&r, &js), RP_OK);
    assert_non_null(strstr(js, "{\"ok\":false,\"fail\":1,"));
    assert_non_null(strstr(js, "{\"name\":\"divergent_queue\",\"status\":\"ok\",\"detail\":"));
    assert_non_null(strstr(js, "a \\\"quoted\\\"\\\\ reason\\u000awith a newline and \\ufffd"));
    free(js);
    char *text = NULL;
    assert_int_equal(rp_doctor_text(&r, &text), RP_OK);
    assert_non_null(strstr(text, "FAIL  broker_connection   cannot connect to"));
    assert_non_null(strstr(text, "13 ok, 0 warn, 1 fail\n"));
    free(text);
    rp_doctor_report_cleanup(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_ok),
        cmocka_unit_test(test_broker_layers),
        cmocka_unit_test(test_broker_setup),
        cmocka_unit_test(test_consumer_timeout_boundaries),
        cmocka_unit_test(test_tap),
        cmocka_unit_test(test_tap_names_untappable),
        cmocka_unit_test(test_store_layers),
        cmocka_unit_test(test_open_findings),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
