/* Several broker hosts in one URL (core/rp_hostlist.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rp_hostlist.h"

static void assert_pick(const char *url, size_t i, const char *want) {
    char out[256];
    assert_true(rp_hostlist_pick(url, i, out, sizeof out));
    assert_string_equal(out, want);
}

static void test_count(void **state) {
    (void)state;
    assert_int_equal(rp_hostlist_count("amqp://u@h:5672/%2f"), 1);
    assert_int_equal(rp_hostlist_count("amqp://h"), 1);
    assert_int_equal(rp_hostlist_count("amqp://u@a:1,b:2,c:3/v"), 3);
    assert_int_equal(rp_hostlist_count("http://a:1,b:2"), 2);
    /* A comma after the authority is not a host separator. */
    assert_int_equal(rp_hostlist_count("amqp://u@h:1/v,w"), 1);
    assert_int_equal(rp_hostlist_count("http://h:1/api?x=a,b"), 1);
    /* A password holding '@' and ',': the hosts start after the last '@'. */
    assert_int_equal(rp_hostlist_count("amqp://u:p,w@d@a:1,b:2/v"), 2);
    assert_int_equal(rp_hostlist_count("not a url"), 0);
    assert_int_equal(rp_hostlist_count(NULL), 0);
}

static void test_pick(void **state) {
    (void)state;
    const char *u = "amqp://reaper@10.0.0.1:5672,10.0.0.2:5673,node3/%2f";
    assert_pick(u, 0, "amqp://reaper@10.0.0.1:5672/%2f");
    assert_pick(u, 1, "amqp://reaper@10.0.0.2:5673/%2f");
    assert_pick(u, 2, "amqp://reaper@node3/%2f");
    char out[256];
    assert_false(rp_hostlist_pick(u, 3, out, sizeof out));
    /* A plain URL is its own host 0, unchanged. */
    assert_pick("amqps://u@h:5671/v", 0, "amqps://u@h:5671/v");
    assert_false(rp_hostlist_pick("amqps://u@h:5671/v", 1, out, sizeof out));
    /* Without user or path. */
    assert_pick("http://a:1,b:2", 1, "http://b:2");
    assert_pick("http://a:1,b:2/prefix/", 0, "http://a:1/prefix/");
    assert_pick("amqp://u:p,w@d@a:1,b:2/v", 1, "amqp://u:p,w@d@b:2/v");
    /* Too small a buffer: false, never a cut URL taken for a whole one. */
    assert_false(rp_hostlist_pick(u, 0, out, 10));
    assert_false(rp_hostlist_pick("nothing", 0, out, sizeof out));
}

static void test_check(void **state) {
    (void)state;
    assert_null(rp_hostlist_check("amqp://u@h:1/v"));
    assert_null(rp_hostlist_check("amqp://u@a:1,b:2,c:3/v"));
    assert_non_null(rp_hostlist_check("amqp://u@a:1,,c:3/v"));
    assert_non_null(rp_hostlist_check("amqp://u@a:1,/v"));
    assert_non_null(rp_hostlist_check("amqp://u@,a:1/v"));
    assert_non_null(rp_hostlist_check("amqp://u@a:1,:2/v"));
    char many[512] = "amqp://u@";
    for (int i = 0; i < 17; i++) {
        char h[16];
        snprintf(h, sizeof h, "%sh%d", i ? "," : "", i);
        strcat(many, h);
    }
    strcat(many, "/v");
    assert_int_equal(rp_hostlist_count(many), 17);
    assert_non_null(strstr(rp_hostlist_check(many), "16"));
}

static void test_hosts(void **state) {
    (void)state;
    char out[64];
    rp_hostlist_hosts("amqp://u:secret@a:1,b:2/v", out, sizeof out);
    assert_string_equal(out, "a:1,b:2"); /* no user, no password */
    rp_hostlist_hosts("junk", out, sizeof out);
    assert_string_equal(out, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_hosts),
    };
    return cmocka_run_group_tests_name("hostlist", tests, NULL, NULL);
}
