/*
 * The loop's publisher (adapters/rabbitmq/rp_amqp_publisher.h) on its hard
 * paths, driven by a real libevent loop:
 *  - the broker stays away (a closed port): retry publishes wait in the
 *    bounded queue; past the bound each one is settled DROPPED on the next
 *    loop turn, never inside the call; a timer still fires on time (the
 *    loop is not blocked); freeing settles what waits as DROPPED;
 *  - the broker is up: past the bound (queued + in flight) a publish is
 *    DROPPED at once, the others are confirmed, and exactly the confirmed
 *    ones reach a queue bound to the exchange;
 *  - a backlog queued before the connection is up goes out in batches,
 *    in order, each confirmed;
 *  - a memory alarm (connection.blocked): publishes are held, the loop
 *    keeps its timers, and all go out once the alarm is lifted;
 *  - a broker that stops reading before it says anything (a proxy in
 *    between that stops reading, as a broker does once an alarm blocks a
 *    publishing connection, before its connection.blocked arrives): the
 *    publisher writes only what the socket has room for, the loop keeps
 *    its timers, and everything goes out in order once the reading resumes;
 *    over plain TCP and over TLS.
 */
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
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "feed_common.h"
#include "itest.h"
#include "rp_amqp_conn.h"
#include "rp_amqp_publisher.h"
#include "rp_log.h"

typedef struct world {
    struct event_base *base;
    rp_amqp_conn *conn;
    rp_amqp_publisher *pub;
    bool up;
    size_t outcomes[RP_PUBLISH_OUTCOME_COUNT_];
    bool in_call; /* set while rp_amqp_publisher_publish runs */
    bool settled_in_call;
    bool blocked_seen; /* connection.blocked came */
} world;

static void on_done(void *arg, rp_publish_outcome o) {
    world *w = arg;
    if (w->in_call) w->settled_in_call = true;
    w->outcomes[o]++;
}

static void on_state(void *arg, rp_amqp_state s, const char *why) {
    (void)why;
    world *w = arg;
    w->up = s == RP_AMQP_UP;
    if (w->pub == NULL) return;
    if (s == RP_AMQP_UP) rp_amqp_publisher_on_up(w->pub);
    else if (s == RP_AMQP_DOWN) rp_amqp_publisher_on_down(w->pub);
}

static void on_frame(void *arg, const amqp_frame_t *f) {
    world *w = arg;
    if (f->channel == 0 && f->frame_type == AMQP_FRAME_METHOD &&
        f->payload.method.id == AMQP_CONNECTION_BLOCKED_METHOD)
        w->blocked_seen = true;
    if (w->pub) (void)rp_amqp_publisher_frame(w->pub, f);
}

static bool on_setup(void *arg, amqp_connection_state_t c, char *err, size_t n) {
    (void)arg;
    return rp_amqp_publisher_setup(c, err, n);
}

/* ca_file: NULL for amqp://; the CA of an amqps:// URL. */
static void world_open_ca(world *w, const char *url, const char *ca_file) {
    memset(w, 0, sizeof *w);
    w->base = event_base_new();
    assert_non_null(w->base);
    rp_amqp_params p = {
        .url = url,
        .password = itest_broker_password(),
        .heartbeat_seconds = 10,
        .connect_timeout_ms = 2000,
        .connection_name = "test_feed_publisher",
        .ca_file = ca_file,
        .verify_peer = ca_file != NULL,
    };
    rp_amqp_hooks h = {.on_state = on_state, .on_frame = on_frame, .on_setup = on_setup, .arg = w};
    const char *err = NULL;
    w->conn = rp_amqp_conn_new(w->base, &p, &h, &err);
    assert_non_null(w->conn);
    w->pub = rp_amqp_publisher_new(w->conn);
    assert_non_null(w->pub);
    assert_int_equal(rp_amqp_conn_start(w->conn), RP_OK);
}

static void world_open(world *w, const char *url) { world_open_ca(w, url, NULL); }

static void world_close(world *w) {
    rp_amqp_publisher_free(w->pub);
    w->pub = NULL;
    rp_amqp_conn_free(w->conn);
    event_base_free(w->base);
}

/* Runs the loop for up to ms, or until stop(w) says so. */
static void run_until(world *w, int ms, bool (*stop)(const world *)) {
    long long end = itest_mono_ms() + ms;
    while (itest_mono_ms() < end && !(stop && stop(w))) {
        struct timeval tv = {0, 20000};
        event_base_loopexit(w->base, &tv);
        event_base_dispatch(w->base);
    }
}

static rp_status publish_n(world *w, const char *exchange, int n) {
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "ledger-%d", i + 1);
        amqp_basic_properties_t props;
        memset(&props, 0, sizeof props);
        props._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
        props.message_id = amqp_cstring_bytes(id);
        props.delivery_mode = 2;
        rp_publish pub = {
            .exchange = exchange,
            .routing_key = "job_queue.lease_expired.requeued",
            .props = &props,
            .body = {(const uint8_t *)"x", 1},
            .retry = true,
            .done = on_done,
            .arg = w,
        };
        w->in_call = true;
        rp_status st = rp_amqp_publisher_publish(w->pub, &pub);
        w->in_call = false;
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

static bool timer_fired;
static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    timer_fired = true;
}

static void test_broker_away_overflow_dropped(void **state) {
    (void)state;
    char url[256];
    snprintf(url, sizeof url, "amqp://reaper@127.0.0.1:%d/%%2f", itest_closed_port());
    world w;
    world_open(&w, url);
    rp_amqp_publisher_set_limit(w.pub, 10);
    run_until(&w, 300, NULL); /* the first connect attempt fails */
    assert_false(w.up);
    assert_int_equal(publish_n(&w, "vibey.reap.events.nowhere", 25), RP_OK);
    assert_false(w.settled_in_call); /* never from inside the call */
    /* A timer armed now fires on time: the loop is not held up. */
    struct event *t = evtimer_new(w.base, on_timer, NULL);
    struct timeval tv = {0, 100000};
    long long t0 = itest_mono_ms();
    timer_fired = false;
    evtimer_add(t, &tv);
    while (!timer_fired && itest_mono_ms() - t0 < 5000) event_base_loop(w.base, EVLOOP_ONCE);
    long long took = itest_mono_ms() - t0;
    event_free(t);
    fprintf(stderr, "100 ms timer with 10 publishes waiting for an absent broker fired after %lld ms\n",
            took);
    assert_true(timer_fired);
    assert_true(took < 1000);
    assert_int_equal(w.outcomes[RP_PUBLISH_DROPPED], 15);
    assert_int_equal(w.outcomes[RP_PUBLISH_CONFIRMED], 0);
    /* Retry publishes are not lost while the broker stays away. */
    run_until(&w, 1500, NULL);
    assert_int_equal(w.outcomes[RP_PUBLISH_DROPPED], 15);
    world_close(&w);
    assert_int_equal(w.outcomes[RP_PUBLISH_DROPPED], 25);
}

static bool is_up(const world *w) { return w->up; }
static size_t settled_want = 40;
static bool all_settled(const world *w) {
    size_t n = 0;
    for (int i = 0; i < RP_PUBLISH_OUTCOME_COUNT_; i++) n += w->outcomes[i];
    return n == settled_want;
}

static void test_broker_up_overflow_dropped(void **state) {
    (void)state;
    char exchange[128];
    snprintf(exchange, sizeof exchange, "vibey.reap.events.itest.pub.%d", (int)getpid());
    feed_sub sub;
    feed_sub_open(&sub, exchange, NULL);
    world w;
    world_open(&w, itest_env("REAPER_BROKER_URL"));
    run_until(&w, 15000, is_up);
    assert_true(w.up);
    rp_amqp_publisher_set_limit(w.pub, 5);
    settled_want = 40;
    assert_int_equal(publish_n(&w, exchange, 40), RP_OK);
    assert_false(w.settled_in_call);
    run_until(&w, 10000, all_settled);
    assert_true(all_settled(&w));
    size_t confirmed = w.outcomes[RP_PUBLISH_CONFIRMED], dropped = w.outcomes[RP_PUBLISH_DROPPED];
    fprintf(stderr, "limit 5, 40 publishes at once: %zu confirmed, %zu dropped\n", confirmed,
            dropped);
    assert_int_equal(confirmed + dropped, 40);
    assert_true(confirmed >= 5);
    assert_true(dropped >= 1);
    feed_msgs got = {0};
    feed_sub_read(&sub, &got, confirmed, 1000, 10000);
    assert_int_equal(got.n, confirmed);
    world_close(&w);
    feed_msgs_free(&got);
    feed_sub_delete(&sub);
}

/* A backlog queued before the connection is up (as events committed while
 * the broker was away) goes out in batches over several loop turns, in
 * order, every one confirmed once. */
static void test_backlog_sent_in_order(void **state) {
    (void)state;
    char exchange[128];
    snprintf(exchange, sizeof exchange, "vibey.reap.events.itest.backlog.%d", (int)getpid());
    feed_sub sub;
    feed_sub_open(&sub, exchange, NULL);
    world w;
    world_open(&w, itest_env("REAPER_BROKER_URL"));
    assert_false(w.up);
    const int n = 3 * RP_AMQP_PUBLISH_BATCH + 17;
    assert_int_equal(publish_n(&w, exchange, n), RP_OK);
    settled_want = (size_t)n;
    run_until(&w, 30000, all_settled);
    assert_true(w.up);
    assert_int_equal(w.outcomes[RP_PUBLISH_CONFIRMED], n);
    feed_msgs got = {0};
    feed_sub_read(&sub, &got, (size_t)n, 1000, 20000);
    assert_int_equal(got.n, n);
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "ledger-%d", i + 1);
        assert_string_equal(got.items[i].message_id, id);
    }
    world_close(&w);
    feed_msgs_free(&got);
    feed_sub_delete(&sub);
}

/* The memory alarm (watermark 0 blocks every publishing connection) is
 * lifted by a watchdog process after RP_ALARM_WATCHDOG_S whatever happens,
 * so that a loop stuck in a write cannot leave the broker blocked for the
 * tests after this one (it then fails on the timer's gap, not by hanging).
 * It was 20 s: under CI's load rabbitmqctl took long enough (setting the
 * watermark, then polling status) that the watchdog lifted the alarm
 * during the test's 4 s of holding, and the broker confirmed 16,204 of
 * 20,000 publishes (RabbitMQ 4.0). The test now also checks the alarm is
 * still on after that hold, so that a lifted alarm says so. */
#define RP_ALARM_WATCHDOG_S 90
static pid_t alarm_watchdog = -1;

static void alarm_lift(void) {
    (void)itest_broker_ctl("set_vm_memory_high_watermark 0.4");
    if (alarm_watchdog > 0) {
        kill(alarm_watchdog, SIGKILL);
        waitpid(alarm_watchdog, NULL, 0);
        alarm_watchdog = -1;
    }
}

static void alarm_raise(void) {
    alarm_watchdog = fork();
    assert_true(alarm_watchdog >= 0);
    if (alarm_watchdog == 0) {
        sleep(RP_ALARM_WATCHDOG_S); /* deliberate: a watchdog, the alarm's longest life */
        _exit(itest_broker_ctl("set_vm_memory_high_watermark 0.4") == 0 ? 0 : 1);
    }
    assert_int_equal(itest_broker_ctl("set_vm_memory_high_watermark 0"), 0);
}

/* Whether the broker reports its memory alarm (rabbitmqctl status). */
static bool alarm_on(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s/scripts/services ctl %s status 2>/dev/null | grep -q 'Memory alarm'",
             itest_env("REAPER_SOURCE_DIR"), itest_broker_service());
    return system(cmd) == 0;
}

static long long tick_last, tick_gap_max;
static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    long long now = itest_mono_ms();
    if (tick_last && now - tick_last > tick_gap_max) tick_gap_max = now - tick_last;
    tick_last = now;
}

/* The backlog of the two tests below: BACKLOG_N publishes of 4 KiB (80 MB),
 * message ids ledger-1..N, queued at once; returns the loop's 20 ms tick
 * (its longest gap in tick_gap_max), started now. */
enum { BACKLOG_N = 20000 };
static struct event *publish_backlog(world *w, const char *exchange) {
    static uint8_t body[4096];
    memset(body, 'b', sizeof body);
    for (int i = 0; i < BACKLOG_N; i++) {
        char id[32];
        snprintf(id, sizeof id, "ledger-%d", i + 1);
        amqp_basic_properties_t props;
        memset(&props, 0, sizeof props);
        props._flags = AMQP_BASIC_MESSAGE_ID_FLAG;
        props.message_id = amqp_cstring_bytes(id);
        rp_publish pub = {.exchange = exchange, .routing_key = "k", .props = &props,
                          .body = {body, sizeof body}, .retry = true, .done = on_done, .arg = w};
        assert_int_equal(rp_amqp_publisher_publish(w->pub, &pub), RP_OK);
    }
    struct event *tick = event_new(w->base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 20000};
    tick_last = tick_gap_max = 0;
    evtimer_add(tick, &tv);
    return tick;
}

/* Once the broker takes bytes again: the whole backlog is confirmed and
 * reaches sub's queue in order, and the loop kept its tick meanwhile (500
 * publishes a turn: seen 25-48 ms at most). Frees tick. */
static void backlog_goes_out(world *w, feed_sub *sub, struct event *tick, const char *when) {
    tick_last = tick_gap_max = 0;
    settled_want = BACKLOG_N;
    run_until(w, 60000, all_settled);
    event_free(tick);
    fprintf(stderr, "%s: %zu confirmed, longest tick gap %lld ms\n", when,
            w->outcomes[RP_PUBLISH_CONFIRMED], tick_gap_max);
    assert_int_equal(w->outcomes[RP_PUBLISH_CONFIRMED], BACKLOG_N);
    assert_true(tick_gap_max < 1000);
    feed_msgs got = {0};
    feed_sub_read(sub, &got, BACKLOG_N, 2000, 30000);
    assert_int_equal(got.n, BACKLOG_N);
    for (int i = 0; i < BACKLOG_N; i += 997) {
        char id[32];
        snprintf(id, sizeof id, "ledger-%d", i + 1);
        assert_string_equal(got.items[i].message_id, id);
    }
    feed_msgs_free(&got);
}

/* A broker under a memory alarm tells a publishing connection
 * connection.blocked: stop publishing (it may stop reading the socket,
 * and a write of what is queued would then block the loop). The publisher
 * holds everything from then on (without the hold, RabbitMQ 3.10 was seen
 * taking and confirming all 80 MB in the alarm), the loop keeps its timers,
 * and when the alarm is lifted every publish goes out and is confirmed, in
 * order, with the loop still keeping its timers. */
static void test_blocked_broker_holds_publishes(void **state) {
    (void)state;
    char exchange[128];
    snprintf(exchange, sizeof exchange, "vibey.reap.events.itest.blocked.%d", (int)getpid());
    feed_sub sub;
    feed_sub_open(&sub, exchange, NULL);
    world w;
    world_open(&w, itest_env("REAPER_BROKER_URL"));
    run_until(&w, 15000, is_up);
    assert_true(w.up);
    long long raised_ms = itest_mono_ms();
    alarm_raise();
    /* The alarm takes effect at the node's next memory check. */
    bool on = false;
    ITEST_POLL((on = alarm_on()), 7500);
    assert_true(on);
    fprintf(stderr, "memory alarm on after %lld ms\n", itest_mono_ms() - raised_ms);
    enum { N = BACKLOG_N };
    struct event *tick = publish_backlog(&w, exchange);
    run_until(&w, 4000, NULL);
    size_t held = rp_amqp_publisher_pending(w.pub);
    fprintf(stderr, "memory alarm: %zu of %d publishes held, %zu confirmed, longest tick gap %lld "
                    "ms\n",
            held, N, w.outcomes[RP_PUBLISH_CONFIRMED], tick_gap_max);
    assert_true(w.blocked_seen); /* the broker said so at the first publish */
    if (!alarm_on())
        fail_msg("the memory alarm was lifted during the hold (%lld ms after it was raised; "
                 "the watchdog lifts it after %d s)",
                 itest_mono_ms() - raised_ms, RP_ALARM_WATCHDOG_S);
    assert_true(tick_gap_max < 1000);
    assert_int_equal(w.outcomes[RP_PUBLISH_CONFIRMED], 0);
    assert_int_equal(held, N);
    alarm_lift(); /* rabbitmqctl: the loop does not turn meanwhile */
    /* The 1.6 s once seen as a gap here was this test's own rabbitmqctl
     * call in alarm_lift: the gap is measured from here on. */
    backlog_goes_out(&w, &sub, tick, "after the alarm");
    world_close(&w);
    feed_sub_delete(&sub);
}

static int lift_on_teardown(void **state) {
    (void)state;
    alarm_lift();
    return 0;
}

/* ---- a proxy that stops reading ------------------------------------------- */

/* Forwards one client connection at a time to the broker; while paused it
 * reads nothing from the client (the broker's side still flows to the
 * client: heartbeats, confirms), as a broker reads nothing more from a
 * publishing connection it has blocked. Paused at most until resume_at
 * (a guard: a loop held in a write, as before the room check, is then
 * freed after a while and the test fails on the gap instead of hanging). */
typedef struct stall_proxy {
    int lfd, port;
    char host[64];
    int upstream_port;
    atomic_bool paused, stop;
    atomic_llong resume_at;
    atomic_llong client_bytes; /* taken from the client so far */
    pthread_t th;
} stall_proxy;

static bool proxy_copy(int from, int to, atomic_llong *count) {
    char buf[65536];
    ssize_t n = recv(from, buf, sizeof buf, 0);
    if (n <= 0) return false;
    if (count) atomic_fetch_add(count, n);
    for (ssize_t off = 0; off < n;) {
        ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w <= 0) return false;
        off += w;
    }
    return true;
}

static void *proxy_main(void *arg) {
    stall_proxy *x = arg;
    while (!atomic_load(&x->stop)) {
        struct pollfd a = {.fd = x->lfd, .events = POLLIN};
        if (poll(&a, 1, 50) <= 0) continue;
        int cfd = accept(x->lfd, NULL, NULL);
        if (cfd < 0) continue;
        int ufd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)x->upstream_port)};
        inet_pton(AF_INET, x->host, &sa.sin_addr);
        if (ufd < 0 || connect(ufd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(cfd);
            if (ufd >= 0) close(ufd);
            continue;
        }
        for (;;) {
            if (atomic_load(&x->stop)) break;
            if (atomic_load(&x->paused) && itest_mono_ms() >= atomic_load(&x->resume_at))
                atomic_store(&x->paused, false);
            bool paused = atomic_load(&x->paused);
            struct pollfd fds[2] = {{.fd = ufd, .events = POLLIN},
                                    {.fd = cfd, .events = paused ? 0 : POLLIN}};
            if (poll(fds, 2, 20) < 0) break;
            if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !proxy_copy(ufd, cfd, NULL))
                break;
            if (!atomic_load(&x->paused) && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
                !proxy_copy(cfd, ufd, &x->client_bytes))
                break;
        }
        close(cfd);
        close(ufd);
    }
    return NULL;
}

/* Starts the proxy in front of broker's host and port (an amqp:// or
 * amqps:// URL) and writes the URL that goes through it into url: the same
 * host name (a TLS certificate's), the proxy's port. */
static void proxy_start(stall_proxy *x, const char *broker, char *url, size_t urlsize) {
    memset(x, 0, sizeof *x);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", broker);
    struct amqp_connection_info info;
    assert_int_equal(amqp_parse_url(copy, &info), AMQP_STATUS_OK);
    snprintf(x->host, sizeof x->host, "%s", strcmp(info.host, "localhost") ? info.host : "127.0.0.1");
    x->upstream_port = info.port;
    x->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(x->lfd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(bind(x->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(x->lfd, 4), 0);
    socklen_t n = sizeof sa;
    assert_int_equal(getsockname(x->lfd, (struct sockaddr *)&sa, &n), 0);
    x->port = ntohs(sa.sin_port);
    /* The broker's URL with the proxy's port: amqp[s]://user@HOST:PORT/vhost */
    const char *at = strchr(broker, '@');
    assert_non_null(at);
    const char *path = strchr(at, '/');
    snprintf(url, urlsize, "%.*s%s:%d%s", (int)(at + 1 - broker), broker, info.host, x->port,
             path ? path : "");
    assert_int_equal(pthread_create(&x->th, NULL, proxy_main, x), 0);
}

static void proxy_stop(stall_proxy *x) {
    atomic_store(&x->stop, true);
    pthread_join(x->th, NULL);
    close(x->lfd);
}

/* A broker that reads nothing more from the connection without saying why
 * (a resource alarm blocks a publishing connection after its next publish
 * and connection.blocked may come after reaper has written much more; a
 * stalled peer says nothing at all): the publisher writes only what the
 * socket has room for, so the loop keeps its timers while 80 MB wait, and
 * once the reading resumes every publish goes out, in order, confirmed.
 * Before the room check the flush's write waited in poll() for as long as
 * the broker read nothing: CI saw a 4.0 broker's alarm hold the loop 88 s. */
static void stalled_reader(const char *broker, const char *ca_file) {
    char exchange[128], url[300];
    snprintf(exchange, sizeof exchange, "vibey.reap.events.itest.stalled.%d", (int)getpid());
    feed_sub sub;
    feed_sub_open(&sub, exchange, NULL);
    stall_proxy x;
    proxy_start(&x, broker, url, sizeof url);
    world w;
    world_open_ca(&w, url, ca_file);
    run_until(&w, 15000, is_up);
    assert_true(w.up);
    enum { N = BACKLOG_N, PAUSE_GUARD_MS = 8000 };
    atomic_store(&x.resume_at, itest_mono_ms() + PAUSE_GUARD_MS);
    atomic_store(&x.paused, true);
    long long taken_before = atomic_load(&x.client_bytes);
    struct event *tick = publish_backlog(&w, exchange);
    run_until(&w, 3000, NULL);
    bool still_paused = atomic_load(&x.paused);
    size_t held = rp_amqp_publisher_pending(w.pub);
    fprintf(stderr,
            "broker side not reading: %zu of %d publishes pending, %zu confirmed, longest tick "
            "gap %lld ms, proxy still paused: %s\n",
            held, N, w.outcomes[RP_PUBLISH_CONFIRMED], tick_gap_max, still_paused ? "yes" : "no");
    assert_true(still_paused); /* else the guard freed a held loop */
    assert_true(tick_gap_max < 1000);
    assert_int_equal(atomic_load(&x.client_bytes), taken_before);
    assert_int_equal(held, N);
    atomic_store(&x.paused, false);
    backlog_goes_out(&w, &sub, tick, "reading again");
    world_close(&w);
    proxy_stop(&x);
    feed_sub_delete(&sub);
}

static void test_stalled_reader_does_not_hold_the_loop(void **state) {
    (void)state;
    stalled_reader(itest_env("REAPER_BROKER_URL"), NULL);
}

/* The same over TLS: the bytes go through rabbitmq-c's SSL socket, each
 * publish's size measured by reaper's encoder against the room. */
static void test_stalled_reader_over_tls(void **state) {
    (void)state;
    stalled_reader(itest_env("RP_BROKER_TLS_URL"), itest_env("RP_TLS_CA_FILE"));
}

int main(void) {
    evthread_use_pthreads();
    /* Info: "broker unblocked publishing" says when an alarm was lifted. */
    rp_log_setup(RP_LOG_INFO, RP_LOG_FORMAT_TEXT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broker_away_overflow_dropped),
        cmocka_unit_test(test_broker_up_overflow_dropped),
        cmocka_unit_test(test_backlog_sent_in_order),
        cmocka_unit_test(test_stalled_reader_does_not_hold_the_loop),
        cmocka_unit_test(test_stalled_reader_over_tls),
        cmocka_unit_test_teardown(test_blocked_broker_holds_publishes, lift_on_teardown),
    };
    return cmocka_run_group_tests_name("feed_publisher", tests, NULL, NULL);
}
