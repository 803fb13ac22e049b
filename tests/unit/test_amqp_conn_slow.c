/* A broker connect attempt that takes long (adapters/rabbitmq/rp_amqp_conn.h):
 * a listener that accepts the TCP connection and never answers the AMQP
 * handshake. The log says, while the attempt runs, that it is still running
 * and at which step; the attempt ends at the handshake time-out as DOWN
 * (never a silent hang), and a retry follows. No broker: a loopback socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rp_amqp_conn.h"
#include "rp_log.h"

typedef struct seen {
    int downs;
    char last_why[256];
    struct event_base *base;
} seen;

static void on_state(void *arg, rp_amqp_state st, const char *why) {
    seen *s = arg;
    if (st != RP_AMQP_DOWN) return;
    s->downs++;
    snprintf(s->last_why, sizeof s->last_why, "%s", why ? why : "");
    event_base_loopbreak(s->base);
}

static char *read_all(FILE *f) {
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    return text;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void test_silent_broker_is_said_and_given_up(void **state) {
    (void)state;
    /* A listener whose backlog takes the connection; nobody ever answers. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 4), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    char url[96];
    snprintf(url, sizeof url, "amqp://reaper@127.0.0.1:%d/%%2f", ntohs(a.sin_port));

    assert_int_equal(evthread_use_pthreads(), 0);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    seen s = {.base = base};
    rp_amqp_params p = {.url = url, .password = "x", .connect_timeout_ms = 1000,
                        .rpc_timeout_ms = 1500, .slow_connect_ms = 400};
    rp_amqp_hooks h = {.on_state = on_state, .arg = &s};
    const char *err = NULL;
    rp_amqp_conn *c = rp_amqp_conn_new(base, &p, &h, &err);
    assert_non_null(c);

    fflush(stderr);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fileno(cap), STDERR_FILENO) >= 0);
    rp_log_setup(RP_LOG_INFO, RP_LOG_FORMAT_JSON);

    assert_int_equal(rp_amqp_conn_start(c), RP_OK);
    struct timeval limit = {10, 0}; /* far above the 1.5 s handshake time-out */
    event_base_loopexit(base, &limit);
    event_base_dispatch(base);

    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    char *log = read_all(cap);
    fclose(cap);

    /* The attempt ended on its own, DOWN, with the handshake's reason. */
    assert_int_equal(s.downs, 1);
    assert_non_null(strstr(s.last_why, "broker login"));
    /* While it ran (1.5 s), the log said so at 0.4 s, 0.8 s and 1.2 s, with
     * the step it was at. */
    int said = count(log, "\"msg\":\"broker connect attempt still running\"");
    if (said < 2 || said > 4) fprintf(stderr, "log:\n%s\n", log);
    assert_in_range(said, 2, 4);
    assert_non_null(strstr(log, "\"step\":\"opening the connection (TCP connect and login)\""));
    free(log);

    rp_amqp_conn_free(c); /* joins nothing: the thread has ended */
    event_base_free(base);
    close(lfd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_broker_is_said_and_given_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
