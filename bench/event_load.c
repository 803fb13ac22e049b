#define _GNU_SOURCE
/*
 * event_load - the event-delay probe of bench/event_delay (built only with
 * -DREAPER_BENCH=ON). Blocking rabbitmq-c connections on REAPER_BROKER_URL
 * with the password from REAPER_BROKER_PASSWORD_FILE.
 *
 *   event_load --prefix P --n N [--settle S] [--gap MS] [--timeout S]
 *                [--events-exchange X]
 *
 * 1. Declares the classic queues P0000..P<N-1>, puts one message on each
 *    and holds it unacknowledged: one consumer per queue, each on its own
 *    channel of one connection.
 * 2. Binds two queues of its own (exclusive): one to amq.rabbitmq.event
 *    for consumer.deleted (the BASELINE: a plain subscriber to the very
 *    event reaperd acts on), one to the events exchange X (default
 *    vibey.reap.events) for broker.holder_gone.surfaced (reaperd's
 *    judgement, as the world learns it: committed on the ledger, then
 *    published with confirms).
 * 3. Sleeps S seconds (default 12: two statistics emissions, so that the
 *    management API shows every message unacknowledged), then cancels the
 *    consumers one by one, GAP ms apart (default 300), leaving the channels
 *    open: each queue then holds work whose holder is gone.
 * 4. Reads both queues until every judgement arrived or the time-out
 *    (default 30 s) passed. For each queue: the broker's timestamp_in_ms
 *    of its consumer.deleted, when the plain subscriber got it, and when
 *    reaperd's judgement arrived.
 * Prints one line per queue: "q I event_ms E baseline_ms B judged_ms J"
 * (J = -1 when no judgement came), then the queues are deleted.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EL_MAX 512

static int64_t el_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void el_die(const char *what) {
    fprintf(stderr, "event_load: %s\n", what);
    exit(2);
}

static void el_ok(amqp_connection_state_t c, const char *what) {
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) el_die(what);
}

static amqp_connection_state_t el_connect(void) {
    const char *url_env = getenv("REAPER_BROKER_URL"), *pwf = getenv("REAPER_BROKER_PASSWORD_FILE");
    if (!url_env || !pwf) el_die("REAPER_BROKER_URL and REAPER_BROKER_PASSWORD_FILE must be set");
    static char url[512], pw[256];
    snprintf(url, sizeof url, "%s", url_env);
    FILE *f = fopen(pwf, "r");
    if (!f || !fgets(pw, sizeof pw, f)) el_die("cannot read the password file");
    fclose(f);
    pw[strcspn(pw, "\r\n")] = '\0';
    struct amqp_connection_info info;
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) el_die("bad REAPER_BROKER_URL");
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (!s || amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK) el_die("connect");
    if (amqp_login(c, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, pw).reply_type !=
        AMQP_RESPONSE_NORMAL)
        el_die("login");
    amqp_channel_open(c, 1);
    el_ok(c, "channel");
    return c;
}

static bool el_header_i64(const amqp_basic_properties_t *p, const char *key, int64_t *out) {
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG)) return false;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (e->key.len == strlen(key) && memcmp(e->key.bytes, key, e->key.len) == 0 &&
            e->value.kind == AMQP_FIELD_KIND_I64) {
            *out = e->value.value.i64;
            return true;
        }
    }
    return false;
}

static bool el_header_str(const amqp_basic_properties_t *p, const char *key, char *buf, size_t n) {
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG)) return false;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (e->key.len == strlen(key) && memcmp(e->key.bytes, key, e->key.len) == 0 &&
            (e->value.kind == AMQP_FIELD_KIND_UTF8 || e->value.kind == AMQP_FIELD_KIND_BYTES) &&
            e->value.value.bytes.len < n) {
            memcpy(buf, e->value.value.bytes.bytes, e->value.value.bytes.len);
            buf[e->value.value.bytes.len] = '\0';
            return true;
        }
    }
    return false;
}

static amqp_bytes_t el_bind_own(amqp_connection_state_t c, const char *exchange, const char *key) {
    amqp_queue_declare_ok_t *d = amqp_queue_declare(c, 1, amqp_empty_bytes, 0, 0, 1, 1, amqp_empty_table);
    el_ok(c, "declare own queue");
    amqp_bytes_t name = amqp_bytes_malloc_dup(d->queue);
    amqp_queue_bind(c, 1, name, amqp_cstring_bytes(exchange), amqp_cstring_bytes(key),
                    amqp_empty_table);
    el_ok(c, "bind own queue");
    amqp_basic_consume(c, 1, name, amqp_empty_bytes, 0, 1, 1, amqp_empty_table);
    el_ok(c, "consume own queue");
    return name;
}

int main(int argc, char **argv) {
    const char *prefix = NULL, *events_exchange = "vibey.reap.events";
    int n = 20, settle = 12, gap = 300, timeout = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--prefix")) prefix = argv[i + 1];
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--settle")) settle = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gap")) gap = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout")) timeout = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--events-exchange")) events_exchange = argv[i + 1];
        else el_die("unknown option");
    }
    if (prefix == NULL || n < 1 || n > EL_MAX) el_die("usage: event_load --prefix P --n N (1..512)");

    /* The holder: one connection, channel 2+i holding queue i's message. */
    amqp_connection_state_t h = el_connect();
    static char names[EL_MAX][200];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s%04d", prefix, i);
        amqp_queue_delete(h, 1, amqp_cstring_bytes(names[i]), 0, 0);
        el_ok(h, "delete");
        amqp_queue_declare(h, 1, amqp_cstring_bytes(names[i]), 0, 0, 0, 0, amqp_empty_table);
        el_ok(h, "declare");
        amqp_basic_publish(h, 1, amqp_empty_bytes, amqp_cstring_bytes(names[i]), 0, 0, NULL,
                           amqp_cstring_bytes("work"));
        amqp_channel_t ch = (amqp_channel_t)(2 + i);
        amqp_channel_open(h, ch);
        el_ok(h, "channel open");
        amqp_basic_qos(h, ch, 0, 1, 0);
        el_ok(h, "qos");
        amqp_basic_consume(h, ch, amqp_cstring_bytes(names[i]), amqp_cstring_bytes("holder"), 0, 0,
                           0, amqp_empty_table);
        el_ok(h, "consume");
    }
    for (int got = 0; got < n; got++) {
        amqp_envelope_t env;
        struct timeval tv = {10, 0};
        amqp_maybe_release_buffers(h);
        if (amqp_consume_message(h, &env, &tv, 0).reply_type != AMQP_RESPONSE_NORMAL)
            el_die("a delivery did not come");
        amqp_destroy_envelope(&env);
    }

    /* The watcher: the baseline subscriber and reaperd's judgements. */
    amqp_connection_state_t w = el_connect();
    amqp_bytes_t base_q = el_bind_own(w, "amq.rabbitmq.event", "consumer.deleted");
    amqp_bytes_t judge_q = el_bind_own(w, events_exchange, "broker.holder_gone.surfaced");
    fprintf(stderr, "event_load: %d queues held; settling %d s\n", n, settle);
    sleep((unsigned)settle);

    static int64_t event_ms[EL_MAX], base_ms[EL_MAX], judged_ms[EL_MAX];
    for (int i = 0; i < n; i++) event_ms[i] = base_ms[i] = judged_ms[i] = -1;
    int judged = 0;
    int64_t next_cancel = el_now_ms(), deadline = 0;
    int cancelled = 0;
    for (;;) {
        int64_t now = el_now_ms();
        if (cancelled < n && now >= next_cancel) {
            amqp_channel_t ch = (amqp_channel_t)(2 + cancelled);
            amqp_basic_cancel(h, ch, amqp_cstring_bytes("holder"));
            el_ok(h, "cancel");
            cancelled++;
            next_cancel = now + gap;
            if (cancelled == n) deadline = now + (int64_t)timeout * 1000;
        }
        if (cancelled == n && (judged == n || now > deadline)) break;
        amqp_envelope_t env;
        struct timeval tv = {0, 20000};
        amqp_maybe_release_buffers(w);
        amqp_rpc_reply_t r = amqp_consume_message(w, &env, &tv, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) {
            if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                r.library_error == AMQP_STATUS_TIMEOUT)
                continue;
            el_die("the watcher's connection failed");
        }
        int64_t at = el_now_ms();
        bool is_base =
                       env.routing_key.len == strlen("consumer.deleted") &&
                       memcmp(env.routing_key.bytes, "consumer.deleted", env.routing_key.len) == 0;
        for (int i = 0; i < n; i++) {
            if (is_base) {
                char q[256];
                int64_t ts;
                if (el_header_str(&env.message.properties, "queue", q, sizeof q) &&
                    strcmp(q, names[i]) == 0 && base_ms[i] < 0 &&
                    el_header_i64(&env.message.properties, "timestamp_in_ms", &ts)) {
                    event_ms[i] = ts;
                    base_ms[i] = at;
                }
            } else if (env.message.body.len && judged_ms[i] < 0 &&
                       memmem(env.message.body.bytes, env.message.body.len, names[i],
                              strlen(names[i])) != NULL) {
                judged_ms[i] = at;
                judged++;
            }
        }
        amqp_destroy_envelope(&env);
    }
    for (int i = 0; i < n; i++)
        printf("q %d event_ms %lld baseline_ms %lld judged_ms %lld\n", i, (long long)event_ms[i],
               (long long)(base_ms[i] < 0 ? -1 : base_ms[i]),
               (long long)(judged_ms[i] < 0 ? -1 : judged_ms[i]));
    for (int i = 0; i < n; i++) amqp_queue_delete(w, 1, amqp_cstring_bytes(names[i]), 0, 0);
    amqp_bytes_free(base_q);
    amqp_bytes_free(judge_q);
    amqp_connection_close(w, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(w);
    amqp_connection_close(h, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(h);
    return 0;
}
