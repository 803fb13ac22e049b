/*
 * dl_storm - the load generator of bench/deadletter (built only with
 * -DREAPER_BENCH=ON). One blocking rabbitmq-c connection per process, on
 * REAPER_BROKER_URL with the password from REAPER_BROKER_PASSWORD_FILE.
 *
 *   dl_storm setup --queue Q --dlx X --dlq D
 *       Declares the fanout exchange X, the classic queue D bound to it, and
 *       the classic queue Q with x-dead-letter-exchange X (all non-durable,
 *       auto-delete off: the script deletes them).
 *   dl_storm storm --queue Q --count N --prefix P --out FILE [--rate R] [--size B]
 *       Publishes N messages of B bytes (default 256) to Q with message_id
 *       P-<i>, then consumes Q (prefetch 1000) and rejects each one without
 *       requeue, so the broker dead-letters it. With --rate, at most R
 *       rejects per second (a light storm). Writes one line per message to
 *       FILE: "message_id reject_unix_us". Prints one line:
 *       "rejected N first_us A last_us B rate R".
 *   dl_storm wait-depth --queue D --count N [--timeout S]
 *       Polls D (passive declare) until it holds at least N messages. Prints
 *       "reached_us T depth N"; exit 1 on time-out.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void ds_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void ds_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dl_storm: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static int64_t ds_now_us(void) { /* wall clock: compared with PostgreSQL's */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void ds_sleep_us(int64_t us) {
    if (us <= 0) return;
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static const char *ds_env(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') ds_die("%s is not set (eval \"$(scripts/services env)\")", name);
    return v;
}

static const char *ds_password(void) {
    static char buf[256];
    FILE *f = fopen(ds_env("REAPER_BROKER_PASSWORD_FILE"), "r");
    if (f == NULL || fgets(buf, sizeof buf, f) == NULL) ds_die("cannot read the broker password file");
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

static void ds_rpc_check(amqp_rpc_reply_t r, const char *what) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD || r.reply.id == AMQP_CONNECTION_CLOSE_METHOD)) {
        const amqp_channel_close_t *m = r.reply.decoded; /* same layout for both */
        ds_die("%s: the broker said %u %.*s", what, m->reply_code, (int)m->reply_text.len,
               (const char *)m->reply_text.bytes);
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
        ds_die("%s: %s", what, amqp_error_string2(r.library_error));
    ds_die("%s: failed", what);
}

static amqp_connection_state_t ds_connect(void) {
    static char url[512];
    snprintf(url, sizeof url, "%s", ds_env("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) ds_die("REAPER_BROKER_URL does not parse");
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (s == NULL || amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK)
        ds_die("cannot connect to the broker at %s", info.host);
    ds_rpc_check(amqp_login(c, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user,
                            ds_password()),
                 "broker login");
    amqp_channel_open(c, 1);
    ds_rpc_check(amqp_get_rpc_reply(c), "channel open");
    return c;
}

static void ds_close(amqp_connection_state_t c) {
    (void)amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    (void)amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

static const char *ds_arg(int argc, char **argv, const char *name, const char *dflt) {
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    if (dflt == NULL) ds_die("missing %s", name);
    return dflt;
}

static int ds_setup(int argc, char **argv) {
    const char *queue = ds_arg(argc, argv, "--queue", NULL);
    const char *dlx = ds_arg(argc, argv, "--dlx", NULL);
    const char *dlq = ds_arg(argc, argv, "--dlq", NULL);
    amqp_connection_state_t c = ds_connect();
    amqp_exchange_declare(c, 1, amqp_cstring_bytes(dlx), amqp_cstring_bytes("fanout"), 0, 0, 0, 0,
                          amqp_empty_table);
    ds_rpc_check(amqp_get_rpc_reply(c), "declaring the dead-letter exchange");
    amqp_queue_declare(c, 1, amqp_cstring_bytes(dlq), 0, 0, 0, 0, amqp_empty_table);
    ds_rpc_check(amqp_get_rpc_reply(c), "declaring the dead-letter queue");
    amqp_queue_bind(c, 1, amqp_cstring_bytes(dlq), amqp_cstring_bytes(dlx), amqp_cstring_bytes(""),
                    amqp_empty_table);
    ds_rpc_check(amqp_get_rpc_reply(c), "binding the dead-letter queue");
    amqp_table_entry_t arg = {.key = amqp_cstring_bytes("x-dead-letter-exchange"),
                              .value = {.kind = AMQP_FIELD_KIND_UTF8,
                                        .value.bytes = amqp_cstring_bytes(dlx)}};
    amqp_table_t args = {.num_entries = 1, .entries = &arg};
    amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 0, 0, 0, args);
    ds_rpc_check(amqp_get_rpc_reply(c), "declaring the work queue");
    ds_close(c);
    return 0;
}

/* Reads one delivery (blocking); returns false on a frame that is not one. */
static bool ds_next(amqp_connection_state_t c, amqp_envelope_t *env) {
    amqp_maybe_release_buffers(c);
    amqp_rpc_reply_t r = amqp_consume_message(c, env, NULL, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
        amqp_frame_t f;
        if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) ds_die("the connection broke");
        if (f.frame_type == AMQP_FRAME_METHOD &&
            (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
             f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD))
            ds_die("the broker closed the channel or the connection");
        return false;
    }
    ds_die("consuming: the connection broke");
}

static int ds_storm(int argc, char **argv) {
    const char *queue = ds_arg(argc, argv, "--queue", NULL);
    const char *prefix = ds_arg(argc, argv, "--prefix", NULL);
    const char *out_path = ds_arg(argc, argv, "--out", NULL);
    long count = atol(ds_arg(argc, argv, "--count", NULL));
    double rate = atof(ds_arg(argc, argv, "--rate", "0"));
    long size = atol(ds_arg(argc, argv, "--size", "256"));
    if (count < 1 || size < 1 || size > 1048576 || rate < 0) ds_die("bad --count, --size or --rate");
    FILE *out = fopen(out_path, "w");
    if (out == NULL) ds_die("cannot write %s", out_path);
    char *body = malloc((size_t)size);
    if (body == NULL) ds_die("out of memory");
    for (long i = 0; i < size; i++) body[i] = (char)('a' + i % 26);

    amqp_connection_state_t c = ds_connect();
    amqp_basic_properties_t props = {0};
    props._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG |
                   AMQP_BASIC_TIMESTAMP_FLAG;
    props.content_type = amqp_cstring_bytes("application/octet-stream");
    char id[128];
    for (long i = 0; i < count; i++) {
        snprintf(id, sizeof id, "%s-%ld", prefix, i);
        props.message_id = amqp_cstring_bytes(id);
        props.timestamp = (uint64_t)(ds_now_us() / 1000000);
        if (amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(queue), 0, 0,
                               &props, (amqp_bytes_t){(size_t)size, body}) != AMQP_STATUS_OK)
            ds_die("publishing failed");
    }
    amqp_basic_qos(c, 1, 0, 1000, 0);
    ds_rpc_check(amqp_get_rpc_reply(c), "setting the prefetch");
    amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    ds_rpc_check(amqp_get_rpc_reply(c), "consuming");

    int64_t first = 0, last = 0;
    for (long done = 0; done < count;) {
        amqp_envelope_t env;
        if (!ds_next(c, &env)) continue;
        if (rate > 0 && first != 0) /* pace: reject i at first + i / rate */
            ds_sleep_us(first + (int64_t)((double)done * 1e6 / rate) - ds_now_us());
        if (amqp_basic_reject(c, 1, env.delivery_tag, 0) != AMQP_STATUS_OK) ds_die("reject failed");
        last = ds_now_us();
        if (first == 0) first = last;
        fprintf(out, "%.*s %lld\n", (int)env.message.properties.message_id.len,
                (const char *)env.message.properties.message_id.bytes, (long long)last);
        amqp_destroy_envelope(&env);
        done++;
    }
    ds_close(c);
    fclose(out);
    free(body);
    double secs = (double)(last - first) / 1e6;
    printf("rejected %ld first_us %lld last_us %lld rate %.0f\n", count, (long long)first,
           (long long)last, secs > 0 ? (double)count / secs : 0.0);
    return 0;
}

static int ds_wait_depth(int argc, char **argv) {
    const char *queue = ds_arg(argc, argv, "--queue", NULL);
    long count = atol(ds_arg(argc, argv, "--count", NULL));
    double timeout = atof(ds_arg(argc, argv, "--timeout", "300"));
    amqp_connection_state_t c = ds_connect();
    int64_t deadline = ds_now_us() + (int64_t)(timeout * 1e6);
    for (;;) {
        amqp_queue_declare_ok_t *ok =
            amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 1, 0, 0, 0, amqp_empty_table);
        ds_rpc_check(amqp_get_rpc_reply(c), "reading the queue depth");
        int64_t now = ds_now_us();
        if (ok != NULL && (long)ok->message_count >= count) {
            printf("reached_us %lld depth %u\n", (long long)now, ok->message_count);
            ds_close(c);
            return 0;
        }
        if (now > deadline) {
            fprintf(stderr, "dl_storm: %s holds %u of %ld after %.0f s\n", queue,
                    ok ? ok->message_count : 0, count, timeout);
            ds_close(c);
            return 1;
        }
        ds_sleep_us(2000);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) ds_die("usage: dl_storm setup|storm|wait-depth ...");
    if (strcmp(argv[1], "setup") == 0) return ds_setup(argc, argv);
    if (strcmp(argv[1], "storm") == 0) return ds_storm(argc, argv);
    if (strcmp(argv[1], "wait-depth") == 0) return ds_wait_depth(argc, argv);
    ds_die("unknown command %s", argv[1]);
}
