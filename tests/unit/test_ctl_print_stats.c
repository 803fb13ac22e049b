/* reaperctl stats' tables (cmd/reaperctl/print_stats.c): both tables with
 * their numbers, "-" for what is unknown, ages as reaperctl jobs shows
 * them, flags joined, the broker's note, and every name a reply holds
 * escaped (a queue or a project may hold any character). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

static void assert_terminal_safe(const char *out) {
    for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
        if (*p == '\n') continue;
        if (*p < 0x20 || *p == 0x7f) fail_msg("control byte 0x%02x in:\n%s", *p, out);
    }
}

static char *print(const json_t *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    rp_ctl_print_stats(f, r);
    fclose(f);
    return buf;
}

/* The line of out that starts with prefix (NULL if none). */
static const char *line_of(const char *out, const char *prefix) {
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0) return p;
    return NULL;
}

static void test_tables(void **state) {
    (void)state;
    json_t *r = json_loads(
        "{\"window_seconds\":86400,\"broker_note\":null,"
        "\"queues\":[{\"vhost\":\"/\",\"queue\":\"vibey.pdf\",\"ready\":3,\"unacked\":2,"
        "\"consumers\":1,\"intake\":40,\"drained\":25,\"oldest_waiting_seconds\":90,"
        "\"flags\":[\"WAITING_DEPTH\",\"STALLED\"]},"
        "{\"vhost\":\"/\",\"queue\":\"q\\u001b[2J\",\"ready\":null,\"unacked\":null,"
        "\"consumers\":null,\"intake\":null,\"drained\":null,\"oldest_waiting_seconds\":null,"
        "\"flags\":[]}],"
        "\"kinds\":[{\"project\":\"alpha\",\"kind\":\"pdf\",\"waiting\":4,\"active\":2,\"intake\":10,"
        "\"drained\":6,\"oldest_waiting_seconds\":7260,\"flags\":[\"WEDGED\"]},"
        "{\"project\":\"p\\rX\",\"kind\":\"mail\",\"waiting\":0,\"active\":1,\"intake\":1,"
        "\"drained\":0,\"oldest_waiting_seconds\":null,\"flags\":[]}],"
        "\"queues_omitted\":3,\"kinds_omitted\":0}",
        0, NULL);
    assert_non_null(r);
    char *out = print(r);
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "intake and drained over the last 1d"));
    assert_non_null(line_of(out, "VHOST  QUEUE"));
    const char *q = line_of(out, "/      vibey.pdf");
    assert_non_null(q);
    int ready, unacked, consumers, intake, drained;
    assert_int_equal(sscanf(q, "/ vibey.pdf %d %d %d %d %d", &ready, &unacked, &consumers, &intake,
                            &drained),
                     5);
    assert_int_equal(ready * 10000 + unacked * 1000 + consumers * 100 + intake + drained,
                     3 * 10000 + 2 * 1000 + 100 + 40 + 25);
    assert_non_null(strstr(q, "1m30s"));
    assert_non_null(strstr(q, "WAITING_DEPTH,STALLED\n"));
    const char *u = line_of(out, "/      q\\x1b[2J");
    assert_non_null(u);
    /* Nothing known: seven "-" cells after the names, no number. */
    int dashes = 0;
    for (const char *c = u + strlen("/      q\\x1b[2J"); *c && *c != '\n'; c++) {
        assert_false(*c >= '0' && *c <= '9');
        dashes += *c == '-';
    }
    assert_int_equal(dashes, 7);
    assert_non_null(line_of(out, "PROJECT"));
    const char *k = line_of(out, "alpha");
    assert_non_null(k);
    assert_non_null(strstr(k, "2h1m"));
    assert_non_null(strstr(k, "WEDGED\n"));
    assert_non_null(line_of(out, "p\\rX"));
    assert_non_null(strstr(out, "\n2 owned queues (3 more not shown), 2 (project, kind)s\n"));
    free(out);
    json_decref(r);
}

static void test_no_broker_no_rows(void **state) {
    (void)state;
    json_t *r = json_loads("{\"window_seconds\":3600,\"broker_note\":\"down \\u001b[2J\","
                           "\"queues\":[],\"kinds\":[]}",
                           0, NULL);
    char *out = print(r);
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "over the last 1h"));
    assert_non_null(strstr(out, "owned queues: not read: down \\x1b[2J\n"));
    assert_non_null(strstr(out, "no jobs waiting, active, created or drained in the window\n"));
    assert_non_null(strstr(out, "0 owned queues, 0 (project, kind)s\n"));
    free(out);
    json_object_set_new(r, "broker_note", json_null());
    out = print(r);
    assert_non_null(strstr(out, "no owned queues\n"));
    free(out);
    json_decref(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_no_broker_no_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
