/* The HTTP adapter (adapters/http/rp_http.h) on a loop of its own: what
 * each path answers, the methods refused, /readyz following the ready hook,
 * the refresh hook before /metrics, --healthcheck's client against it, and
 * rp_http_stop closing the listener. Nothing else runs: no broker, no
 * database. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "http_client.h"
#include "rp_http.h"
#include "rp_http_check.h"

typedef struct fixture {
    struct event_base *base;
    rp_http *http;
    rp_metrics metrics;
    pthread_t loop;
    int refreshed;    /* atomic: times the refresh hook ran */
    int ready;        /* atomic: what the ready hook answers */
    struct event *stop_ev;
    int want_stop;    /* atomic: rp_http_stop asked of the loop */
    int stopped;      /* atomic: done */
} fixture;

static void on_refresh(void *arg) {
    fixture *f = arg;
    __atomic_add_fetch(&f->refreshed, 1, __ATOMIC_SEQ_CST);
}

static bool on_ready(void *arg, char *why, size_t cap) {
    fixture *f = arg;
    if (__atomic_load_n(&f->ready, __ATOMIC_SEQ_CST)) return true;
    snprintf(why, cap, "broker down");
    return false;
}

/* Loop thread: stops the server when asked (rp_http is loop-only). */
static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    fixture *f = arg;
    if (__atomic_load_n(&f->want_stop, __ATOMIC_SEQ_CST) &&
        !__atomic_load_n(&f->stopped, __ATOMIC_SEQ_CST)) {
        rp_http_stop(f->http);
        rp_http_stop(f->http); /* idempotent */
        __atomic_store_n(&f->stopped, 1, __ATOMIC_SEQ_CST);
    }
}

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    evthread_use_pthreads();
    f.base = event_base_new();
    assert_non_null(f.base);
    rp_metrics_init(&f.metrics, "1.2.3", "abc");
    rp_http_hooks hooks = {.refresh = on_refresh, .ready = on_ready, .arg = &f};
    f.http = http_client_server(f.base, &f.metrics, &hooks);
    f.stop_ev = event_new(f.base, -1, EV_PERSIST, on_tick, &f);
    struct timeval tv = {0, 10000};
    event_add(f.stop_ev, &tv);
    http_client_loop_start(f.base, &f.loop);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    http_client_loop_stop(f->base, f->loop);
    event_free(f->stop_ev);
    rp_http_free(f->http);
    event_base_free(f->base);
    return 0;
}

#define port_of(f) http_client_port((f)->http)
/* One request; the whole answer into buf. Returns the status code, -1 when
 * nothing answered. */
#define request(f, method, path, buf, cap) \
    http_client_request(port_of(f), method, path, NULL, NULL, false, buf, cap)
#define body_of http_client_body

static void test_paths(void **state) {
    fixture *f = *state;
    static char buf[65536];
    static const struct {
        const char *method, *path;
        int status;
        const char *body;  /* exact, or NULL */
        const char *ctype; /* a header line that must be there */
    } rows[] = {
        {"GET", "/healthz", 200, "ok\n", "Content-Type: text/plain; charset=utf-8"},
        {"HEAD", "/healthz", 200, "", "Cache-Control: no-store"},
        {"GET", "/readyz", 503, "not ready: broker down\n", "Content-Type: text/plain"},
        {"GET", "/nothing", 404, "not found; try /metrics, /healthz or /readyz\n", NULL},
        {"POST", "/metrics", 405, "method not allowed; use GET or HEAD\n", "Allow: GET, HEAD"},
        {"DELETE", "/healthz", 405, NULL, "Allow: GET, HEAD"},
        {"GET", "/metrics", 200, NULL, "Content-Type: text/plain; version=0.0.4; charset=utf-8"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int st = request(f, rows[i].method, rows[i].path, buf, sizeof buf);
        if (st != rows[i].status)
            fail_msg("%s %s: %d, want %d", rows[i].method, rows[i].path, st, rows[i].status);
        if (rows[i].body) assert_string_equal(body_of(buf), rows[i].body);
        if (rows[i].ctype && strstr(buf, rows[i].ctype) == NULL)
            fail_msg("%s %s: no \"%s\" in\n%s", rows[i].method, rows[i].path, rows[i].ctype, buf);
    }
    /* /metrics: refreshed first, then the registry in the text format. */
    assert_true(__atomic_load_n(&f->refreshed, __ATOMIC_SEQ_CST) >= 1);
    assert_int_equal(request(f, "GET", "/metrics", buf, sizeof buf), 200);
    assert_non_null(strstr(body_of(buf), "reaper_build_info{version=\"1.2.3\",revision=\"abc\"} 1\n"));
    /* /readyz follows the hook. */
    __atomic_store_n(&f->ready, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(request(f, "GET", "/readyz", buf, sizeof buf), 200);
    assert_string_equal(body_of(buf), "ready\n");
}

static void test_healthcheck_client(void **state) {
    fixture *f = *state;
    char listen[64], err[256];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", port_of(f));
    assert_int_equal(rp_healthcheck(listen, 5000, err, sizeof err), 0);
    char want[128];
    snprintf(want, sizeof want, "/healthz on 127.0.0.1 port %u answered 200", port_of(f));
    assert_string_equal(err, want);
    /* A wildcard host is asked on loopback. */
    snprintf(listen, sizeof listen, ":%u", port_of(f));
    assert_int_equal(rp_healthcheck(listen, 5000, err, sizeof err), 0);
    assert_int_equal(rp_healthcheck("127.0.0.1:0", 5000, err, sizeof err), 1);
    assert_string_equal(err, "http.listen 127.0.0.1:0 names no fixed port (port 0)");
    assert_int_equal(rp_healthcheck("nonsense", 5000, err, sizeof err), 1);
    assert_string_equal(err, "http.listen nonsense is not host:port");
}

static void test_bad_listen(void **state) {
    fixture *f = *state;
    char err[200] = "";
    assert_null(rp_http_new(f->base, "no-port", &f->metrics, NULL, err, sizeof err));
    assert_string_equal(err, "not host:port");
    /* The port in use by the fixture's server. */
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", port_of(f));
    assert_null(rp_http_new(f->base, listen, &f->metrics, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cannot listen on"));
}

/* Last: stopping closes the listener; the bound address stays readable. */
static void test_stop(void **state) {
    fixture *f = *state;
    static char buf[4096];
    unsigned port = port_of(f);
    assert_int_equal(request(f, "GET", "/healthz", buf, sizeof buf), 200);
    __atomic_store_n(&f->want_stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 500 && !__atomic_load_n(&f->stopped, __ATOMIC_SEQ_CST); i++)
        usleep(10000);
    assert_true(__atomic_load_n(&f->stopped, __ATOMIC_SEQ_CST));
    assert_int_equal(port_of(f), port);
    assert_int_equal(request(f, "GET", "/healthz", buf, sizeof buf), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_healthcheck_client),
        cmocka_unit_test(test_bad_listen),
        cmocka_unit_test(test_stop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
