/* The browser console's HTTP side (adapters/http/rp_http_console.h) on a
 * loop of its own, over a fake port that records what it was asked and
 * answers later on the loop (as the real one does from its threads): the
 * paths served only while http.console is on, the sign-in rules (401, 403,
 * 415, 400, 405), a signed-in request forwarded byte for byte as that user,
 * an anonymous read as reaperd's own user, the feed checked as the user
 * first, a refused login as 401, and no password in any answer. No broker,
 * no database. */
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

#include "rp_config.h"
#include "http_client.h"
#include "rp_http.h"
#include "rp_http_console.h"

typedef struct fixture {
    struct event_base *base;
    rp_http *http;
    rp_console *console;
    rp_metrics metrics;
    rp_config cfg;
    const rp_config *cfgp;
    pthread_t loop;
    pthread_mutex_t mu;
    /* What the port was asked (under mu). */
    int asks, feeds;
    char last_user[64];  /* "(self)" for NULL */
    char last_body[512];
    rp_status answer_st; /* what the fake ask answers */
    struct event *keepalive;
} fixture;

typedef struct later {
    rp_console_call *call;
    rp_console_done_fn done;
} later;

static void on_later(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    later *l = arg;
    l->done(l->call, false);
    free(l);
}

static fixture *g_f;

static rp_status fake_schedule(rp_console_call *call, rp_console_done_fn done) {
    later *l = malloc(sizeof *l);
    assert_non_null(l);
    *l = (later){call, done};
    struct timeval tv = {0, 1000};
    return event_base_once(g_f->base, -1, EV_TIMEOUT, on_later, l, &tv) == 0 ? RP_OK
                                                                            : RP_ERR_INTERNAL;
}

static rp_status fake_ask(void *self, rp_console_call *call, rp_console_done_fn done) {
    fixture *f = self;
    pthread_mutex_lock(&f->mu);
    f->asks++;
    snprintf(f->last_user, sizeof f->last_user, "%s", call->user ? call->user : "(self)");
    snprintf(f->last_body, sizeof f->last_body, "%.*s", (int)call->len, call->body);
    call->st = f->answer_st;
    pthread_mutex_unlock(&f->mu);
    if (call->st == RP_OK) {
        char reply[256];
        snprintf(reply, sizeof reply, "{\"v\":1,\"ok\":true,\"result\":{\"as\":\"%s\"}}",
                 call->user ? call->user : "(self)");
        call->reply = strdup(reply);
        call->reply_len = strlen(reply);
    } else {
        snprintf(call->err, sizeof call->err, "login refused");
    }
    return fake_schedule(call, done);
}

static rp_status fake_feed(void *self, rp_console_call *call, rp_console_done_fn done) {
    fixture *f = self;
    pthread_mutex_lock(&f->mu);
    f->feeds++;
    pthread_mutex_unlock(&f->mu);
    call->st = RP_OK;
    call->reply = strdup("{\"sightings\":[],\"events\":[]}");
    call->reply_len = strlen(call->reply);
    return fake_schedule(call, done);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
}

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    g_f = &f;
    pthread_mutex_init(&f.mu, NULL);
    evthread_use_pthreads();
    f.base = event_base_new();
    assert_non_null(f.base);
    assert_int_equal(rp_config_init(&f.cfg), RP_OK);
    f.cfg.http.console = true;
    f.cfgp = &f.cfg;
    rp_metrics_init(&f.metrics, "1.2.3", "abc");
    /* control.allowed_users: reaperd's own user "reaper" and "ops". */
    free(f.cfg.control.allowed_users.items); /* the default: empty */
    f.cfg.control.allowed_users.items = calloc(2, sizeof(char *));
    assert_non_null(f.cfg.control.allowed_users.items);
    f.cfg.control.allowed_users.items[0] = strdup("reaper");
    f.cfg.control.allowed_users.items[1] = strdup("ops");
    f.cfg.control.allowed_users.n = 2;
    rp_console_port port = {
        .ask = fake_ask, .feed = fake_feed, .cfg = &f.cfgp, .own_user = "reaper", .self = &f};
    f.console = rp_console_new(&port);
    assert_non_null(f.console);
    rp_http_hooks hooks = {.console = f.console};
    f.http = http_client_server(f.base, &f.metrics, &hooks);
    /* Keeps the loop turning while no request is open. */
    f.keepalive = event_new(f.base, -1, EV_PERSIST, on_keepalive, NULL);
    assert_non_null(f.keepalive);
    struct timeval tv = {1, 0};
    event_add(f.keepalive, &tv);
    http_client_loop_start(f.base, &f.loop);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    http_client_loop_stop(f->base, f->loop);
    event_free(f->keepalive);
    rp_http_free(f->http);
    rp_console_free(f->console);
    rp_config_cleanup(&f->cfg);
    event_base_free(f->base);
    return 0;
}

/* One request with extra header lines (each ending \r\n) and a body. */
#define request(f, method, path, headers, body, buf, cap) \
    http_client_request(http_client_port((f)->http), method, path, headers, body, true, buf, cap)
#define body_of http_client_body

static int asks(fixture *f) {
    pthread_mutex_lock(&f->mu);
    int n = f->asks;
    pthread_mutex_unlock(&f->mu);
    return n;
}

#define JSON "Content-Type: application/json\r\n"
/* "ops:pw" */
#define AUTH "Authorization: Basic b3BzOnB3\r\n"

static void test_paths_follow_the_key(void **state) {
    fixture *f = *state;
    static char buf[131072];
    f->cfg.http.console = false;
    assert_int_equal(request(f, "GET", "/console", NULL, NULL, buf, sizeof buf), 404);
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH,
                             "{\"v\":1,\"op\":\"gates\"}", buf, sizeof buf), 405);
    assert_int_equal(asks(f), 0);
    f->cfg.http.console = true;
    assert_int_equal(request(f, "GET", "/console", NULL, NULL, buf, sizeof buf), 200);
    assert_non_null(strstr(buf, "Content-Type: text/html"));
    assert_non_null(strstr(buf, "Content-Security-Policy: default-src 'none'; script-src 'self'"));
    assert_non_null(strstr(body_of(buf), "<script src=\"/console/app.js\""));
    assert_int_equal(request(f, "GET", "/console/app.js", NULL, NULL, buf, sizeof buf), 200);
    assert_non_null(strstr(body_of(buf), "textContent"));
    assert_null(strstr(body_of(buf), "innerHTML"));
    assert_int_equal(request(f, "GET", "/console/app.css", NULL, NULL, buf, sizeof buf), 200);
    assert_int_equal(request(f, "GET", "/console/nope", NULL, NULL, buf, sizeof buf), 404);
    assert_int_equal(request(f, "GET", "/metrics", NULL, NULL, buf, sizeof buf), 200);
    assert_int_equal(request(f, "GET", "/console/api/ask", AUTH, NULL, buf, sizeof buf), 405);
}

static void test_sign_in_rules(void **state) {
    fixture *f = *state;
    static char buf[8192];
    f->cfg.http.console_read_anonymous = false;
    f->answer_st = RP_OK;
    int n0 = asks(f);
    /* No sign-in, anonymous reads off: nothing is sent. */
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON, "{\"v\":1,\"op\":\"gates\"}", buf,
                             sizeof buf), 401);
    assert_non_null(strstr(body_of(buf), "sign in"));
    assert_null(strstr(buf, "WWW-Authenticate"));
    assert_int_equal(request(f, "GET", "/console/api/feed", NULL, NULL, buf, sizeof buf), 401);
    /* A header that is not Basic user:password. */
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON "Authorization: Bearer x\r\n",
                             "{\"v\":1,\"op\":\"gates\"}", buf, sizeof buf), 401);
    /* Signed in, but an op the console does not send; JSON only; parsed. */
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, "{\"v\":1,\"op\":\"reap\"}",
                             buf, sizeof buf), 403);
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, "{\"v\":1,\"op\":\"nosuch\"}",
                             buf, sizeof buf), 403);
    assert_int_equal(request(f, "POST", "/console/api/ask",
                             "Content-Type: application/x-www-form-urlencoded\r\n" AUTH,
                             "{\"v\":1,\"op\":\"gates\"}", buf, sizeof buf), 415);
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, "{\"v\":1,\"op\":", buf,
                             sizeof buf), 400);
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH,
                             "{\"v\":1,\"op\":\"gates\",\"limit\":0}", buf, sizeof buf), 400);
    assert_int_equal(asks(f), n0);
    /* Anonymous reads on: a read goes as reaperd's own user, an answer not. */
    f->cfg.http.console_read_anonymous = true;
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON, "{\"v\":1,\"op\":\"gates\"}", buf,
                             sizeof buf), 200);
    assert_string_equal(f->last_user, "(self)");
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON,
                             "{\"v\":1,\"op\":\"answer\",\"gate\":7,\"choice\":\"dismiss\"}", buf,
                             sizeof buf), 401);
    assert_int_equal(asks(f), n0 + 1);
    /* The feed too, its status as reaperd's own user. */
    assert_int_equal(request(f, "GET", "/console/api/feed", NULL, NULL, buf, sizeof buf), 200);
    assert_string_equal(f->last_user, "(self)");
    assert_non_null(strstr(body_of(buf), "\"status\":{\"v\":1,\"ok\":true,\"result\":{\"as\":\"(self)\"}}"));
    assert_int_equal(asks(f), n0 + 2);
    f->cfg.http.console_read_anonymous = false;
}

static void test_signed_in_requests(void **state) {
    fixture *f = *state;
    static char buf[8192];
    f->answer_st = RP_OK;
    /* Forwarded byte for byte, as the signed-in user; the reply as is. */
    const char *answer = "{\"v\":1, \"op\":\"answer\",\"gate\":7,\"choice\":\"dismiss\"}";
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, answer, buf, sizeof buf),
                     200);
    assert_string_equal(f->last_user, "ops");
    assert_string_equal(f->last_body, answer);
    assert_string_equal(body_of(buf), "{\"v\":1,\"ok\":true,\"result\":{\"as\":\"ops\"}}");
    assert_null(strstr(buf, "pw"));
    /* The feed: a status as the user first, then the store's read. */
    int n0 = asks(f);
    assert_int_equal(request(f, "GET", "/console/api/feed", AUTH, NULL, buf, sizeof buf), 200);
    assert_int_equal(asks(f), n0 + 1);
    assert_string_equal(f->last_body, "{\"v\":1,\"op\":\"status\"}");
    assert_string_equal(body_of(buf),
                        "{\"status\":{\"v\":1,\"ok\":true,\"result\":{\"as\":\"ops\"}},"
                        "\"feed\":{\"sightings\":[],\"events\":[]}}");
    /* A refused login: 401 and no feed read. */
    f->answer_st = RP_ERR_FORBIDDEN;
    int feeds = f->feeds;
    assert_int_equal(request(f, "GET", "/console/api/feed", AUTH, NULL, buf, sizeof buf), 401);
    assert_non_null(strstr(body_of(buf), "refused this user and password"));
    assert_int_equal(f->feeds, feeds);
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, "{\"v\":1,\"op\":\"gates\"}",
                             buf, sizeof buf), 401);
    f->answer_st = RP_ERR_TIMEOUT;
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, "{\"v\":1,\"op\":\"gates\"}",
                             buf, sizeof buf), 504);
    f->answer_st = RP_OK;
}

/* A user control.allowed_users does not admit is refused at once (403),
 * nothing sent; the list changing (a reload) is followed. */
static void test_user_not_allowed(void **state) {
    fixture *f = *state;
    static char buf[8192];
    f->answer_st = RP_OK;
    int n0 = asks(f);
    /* "eve:pw" */
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON "Authorization: Basic ZXZlOnB3\r\n",
                             "{\"v\":1,\"op\":\"gates\"}", buf, sizeof buf), 403);
    assert_non_null(strstr(body_of(buf), "not in control.allowed_users"));
    assert_int_equal(request(f, "GET", "/console/api/feed", "Authorization: Basic ZXZlOnB3\r\n",
                             NULL, buf, sizeof buf), 403);
    assert_int_equal(asks(f), n0);
    free(f->cfg.control.allowed_users.items[1]);
    f->cfg.control.allowed_users.items[1] = strdup("eve");
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON "Authorization: Basic ZXZlOnB3\r\n",
                             "{\"v\":1,\"op\":\"gates\"}", buf, sizeof buf), 200);
    assert_string_equal(f->last_user, "eve");
    assert_int_equal(request(f, "POST", "/console/api/ask", JSON AUTH, "{\"v\":1,\"op\":\"gates\"}",
                             buf, sizeof buf), 403);
    free(f->cfg.control.allowed_users.items[1]);
    f->cfg.control.allowed_users.items[1] = strdup("ops");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_follow_the_key),
        cmocka_unit_test(test_sign_in_rules),
        cmocka_unit_test(test_signed_in_requests),
        cmocka_unit_test(test_user_not_allowed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
