/* The log (adapters/log/rp_log.h): one line per event whatever a value
 * holds, in JSON (every line parses, with time, level, msg and the fields
 * in order) or text (level, quoted values with escapes), the level tested
 * before writing, and the format switched at run time (a reload). Standard
 * error is captured through a temporary file. */
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

#include "rp_log.h"
#include "stderr_capture.h"

static size_t count_lines(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_json_lines(void **state) {
    (void)state;
    rp_log_setup(RP_LOG_DEBUG, RP_LOG_FORMAT_JSON);
    stderr_capture_start();
    RP_INFO("pass finished", "queue", "vibey.a", "condition", "STALE_READY", NULL);
    RP_WARN("odd value", "detail", "two\nlines \"quoted\" \\ back", "gate", NULL, NULL);
    RP_DEBUG("bad utf-8", "queue", "\xff\xfe", NULL);
    char *out = stderr_capture_end();
    assert_int_equal(count_lines(out), 3);
    char *save = NULL;
    const char *want_msg[] = {"pass finished", "odd value", "bad utf-8"};
    const char *want_level[] = {"info", "warn", "debug"};
    int i = 0;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
        json_error_t err;
        json_t *j = json_loads(line, 0, &err);
        assert_non_null(j);
        /* time first, RFC 3339 UTC with milliseconds. */
        const char *t = json_string_value(json_object_get(j, "time"));
        assert_non_null(t);
        assert_int_equal(strlen(t), 24);
        assert_int_equal(t[23], 'Z');
        assert_true(strncmp(line, "{\"time\":", 8) == 0);
        assert_string_equal(json_string_value(json_object_get(j, "level")), want_level[i]);
        assert_string_equal(json_string_value(json_object_get(j, "msg")), want_msg[i]);
        if (i == 0) {
            assert_string_equal(json_string_value(json_object_get(j, "queue")), "vibey.a");
            assert_non_null(strstr(line, "\"queue\":\"vibey.a\",\"condition\":\"STALE_READY\""));
        }
        if (i == 1) {
            assert_string_equal(json_string_value(json_object_get(j, "detail")),
                                "two\nlines \"quoted\" \\ back");
            assert_true(json_is_null(json_object_get(j, "gate")));
        }
        if (i == 2)
            assert_string_equal(json_string_value(json_object_get(j, "queue")), "(invalid utf-8)");
        json_decref(j);
    }
    assert_int_equal(i, 3);
    free(out);
}

static void test_text_lines_and_levels(void **state) {
    (void)state;
    rp_log_setup(RP_LOG_INFO, RP_LOG_FORMAT_TEXT);
    assert_int_equal(rp_log_level_now(), RP_LOG_INFO);
    stderr_capture_start();
    RP_DEBUG("not shown", NULL);
    RP_INFO("gate answered", "gate", "12", "job", "34", NULL);
    RP_ERROR("broken", "reason", "a b\nc=\"d\"", "queue", NULL, NULL);
    char *out = stderr_capture_end();
    assert_int_equal(count_lines(out), 2);
    assert_null(strstr(out, "not shown"));
    assert_non_null(strstr(out, " info  \"gate answered\" gate=12 job=34\n"));
    assert_non_null(strstr(out, " error broken reason=\"a b\\x0ac=\\\"d\\\"\" queue=-\n"));
    free(out);
    /* Switched at run time (a reload): JSON from the next line on. */
    stderr_capture_start();
    RP_INFO("before", NULL);
    rp_log_setup(RP_LOG_WARN, RP_LOG_FORMAT_JSON);
    RP_INFO("filtered now", NULL);
    RP_WARN("after", NULL);
    out = stderr_capture_end();
    assert_int_equal(count_lines(out), 2);
    assert_non_null(strstr(out, " info  before\n"));
    assert_null(strstr(out, "filtered now"));
    assert_non_null(strstr(out, "\"level\":\"warn\",\"msg\":\"after\"}\n"));
    free(out);
    assert_string_equal(rp_log_level_string(RP_LOG_WARN), "warn");
    assert_string_equal(rp_log_level_string((rp_log_level)9), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_text_lines_and_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
