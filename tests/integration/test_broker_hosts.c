/*
 * Several broker hosts in broker.url (core/rp_hostlist.h), against the real
 * broker (label broker: 3.10 and 4.0): rp_amqp_open tries the hosts of the
 * list in turn from the one that answered last, logs in on the first that
 * answers and says which; with none answering its error names every host's
 * failure; a plain URL's error is what it always was. And the URL's user
 * and vhost are read from a list as from one host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "rp_amqp_control.h"
#include "rp_amqp_open.h"

/* The broker's URL with a dead host put before (or after) its own. */
static void list_url(char *out, size_t n, int dead, bool dead_first) {
    const char *url = itest_env("REAPER_BROKER_URL"); /* amqp://user@host:port/vhost */
    const char *at = strchr(url, '@');
    assert_non_null(at);
    size_t hlen = strcspn(at + 1, "/");
    if (dead_first)
        snprintf(out, n, "%.*s127.0.0.1:%d,%.*s%s", (int)(at + 1 - url), url, dead, (int)hlen,
                 at + 1, at + 1 + hlen);
    else
        snprintf(out, n, "%.*s%.*s,127.0.0.1:%d%s", (int)(at + 1 - url), url, (int)hlen, at + 1,
                 dead, at + 1 + hlen);
}

static amqp_connection_state_t open_list(const char *url, size_t *host, char *err, size_t n) {
    rp_amqp_open_opts o = {
        .url = url,
        .password = itest_broker_password(),
        .connect_timeout_ms = 3000,
        .rpc_timeout_ms = 10000,
        .host_used = host,
    };
    return rp_amqp_open(&o, err, n);
}

static void test_dead_first_host_passed_over(void **state) {
    (void)state;
    char url[512], err[512] = "";
    int dead = itest_closed_port();
    list_url(url, sizeof url, dead, true);
    size_t host = 0;
    amqp_connection_state_t c = open_list(url, &host, err, sizeof err);
    if (c == NULL) fprintf(stderr, "%s\n", err);
    assert_non_null(c);
    assert_int_equal(host, 1);
    /* A channel works: it is a real login. */
    amqp_channel_open(c, 1);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    /* The next connect starts from the host that answered. */
    c = open_list(url, &host, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(host, 1);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    /* The live host first: it is taken. */
    list_url(url, sizeof url, dead, false);
    host = 0;
    c = open_list(url, &host, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(host, 0);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

static void test_no_host_answers(void **state) {
    (void)state;
    int d1 = itest_closed_port(), d2 = itest_closed_port();
    char url[256], err[512] = "", p1[32], p2[32];
    snprintf(url, sizeof url, "amqp://reaper@127.0.0.1:%d,127.0.0.1:%d/%%2f", d1, d2);
    size_t host = 0;
    assert_null(open_list(url, &host, err, sizeof err));
    fprintf(stderr, "# %s\n", err);
    assert_non_null(strstr(err, "no broker host answered"));
    snprintf(p1, sizeof p1, "127.0.0.1:%d", d1);
    snprintf(p2, sizeof p2, "127.0.0.1:%d", d2);
    assert_non_null(strstr(err, p1));
    assert_non_null(strstr(err, p2));
    assert_null(strstr(err, itest_broker_password()));
    /* One host: the message it always had. */
    snprintf(url, sizeof url, "amqp://reaper@127.0.0.1:%d/%%2f", d1);
    assert_null(open_list(url, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cannot connect to the broker at"));
}

static void test_user_and_vhost_of_a_list(void **state) {
    (void)state;
    char user[64];
    assert_true(rp_amqp_url_user("amqp://reaper@a:1,b:2,c:3/prod", user, sizeof user));
    assert_string_equal(user, "reaper");
    assert_true(rp_amqp_url_vhost_is("amqp://reaper@a:1,b:2,c:3/prod", "prod"));
    assert_false(rp_amqp_url_vhost_is("amqp://reaper@a:1,b:2,c:3/prod", "/"));
    assert_int_equal(rp_amqp_quorum_group_size("amqp://reaper@a:1/v"), 0);
    assert_int_equal(rp_amqp_quorum_group_size("amqp://reaper@a:1,b:2/v"), 2);
    assert_int_equal(rp_amqp_quorum_group_size("amqp://reaper@a:1,b:2,c:3/v"), 3);
    assert_int_equal(rp_amqp_quorum_group_size("amqp://reaper@a,b,c,d,e/v"), 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_first_host_passed_over),
        cmocka_unit_test(test_no_host_answers),
        cmocka_unit_test(test_user_and_vhost_of_a_list),
    };
    return cmocka_run_group_tests_name("broker_hosts", tests, NULL, NULL);
}
