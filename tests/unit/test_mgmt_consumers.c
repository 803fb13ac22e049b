/* Issue 18 item 4: the connections of a queue's consumers as the
 * management API lists them (GET /api/queues/{vhost}/{name}?columns=
 * consumer_details), the answers of RabbitMQ 3.10 and 4.0 alike: each
 * connection once, in order; consumers without a connection name skipped;
 * no consumers, no names; a body that is not an object refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rp_mgmt_parse.h"

static void test_names_once_in_order(void **state) {
    (void)state;
    const char *body =
        "{\"consumer_details\":["
        "{\"arguments\":{},\"channel_details\":{\"connection_name\":\"127.0.0.1:5001 -> "
        "127.0.0.1:5672\",\"name\":\"127.0.0.1:5001 -> 127.0.0.1:5672 (1)\",\"number\":1},"
        "\"consumer_tag\":\"a\",\"prefetch_count\":1},"
        "{\"channel_details\":{\"connection_name\":\"127.0.0.1:5002 -> 127.0.0.1:5672\"}},"
        "{\"channel_details\":{\"connection_name\":\"127.0.0.1:5001 -> 127.0.0.1:5672\"}},"
        "{\"channel_details\":{}},"
        "{\"consumer_tag\":\"no channel\"}"
        "]}";
    char **names = NULL;
    size_t n = 0;
    assert_int_equal(rp_mgmt_parse_consumer_connections(body, strlen(body), &names, &n), RP_OK);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "127.0.0.1:5001 -> 127.0.0.1:5672");
    assert_string_equal(names[1], "127.0.0.1:5002 -> 127.0.0.1:5672");
    rp_mgmt_names_free(names, n);
}

static void test_no_consumers(void **state) {
    (void)state;
    const char *bodies[] = {"{\"consumer_details\":[]}", "{}", "{\"consumer_details\":null}"};
    for (size_t i = 0; i < 3; i++) {
        char **names = (char **)1;
        size_t n = 99;
        assert_int_equal(
            rp_mgmt_parse_consumer_connections(bodies[i], strlen(bodies[i]), &names, &n), RP_OK);
        assert_null(names);
        assert_int_equal(n, 0);
    }
}

static void test_not_an_object(void **state) {
    (void)state;
    const char *bodies[] = {"[]", "nope", ""};
    for (size_t i = 0; i < 3; i++) {
        char **names = NULL;
        size_t n = 0;
        assert_int_equal(
            rp_mgmt_parse_consumer_connections(bodies[i], strlen(bodies[i]), &names, &n),
            RP_ERR_INVALID);
        assert_null(names);
    }
    char **names = NULL;
    size_t n = 0;
    assert_int_equal(rp_mgmt_parse_consumer_connections(NULL, 0, &names, &n), RP_ERR_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_once_in_order),
        cmocka_unit_test(test_no_consumers),
        cmocka_unit_test(test_not_an_object),
    };
    return cmocka_run_group_tests_name("mgmt_consumers", tests, NULL, NULL);
}
