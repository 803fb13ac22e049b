/*
 * control_load - the load generator of bench/broker (built only with
 * -DREAPER_BENCH=ON). One blocking rabbitmq-c connection per process, on
 * REAPER_BROKER_URL with the password from REAPER_BROKER_PASSWORD_FILE.
 *
 *   control_load rpc --queue Q --encoding msgpack|json --inflight N --seconds S
 *                    [--warmup S] [--expect ok|echo]
 *       Sends {"v":1,"op":"status"} requests to Q (default exchange) with
 *       reply_to direct reply-to and a correlation_id, keeping N in flight:
 *       each reply sends the next request. Replies received during the S
 *       seconds after the warm-up (default 1 s) count, with their latency
 *       from their request's publish; then the ones in flight are drained. Checks
 *       every reply (correlation_id one of ours, content type of the request,
 *       and the body: "ok" true, or the request's bytes with --expect echo).
 *       Prints one line: "replies N seconds S rate R p50_us A p99_us B
 *       max_us C errors E total T" (T: every reply, warm-up and drain
 *       included). Exit 0 when no error.
 *   control_load echo --queue Q [--prefetch N] [--confirm yes]
 *       The broker-only stand-in for reaperd: declares Q (exclusive, so it
 *       goes with us), consumes it with manual acks and the prefetch reaperd
 *       uses (16), and answers each message by publishing its body back to
 *       its reply_to with its correlation_id and content type, then acks it.
 *       With --confirm yes it does what reaperd does with a reply: publishes
 *       it on a second channel in confirm mode and acks the request once the
 *       broker confirms the reply. Prints "ready" once consuming; runs until
 *       killed.
 *   control_load declare --vhost V --prefix P --from A --to B
 *       Declares the durable classic queues P<A>..P<B> on vhost V.
 *   control_load churn --vhost V --queue Q --rate R --seconds S
 *       Broker events at R per second for S seconds (bench/scale): declares
 *       Q (exclusive), then consumes and cancels it again and again
 *       (pipelined, nowait), each cycle two events (consumer.created,
 *       consumer.deleted), paced every 10 ms. Counts the consumer.* events
 *       the broker emitted on V with a subscriber of its own to
 *       amq.rabbitmq.event. Prints "sent N seen M seconds S rate R"
 *       (R: seen per second).
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define CL_MAX_INFLIGHT 1024

static const unsigned char cl_status_msgpack[] = {0x82, 0xa1, 'v', 0x01, 0xa2, 'o', 'p',
                                                  0xa6, 's',  't',  'a',  't',  'u', 's'};
static const char cl_status_json[] = "{\"v\":1,\"op\":\"status\"}";
/* "ok": true in msgpack: fixstr "ok", then true. */
static const unsigned char cl_ok_msgpack[] = {0xa2, 'o', 'k', 0xc3};

static void cl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void cl_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "control_load: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static int64_t cl_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *cl_env(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') cl_die("%s is not set (eval \"$(scripts/services env)\")", name);
    return v;
}

static const char *cl_password(void) {
    static char buf[256];
    FILE *f = fopen(cl_env("REAPER_BROKER_PASSWORD_FILE"), "r");
    if (f == NULL || fgets(buf, sizeof buf, f) == NULL) cl_die("cannot read the broker password file");
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

static void cl_rpc_check(amqp_rpc_reply_t r, const char *what) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
        fprintf(stderr, "control_load: %s: %s\n", what, amqp_error_string2(r.library_error));
    } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
               r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *m = r.reply.decoded;
        fprintf(stderr, "control_load: %s: the broker said %u %.*s\n", what, m->reply_code,
                (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
               r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = r.reply.decoded;
        fprintf(stderr, "control_load: %s: the broker said %u %.*s\n", what, m->reply_code,
                (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else {
        fprintf(stderr, "control_load: %s: failed\n", what);
    }
    exit(2);
}

/* The user the URL logs in as: requests name it in user_id, as reaperd
 * requires of every control request (the broker checks it). */
static char cl_user[256];

/* Connects (vhost: NULL for the URL's own), opens channel 1. */
static amqp_connection_state_t cl_connect(const char *vhost) {
    static char url[512];
    snprintf(url, sizeof url, "%s", cl_env("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) cl_die("REAPER_BROKER_URL does not parse");
    snprintf(cl_user, sizeof cl_user, "%s", info.user);
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (s == NULL || amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK)
        cl_die("cannot connect to the broker at %s", info.host);
    cl_rpc_check(amqp_login(c, vhost ? vhost : info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                            info.user, cl_password()),
                 "broker login");
    amqp_channel_open(c, 1);
    cl_rpc_check(amqp_get_rpc_reply(c), "channel open");
    return c;
}

static void cl_close(amqp_connection_state_t c) {
    (void)amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    (void)amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

/* A frame that is not a delivery arrived (amqp_consume_message said
 * UNEXPECTED_STATE): read it; a close is fatal, anything else ignored. */
static void cl_other_frame(amqp_connection_state_t c) {
    amqp_frame_t f;
    if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) cl_die("the connection broke");
    if (f.frame_type != AMQP_FRAME_METHOD) return;
    if (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
        f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD)
        cl_die("the broker closed the channel or the connection");
}

static bool cl_has(const void *hay, size_t n, const void *needle, size_t m) {
    if (m > n) return false;
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp((const char *)hay + i, needle, m) == 0) return true;
    return false;
}

static const char *cl_arg(int argc, char **argv, const char *name, const char *dflt) {
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    if (dflt == NULL) cl_die("missing %s", name);
    return dflt;
}

static int cl_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ---- rpc ---------------------------------------------------------------------- */

typedef struct cl_slot {
    bool busy;
    uint64_t seq;
    int64_t sent_us;
} cl_slot;

typedef struct cl_sender {
    amqp_connection_state_t c;
    amqp_bytes_t queue, body;
    amqp_basic_properties_t *props;
    cl_slot *slots;
    uint64_t seq;
    int outstanding;
} cl_sender;

/* Sends one request from slot i, its correlation_id "i:seq". */
static void cl_send(cl_sender *s, int i) {
    char corr[48];
    cl_slot *slot = &s->slots[i];
    slot->busy = true;
    slot->seq = ++s->seq;
    snprintf(corr, sizeof corr, "%d:%llu", i, (unsigned long long)slot->seq);
    s->props->correlation_id = amqp_cstring_bytes(corr);
    slot->sent_us = cl_now_us();
    if (amqp_basic_publish(s->c, 1, amqp_cstring_bytes(""), s->queue, 0, 0, s->props, s->body) !=
        AMQP_STATUS_OK)
        cl_die("publishing a request failed");
    s->outstanding++;
}

static int cl_rpc(int argc, char **argv) {
    const char *queue = cl_arg(argc, argv, "--queue", NULL);
    const char *encoding = cl_arg(argc, argv, "--encoding", "msgpack");
    int inflight = atoi(cl_arg(argc, argv, "--inflight", "1"));
    double seconds = atof(cl_arg(argc, argv, "--seconds", "10"));
    double warmup = atof(cl_arg(argc, argv, "--warmup", "1"));
    bool expect_echo = strcmp(cl_arg(argc, argv, "--expect", "ok"), "echo") == 0;
    if (inflight < 1 || inflight > CL_MAX_INFLIGHT) cl_die("--inflight must be in 1..1024");
    if (seconds <= 0) cl_die("--seconds must be positive");

    bool json = strcmp(encoding, "json") == 0;
    if (!json && strcmp(encoding, "msgpack") != 0) cl_die("unknown encoding %s", encoding);
    const char *ct = json ? "application/json" : "application/msgpack";
    amqp_bytes_t body = json ? (amqp_bytes_t){strlen(cl_status_json), (void *)cl_status_json}
                             : (amqp_bytes_t){sizeof cl_status_msgpack, (void *)cl_status_msgpack};

    amqp_connection_state_t c = cl_connect(NULL);
    amqp_basic_consume(c, 1, amqp_cstring_bytes("amq.rabbitmq.reply-to"), amqp_empty_bytes, 0, 1, 0,
                       amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "consuming direct reply-to");

    cl_slot slots[CL_MAX_INFLIGHT];
    memset(slots, 0, sizeof slots);
    size_t lat_cap = 1 << 16, n_lat = 0;
    int64_t *lat = malloc(lat_cap * sizeof *lat);
    if (lat == NULL) cl_die("out of memory");
    long errors = 0, total = 0;

    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
               AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
               AMQP_BASIC_USER_ID_FLAG;
    p.user_id = amqp_cstring_bytes(cl_user);
    p.content_type = amqp_cstring_bytes(ct);
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    p.delivery_mode = 1;

    int64_t t0 = cl_now_us();
    int64_t start = t0 + (int64_t)(warmup * 1e6);
    int64_t end = start + (int64_t)(seconds * 1e6);
    int64_t drain_until = 0;

    cl_sender snd = {c, amqp_cstring_bytes(queue), body, &p, slots, 0, 0};
    for (int i = 0; i < inflight; i++) cl_send(&snd, i);
    for (;;) {
        int64_t now = cl_now_us();
        if (now >= end && drain_until == 0) drain_until = now + 10 * 1000000;
        if (drain_until && (snd.outstanding == 0 || now >= drain_until)) break;
        /* A time-out here means a reply is late: wait, up to the drain's
         * end once the measurement is over. */
        int64_t wait = drain_until ? drain_until - now : end - now;
        if (wait < 1000) wait = 1000;
        struct timeval tv = {(time_t)(wait / 1000000), (suseconds_t)(wait % 1000000)};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT)
            continue;
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
            cl_other_frame(c);
            continue;
        }
        cl_rpc_check(r, "waiting for replies");
        int64_t got = cl_now_us();
        amqp_basic_properties_t *rp = &env.message.properties;
        int slot = -1;
        unsigned long long rseq = 0;
        if (rp->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) {
            char corr[64];
            snprintf(corr, sizeof corr, "%.*s", (int)rp->correlation_id.len,
                     (const char *)rp->correlation_id.bytes);
            if (sscanf(corr, "%d:%llu", &slot, &rseq) != 2 || slot < 0 || slot >= inflight ||
                !slots[slot].busy || slots[slot].seq != rseq)
                slot = -1;
        }
        if (slot < 0) { /* not ours, or a second reply: an error either way */
            errors++;
            amqp_destroy_envelope(&env);
            continue;
        }
        bool good = (rp->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) && rp->content_type.len == strlen(ct) &&
                    memcmp(rp->content_type.bytes, ct, strlen(ct)) == 0;
        const amqp_bytes_t *b = &env.message.body;
        if (expect_echo)
            good = good && b->len == body.len && memcmp(b->bytes, body.bytes, body.len) == 0;
        else if (json)
            good = good && cl_has(b->bytes, b->len, "\"ok\":true", 9);
        else
            good = good && cl_has(b->bytes, b->len, cl_ok_msgpack, sizeof cl_ok_msgpack);
        if (!good) errors++;
        amqp_destroy_envelope(&env);
        slots[slot].busy = false;
        snd.outstanding--;
        total++;
        if (got >= start && got < end) {
            if (n_lat == lat_cap) {
                lat_cap *= 2;
                int64_t *nl = realloc(lat, lat_cap * sizeof *lat);
                if (nl == NULL) cl_die("out of memory");
                lat = nl;
            }
            lat[n_lat++] = got - slots[slot].sent_us;
        }
        if (got < end) cl_send(&snd, slot);
    }
    if (snd.outstanding > 0) {
        fprintf(stderr, "control_load: %d requests never answered\n", snd.outstanding);
        errors += snd.outstanding;
    }
    cl_close(c);
    qsort(lat, n_lat, sizeof *lat, cl_cmp_i64);
    int64_t p50 = n_lat ? lat[n_lat / 2] : 0;
    int64_t p99 = n_lat ? lat[(size_t)((double)(n_lat - 1) * 0.99)] : 0;
    int64_t mx = n_lat ? lat[n_lat - 1] : 0;
    /* Replies received inside the window, over the window; their latency
     * from their request's publish. */
    printf("replies %zu seconds %.3f rate %.1f p50_us %lld p99_us %lld max_us %lld errors %ld "
           "total %ld\n",
           n_lat, seconds, (double)n_lat / seconds, (long long)p50, (long long)p99, (long long)mx,
           errors, total);
    free(lat);
    return errors == 0 && n_lat > 0 ? 0 : 1;
}

/* ---- echo --------------------------------------------------------------------- */

/* --confirm: the requests whose replies await their confirm, in publish
 * order (the confirm of publish k acks pending[k - 1]'s request). */
typedef struct cl_pending {
    uint64_t *tags;
    size_t head, n, cap;
    uint64_t confirmed; /* publish sequence numbers confirmed so far */
} cl_pending;

static void cl_pending_push(cl_pending *q, uint64_t tag) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        uint64_t *t = malloc(cap * sizeof *t);
        if (t == NULL) cl_die("out of memory");
        for (size_t i = 0; i < q->n; i++) t[i] = q->tags[(q->head + i) % q->cap];
        free(q->tags);
        q->tags = t;
        q->cap = cap;
        q->head = 0;
    }
    q->tags[(q->head + q->n) % q->cap] = tag;
    q->n++;
}

/* A confirm for publishes up to seq (or seq alone): acks their requests. */
static void cl_pending_confirm(amqp_connection_state_t c, cl_pending *q, uint64_t seq, bool multiple) {
    if (!multiple && seq != q->confirmed + 1) cl_die("a confirm out of order");
    while (q->confirmed < seq && q->n > 0) {
        uint64_t tag = q->tags[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        q->confirmed++;
        if (amqp_basic_ack(c, 1, tag, 0) != AMQP_STATUS_OK) cl_die("ack failed");
    }
}

static int cl_echo(int argc, char **argv) {
    const char *queue = cl_arg(argc, argv, "--queue", NULL);
    int prefetch = atoi(cl_arg(argc, argv, "--prefetch", "16"));
    bool confirm = strcmp(cl_arg(argc, argv, "--confirm", "no"), "yes") == 0;
    amqp_connection_state_t c = cl_connect(NULL);
    amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 0, 1, 1, amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "declaring the echo queue");
    amqp_basic_qos(c, 1, 0, (uint16_t)prefetch, 0);
    cl_rpc_check(amqp_get_rpc_reply(c), "setting the prefetch");
    amqp_channel_t pub = 1;
    cl_pending pending = {0};
    if (confirm) { /* as reaperd: replies on a channel of their own, with confirms */
        pub = 2;
        amqp_channel_open(c, pub);
        cl_rpc_check(amqp_get_rpc_reply(c), "opening the reply channel");
        amqp_confirm_select(c, pub);
        cl_rpc_check(amqp_get_rpc_reply(c), "confirm select");
    }
    amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 1, amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "consuming the echo queue");
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, NULL, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
            amqp_frame_t f;
            if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) cl_die("the connection broke");
            if (f.frame_type != AMQP_FRAME_METHOD) continue;
            if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
                const amqp_basic_ack_t *a = f.payload.method.decoded;
                cl_pending_confirm(c, &pending, a->delivery_tag, a->multiple);
            } else if (f.payload.method.id == AMQP_BASIC_NACK_METHOD ||
                       f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
                       f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
                cl_die("the broker nacked a reply or closed a channel");
            }
            continue;
        }
        cl_rpc_check(r, "waiting for requests");
        const amqp_basic_properties_t *in = &env.message.properties;
        bool replied = false;
        if (in->_flags & AMQP_BASIC_REPLY_TO_FLAG) {
            amqp_basic_properties_t p;
            memset(&p, 0, sizeof p);
            p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
            p.delivery_mode = 1;
            if (in->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) {
                p._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
                p.content_type = in->content_type;
            }
            if (in->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) {
                p._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
                p.correlation_id = in->correlation_id;
            }
            if (amqp_basic_publish(c, pub, amqp_cstring_bytes(""), in->reply_to, 0, 0, &p,
                                   env.message.body) != AMQP_STATUS_OK)
                cl_die("publishing a reply failed");
            replied = true;
        }
        if (confirm && replied)
            cl_pending_push(&pending, env.delivery_tag); /* acked on its reply's confirm */
        else if (amqp_basic_ack(c, 1, env.delivery_tag, 0) != AMQP_STATUS_OK)
            cl_die("ack failed");
        amqp_destroy_envelope(&env);
    }
    return 0;
}

/* ---- declare ------------------------------------------------------------------ */

static int cl_declare(int argc, char **argv) {
    const char *vhost = cl_arg(argc, argv, "--vhost", NULL);
    const char *prefix = cl_arg(argc, argv, "--prefix", NULL);
    long from = atol(cl_arg(argc, argv, "--from", NULL));
    long to = atol(cl_arg(argc, argv, "--to", NULL));
    amqp_connection_state_t c = cl_connect(vhost);
    char name[256];
    /* nowait, so the declarations are pipelined; the last one waits for its
     * declare-ok, which the broker sends after all the others (one channel
     * is served in order). */
    for (long i = from; i <= to; i++) {
        snprintf(name, sizeof name, "%s%ld", prefix, i);
        amqp_queue_declare_t m;
        memset(&m, 0, sizeof m);
        m.queue = amqp_cstring_bytes(name);
        m.durable = 1;
        m.nowait = i < to;
        m.arguments = amqp_empty_table;
        if (i < to) {
            if (amqp_send_method(c, 1, AMQP_QUEUE_DECLARE_METHOD, &m) != AMQP_STATUS_OK)
                cl_die("declaring %s failed", name);
        } else {
            amqp_queue_declare(c, 1, m.queue, 0, 1, 0, 0, amqp_empty_table);
            cl_rpc_check(amqp_get_rpc_reply(c), "declaring the queues");
        }
        amqp_maybe_release_buffers(c);
    }
    cl_close(c);
    return 0;
}

/* ---- churn ---------------------------------------------------------------------- */

static int cl_churn(int argc, char **argv) {
    const char *vhost = cl_arg(argc, argv, "--vhost", NULL);
    const char *queue = cl_arg(argc, argv, "--queue", NULL);
    double rate = atof(cl_arg(argc, argv, "--rate", NULL));
    double seconds = atof(cl_arg(argc, argv, "--seconds", NULL));
    if (rate <= 0 || seconds <= 0) cl_die("churn: --rate and --seconds must be positive");
    amqp_connection_state_t c = cl_connect(vhost);
    /* Exclusive (it goes with the connection), not auto-delete: the first
     * cancel would delete it. */
    amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 0, 1, 0, amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "declaring the churn queue");
    /* The subscriber that counts what the broker emits. */
    amqp_queue_declare_ok_t *q = amqp_queue_declare(c, 1, amqp_empty_bytes, 0, 0, 1, 1,
                                                    amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "declaring the event queue");
    amqp_bytes_t evq = amqp_bytes_malloc_dup(q->queue);
    amqp_queue_bind(c, 1, evq, amqp_cstring_bytes("amq.rabbitmq.event"),
                    amqp_cstring_bytes("consumer.*"), amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "binding the event queue");
    amqp_basic_consume(c, 1, evq, amqp_cstring_bytes("churn.events"), 0, 1, 1, amqp_empty_table);
    cl_rpc_check(amqp_get_rpc_reply(c), "consuming the event queue");
    long sent = 0, seen = 0;
    char tag[64];
    int64_t t0 = cl_now_us(), end = t0 + (int64_t)(seconds * 1e6);
    for (int64_t tick = t0; tick < end; tick += 10000) {
        /* Cycles due by now (two events each). */
        long due = (long)((double)(tick + 10000 - t0) / 1e6 * rate / 2.0);
        for (; sent / 2 < due; sent += 2) {
            snprintf(tag, sizeof tag, "churn.%ld", sent / 2);
            amqp_basic_consume_t m;
            memset(&m, 0, sizeof m);
            m.queue = amqp_cstring_bytes(queue);
            m.consumer_tag = amqp_cstring_bytes(tag);
            m.no_ack = 1;
            m.nowait = 1;
            m.arguments = amqp_empty_table;
            if (amqp_send_method(c, 1, AMQP_BASIC_CONSUME_METHOD, &m) != AMQP_STATUS_OK)
                cl_die("consume failed");
            amqp_basic_cancel_t k;
            memset(&k, 0, sizeof k);
            k.consumer_tag = amqp_cstring_bytes(tag);
            k.nowait = 1;
            if (amqp_send_method(c, 1, AMQP_BASIC_CANCEL_METHOD, &k) != AMQP_STATUS_OK)
                cl_die("cancel failed");
        }
        /* Read what came until the next tick. */
        for (;;) {
            int64_t left = tick + 10000 - cl_now_us();
            if (left <= 0) break;
            struct timeval tv = {0, (long)left};
            amqp_envelope_t env;
            amqp_maybe_release_buffers(c);
            amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
            if (r.reply_type == AMQP_RESPONSE_NORMAL) {
                seen++;
                amqp_destroy_envelope(&env);
                continue;
            }
            if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                r.library_error == AMQP_STATUS_TIMEOUT)
                break;
            if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
                amqp_frame_t f;
                if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) cl_die("reading a frame failed");
                continue;
            }
            cl_rpc_check(r, "reading the events");
        }
    }
    double secs = (double)(cl_now_us() - t0) / 1e6;
    printf("sent %ld seen %ld seconds %.2f rate %.0f\n", sent, seen, secs, (double)seen / secs);
    amqp_bytes_free(evq);
    cl_close(c);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "rpc") == 0) return cl_rpc(argc, argv);
    if (strcmp(mode, "echo") == 0) return cl_echo(argc, argv);
    if (strcmp(mode, "declare") == 0) return cl_declare(argc, argv);
    if (strcmp(mode, "churn") == 0) return cl_churn(argc, argv);
    fprintf(stderr, "usage: control_load rpc|echo|declare|churn ... (see the top of bench/control_load.c)\n");
    return 2;
}
