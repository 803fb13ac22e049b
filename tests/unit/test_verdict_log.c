/* A verdict's log line (app/report_text.h, rp_verdict_log): its fields,
 * and the verdict's vhost (issue 19 item 1) as `vhost` when its object
 * names one (a queue's, a dead letter's), absent when it names none (a
 * job's). Standard error is captured through a temporary file; the lines
 * are read in the JSON format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_text.h"
#include "rp_log.h"
#include "stderr_capture.h"

/* The one line rp_verdict_log writes for a verdict on object, as JSON. */
static json_t *logged(const char *object, rp_condition c, rp_action a) {
    rp_verdict v;
    rp_verdict_init(&v);
    v.source = RP_SOURCE_BROKER;
    v.condition = c;
    v.action = a;
    assert_int_equal(rp_verdict_set_object(&v, object), RP_OK);
    stderr_capture_start();
    rp_verdict_log(NULL, &v, false);
    char *text = stderr_capture_end();
    rp_verdict_cleanup(&v);
    size_t lines = 0;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 1);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    if (o == NULL) fail_msg("not JSON: %s", text);
    free(text);
    return o;
}

static const char *field(const json_t *o, const char *k) {
    return json_string_value(json_object_get(o, k));
}

static void test_vhost_in_the_line(void **state) {
    (void)state;
    rp_log_setup(RP_LOG_DEBUG, RP_LOG_FORMAT_JSON);
    /* A queue of vhost "tenant:b" (its ':' escaped in the object). */
    json_t *o = logged("queue:tenant%3Ab:orders", RP_COND_STALE_READY, RP_ACTION_SURFACED);
    assert_string_equal(field(o, "vhost"), "tenant:b");
    assert_string_equal(field(o, "object"), "queue:tenant%3Ab:orders");
    assert_string_equal(field(o, "condition"), "STALE_READY");
    assert_string_equal(field(o, "dry_run"), "false");
    json_decref(o);
    /* A dead letter of vhost "/". */
    o = logged("queue:/:vibey.dlq", RP_COND_DEAD_LETTER, RP_ACTION_PARKED);
    assert_string_equal(field(o, "vhost"), "/");
    json_decref(o);
    /* A job names no vhost: no vhost field, the others all there. */
    o = logged("job:42", RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED);
    assert_null(json_object_get(o, "vhost"));
    assert_non_null(json_object_get(o, "detail"));
    assert_string_equal(field(o, "object"), "job:42");
    json_decref(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vhost_in_the_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
