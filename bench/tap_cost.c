/*
 * tap_cost - reaperd's own work per dead letter of a storm, in one process,
 * for bench/tap_cost (which runs it under callgrind and prints the
 * instructions per dead letter). Not part of reaper.
 *
 *   tap_cost MODE SHAPE N
 *
 * MODE   path: each delivery, as the tap's connection has decoded its
 *        frames, goes through the functions reaperd calls for it: the
 *        assembler (rp_amqp_assembler_frame), the held item
 *        (rp_amqp_tap_item_make), the tap thread's park (rp_tap_park: the
 *        tap port's examiner, rp_dead_letter_examine, the judge), the park
 *        statement's bound parameters (rp__pg_park_params, what
 *        rp_pg_park_send binds, without a session) and the feed's event
 *        (rp_amqp_feed's publisher port: metrics and rp_proto_encode_event),
 *        then the item freed. The store's answer is made up: every dead
 *        letter parked, the ledger numbers counted.
 *        base: the least any path does per delivery: the body copied and
 *        the identity's SHA-256 (rp_dl_digest_identity).
 * SHAPE  tap: bench/tap's message (a persistent message through the
 *        default exchange into a classic queue with TTL 0: its x-death
 *        and x-first-death-* headers as RabbitMQ 3.10 writes them, body
 *        "<i> <Unix microseconds>"). hostile: the same with 40 more
 *        headers of every field kind, names and values to escape, and
 *        three x-death entries.
 * N      deliveries, in batches of RP_TAP_BATCH (as a storm hands them to
 *        the tap's thread).
 *
 * Only the per-batch work is collected (CALLGRIND_TOGGLE_COLLECT); run
 * under valgrind --tool=callgrind --collect-atstart=no. Prints the bound
 * bytes, their FNV-1a hash (the same hash on two trees: the same parameter
 * bytes, byte for byte) and the events (a check that the path ran).
 */
#include <amqp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "rp_amqp_feed.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_tap.h"
#include "rp_amqp_tap_port.h"
#include "rp_config.h"
#include "rp_deadletter.h"
#include "rp_metrics.h"
#include "rp_pg_store_internal.h"
#include "rp_tap_batch.h"

#define TAP_QUEUE "reaper.tap"
#define ORIGIN "bench.tap.ttl0"

static size_t g_bound, g_segments, g_events;
static uint64_t g_hash = 1469598103934665603ull; /* FNV-1a of every bound byte */
static int64_t g_seq;

/* ---- the deliveries -------------------------------------------------------- */

static amqp_table_entry_t entry(const char *k, amqp_field_value_t v) {
    return (amqp_table_entry_t){amqp_cstring_bytes(k), v};
}
static amqp_field_value_t utf8(const char *s) {
    amqp_field_value_t v = {.kind = AMQP_FIELD_KIND_UTF8};
    v.value.bytes = amqp_cstring_bytes(s);
    return v;
}
static amqp_field_value_t i64(int64_t n) {
    amqp_field_value_t v = {.kind = AMQP_FIELD_KIND_I64};
    v.value.i64 = n;
    return v;
}
static amqp_field_value_t stamp(uint64_t t) {
    amqp_field_value_t v = {.kind = AMQP_FIELD_KIND_TIMESTAMP};
    v.value.u64 = t;
    return v;
}

/* One x-death entry as RabbitMQ 3.10 writes it for an expired message. */
static amqp_field_value_t death_entry(amqp_table_entry_t *e, amqp_field_value_t *rk,
                                      const char *queue, uint64_t when) {
    *rk = utf8(queue);
    e[0] = entry("count", i64(1));
    e[1] = entry("reason", utf8("expired"));
    e[2] = entry("queue", utf8(queue));
    e[3] = entry("time", stamp(when));
    e[4] = entry("exchange", utf8(""));
    amqp_field_value_t arr = {.kind = AMQP_FIELD_KIND_ARRAY};
    arr.value.array = (amqp_array_t){1, rk};
    e[5] = entry("routing-keys", arr);
    amqp_field_value_t t = {.kind = AMQP_FIELD_KIND_TABLE};
    t.value.table = (amqp_table_t){6, e};
    return t;
}

typedef struct shape {
    amqp_table_entry_t h[64];
    amqp_table_entry_t de[3][6];
    amqp_field_value_t rk[3], deaths[3];
    amqp_table_entry_t nested[3];
    amqp_field_value_t arr[4];
    char text[8][300];
    uint8_t bin[64];
    amqp_basic_properties_t props;
} shape;

static void shape_make(shape *s, bool hostile, uint64_t when) {
    memset(s, 0, sizeof *s);
    int nd = hostile ? 3 : 1;
    const char *dq[3] = {ORIGIN, "orders.retry", "orders.parking"};
    for (int k = 0; k < nd; k++) s->deaths[k] = death_entry(s->de[k], &s->rk[k], dq[k], when - k);
    int n = 0;
    amqp_field_value_t xd = {.kind = AMQP_FIELD_KIND_ARRAY};
    xd.value.array = (amqp_array_t){nd, s->deaths};
    s->h[n++] = entry("x-death", xd);
    s->h[n++] = entry("x-first-death-exchange", utf8(""));
    s->h[n++] = entry("x-first-death-queue", utf8(ORIGIN));
    s->h[n++] = entry("x-first-death-reason", utf8("expired"));
    if (hostile) {
        static char names[40][48];
        for (int k = 0; k < 8; k++) {
            /* Quotes, backslashes, control bytes and UTF-8 to escape. */
            size_t m = 0;
            while (m < 280) {
                const char *piece = k % 2 ? "caf\xc3\xa9 \"q\" \\ \t\n" : "plain-ascii-text-";
                size_t pl = strlen(piece);
                memcpy(s->text[k] + m, piece, pl);
                m += pl;
            }
            s->text[k][m] = '\0';
        }
        for (size_t k = 0; k < sizeof s->bin; k++) s->bin[k] = (uint8_t)(k * 37);
        s->arr[0] = i64(1);
        s->arr[1] = utf8("two");
        s->arr[2] = stamp(when);
        s->arr[3] = i64(-4);
        s->nested[0] = entry("tenant", utf8("acme \"corp\""));
        s->nested[1] = entry("shard", i64(17));
        s->nested[2] = entry("when", stamp(when));
        for (int k = 0; k < 40; k++) {
            snprintf(names[k], sizeof names[k], k % 3 ? "x-app-\xc3\xa9-%d" : "x-app \"%d\"", k);
            amqp_field_value_t v;
            switch (k % 8) {
            case 0: v = utf8(s->text[k / 8 % 8]); break;
            case 1: v = i64((int64_t)k * 1000003); break;
            case 2: v = stamp(when + (uint64_t)k); break;
            case 3:
                v.kind = AMQP_FIELD_KIND_BYTES;
                v.value.bytes = (amqp_bytes_t){sizeof s->bin, s->bin};
                break;
            case 4:
                v.kind = AMQP_FIELD_KIND_ARRAY;
                v.value.array = (amqp_array_t){4, s->arr};
                break;
            case 5:
                v.kind = AMQP_FIELD_KIND_TABLE;
                v.value.table = (amqp_table_t){3, s->nested};
                break;
            case 6:
                v.kind = AMQP_FIELD_KIND_F64;
                v.value.f64 = k / 7.0;
                break;
            default:
                v.kind = AMQP_FIELD_KIND_BOOLEAN;
                v.value.boolean = k & 1;
                break;
            }
            s->h[n++] = entry(names[k], v);
        }
    }
    s->props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
    s->props.delivery_mode = 2;
    if (hostile) {
        s->props._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                           AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_APP_ID_FLAG;
        s->props.content_type = amqp_cstring_bytes("application/json; charset=\"utf-8\"");
        s->props.message_id = amqp_cstring_bytes("m\xc3\xa9ssage \"1\"");
        s->props.timestamp = when;
        s->props.app_id = amqp_cstring_bytes("orders\tservice");
    }
    s->props.headers = (amqp_table_t){n, s->h};
}

/* Hands one delivery's frames (deliver, header, body) to the assembler as
 * the tap's connection does; the handler makes the held item. */
typedef struct feed_ctx {
    amqp_basic_deliver_t d;
    amqp_basic_properties_t *props;
    rp_amqp_tap_item *made;
    size_t header_cap;
    rp_amqp_assembler a;
} feed_ctx;

static void on_assembled(void *arg, const rp_amqp_message *msg) {
    feed_ctx *fc = arg;
    fc->made = rp_amqp_tap_item_make(&fc->a, msg, fc->header_cap);
}

static rp_amqp_tap_item *deliver(feed_ctx *fc, uint64_t tag, const char *body) {
    fc->d.delivery_tag = tag;
    fc->made = NULL;
    rp_status st;
    amqp_frame_t f = {.frame_type = AMQP_FRAME_METHOD, .channel = RP_AMQP_TAP_CHANNEL};
    f.payload.method.id = AMQP_BASIC_DELIVER_METHOD;
    f.payload.method.decoded = &fc->d;
    rp_amqp_assembler_frame(&fc->a, &f, &st);
    size_t len = strlen(body);
    amqp_frame_t h = {.frame_type = AMQP_FRAME_HEADER, .channel = RP_AMQP_TAP_CHANNEL};
    h.payload.properties.class_id = AMQP_BASIC_CLASS;
    h.payload.properties.body_size = len;
    h.payload.properties.decoded = fc->props;
    rp_amqp_assembler_frame(&fc->a, &h, &st);
    amqp_frame_t b = {.frame_type = AMQP_FRAME_BODY, .channel = RP_AMQP_TAP_CHANNEL};
    b.payload.body_fragment = (amqp_bytes_t){len, (void *)body};
    rp_amqp_assembler_frame(&fc->a, &b, &st);
    return fc->made;
}

/* ---- the store's and the feed's stand-ins ----------------------------------- */

static void visit(void *arg, const rp__pg_cmd *k, size_t n) {
    (void)arg;
    CALLGRIND_TOGGLE_COLLECT; /* the check below is not reaperd's work */
    g_segments++;
    for (size_t c = 0; c < n; c++)
        for (int p = 0; p < k[c].n; p++) {
            const char *v = k[c].values[p];
            size_t len = k[c].lengths && k[c].lengths[p] ? (size_t)k[c].lengths[p]
                         : v                            ? strlen(v)
                                                        : 0;
            g_bound += len;
            for (size_t i = 0; i < len; i++) g_hash = (g_hash ^ (uint8_t)v[i]) * 1099511628211ull;
            g_hash = (g_hash ^ 0xff) * 1099511628211ull;
        }
    CALLGRIND_TOGGLE_COLLECT;
}

static rp_status batch_send(void *self, size_t session, rp_park_batch_item *items, size_t n) {
    (void)self;
    (void)session;
    return rp__pg_park_params(items, n, visit, NULL);
}

static rp_status batch_recv(void *self, size_t session, rp_park_batch_item *items, size_t n) {
    (void)self;
    (void)session;
    for (size_t i = 0; i < n; i++) {
        items[i].result.parked = true;
        items[i].result.event.seq = ++g_seq;
        items[i].result.event.at = 1764700000000000 + g_seq;
        items[i].result.job_id = g_seq;
        items[i].result.gate_id = g_seq;
    }
    return RP_OK;
}

static rp_status feed_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    (void)ctx;
    fn(job, true); /* no publisher here: each event settled as dropped, freed */
    return RP_OK;
}

static void feed_settled(void *ctx, int64_t seq, rp_publish_outcome outcome) {
    (void)ctx;
    (void)seq;
    (void)outcome;
    g_events++;
}

static bool not_stopping(void *ctx) {
    (void)ctx;
    return false;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "path") != 0 && strcmp(argv[1], "base") != 0) ||
        (strcmp(argv[2], "tap") != 0 && strcmp(argv[2], "hostile") != 0) || atol(argv[3]) <= 0) {
        fprintf(stderr, "usage: tap_cost path|base tap|hostile N\n");
        return 2;
    }
    bool base = strcmp(argv[1], "base") == 0;
    bool hostile = strcmp(argv[2], "hostile") == 0;
    size_t n = (size_t)atol(argv[3]);
    const uint64_t when = 1764700000;

    static rp_config cfg;
    if (rp_config_init(&cfg) != RP_OK) return 1;
    const rp_config *cfgp = &cfg;
    static rp_metrics metrics;
    rp_metrics_init(&metrics, "bench", "bench");
    rp_tap_consumer_port consumer;
    rp_amqp_tap_port *tp = rp_amqp_tap_port_new(NULL, &cfgp, 1u << 20, &consumer);
    rp_amqp_feed_hooks fh = {.post = feed_post, .on_settled = feed_settled};
    rp_amqp_feed *feed = rp_amqp_feed_from_config(&cfg, &metrics, &fh);
    if (tp == NULL || feed == NULL) return 1;
    rp_ports ports;
    memset(&ports, 0, sizeof ports);
    rp_amqp_feed_port(feed, &ports.publisher);
    rp_park_batch_port bp = {.sessions = 2, .send = batch_send, .recv = batch_recv};
    rp_tap_park_env env = {
        .batch = &bp,
        .ports = &ports,
        .site = {"/", TAP_QUEUE, cfg.reap.dead_letter_queue_pattern.code},
        .ex = &consumer.examiner,
        .stopping = not_stopping,
    };

    static shape sh;
    shape_make(&sh, hostile, when);
    feed_ctx *fc = calloc(1, sizeof *fc);
    rp_tap_batch *b = calloc(1, sizeof *b);
    if (fc == NULL || b == NULL) return 1;
    fc->d.consumer_tag = amqp_cstring_bytes(RP_TAP_CONSUMER_TAG);
    fc->d.exchange = amqp_cstring_bytes("reaper.dlx");
    fc->d.routing_key = amqp_cstring_bytes(ORIGIN);
    fc->props = &sh.props;
    fc->header_cap = (size_t)cfg.broker.tap_header_cap_bytes;
    rp_amqp_assembler_init(&fc->a, 1u << 20, on_assembled, fc);

    char (*bodies)[64] = malloc(RP_TAP_BATCH * sizeof *bodies);
    if (bodies == NULL) return 1;
    size_t done = 0, failed = 0;
    uint8_t *copies[RP_TAP_BATCH];
    while (done < n) {
        size_t m = n - done < RP_TAP_BATCH ? n - done : RP_TAP_BATCH;
        for (size_t i = 0; i < m; i++)
            snprintf(bodies[i], sizeof bodies[i], "%zu %lld", done + i,
                     (long long)(when * 1000000 + done + i));
        CALLGRIND_TOGGLE_COLLECT;
        if (base) {
            for (size_t i = 0; i < m; i++) {
                size_t len = strlen(bodies[i]);
                copies[i] = malloc(len);
                if (copies[i] == NULL) return 1;
                memcpy(copies[i], bodies[i], len);
                char id[RP_DL_DIGEST_IDENTITY_LEN + 1];
                if (rp_dl_digest_identity((rp_bytes){(const uint8_t *)ORIGIN, strlen(ORIGIN)},
                                          true, (int64_t)when, (rp_bytes){copies[i], len},
                                          id) != RP_OK)
                    failed++;
                g_bound += len + strlen(id);
            }
            for (size_t i = 0; i < m; i++) free(copies[i]);
        } else {
            b->n = 0;
            b->unpublished = 0;
            for (size_t i = 0; i < m; i++) {
                rp_amqp_tap_item *it = deliver(fc, done + i + 1, bodies[i]);
                if (it == NULL) return 1;
                b->items[b->n++] = &it->base;
            }
            rp_tap_park(&env, b);
            for (size_t i = 0; i < b->n; i++) {
                if (b->items[i]->result != RP_TAP_DONE || b->items[i]->skipped) failed++;
                rp_amqp_tap_item_free((rp_amqp_tap_item *)b->items[i]);
            }
        }
        CALLGRIND_TOGGLE_COLLECT;
        done += m;
    }
    printf("dead letters %zu, not parked %zu, bound bytes %zu (FNV-1a %016llx), segments %zu, "
           "events %zu\n",
           n, failed, g_bound, (unsigned long long)g_hash, g_segments, g_events);
    rp_amqp_assembler_cleanup(&fc->a);
    free(fc);
    free(b);
    free(bodies);
    rp_amqp_feed_free(feed);
    rp_amqp_tap_port_free(tp);
    rp_config_cleanup(&cfg);
    return failed == 0 && (base || g_events == n) ? 0 : 1;
}
