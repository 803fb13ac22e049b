/*
 * The HTTP client on the libevent loop and the bridge over it, against the
 * real broker and against a python3 listener started here that answers
 * slowly or hugely: the loop keeps turning while a request is in flight, an
 * unreachable API fails promptly with a credential-free message, time-outs
 * and size limits hold, basic auth never travels in the URL, and a waiting
 * caller is released when the bridge closes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_mgmt_bridge.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_http.h"
#include "rp_mgmt_loop.h"
#include "test_mgmt_common.h"

#define SECRET "pw-XYZZY-not-for-logs"
/* base64("reaper:" SECRET), which a leaked Authorization header would carry. */
static char secret_b64[128];

static rp_child *listener;
static int listener_port;

static int setup(void **state) {
    (void)state;
    evthread_use_pthreads();
    listener = mt_listener_start(&listener_port);
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *in = (const unsigned char *)"reaper:" SECRET;
    size_t n = strlen((const char *)in), o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = in[i] << 16 | (i + 1 < n ? in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        secret_b64[o++] = tbl[(v >> 18) & 63];
        secret_b64[o++] = tbl[(v >> 12) & 63];
        secret_b64[o++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        secret_b64[o++] = i + 2 < n ? tbl[v & 63] : '=';
    }
    secret_b64[o] = '\0';
    return 0;
}

static int teardown(void **state) {
    (void)state;
    rp_child_free(listener);
    return 0;
}

static void assert_clean(const char *msg) {
    assert_non_null(msg);
    if (strstr(msg, SECRET) || strstr(msg, secret_b64) || strstr(msg, mt_password()))
        fail_msg("a credential leaked into: %s", msg);
}

static char *listener_url(void) {
    static char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", listener_port);
    return url;
}

/* ---- one loop in this thread ---------------------------------------------------- */

typedef struct outcome {
    struct event_base *base;
    bool called;
    int calls;
    rp_status status;
    long http_status;
    char *body;
    size_t body_len;
    char error[512];
    long at_ms;
} outcome;

static void on_result(void *arg, rp_mgmt_http_result *r) {
    outcome *o = arg;
    o->called = true;
    o->calls++;
    o->status = r->status;
    o->http_status = r->http_status;
    o->at_ms = mt_now_ms();
    snprintf(o->error, sizeof o->error, "%s", r->error ? r->error : "(null)");
    if (r->body) {
        o->body = r->body; /* take it */
        o->body_len = r->body_len;
        r->body = NULL;
    }
    if (o->base) event_base_loopexit(o->base, NULL);
}

static rp_mgmt_http *client(struct event_base *base, const char *url, const char *password,
                            size_t max) {
    rp_mgmt_http_params p = {.base_url = url, .user = "reaper", .password = password,
                             .max_response_bytes = max, .verify_peer = true};
    const char *err = NULL;
    rp_mgmt_http *h = rp_mgmt_http_new(base, &p, &err);
    if (h == NULL) fprintf(stderr, "%s\n", err);
    assert_non_null(h);
    return h;
}

/* Runs one request on a fresh loop in this thread; returns the outcome. */
static outcome run_one(const char *url, const char *password, size_t max, rp_http_method m,
                       const char *path, const char *body, long timeout_ms) {
    struct event_base *base = event_base_new();
    rp_mgmt_http *h = client(base, url, password, max);
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = base;
    assert_int_equal(rp_mgmt_http_request(h, m, path, body, body ? strlen(body) : 0, timeout_ms,
                                          on_result, &o),
                     RP_OK);
    /* Never called back from inside the request. */
    assert_false(o.called);
    event_base_dispatch(base);
    assert_true(o.called);
    assert_int_equal(o.calls, 1);
    assert_int_equal(rp_mgmt_http_pending(h), 0);
    rp_mgmt_http_free(h);
    event_base_free(base);
    return o;
}

static void test_broker_answers(void **state) {
    (void)state;
    outcome o = run_one(mt_mgmt_url(), mt_password(), 0, RP_HTTP_GET, "/api/overview", NULL, 10000);
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.http_status, 200);
    assert_string_equal(o.error, "");
    rp_mgmt_version v;
    assert_int_equal(rp_mgmt_parse_overview_version(o.body, o.body_len, &v), RP_OK);
    assert_int_equal(v.major, mt_version()->major);
    free(o.body);
    /* A wrong password: an HTTP answer (401), not a transport failure. */
    o = run_one(mt_mgmt_url(), SECRET, 0, RP_HTTP_GET, "/api/overview", NULL, 10000);
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.http_status, 401);
    assert_clean(o.body);
    free(o.body);
}

/* Nothing listens on port 1: refused at once, a clean message. */
static void test_unreachable_is_prompt_and_clean(void **state) {
    (void)state;
    long t0 = mt_now_ms();
    outcome o = run_one("http://127.0.0.1:1", SECRET, 0, RP_HTTP_GET, "/api/overview", NULL, 10000);
    long took = mt_now_ms() - t0;
    assert_int_equal(o.status, RP_ERR_UNAVAILABLE);
    assert_int_equal(o.http_status, 0);
    assert_null(o.body);
    assert_true(took < 2000);
    assert_non_null(strstr(o.error, "GET /api/overview"));
    assert_clean(o.error);
    fprintf(stderr, "unreachable: %s (%ld ms)\n", o.error, took);

    /* The same through the port, the way a pass sees it. */
    rp_mgmt_loop *l = mt_loop_as("http://127.0.0.1:1", "reaper", SECRET);
    rp_mgmt_broker *b = rp_mgmt_broker_new(rp_mgmt_loop_bridge(l), NULL);
    rp_broker_port port;
    rp_mgmt_broker_port(b, &port);
    rp_queue_page page;
    t0 = mt_now_ms();
    assert_int_equal(port.list_queues(port.self, 1, &page), RP_ERR_UNAVAILABLE);
    rp_queue_facts f;
    assert_int_equal(port.get_queue(port.self, "/", "x", &f), RP_ERR_UNAVAILABLE);
    rp_timeout_in_force t;
    assert_int_equal(port.get_timeout_in_force(port.self, "/", "x", &t), RP_ERR_UNAVAILABLE);
    assert_true(mt_now_ms() - t0 < 3000);
    assert_non_null(strstr(rp_mgmt_broker_last_error(b), "unreachable"));
    assert_clean(rp_mgmt_broker_last_error(b));
    rp_mgmt_broker_free(b);
    rp_mgmt_loop_free(l);
}

typedef struct ticker {
    struct event *ev;
    int ticks;
} ticker;

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    __atomic_add_fetch(&((ticker *)arg)->ticks, 1, __ATOMIC_RELAXED);
}

/* A request that takes 1.5 s: a 20 ms timer keeps ticking meanwhile. */
static void test_loop_turns_during_slow_request(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    rp_mgmt_http *h = client(base, listener_url(), SECRET, 0);
    ticker t = {0};
    t.ev = event_new(base, -1, EV_PERSIST, on_tick, &t);
    struct timeval tv = {0, 20000};
    event_add(t.ev, &tv);
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = base;
    long t0 = mt_now_ms();
    assert_int_equal(rp_mgmt_http_request(h, RP_HTTP_GET, "/slow/1.5", NULL, 0, 10000, on_result, &o),
                     RP_OK);
    assert_int_equal(rp_mgmt_http_pending(h), 1);
    event_base_dispatch(base);
    long took = o.at_ms - t0;
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.http_status, 200);
    assert_string_equal(o.body, "{\"slow\":true}");
    assert_true(took >= 1400);
    /* 1.5 s of 20 ms ticks is 75; allow for a loaded machine. */
    fprintf(stderr, "slow request: %ld ms, %d ticks meanwhile\n", took, t.ticks);
    assert_true(t.ticks >= 40);
    free(o.body);
    event_free(t.ev);
    rp_mgmt_http_free(h);
    event_base_free(base);
}

static void test_timeout(void **state) {
    (void)state;
    long t0 = mt_now_ms();
    outcome o = run_one(listener_url(), SECRET, 0, RP_HTTP_GET, "/slow/5", NULL, 400);
    long took = mt_now_ms() - t0;
    assert_int_equal(o.status, RP_ERR_TIMEOUT);
    assert_true(took >= 350 && took < 2500);
    assert_non_null(strstr(o.error, "GET /slow/5"));
    assert_clean(o.error);
}

static void test_response_size_is_bounded(void **state) {
    (void)state;
    /* Announced by Content-Length: refused. */
    outcome o = run_one(listener_url(), SECRET, 100000, RP_HTTP_GET, "/big/200000", NULL, 10000);
    assert_int_equal(o.status, RP_ERR_TOO_LARGE);
    assert_null(o.body);
    assert_non_null(strstr(o.error, "larger than 100000 bytes"));
    /* Streamed without one: refused as it grows. */
    o = run_one(listener_url(), SECRET, 100000, RP_HTTP_GET, "/big/200000/chunked", NULL, 10000);
    assert_int_equal(o.status, RP_ERR_TOO_LARGE);
    assert_null(o.body);
    /* At the limit: accepted. */
    o = run_one(listener_url(), SECRET, 100000, RP_HTTP_GET, "/big/100000/chunked", NULL, 10000);
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.body_len, 100000);
    free(o.body);
    /* The default limit is 16 MiB. */
    o = run_one(listener_url(), SECRET, 0, RP_HTTP_GET, "/big/17000000", NULL, 20000);
    assert_int_equal(o.status, RP_ERR_TOO_LARGE);
}

/* Basic auth in a header, never in the URL; methods and JSON bodies. */
static void test_auth_methods_and_bodies(void **state) {
    (void)state;
    outcome o = run_one(listener_url(), SECRET, 0, RP_HTTP_PUT, "/echo/p%2Fq", "{\"a\":1}", 5000);
    assert_int_equal(o.status, RP_OK);
    json_t *j = json_loads(o.body, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "PUT");
    assert_string_equal(json_string_value(json_object_get(j, "path")), "/echo/p%2Fq");
    assert_string_equal(json_string_value(json_object_get(j, "content_type")), "application/json");
    assert_string_equal(json_string_value(json_object_get(j, "body")), "{\"a\":1}");
    char want[200];
    snprintf(want, sizeof want, "Basic %s", secret_b64);
    assert_string_equal(json_string_value(json_object_get(j, "auth")), want);
    assert_null(strstr(json_string_value(json_object_get(j, "path")), SECRET));
    json_decref(j);
    free(o.body);
    o = run_one(listener_url(), SECRET, 0, RP_HTTP_DELETE, "/echo", NULL, 5000);
    j = json_loads(o.body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "DELETE");
    json_decref(j);
    free(o.body);
    o = run_one(listener_url(), SECRET, 0, RP_HTTP_GET, "/nothing", NULL, 5000);
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.http_status, 404);
    free(o.body);
}

/* A callback may start the next request; freeing the client fails what is
 * still in flight with RP_ERR_CLOSED, exactly once. */
typedef struct chain {
    rp_mgmt_http *h;
    outcome second;
    int first_calls;
} chain;

static void on_first(void *arg, rp_mgmt_http_result *r) {
    chain *c = arg;
    c->first_calls++;
    assert_int_equal(r->status, RP_OK);
    assert_int_equal(rp_mgmt_http_request(c->h, RP_HTTP_GET, "/slow/5", NULL, 0, 10000, on_result,
                                          &c->second),
                     RP_OK);
    event_base_loopexit(c->second.base, NULL);
}

static void test_chain_and_free_in_flight(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    chain c;
    memset(&c, 0, sizeof c);
    c.h = client(base, listener_url(), SECRET, 0);
    c.second.base = NULL;
    assert_int_equal(rp_mgmt_http_request(c.h, RP_HTTP_GET, "/echo", NULL, 0, 5000, on_first, &c),
                     RP_OK);
    c.second.base = base; /* used by on_first to stop the loop */
    event_base_dispatch(base);
    assert_int_equal(c.first_calls, 1);
    assert_false(c.second.called);
    assert_int_equal(rp_mgmt_http_pending(c.h), 1);
    c.second.base = NULL;
    rp_mgmt_http_free(c.h);
    assert_true(c.second.called);
    assert_int_equal(c.second.calls, 1);
    assert_int_equal(c.second.status, RP_ERR_CLOSED);
    event_base_free(base);
}

/* ---- the bridge: a loop thread of our own, as the daemon has ---------------------- */

typedef struct loop_thread {
    struct event_base *base;
    pthread_t thread;
    ticker t;
    struct event *stop;
} loop_thread;

static void *loop_main(void *arg) {
    loop_thread *lt = arg;
    event_base_loop(lt->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void on_stop(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    event_base_loopbreak(((loop_thread *)arg)->base);
}

static void loop_start(loop_thread *lt) {
    memset(lt, 0, sizeof *lt);
    lt->base = event_base_new();
    lt->t.ev = event_new(lt->base, -1, EV_PERSIST, on_tick, &lt->t);
    struct timeval tv = {0, 20000};
    event_add(lt->t.ev, &tv);
    lt->stop = event_new(lt->base, -1, 0, on_stop, lt);
    assert_int_equal(pthread_create(&lt->thread, NULL, loop_main, lt), 0);
}

static void loop_stop(loop_thread *lt) {
    event_active(lt->stop, 0, 0);
    pthread_join(lt->thread, NULL);
    event_free(lt->stop);
    event_free(lt->t.ev);
}

static int ticks_now(loop_thread *lt) {
    /* Read under no lock: a test-only estimate. */
    return __atomic_load_n(&lt->t.ticks, __ATOMIC_RELAXED);
}

static void test_bridge_waits_while_loop_turns(void **state) {
    (void)state;
    loop_thread lt;
    loop_start(&lt);
    rp_mgmt_bridge *b = rp_mgmt_bridge_new(lt.base, client(lt.base, listener_url(), SECRET, 0));
    assert_non_null(b);
    int before = ticks_now(&lt);
    rp_mgmt_response r;
    assert_int_equal(rp_mgmt_bridge_call(b, RP_HTTP_GET, "/slow/1", NULL, 0, 5000, &r), RP_OK);
    assert_int_equal(r.http_status, 200);
    assert_string_equal(r.body, "{\"slow\":true}");
    rp_mgmt_response_cleanup(&r);
    int during = ticks_now(&lt) - before;
    fprintf(stderr, "bridge call of 1 s: %d ticks on the loop meanwhile\n", during);
    assert_true(during >= 25);
    assert_int_equal(rp_mgmt_bridge_count(b, RP_HTTP_GET), 1);
    /* A transport failure comes back as a status with a clean reason. */
    assert_int_equal(rp_mgmt_bridge_call(b, RP_HTTP_GET, "/slow/3", NULL, 0, 300, &r), RP_ERR_TIMEOUT);
    assert_non_null(strstr(r.error, "/slow/3"));
    assert_clean(r.error);
    rp_mgmt_response_cleanup(&r);
    assert_int_equal(rp_mgmt_bridge_call(b, RP_HTTP_GET, "no-slash", NULL, 0, 300, &r), RP_ERR_INVALID);
    loop_stop(&lt);
    rp_mgmt_bridge_free(b);
    event_base_free(lt.base);
}

typedef struct waiter {
    rp_mgmt_bridge *b;
    rp_status st;
    long took;
    bool done;
} waiter;

static void *wait_main(void *arg) {
    waiter *w = arg;
    rp_mgmt_response r;
    long t0 = mt_now_ms();
    w->st = rp_mgmt_bridge_call(w->b, RP_HTTP_GET, "/slow/8", NULL, 0, 20000, &r);
    w->took = mt_now_ms() - t0;
    rp_mgmt_response_cleanup(&r);
    __atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
    return NULL;
}

/* Shutdown: a caller waiting on a slow request is released at once with
 * RP_ERR_CLOSED; later calls are refused; the request left in flight ends
 * when the bridge is freed (ASan sees nothing leak). */
static void test_bridge_close_releases_waiter(void **state) {
    (void)state;
    loop_thread lt;
    loop_start(&lt);
    rp_mgmt_bridge *b = rp_mgmt_bridge_new(lt.base, client(lt.base, listener_url(), SECRET, 0));
    waiter w = {.b = b};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, wait_main, &w), 0);
    mt_sleep_ms(500);
    assert_false(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
    long t0 = mt_now_ms();
    rp_mgmt_bridge_close(b);
    pthread_join(th, NULL);
    assert_int_equal(w.st, RP_ERR_CLOSED);
    assert_true(mt_now_ms() - t0 < 1000);
    assert_true(w.took < 2000);
    rp_mgmt_response r;
    assert_int_equal(rp_mgmt_bridge_call(b, RP_HTTP_GET, "/echo", NULL, 0, 1000, &r), RP_ERR_CLOSED);
    assert_non_null(strstr(r.error, "closed"));
    /* The daemon's order: stop the loop, then free the bridge on the
     * thread that owns the base. */
    loop_stop(&lt);
    rp_mgmt_bridge_free(b);
    event_base_free(lt.base);
}

/* The loop thread calling the bridge would wait for itself: refused. */
typedef struct self_call {
    rp_mgmt_bridge *b;
    rp_status st;
    bool ran;
} self_call;

static void on_self_call(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    self_call *s = arg;
    rp_mgmt_response r;
    s->st = rp_mgmt_bridge_call(s->b, RP_HTTP_GET, "/echo", NULL, 0, 1000, &r);
    rp_mgmt_response_cleanup(&r);
    __atomic_store_n(&s->ran, true, __ATOMIC_RELEASE);
}

static void test_bridge_refuses_loop_thread(void **state) {
    (void)state;
    loop_thread lt;
    loop_start(&lt);
    rp_mgmt_bridge *b = rp_mgmt_bridge_new(lt.base, client(lt.base, listener_url(), SECRET, 0));
    rp_mgmt_response r;
    assert_int_equal(rp_mgmt_bridge_call(b, RP_HTTP_GET, "/echo", NULL, 0, 5000, &r), RP_OK);
    rp_mgmt_response_cleanup(&r);
    self_call s = {.b = b};
    struct event *ev = event_new(lt.base, -1, 0, on_self_call, &s);
    event_active(ev, 0, 0);
    for (int i = 0; i < 200 && !__atomic_load_n(&s.ran, __ATOMIC_ACQUIRE); i++) mt_sleep_ms(10);
    assert_true(s.ran);
    assert_int_equal(s.st, RP_ERR_INVALID);
    loop_stop(&lt);
    event_free(ev);
    rp_mgmt_bridge_free(b);
    event_base_free(lt.base);
}

/* A host list (broker.management_url "http://h1:p1,h2:p2"): a host that
 * refuses the connection is passed over for the next, for every method
 * (nothing was sent); the client then stays on the host that answered;
 * with no host answering, the error says unavailable. */
static void test_host_list_passes_over_dead_host(void **state) {
    (void)state;
    const char *real = mt_mgmt_url();
    assert_non_null(strstr(real, "http://"));
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d,%s", itest_closed_port(), real + 7);
    outcome o = run_one(url, mt_password(), 0, RP_HTTP_GET, "/api/overview", NULL, 10000);
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.http_status, 200);
    assert_non_null(strstr(o.body, "rabbitmq_version"));
    free(o.body);
    /* A DELETE too: refused at connect, so never sent twice. */
    o = run_one(url, mt_password(), 0, RP_HTTP_DELETE, "/api/queues/%2F/no-such-queue-hl", NULL,
                10000);
    assert_int_equal(o.status, RP_OK);
    assert_int_equal(o.http_status, 404);
    free(o.body);
    /* The second request of one client goes straight to the host that
     * answered: with the dead host first, two GETs, the second fast. */
    struct event_base *base = event_base_new();
    rp_mgmt_http *h = client(base, url, mt_password(), 0);
    for (int i = 0; i < 2; i++) {
        outcome x;
        memset(&x, 0, sizeof x);
        x.base = base;
        assert_int_equal(rp_mgmt_http_request(h, RP_HTTP_GET, "/api/overview", NULL, 0, 10000,
                                              on_result, &x),
                         RP_OK);
        event_base_dispatch(base);
        assert_int_equal(x.status, RP_OK);
        free(x.body);
    }
    rp_mgmt_http_free(h);
    event_base_free(base);
    /* Every host dead: unavailable, naming no credential. */
    snprintf(url, sizeof url, "http://127.0.0.1:%d,127.0.0.1:%d", itest_closed_port(),
             itest_closed_port());
    o = run_one(url, SECRET, 0, RP_HTTP_GET, "/api/overview", NULL, 10000);
    assert_int_equal(o.status, RP_ERR_UNAVAILABLE);
    assert_clean(o.error);
    free(o.body);
    /* An empty host in the list is refused at once. */
    rp_mgmt_http_params p = {.base_url = "http://127.0.0.1:1,,127.0.0.1:2", .password = ""};
    const char *err = NULL;
    base = event_base_new();
    assert_null(rp_mgmt_http_new(base, &p, &err));
    assert_non_null(strstr(err, "empty host"));
    event_base_free(base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broker_answers),
        cmocka_unit_test(test_host_list_passes_over_dead_host),
        cmocka_unit_test(test_unreachable_is_prompt_and_clean),
        cmocka_unit_test(test_loop_turns_during_slow_request),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_response_size_is_bounded),
        cmocka_unit_test(test_auth_methods_and_bodies),
        cmocka_unit_test(test_chain_and_free_in_flight),
        cmocka_unit_test(test_bridge_waits_while_loop_turns),
        cmocka_unit_test(test_bridge_close_releases_waiter),
        cmocka_unit_test(test_bridge_refuses_loop_thread),
    };
    return cmocka_run_group_tests_name("mgmt_http", tests, setup, teardown);
}
