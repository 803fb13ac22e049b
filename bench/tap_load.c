/*
 * tap_load - the load generator of bench/tap (rabbitmq-c, blocking, one
 * connection). Not part of reaper.
 *
 *   tap_load publish QUEUE N RATE   publishes N persistent messages to QUEUE
 *       through the default exchange, body "<i> <sent Unix microseconds>",
 *       RATE per second (0: as fast as the connection goes); prints the
 *       seconds it took.
 *   tap_load wait QUEUE N TIMEOUT_S  polls QUEUE's ready count (passive
 *       declare, every 2 ms) until it reaches N; prints the seconds since
 *       the call began, or exits 1 on time-out.
 *   tap_load consume QUEUE N PREFETCH [EXCHANGE]  consumes N messages from
 *       QUEUE with that prefetch and a multiple ack every 250 (as reaperd's
 *       tap acks a transaction's worth), then acks the rest; prints the
 *       seconds it took. With EXCHANGE, also what the contract has every
 *       reaper publish for a parked dead letter: one event per message,
 *       shaped as reaperd's feed sends a DEAD_LETTER/PARKED one (the same
 *       properties, routing key and body size), a run of them after each
 *       ack, on a connection of its own in confirm mode, every run's
 *       confirms awaited before the next message is taken.
 *
 * Connection from REAPER_BROKER_URL and REAPER_BROKER_PASSWORD_FILE.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rp_amqp_feed.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "tap_load: %s\n", what);
    exit(2);
}

static amqp_connection_state_t connect_broker(void) {
    const char *u = getenv("REAPER_BROKER_URL");
    const char *pf = getenv("REAPER_BROKER_PASSWORD_FILE");
    if (u == NULL || pf == NULL) die("REAPER_BROKER_URL and REAPER_BROKER_PASSWORD_FILE needed");
    char url[512], pw[256] = "";
    snprintf(url, sizeof url, "%s", u);
    FILE *f = fopen(pf, "r");
    if (f == NULL || fgets(pw, sizeof pw, f) == NULL) die("cannot read the password file");
    fclose(f);
    pw[strcspn(pw, "\r\n")] = '\0';
    struct amqp_connection_info info;
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) die("bad URL");
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK) die("cannot connect");
    if (amqp_login(c, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, pw)
            .reply_type != AMQP_RESPONSE_NORMAL)
        die("login failed");
    amqp_channel_open(c, 1);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) die("channel.open failed");
    return c;
}

/* The events of one run: count messages to exchange, as reaperd's feed
 * publishes them (rp_amqp_feed.c: content type, persistent, message id,
 * timestamp, type, app id; bench/tap's event was 475 bytes of MessagePack
 * with routing key broker.dead_letter.parked), then every confirm. */
static void publish_events(amqp_connection_state_t ev, const char *exchange, long count,
                           long *seq) {
    static char body[475];
    if (body[0] == 0) memset(body, 'x', sizeof body);
    amqp_basic_properties_t p;
    for (long i = 0; i < count; i++) {
        char id[32];
        snprintf(id, sizeof id, "ledger-%ld", ++*seq);
        rp_amqp_feed_props(&p, "application/msgpack", id, (uint64_t)now_s(), "QueueReaped");
        if (amqp_basic_publish(ev, 1, amqp_cstring_bytes(exchange),
                               amqp_cstring_bytes("broker.dead_letter.parked"), 0, 0, &p,
                               (amqp_bytes_t){sizeof body, body}) != AMQP_STATUS_OK)
            die("event publish failed");
    }
    for (;;) { /* the confirms, up to the last published */
        amqp_frame_t f;
        if (amqp_simple_wait_frame(ev, &f) != AMQP_STATUS_OK) die("waiting for confirms failed");
        if (f.frame_type != AMQP_FRAME_METHOD || f.payload.method.id != AMQP_BASIC_ACK_METHOD)
            die("an event was not confirmed");
        amqp_basic_ack_t *a = f.payload.method.decoded;
        if ((long)a->delivery_tag >= *seq) break;
    }
    amqp_maybe_release_buffers(ev);
}

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && strcmp(argv[1], "consume") == 0)) {
        fprintf(stderr, "usage: tap_load publish QUEUE N RATE | wait QUEUE N TIMEOUT_S | "
                        "consume QUEUE N PREFETCH [EXCHANGE]\n");
        return 2;
    }
    amqp_connection_state_t c = connect_broker();
    const char *queue = argv[2];
    long n = atol(argv[3]);
    double t0 = now_s();
    if (strcmp(argv[1], "publish") == 0) {
        double rate = atof(argv[4]);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
        p.delivery_mode = 2;
        for (long i = 0; i < n; i++) {
            if (rate > 0) {
                double due = t0 + i / rate;
                double wait = due - now_s();
                if (wait > 0) usleep((useconds_t)(wait * 1e6));
            }
            char body[64];
            snprintf(body, sizeof body, "%ld %lld", i, (long long)(now_s() * 1e6));
            if (amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(queue), 0, 0,
                                   &p, amqp_cstring_bytes(body)) != AMQP_STATUS_OK)
                die("publish failed");
        }
        /* A round trip, so that everything sent has reached the broker. */
        amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 1, 0, 0, 0, amqp_empty_table);
        if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) die("declare failed");
        printf("%.3f\n", now_s() - t0);
    } else if (strcmp(argv[1], "wait") == 0) {
        double timeout = atof(argv[4]);
        for (;;) {
            amqp_queue_declare_ok_t *ok = amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 1, 0,
                                                             0, 0, amqp_empty_table);
            if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL || ok == NULL)
                die("declare failed");
            if ((long)ok->message_count >= n) break;
            if (now_s() - t0 > timeout) return 1;
            amqp_maybe_release_buffers(c);
            usleep(2000);
        }
        printf("%.3f\n", now_s() - t0);
    } else if (strcmp(argv[1], "consume") == 0) {
        long prefetch = atol(argv[4]);
        if (prefetch < 1 || prefetch > 65535) die("PREFETCH: 1 to 65535");
        amqp_basic_qos(c, 1, 0, (uint16_t)prefetch, 0);
        if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) die("basic.qos failed");
        amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                           amqp_empty_table);
        if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) die("basic.consume failed");
        const char *exchange = argc == 6 ? argv[5] : NULL;
        amqp_connection_state_t ev = NULL;
        long seq = 0; /* events published so far: one per message taken */
        if (exchange != NULL) {
            ev = connect_broker();
            amqp_confirm_select(ev, 1);
            if (amqp_get_rpc_reply(ev).reply_type != AMQP_RESPONSE_NORMAL)
                die("confirm.select failed");
        }
        uint64_t last = 0;
        for (long got = 1; got <= n; got++) {
            amqp_envelope_t e;
            amqp_maybe_release_buffers(c);
            if (amqp_consume_message(c, &e, NULL, 0).reply_type != AMQP_RESPONSE_NORMAL)
                die("consuming failed");
            last = e.delivery_tag;
            amqp_destroy_envelope(&e);
            if (got % 250 == 0) {
                if (amqp_basic_ack(c, 1, last, 1) != AMQP_STATUS_OK) die("ack failed");
                if (ev != NULL) publish_events(ev, exchange, got - seq, &seq);
            }
        }
        if (n > 0 && amqp_basic_ack(c, 1, last, 1) != AMQP_STATUS_OK) die("ack failed");
        if (ev != NULL && n > seq) publish_events(ev, exchange, n - seq, &seq);
        if (ev != NULL) {
            amqp_connection_close(ev, AMQP_REPLY_SUCCESS);
            amqp_destroy_connection(ev);
        }
        printf("%.3f\n", now_s() - t0);
    } else {
        die("unknown mode");
    }
    amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    return 0;
}
