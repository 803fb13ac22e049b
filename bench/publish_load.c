/*
 * publish_load: the publisher's throughput (bench/publish).
 *
 *   publish_load reaper|library COUNT SIZE EXCHANGE
 *
 * Publishes COUNT messages of SIZE bytes to EXCHANGE (declared fanout,
 * auto-delete, by the caller) with publisher confirms and prints one line:
 *   MODE COUNT SIZE SECONDS CONFIRMED
 * reaper:  rp_amqp_publisher on a libevent loop, as reaperd publishes its
 *          events and replays (every publish queued at once, the loop run
 *          until all are settled);
 * library: the baseline, rabbitmq-c alone on a blocking socket:
 *          amqp_basic_publish of all of them, then the confirms read.
 * The broker is REAPER_BROKER_URL with the password in
 * REAPER_BROKER_PASSWORD_FILE.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_amqp_conn.h"
#include "rp_amqp_publisher.h"
#include "rp_log.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char password[256];

static void read_password(void) {
    const char *f = getenv("REAPER_BROKER_PASSWORD_FILE");
    FILE *fp = f ? fopen(f, "r") : NULL;
    if (fp == NULL) return;
    if (fgets(password, sizeof password, fp) == NULL) password[0] = '\0';
    password[strcspn(password, "\r\n")] = '\0';
    fclose(fp);
}

typedef struct run {
    struct event_base *base;
    rp_amqp_conn *conn;
    rp_amqp_publisher *pub;
    bool up;
    long settled, confirmed;
} run;

static void on_state(void *arg, rp_amqp_state s, const char *why) {
    (void)why;
    run *r = arg;
    r->up = s == RP_AMQP_UP;
    if (r->pub == NULL) return;
    if (s == RP_AMQP_UP) rp_amqp_publisher_on_up(r->pub);
    else if (s == RP_AMQP_DOWN) rp_amqp_publisher_on_down(r->pub);
}

static void on_frame(void *arg, const amqp_frame_t *f) {
    run *r = arg;
    if (r->pub) (void)rp_amqp_publisher_frame(r->pub, f);
}

static bool on_setup(void *arg, amqp_connection_state_t c, char *err, size_t n) {
    (void)arg;
    return rp_amqp_publisher_setup(c, err, n);
}

static void on_done(void *arg, rp_publish_outcome o) {
    run *r = arg;
    r->settled++;
    if (o == RP_PUBLISH_CONFIRMED) r->confirmed++;
}

static void turn(run *r) {
    struct timeval tv = {0, 20000};
    event_base_loopexit(r->base, &tv);
    event_base_dispatch(r->base);
}

static int run_reaper(long count, size_t size, const char *exchange, double *secs, long *ok) {
    run r = {0};
    r.base = event_base_new();
    rp_amqp_params p = {.url = getenv("REAPER_BROKER_URL"), .password = password,
                        .heartbeat_seconds = 30, .connect_timeout_ms = 5000,
                        .connection_name = "publish_load"};
    rp_amqp_hooks h = {.on_state = on_state, .on_frame = on_frame, .on_setup = on_setup, .arg = &r};
    const char *err = NULL;
    r.conn = rp_amqp_conn_new(r.base, &p, &h, &err);
    if (r.conn == NULL) {
        fprintf(stderr, "publish_load: %s\n", err);
        return 1;
    }
    r.pub = rp_amqp_publisher_new(r.conn);
    if (rp_amqp_conn_start(r.conn) != RP_OK) return 1;
    double deadline = now_s() + 15;
    while (!r.up && now_s() < deadline) turn(&r);
    if (!r.up) {
        fprintf(stderr, "publish_load: no connection\n");
        return 1;
    }
    uint8_t *body = malloc(size ? size : 1);
    memset(body, 'p', size);
    double t0 = now_s();
    for (long i = 0; i < count; i++) {
        rp_publish pub = {.exchange = exchange, .routing_key = "k", .body = {body, size},
                          .retry = true, .done = on_done, .arg = &r};
        if (rp_amqp_publisher_publish(r.pub, &pub) != RP_OK) return 1;
    }
    deadline = t0 + 300;
    while (r.settled < count && now_s() < deadline) event_base_loop(r.base, EVLOOP_ONCE);
    *secs = now_s() - t0;
    *ok = r.confirmed;
    rp_amqp_publisher_free(r.pub);
    rp_amqp_conn_free(r.conn);
    event_base_free(r.base);
    free(body);
    return 0;
}

static int run_library(long count, size_t size, const char *exchange, double *secs, long *ok) {
    char url[512];
    snprintf(url, sizeof url, "%s", getenv("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) return 1;
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK) return 1;
    amqp_rpc_reply_t r = amqp_login(c, info.vhost, 0, 131072, 30, AMQP_SASL_METHOD_PLAIN,
                                    info.user, password);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) return 1;
    amqp_channel_open(c, 1);
    amqp_confirm_select(c, 1);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) return 1;
    uint8_t *body = malloc(size ? size : 1);
    memset(body, 'p', size);
    amqp_bytes_t b = {size, body};
    double t0 = now_s();
    for (long i = 0; i < count; i++)
        if (amqp_basic_publish(c, 1, amqp_cstring_bytes(exchange), amqp_cstring_bytes("k"), 0, 0,
                               NULL, b) != AMQP_STATUS_OK)
            return 1;
    uint64_t acked = 0;
    while (acked < (uint64_t)count) {
        amqp_frame_t f;
        if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) return 1;
        if (f.frame_type == AMQP_FRAME_METHOD && f.payload.method.id == AMQP_BASIC_ACK_METHOD)
            acked = ((amqp_basic_ack_t *)f.payload.method.decoded)->delivery_tag;
        amqp_maybe_release_buffers(c);
    }
    *secs = now_s() - t0;
    *ok = (long)acked;
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    free(body);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: publish_load reaper|library COUNT SIZE EXCHANGE\n");
        return 2;
    }
    evthread_use_pthreads();
    rp_log_setup(RP_LOG_WARN, RP_LOG_FORMAT_TEXT);
    read_password();
    long count = atol(argv[2]);
    size_t size = (size_t)atol(argv[3]);
    double secs = 0;
    long ok = 0;
    int rc = strcmp(argv[1], "reaper") == 0 ? run_reaper(count, size, argv[4], &secs, &ok)
                                            : run_library(count, size, argv[4], &secs, &ok);
    if (rc != 0) {
        fprintf(stderr, "publish_load: %s failed\n", argv[1]);
        return 1;
    }
    printf("%s %ld %zu %.3f %ld\n", argv[1], count, size, secs, ok);
    return ok == count ? 0 : 1;
}
