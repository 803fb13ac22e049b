/* rp_pg_hosts: a multi-host DSN's lists as libpq reads them (keywords and
 * URI), the host libpq is trying found in them, and the lists rotated so a
 * connect starts at another host; one port for all hosts is not rotated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_pg_hosts.h"

static void test_keywords_with_lists(void **state) {
    (void)state;
    rp_pg_hosts h;
    assert_int_equal(rp_pg_hosts_parse("host=a,b,c port=1,2,3 dbname=x", &h), RP_OK);
    assert_int_equal(h.n, 3);
    assert_string_equal(h.host, "a,b,c");
    assert_null(h.hostaddr);
    assert_int_equal(rp_pg_hosts_find(&h, "b", "2"), 1);
    assert_int_equal(rp_pg_hosts_find(&h, "b", "3"), 3); /* no such pair */
    assert_int_equal(rp_pg_hosts_find(&h, "d", "1"), 3);
    char *host, *addr, *port;
    assert_int_equal(rp_pg_hosts_rotated(&h, 2, &host, &addr, &port), RP_OK);
    assert_string_equal(host, "c,a,b");
    assert_null(addr);
    assert_string_equal(port, "3,1,2");
    free(host);
    free(port);
    rp_pg_hosts_cleanup(&h);
}

/* The same host twice on two ports (two servers on one machine, as the
 * tests run them): the port tells them apart. One port for all hosts
 * needs no override. */
static void test_same_host_two_ports_and_one_port(void **state) {
    (void)state;
    rp_pg_hosts h;
    assert_int_equal(rp_pg_hosts_parse("host=127.0.0.1,127.0.0.1 port=5,6", &h), RP_OK);
    assert_int_equal(rp_pg_hosts_find(&h, "127.0.0.1", "6"), 1);
    rp_pg_hosts_cleanup(&h);

    assert_int_equal(rp_pg_hosts_parse("host=p,q port=5432", &h), RP_OK);
    assert_int_equal(h.n, 2);
    assert_int_equal(rp_pg_hosts_find(&h, "q", "5432"), 1);
    char *host, *addr, *port;
    assert_int_equal(rp_pg_hosts_rotated(&h, 1, &host, &addr, &port), RP_OK);
    assert_string_equal(host, "q,p");
    assert_null(port);
    free(host);
    rp_pg_hosts_cleanup(&h);
}

static void test_uri_and_hostaddr(void **state) {
    (void)state;
    rp_pg_hosts h;
    assert_int_equal(rp_pg_hosts_parse("postgresql://u@h1:5432,h2:5433/db", &h), RP_OK);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.host, "h1,h2");
    assert_string_equal(h.port, "5432,5433");
    rp_pg_hosts_cleanup(&h);

    /* hostaddr without host: PQhost gives the address. */
    assert_int_equal(rp_pg_hosts_parse("hostaddr=10.0.0.1,10.0.0.2 port=7", &h), RP_OK);
    assert_int_equal(rp_pg_hosts_find(&h, "10.0.0.2", "7"), 1);
    char *host, *addr, *port;
    assert_int_equal(rp_pg_hosts_rotated(&h, 1, &host, &addr, &port), RP_OK);
    assert_null(host);
    assert_string_equal(addr, "10.0.0.2,10.0.0.1");
    free(addr);
    rp_pg_hosts_cleanup(&h);
}

/* One host, no host, or a DSN libpq refuses: n is 1 (or an error), and a
 * rotation changes nothing. */
static void test_single_and_bad(void **state) {
    (void)state;
    rp_pg_hosts h;
    assert_int_equal(rp_pg_hosts_parse("dbname=x", &h), RP_OK);
    assert_int_equal(h.n, 1);
    assert_int_equal(rp_pg_hosts_find(&h, "/tmp", "5432"), 1);
    char *host, *addr, *port;
    assert_int_equal(rp_pg_hosts_rotated(&h, 0, &host, &addr, &port), RP_OK);
    assert_null(host);
    assert_null(addr);
    assert_null(port);
    rp_pg_hosts_cleanup(&h);
    assert_int_equal(rp_pg_hosts_parse("host='unterminated", &h), RP_ERR_INVALID);
    assert_int_equal(rp_pg_hosts_parse("nosuchkey=1", &h), RP_ERR_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keywords_with_lists),
        cmocka_unit_test(test_same_host_two_ports_and_one_port),
        cmocka_unit_test(test_uri_and_hostaddr),
        cmocka_unit_test(test_single_and_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
