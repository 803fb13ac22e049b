/*
 * A dead letter parked by the running daemon's tap comes back byte for byte
 * (CONTRACT section 5): a message with every basic property and headers of
 * every kind the broker carries (int32 I, int8 b, uint64 L, timestamp T,
 * decimal D, bytes x, a nested table, text that is not UTF-8 and holds NUL,
 * an array, ...) is rejected from an owned queue, parked by the tap,
 * answered `replay` over the control queue, and consumed again from the
 * origin queue: the same body bytes and the same properties and headers
 * (field kinds included) but x-death, x-first-death-* and x-last-death-*.
 * The headers are compared with the copy the broker put in the dead-letter
 * queue (the broker re-encodes the headers of a message it dead-letters).
 *
 * And one message, one identity (CONTRACT section 6): dead letters that
 * reach the tap and that the backfill finds in the dead-letter queue as well
 * are parked once each, with and without a message_id.
 *
 * And reaper's own queues under the default names get none of its
 * policies: the tap keeps what a delivery limit would drop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rp_amqp_restore.h"
#include "tap_common.h"

/* ---- the message ---------------------------------------------------------- */

static const char body_bytes[] = {'r', 't', '-', 0, 1, 2, (char)0xff, (char)0xfe, 'z'};
static const char bad_text[] = {'a', 0, 'b', (char)0xff, (char)0xc3, '('};
static const char bin[] = {0, 1, 2, (char)0xff, 0};

static char user[128];

static amqp_field_value_t fv(char kind) {
    amqp_field_value_t v;
    memset(&v, 0, sizeof v);
    v.kind = (uint8_t)kind;
    return v;
}

static amqp_field_value_t text(const char *s, size_t n) {
    amqp_field_value_t v = fv(AMQP_FIELD_KIND_UTF8);
    v.value.bytes = (amqp_bytes_t){n, (void *)s};
    return v;
}

/* Storage for one message's headers (static: the message is built once
 * per call and only read). */
static amqp_table_entry_t H[20], inner[2], deeper[1];
static amqp_field_value_t arr[4];

static void build(amqp_basic_properties_t *p, const char *message_id) {
    memset(p, 0, sizeof *p);
    int n = 0;
#define ENTRY(k) (H[n].key = amqp_cstring_bytes(k), &H[n++].value)
    *ENTRY("i32") = fv(AMQP_FIELD_KIND_I32), H[n - 1].value.value.i32 = -123456;
    *ENTRY("i8") = fv(AMQP_FIELD_KIND_I8), H[n - 1].value.value.i8 = -7;
    *ENTRY("u8") = fv(AMQP_FIELD_KIND_U8), H[n - 1].value.value.u8 = 200;
    *ENTRY("i16") = fv(AMQP_FIELD_KIND_I16), H[n - 1].value.value.i16 = -300;
    *ENTRY("u16") = fv(AMQP_FIELD_KIND_U16), H[n - 1].value.value.u16 = 60000;
    *ENTRY("u32") = fv(AMQP_FIELD_KIND_U32), H[n - 1].value.value.u32 = 4000000000u;
    *ENTRY("i64") = fv(AMQP_FIELD_KIND_I64), H[n - 1].value.value.i64 = -9000000000000000;
    *ENTRY("u64") = fv(AMQP_FIELD_KIND_U64), H[n - 1].value.value.u64 = 18000000000000000000u;
    *ENTRY("ts") = fv(AMQP_FIELD_KIND_TIMESTAMP), H[n - 1].value.value.u64 = 1700000000;
    *ENTRY("dec") = fv(AMQP_FIELD_KIND_DECIMAL),
    H[n - 1].value.value.decimal = (amqp_decimal_t){2, 12345};
    *ENTRY("f32") = fv(AMQP_FIELD_KIND_F32), H[n - 1].value.value.f32 = 2.25f;
    *ENTRY("f64") = fv(AMQP_FIELD_KIND_F64), H[n - 1].value.value.f64 = -1.5e300;
    *ENTRY("flag") = fv(AMQP_FIELD_KIND_BOOLEAN), H[n - 1].value.value.boolean = 1;
    *ENTRY("void") = fv(AMQP_FIELD_KIND_VOID);
    *ENTRY("bytes") = fv(AMQP_FIELD_KIND_BYTES),
    H[n - 1].value.value.bytes = (amqp_bytes_t){sizeof bin, (void *)bin};
    *ENTRY("bad-text") = text(bad_text, sizeof bad_text);
    *ENTRY("plain") = text("hello", 5);
    deeper[0].key = amqp_cstring_bytes("s");
    deeper[0].value = text("deep", 4);
    inner[0].key = amqp_cstring_bytes("inner");
    inner[0].value = fv(AMQP_FIELD_KIND_I32), inner[0].value.value.i32 = 5;
    inner[1].key = amqp_cstring_bytes("deeper");
    inner[1].value = fv(AMQP_FIELD_KIND_TABLE), inner[1].value.value.table = (amqp_table_t){1, deeper};
    *ENTRY("nested") = fv(AMQP_FIELD_KIND_TABLE),
    H[n - 1].value.value.table = (amqp_table_t){2, inner};
    arr[0] = fv(AMQP_FIELD_KIND_I32), arr[0].value.i32 = 1;
    arr[1] = text("two", 3);
    arr[2] = fv(AMQP_FIELD_KIND_BYTES), arr[2].value.bytes = (amqp_bytes_t){2, (void *)bin};
    arr[3] = fv(AMQP_FIELD_KIND_I8), arr[3].value.i8 = 3;
    *ENTRY("arr") = fv(AMQP_FIELD_KIND_ARRAY), H[n - 1].value.value.array = (amqp_array_t){4, arr};
#undef ENTRY
    p->_flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CONTENT_ENCODING_FLAG |
                AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                AMQP_BASIC_PRIORITY_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
                AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_EXPIRATION_FLAG |
                AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_TYPE_FLAG |
                AMQP_BASIC_USER_ID_FLAG | AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_CLUSTER_ID_FLAG;
    p->content_type = amqp_cstring_bytes("application/x-test");
    p->content_encoding = amqp_cstring_bytes("identity");
    p->headers = (amqp_table_t){n, H};
    p->delivery_mode = 2;
    p->priority = 4;
    p->correlation_id = amqp_cstring_bytes("corr-1");
    p->reply_to = amqp_cstring_bytes("reply.nowhere");
    p->expiration = amqp_cstring_bytes("600000");
    p->message_id = amqp_cstring_bytes(message_id);
    p->timestamp = 1700000001;
    p->type = amqp_cstring_bytes("t.type");
    p->user_id = amqp_cstring_bytes(user);
    p->app_id = amqp_cstring_bytes("app-1");
    p->cluster_id = amqp_cstring_bytes("cluster-1");
}

static void publish(const char *queue, const amqp_basic_properties_t *p) {
    assert_int_equal(amqp_basic_publish(T.amqp, 2, amqp_empty_bytes, amqp_cstring_bytes(queue), 0,
                                        0, p, (amqp_bytes_t){sizeof body_bytes, (void *)body_bytes}),
                     AMQP_STATUS_OK);
}

/* basic.get from queue, polling up to timeout_ms (measured); acked. */
static bool get_one(const char *queue, amqp_message_t *m, int timeout_ms) {
    for (long long end = itest_mono_ms() + timeout_ms;;) {
        amqp_rpc_reply_t r = amqp_basic_get(T.amqp, 3, amqp_cstring_bytes(queue), 1);
        assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
        if (r.reply.id == AMQP_BASIC_GET_OK_METHOD) {
            r = amqp_read_message(T.amqp, 3, m, 0);
            assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
            return true;
        }
        if (itest_mono_ms() > end) return false;
        if (T.reaperd) rp_child_drain(T.reaperd, 100);
        else usleep(100 * 1000);
    }
}

/* ---- comparing ------------------------------------------------------------ */

static bool same_bytes(amqp_bytes_t a, amqp_bytes_t b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.bytes, b.bytes, a.len) == 0);
}

static void same_table(const amqp_table_t *a, const amqp_table_t *b, bool skip_death,
                       const char *where);

static void same_value(const amqp_field_value_t *a, const amqp_field_value_t *b,
                       const char *where) {
    if (a->kind != b->kind) fail_msg("%s: kind %c, want %c", where, b->kind, a->kind);
    bool ok = true;
    switch (a->kind) {
    case AMQP_FIELD_KIND_BOOLEAN: ok = !a->value.boolean == !b->value.boolean; break;
    case AMQP_FIELD_KIND_I8: ok = a->value.i8 == b->value.i8; break;
    case AMQP_FIELD_KIND_U8: ok = a->value.u8 == b->value.u8; break;
    case AMQP_FIELD_KIND_I16: ok = a->value.i16 == b->value.i16; break;
    case AMQP_FIELD_KIND_U16: ok = a->value.u16 == b->value.u16; break;
    case AMQP_FIELD_KIND_I32: ok = a->value.i32 == b->value.i32; break;
    case AMQP_FIELD_KIND_U32: ok = a->value.u32 == b->value.u32; break;
    case AMQP_FIELD_KIND_I64: ok = a->value.i64 == b->value.i64; break;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP: ok = a->value.u64 == b->value.u64; break;
    case AMQP_FIELD_KIND_F32: ok = memcmp(&a->value.f32, &b->value.f32, sizeof(float)) == 0; break;
    case AMQP_FIELD_KIND_F64: ok = memcmp(&a->value.f64, &b->value.f64, sizeof(double)) == 0; break;
    case AMQP_FIELD_KIND_DECIMAL:
        ok = a->value.decimal.decimals == b->value.decimal.decimals &&
             a->value.decimal.value == b->value.decimal.value;
        break;
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES: ok = same_bytes(a->value.bytes, b->value.bytes); break;
    case AMQP_FIELD_KIND_VOID: break;
    case AMQP_FIELD_KIND_ARRAY:
        if (a->value.array.num_entries != b->value.array.num_entries)
            fail_msg("%s: %d entries, want %d", where, b->value.array.num_entries,
                     a->value.array.num_entries);
        for (int i = 0; i < a->value.array.num_entries; i++)
            same_value(&a->value.array.entries[i], &b->value.array.entries[i], where);
        break;
    case AMQP_FIELD_KIND_TABLE: same_table(&a->value.table, &b->value.table, false, where); break;
    default: fail_msg("%s: unexpected kind %c", where, a->kind);
    }
    if (!ok) fail_msg("%s: the value differs (kind %c)", where, a->kind);
}

static int count_kept(const amqp_table_t *t, bool skip_death) {
    int n = 0;
    for (int i = 0; i < t->num_entries; i++)
        if (!skip_death || !rp_amqp_restore_is_death_header(t->entries[i].key.bytes,
                                                             t->entries[i].key.len))
            n++;
    return n;
}

/* Tables compare as sets of keys (jsonb keeps no key order). */
static void same_table(const amqp_table_t *a, const amqp_table_t *b, bool skip_death,
                       const char *where) {
    int na = count_kept(a, skip_death), nb = count_kept(b, skip_death);
    if (na != nb) fail_msg("%s: %d entries, want %d", where, nb, na);
    for (int i = 0; i < a->num_entries; i++) {
        const amqp_table_entry_t *e = &a->entries[i];
        if (skip_death && rp_amqp_restore_is_death_header(e->key.bytes, e->key.len)) continue;
        const amqp_table_entry_t *f = NULL;
        for (int k = 0; k < b->num_entries && f == NULL; k++)
            if (same_bytes(b->entries[k].key, e->key)) f = &b->entries[k];
        if (f == NULL) fail_msg("%s: key %.*s missing", where, (int)e->key.len, (char *)e->key.bytes);
        char at[256];
        snprintf(at, sizeof at, "%s.%.*s", where, (int)e->key.len, (char *)e->key.bytes);
        same_value(&e->value, &f->value, at);
    }
}

/* b has the properties of a, and the headers of h (a's when NULL), but
 * the dead-letter headers. */
static void same_properties(const amqp_basic_properties_t *a, const amqp_basic_properties_t *b,
                            const amqp_basic_properties_t *h) {
    if (h == NULL) h = a;
    amqp_flags_t fa = a->_flags & ~(amqp_flags_t)AMQP_BASIC_HEADERS_FLAG;
    amqp_flags_t fb = b->_flags & ~(amqp_flags_t)AMQP_BASIC_HEADERS_FLAG;
    assert_int_equal(fa, fb);
#define SAME(f, F) \
    if (fa & AMQP_BASIC_##F##_FLAG) assert_true(same_bytes(a->f, b->f))
    SAME(content_type, CONTENT_TYPE);
    SAME(content_encoding, CONTENT_ENCODING);
    SAME(correlation_id, CORRELATION_ID);
    SAME(reply_to, REPLY_TO);
    SAME(expiration, EXPIRATION);
    SAME(message_id, MESSAGE_ID);
    SAME(type, TYPE);
    SAME(user_id, USER_ID);
    SAME(app_id, APP_ID);
    SAME(cluster_id, CLUSTER_ID);
#undef SAME
    if (fa & AMQP_BASIC_DELIVERY_MODE_FLAG) assert_int_equal(a->delivery_mode, b->delivery_mode);
    if (fa & AMQP_BASIC_PRIORITY_FLAG) assert_int_equal(a->priority, b->priority);
    if (fa & AMQP_BASIC_TIMESTAMP_FLAG) assert_int_equal(a->timestamp, b->timestamp);
    static const amqp_table_t none = {0, NULL};
    same_table((h->_flags & AMQP_BASIC_HEADERS_FLAG) ? &h->headers : &none,
               (b->_flags & AMQP_BASIC_HEADERS_FLAG) ? &b->headers : &none, true, "headers");
}

/* ---- the control queue ---------------------------------------------------- */

static void answer_replay(long gate) {
    char body[200], control[128];
    tap_plain(control, sizeof control, "control");
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%ld,\"choice\":\"replay\"}",
             gate);
    itest_reply r;
    if (itest_request(T.amqp, control, "application/json", body, strlen(body), NULL, true, "c-1",
                      &r, 20000) != 0)
        fail_msg("no reply; reaperd said:\n%s", T.reaperd->log);
    json_error_t je;
    json_t *j = json_loadb(r.body, r.len, 0, &je);
    itest_reply_free(&r);
    assert_non_null(j);
    json_t *res = json_object_get(j, "result");
    const char *outcome = json_string_value(json_object_get(res, "outcome"));
    if (!json_is_true(json_object_get(j, "ok")) || outcome == NULL ||
        strcmp(outcome, "replayed") != 0) {
        char *s = json_dumps(j, 0);
        fprintf(stderr, "reply: %s\n%s\n", s, T.reaperd->log);
        free(s);
        fail();
    }
    json_decref(j);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_tap_park_then_replay_is_byte_for_byte(void **state) {
    (void)state;
    char x[128], work[128], dlq[128];
    tap_plain(x, sizeof x, "rt.dlx");
    tap_exchange(x, "fanout");
    /* The tap follows the routes to dead-letter queues: one is needed. */
    tap_plain(dlq, sizeof dlq, "rt.dead-letters");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    tap_owned(work, sizeof work, "rt.work");
    tap_queue(work, x, NULL, -1);

    amqp_basic_properties_t sent;
    build(&sent, "rt-1");
    tap_start_reaperd();
    publish(work, &sent);
    tap_reject(work, 1);
    long parked = tap_wait_count(1, 30000,
                                 "SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%/rt-1'");
    if (parked != 1) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(parked, 1);
    /* Stored in replay's lossless form (rp_amqp_restore.h). */
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%%/rt-1' AND "
                              "headers->'i32'->>'$amqp' = 'I' AND "
                              "headers->'bytes'->>'$amqp' = 'x' AND "
                              "headers->'bad-text'->>'$amqp' = 'S' AND NOT body_truncated"),
                     1);
    long gate = tap_sqln("SELECT gate_id FROM dead_letter WHERE identity LIKE 'id:%%/rt-1'");
    assert_true(gate > 0);
    answer_replay(gate);

    /* The copy in the dead-letter queue is what the tap received too: the
     * broker re-encodes the headers of a message it dead-letters, and
     * changes what it does not keep (RabbitMQ writes a uint64 "L" back as
     * an int64 "l"; RabbitMQ 4 does so on any publish); reaper can only give
 * back what it was given. */
    amqp_message_t dead;
    assert_true(get_one(dlq, &dead, 10000));
    for (int i = 0; i < sent.headers.num_entries; i++)
        for (int k = 0; k < dead.properties.headers.num_entries; k++)
            if (same_bytes(sent.headers.entries[i].key, dead.properties.headers.entries[k].key) &&
                sent.headers.entries[i].value.kind != dead.properties.headers.entries[k].value.kind)
                fprintf(stderr, "note: the broker dead-lettered header %s as kind %c (sent %c)\n",
                        (char *)sent.headers.entries[i].key.bytes,
                        dead.properties.headers.entries[k].value.kind,
                        sent.headers.entries[i].value.kind);

    amqp_message_t back;
    assert_true(get_one(work, &back, 20000));
    assert_true(same_bytes(back.body, (amqp_bytes_t){sizeof body_bytes, (void *)body_bytes}));
    /* Every property as sent (the expiration the broker moved into x-death
     * is back), every header as the broker dead-lettered it. */
    same_properties(&sent, &back.properties, &dead.properties);
    /* And none of the dead-letter headers came back. */
    for (int i = 0; i < back.properties.headers.num_entries; i++)
        assert_false(rp_amqp_restore_is_death_header(back.properties.headers.entries[i].key.bytes,
                                                     back.properties.headers.entries[i].key.len));
    amqp_destroy_message(&back);
    amqp_destroy_message(&dead);
    tap_source_done(work, dlq);
    tap_delete_exchange(x);
}

/* reaperd with the backfill on: the owned dead-letter queues of this test
 * end in ".dlq" under its own prefix. */
static void start_with_backfill(void) {
    char env_dlq[160];
    snprintf(env_dlq, sizeof env_dlq,
             "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=^vibey\\.%s\\..*(\\.dlq)$", T.tag);
    char *env[] = {env_dlq, NULL};
    T.reaperd = tap_daemon_start(
        (itest_daemon_opts){.env = env, .ready = {ITEST_READY_BROKER}, .ready_ms = 30000});
}

static void test_tap_and_backfill_park_once(void **state) {
    (void)state;
    char x[128], work[128], dlq[128];
    tap_plain(x, sizeof x, "once.dlx");
    tap_exchange(x, "fanout");
    tap_owned(dlq, sizeof dlq, "once.work.dlq");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    tap_owned(work, sizeof work, "once.work");
    tap_queue(work, x, NULL, -1);
    /* A first run binds the tap to the dead-letter exchange, then stops:
     * the dead letters made meanwhile wait both in the tap queue and in
     * the dead-letter queue. */
    tap_start_reaperd();
    tap_stop_reaperd(SIGTERM);
    enum { N = 40 };
    tap_publish(work, "once", N); /* message_id on every other message */
    tap_reject(work, N);
    ITEST_POLL(tap_depth(dlq) == N && tap_depth(T.tap) == N, 10000);
    assert_int_equal(tap_depth(dlq), N);
    assert_int_equal(tap_depth(T.tap), N);

    start_with_backfill();
    const char *q = "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE 'once-%'";
    long got = tap_wait_count(N, 30000, q);
    if (got != N) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, N);
    /* Both have had their go: the tap queue drained and the first sweep's
     * backfill done; still one row per message. */
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);
    assert_true(rp_child_wait_for(T.reaperd, "\"msg\":\"pass finished\"", 30000) ||
                (fprintf(stderr, "%s\n", T.reaperd->log), false));
    assert_int_equal(tap_sqln("%s", q), N);
    assert_int_equal(tap_sqln("SELECT count(DISTINCT identity) FROM dead_letter WHERE "
                              "encode(body, 'escape') LIKE 'once-%%'"),
                     N);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE identity LIKE 'sha256:%%' "
                              "AND encode(body, 'escape') LIKE 'once-%%'"),
                     N / 2);
    /* The backfill did look at the queue (it leaves the messages there). */
    assert_int_equal(tap_depth(dlq), N);
    tap_source_done(work, dlq);
    tap_delete_exchange(x);
}

/* ---- reaper's own queues and its policy --------------------------------------- */

/* GET on the management API (curl), parsed; NULL when it fails. */
static json_t *mgmt_get(const char *path) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -sf -u \"reaper:$(cat '%s')\" '%s%s'",
             itest_env("REAPER_BROKER_PASSWORD_FILE"), itest_env("REAPER_BROKER_MANAGEMENT_URL"),
             path);
    FILE *f = popen(cmd, "r");
    if (f == NULL) return NULL;
    json_error_t je;
    json_t *j = json_loadf(f, 0, &je);
    pclose(f);
    return j;
}

static void mgmt_delete(const char *path) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -u \"reaper:$(cat '%s')\" -X DELETE '%s%s'",
             itest_env("REAPER_BROKER_PASSWORD_FILE"), itest_env("REAPER_BROKER_MANAGEMENT_URL"),
             path);
    if (system(cmd) != 0) fprintf(stderr, "could not DELETE %s\n", path);
}

/* A queue as the management API lists it (NULL on failure). */
static json_t *queue_info(const char *queue) {
    char path[256];
    snprintf(path, sizeof path, "/api/queues/%%2f/%s", queue);
    return mgmt_get(path);
}

/* With the DEFAULT names (vibey.reap.control, vibey.reap.tap, both matched
 * by the default owned pattern ^vibey\.): after a reconcile the tap carries
 * none of reaper's policies (so no delivery-limit overrides its own
 * x-delivery-limit -1 on RabbitMQ 4, nor limits the quorum tap on 3.10),
 * while an owned quorum queue carries vibey-reap; and a dead letter
 * returned to the tap 25 times (more than the policy's 20) is still there
 * to be parked. */
static void test_own_queues_get_no_policy(void **state) {
    (void)state;
    static const char tap[] = "vibey.reap.tap", control[] = "vibey.reap.control";
    mgmt_delete("/api/queues/%2f/vibey.reap.tap"); /* left by an earlier failed run */
    char x[128], work[128], dlq[128], pq[128];
    tap_plain(x, sizeof x, "own.dlx");
    tap_exchange(x, "fanout");
    tap_plain(dlq, sizeof dlq, "own.dead-letters");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    tap_owned(work, sizeof work, "own.work");
    tap_queue(work, x, NULL, -1);
    tap_owned(pq, sizeof pq, "own.quorum");
    /* With a dead-letter exchange: reaper's policy (and its delivery-limit)
     * leaves out a quorum queue that has none. */
    amqp_table_entry_t qt[2] = {{amqp_cstring_bytes("x-queue-type"),
                                 {.kind = AMQP_FIELD_KIND_UTF8,
                                  .value.bytes = amqp_cstring_bytes("quorum")}},
                                {amqp_cstring_bytes("x-dead-letter-exchange"),
                                 {.kind = AMQP_FIELD_KIND_UTF8,
                                  .value.bytes = amqp_cstring_bytes(x)}}};
    amqp_queue_declare(T.amqp, 1, amqp_cstring_bytes(pq), 0, 1, 0, 0, (amqp_table_t){2, qt});
    assert_int_equal(amqp_get_rpc_reply(T.amqp).reply_type, AMQP_RESPONSE_NORMAL);

    /* Default owned pattern, control and tap names; no dead-letter queue
     * of other tests backfilled. */
    char *env[] = {T.env_dlq, NULL};
    itest_daemon_opts o = {.schema = T.schema, .env = env,
                           .ready = {ITEST_READY_PASS, ITEST_READY_TAP}, .ready_ms = 30000};
    T.reaperd = itest_daemon_start(&o);

    /* Statistics lag: wait until the owned quorum queue shows vibey-reap,
     * then the tap's (and the control queue's) are as current. */
    bool shown = false;
    for (int i = 0; i < 300 && !shown; i++) {
        json_t *q = queue_info(pq);
        const char *pol = json_string_value(json_object_get(q, "policy"));
        shown = pol && strcmp(pol, "vibey-reap") == 0;
        json_decref(q);
        if (!shown) rp_child_drain(T.reaperd, 100);
    }
    if (!shown) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_true(shown);
    const char *own[] = {tap, control};
    for (size_t i = 0; i < 2; i++) {
        json_t *q = queue_info(own[i]);
        assert_non_null(q);
        const char *pol = json_string_value(json_object_get(q, "policy"));
        json_t *eff = json_object_get(q, "effective_policy_definition");
        if (pol || json_object_get(eff, "delivery-limit")) {
            char *t = json_dumps(q, 0);
            fprintf(stderr, "%s: %s\n", own[i], t);
            free(t);
        }
        assert_null(pol);
        assert_null(json_object_get(eff, "delivery-limit"));
        json_decref(q);
    }
    tap_stop_reaperd(SIGTERM);

    /* One dead letter on the tap, returned 25 times while reaperd is down. */
    tap_publish(work, "own", 1);
    tap_reject(work, 1);
    ITEST_POLL(tap_depth(tap) == 1, 10000);
    if (tap_depth(tap) != 1) {
        json_t *b = mgmt_get("/api/queues/%2f/vibey.reap.tap/bindings");
        char *t = json_dumps(b, 0);
        fprintf(stderr, "tap bindings: %s\n", t ? t : "?");
        free(t);
        json_decref(b);
        json_t *q = queue_info(tap);
        t = json_dumps(q, 0);
        fprintf(stderr, "tap: %.3000s\n", t ? t : "?");
        free(t);
        json_decref(q);
    }
    assert_int_equal(tap_depth(tap), 1);
    for (int i = 0; i < 25; i++) {
        amqp_rpc_reply_t r = amqp_basic_get(T.amqp, 3, amqp_cstring_bytes(tap), 0);
        assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
        if (r.reply.id != AMQP_BASIC_GET_OK_METHOD) fail_msg("gone from the tap after %d returns", i);
        uint64_t tag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
        amqp_message_t m;
        assert_int_equal(amqp_read_message(T.amqp, 3, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_destroy_message(&m);
        assert_int_equal(amqp_basic_nack(T.amqp, 3, tag, 0, 1), 0);
        amqp_maybe_release_buffers(T.amqp);
    }
    o.no_wait = true;
    T.reaperd = itest_daemon_start(&o);
    long got = tap_wait_count(1, 30000,
                              "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') = "
                              "'own-0'");
    if (got != 1) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, 1);
    tap_source_done(work, dlq);
    tap_delete_queue(pq);
    tap_delete_exchange(x);
    tap_delete_queue(tap);
    tap_delete_queue(control);
    mgmt_delete("/api/policies/%2f/vibey-reap");
    mgmt_delete("/api/policies/%2f/vibey-reap-classic");
}

static int setup(void **state) {
    (void)state;
    if (tap_world_setup("tapreplay") != 0) return -1;
    amqp_channel_open(T.amqp, 3); /* basic.get, apart from tap_reject's channel 2 */
    if (amqp_get_rpc_reply(T.amqp).reply_type != AMQP_RESPONSE_NORMAL) return -1;
    struct amqp_connection_info info;
    char url[512];
    snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) return -1;
    snprintf(user, sizeof user, "%s", info.user);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tap_park_then_replay_is_byte_for_byte),
        cmocka_unit_test(test_tap_and_backfill_park_once),
        cmocka_unit_test(test_own_queues_get_no_policy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
