/*
 * The lease-deadline listener (adapters/postgres/rp_pg_listen.h) against
 * the real database, with a multi-host DSN whose first host accepts the
 * TCP connection and then says nothing (a hung server, a proxy whose
 * server is gone: a socket that listens and never accepts, so the kernel
 * completes the handshake and TCP never gives up). libpq's non-blocking
 * connect ignores connect_timeout; the listener keeps it itself, gives
 * that host up and starts its next connect at the next host, so it ends
 * up LISTENing on the real server and hears a lease deadline; alone, such
 * a host is tried again and again, never waited on for ever. The DSN's
 * own connect_timeout (2 s here) is the one in force, not the listener's
 * default of 10 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itest.h"
#include "rp_pg_listen.h"

static char schema[64];

static int setup(void **state) {
    (void)state;
    static int n;
    snprintf(schema, sizeof schema, "itest_listen_%d_%d", (int)getpid(), n++);
    return itest_migrate(schema);
}

static int teardown(void **state) {
    (void)state;
    PGconn *pg = itest_pg_connect();
    itest_drop_schema(pg, schema);
    PQfinish(pg);
    return 0;
}

/* A socket on loopback that listens and never accepts: connects complete
 * (the backlog) and then hear nothing. Its port into *port. */
static int tarpit(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Connections waiting in the tarpit's backlog, taken (and kept open in
 * fds, so that nothing tells the client) without blocking. */
static int tarpit_take(int fd, int *fds, int cap, int have) {
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) != 1 || have >= cap) return have;
        int c = accept(fd, NULL, NULL);
        if (c < 0) return have;
        fds[have++] = c;
    }
}

/* The store's port, read from REAPER_STORE_DSN with libpq's parser. */
static const char *store_port(void) {
    static char port[16];
    PQconninfoOption *opts = PQconninfoParse(itest_env("REAPER_STORE_DSN"), NULL);
    assert_non_null(opts);
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (strcmp(o->keyword, "port") == 0 && o->val) snprintf(port, sizeof port, "%s", o->val);
    PQconninfoFree(opts);
    assert_true(port[0] != '\0');
    return port;
}

typedef struct heard {
    int ups;
    int deadlines;
    struct event_base *base;
} heard;

static void on_up(void *arg) {
    heard *h = arg;
    h->ups++;
    event_base_loopbreak(h->base);
}

static void on_deadline(void *arg, int64_t at_ms) {
    heard *h = arg;
    (void)at_ms;
    h->deadlines++;
    event_base_loopbreak(h->base);
}

/* Runs the loop until a hook breaks it or ms pass. */
static void run_for(struct event_base *base, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static void test_silent_first_host_is_given_up(void **state) {
    (void)state;
    int port = 0, fds[64], taken = 0;
    int tp = tarpit(&port);
    char dsn[1024];
    snprintf(dsn, sizeof dsn, "%s host=127.0.0.1,127.0.0.1 port=%d,%s connect_timeout=2",
             itest_env("REAPER_STORE_DSN"), port, store_port());
    struct event_base *base = event_base_new();
    heard h = {.base = base};
    rp_pg_listen_hooks hooks = {.on_up = on_up, .on_deadline = on_deadline, .arg = &h};
    rp_pg_listen *l = rp_pg_listen_new(base, dsn, schema, 30000, &hooks);
    assert_non_null(l);
    long long t0 = itest_mono_ms();
    /* 2 s on the silent host, then the real one: well under the 10 s the
     * listener's own default would take, and never without the deadline. */
    run_for(base, 8000);
    long long took = itest_mono_ms() - t0;
    taken = tarpit_take(tp, fds, 64, taken);
    fprintf(stderr, "listening after %lld ms; %d connection(s) reached the silent host\n", took,
            taken);
    assert_int_equal(h.ups, 1);
    assert_true(rp_pg_listen_is_up(l));
    assert_true(took >= 1900);
    assert_true(taken >= 1);

    /* It hears a lease deadline set on the real server. */
    PGconn *pg = itest_pg_connect();
    itest_sql(pg, schema,
              "INSERT INTO job (project_id, kind, state, lease_owner, lease_expires_at) "
              "VALUES ('p', 'k', 'leased', 'w', now() + interval '1 minute')");
    run_for(base, 5000);
    assert_int_equal(h.deadlines, 1);
    assert_int_equal(rp_pg_listen_heard(l), 1);
    PQfinish(pg);

    rp_pg_listen_free(l);
    event_base_free(base);
    for (int i = 0; i < taken; i++) close(fds[i]);
    close(tp);
}

static void test_silent_only_host_is_tried_again(void **state) {
    (void)state;
    int port = 0, fds[64], taken = 0;
    int tp = tarpit(&port);
    char dsn[1024];
    snprintf(dsn, sizeof dsn, "%s host=127.0.0.1 port=%d connect_timeout=2",
             itest_env("REAPER_STORE_DSN"), port);
    struct event_base *base = event_base_new();
    heard h = {.base = base};
    rp_pg_listen_hooks hooks = {.on_up = on_up, .on_deadline = on_deadline, .arg = &h};
    rp_pg_listen *l = rp_pg_listen_new(base, dsn, schema, 30000, &hooks);
    assert_non_null(l);
    /* Connect at 0, given up at 2 s, again at 3 s (1 s back-off), given up
     * at 5 s, again at 7 s (2 s): three connections within 8 s. */
    for (int k = 0; k < 8; k++) {
        run_for(base, 1000);
        taken = tarpit_take(tp, fds, 64, taken);
    }
    fprintf(stderr, "%d connection(s) reached the silent host in 8 s\n", taken);
    assert_int_equal(h.ups, 0);
    assert_false(rp_pg_listen_is_up(l));
    assert_true(taken >= 3);
    rp_pg_listen_free(l);
    event_base_free(base);
    for (int i = 0; i < taken; i++) close(fds[i]);
    close(tp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_silent_first_host_is_given_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_only_host_is_tried_again, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
