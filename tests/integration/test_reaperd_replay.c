/*
 * Answering bus_dead_lettered gates over AMQP against a running reaperd
 * (CONTRACT section 5): replay puts the same bytes and properties (less the
 * dead-letter headers) back on the origin queue, once; dismiss sends
 * nothing; a second answer is already_answered and sends nothing; forged
 * headers naming a foreign queue are refused (conflict, gate open); a
 * returned publish (no such queue) or a nacked one (a full queue that
 * rejects publishes) leaves the gate open with an error reply; a body not
 * stored whole is refused; two replays of one gate at once publish once.
 *
 * The dead letters are parked straight through the PostgreSQL park port,
 * with properties and headers captured from a real AMQP property set (as the
 * tap and the backfill store them).
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

#include "itest.h"
#include "test_daemon.h"
#include "pg_fixture.h"
#include "rp_amqp_restore.h"
#include "rp_proto.h"

typedef struct world {
    pgfx *f;
    pgfx *lock; /* test_request_redelivered_too_often's table lock, while held */
    rp_child *reaperd;
    amqp_connection_state_t amqp;
    char control[96];
    char prefix[64];   /* vibey.itest.rp<pid> */
    char env_owned[128];
    int seq;
} world;

static world W;

static const char *name(const char *suffix) {
    static char buf[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s.%s", W.prefix, suffix);
    return buf[k];
}

static void declare(const char *queue, amqp_table_t args) {
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(queue), 0, 0, 0, 0, args);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
}

static void delete_queue(const char *queue) { itest_queue_delete(W.amqp, 1, queue); }

static uint32_t depth(const char *queue) { return (uint32_t)itest_queue_depth(W.amqp, 1, queue); }

static int group_setup(void **state) {
    (void)state;
    W.f = pgfx_new("replay");
    snprintf(W.prefix, sizeof W.prefix, "vibey.itest.rp%d", (int)getpid());
    /* Named like this run's owned queues: the owned pattern matches it,
     * and a replay to it must still be refused (test_replay_to_own_queue). */
    snprintf(W.control, sizeof W.control, "vibey.itest.rp%d.control", (int)getpid());
    itest_env_owned(W.env_owned, sizeof W.env_owned, "rp"); /* this run's queues only */
    W.amqp = itest_amqp_connect();
    /* Replies may also go to this run's named reply queues (the
     * redelivery test reads its replies from one that outlives its
     * connections; direct reply-to would not). */
    static char env_replies[200];
    snprintf(env_replies, sizeof env_replies,
             "REAPER_CONTROL_REPLY_QUEUE_PATTERN=^vibey\\.itest\\.rp%d\\.replies$", (int)getpid());
    /* The lock timeout outlasts test_request_redelivered_too_often's four
     * reconnects (its request's store work waits behind a table lock the
     * whole time: with the default 10 s, a slow reconnect on a loaded
     * machine let the work fail as unavailable and the request be answered
     * before its fourth redelivery). */
    char *env[] = {W.env_owned, "REAPER_STORE_LOCK_TIMEOUT_MS=180000", env_replies, NULL};
    W.reaperd = itest_daemon_start(
        &(itest_daemon_opts){.schema = W.f->schema, .control = W.control, .env = env});
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    /* A clean stop (and, under the sanitizers, no leak or error). */
    /* A test that failed while it held a table lock: let it go first, or
     * reaperd's stop and the schema's drop would wait for it. */
    if (W.lock) pgfx_free(W.lock);
    int rc = itest_daemon_stop_group(W.reaperd, W.amqp, W.control);
    itest_amqp_close(W.amqp);
    pgfx_free(W.f);
    return rc == 0 ? 0 : -1;
}

/* ---- parking a dead letter the way the tap does -------------------------- */

#define te   itest_te
#define fstr itest_fstr

/* Extra properties the next park stores (then reset): a user_id and an
 * expiration the broker would refuse on reaperd's connection, and a CC
 * header of a type the broker refuses (a channel error of its own). */
static struct {
    const char *user_id;
    const char *expiration;
    bool bad_cc;
} EXTRA;

typedef struct parked {
    int64_t gate;
    char message_id[64];
} parked;

/* Parks a message that died on `origin` (as its headers say), found on
 * origin.dlq, with a body and a full set of properties; truncated marks the
 * body as not stored whole. Returns its gate. */
static parked park_on(const char *vhost, const char *origin, const void *body, size_t len,
                      bool truncated) {
    parked p;
    memset(&p, 0, sizeof p);
    snprintf(p.message_id, sizeof p.message_id, "m-%d-%d", (int)getpid(), ++W.seq);
    /* x-death as the broker writes it. */
    amqp_field_value_t count = {.kind = AMQP_FIELD_KIND_I64, .value.i64 = 1};
    amqp_field_value_t when = {.kind = AMQP_FIELD_KIND_TIMESTAMP, .value.u64 = 1700000000};
    amqp_field_value_t rk = fstr(origin);
    amqp_field_value_t keys = {.kind = AMQP_FIELD_KIND_ARRAY, .value.array = {1, &rk}};
    amqp_table_entry_t death[] = {te("count", count), te("reason", fstr("rejected")),
                                  te("queue", fstr(origin)), te("time", when),
                                  te("exchange", fstr("")), te("routing-keys", keys)};
    amqp_field_value_t entry = {.kind = AMQP_FIELD_KIND_TABLE,
                                .value.table = {(int)RP_ARRAY_LEN(death), death}};
    amqp_field_value_t xdeath = {.kind = AMQP_FIELD_KIND_ARRAY, .value.array = {1, &entry}};
    amqp_field_value_t i32 = {.kind = AMQP_FIELD_KIND_I32, .value.i32 = -7};
    amqp_table_entry_t headers[] = {
        te("x-custom", fstr("kept")), te("x-int", i32), te("x-death", xdeath),
        te("x-first-death-queue", fstr(origin)), te("x-first-death-reason", fstr("rejected")),
        te("x-first-death-exchange", fstr("")),
    };
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                   AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
                   AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_HEADERS_FLAG |
                   AMQP_BASIC_PRIORITY_FLAG;
    props.content_type = amqp_cstring_bytes("application/octet-stream");
    props.delivery_mode = 2;
    props.priority = 3;
    props.message_id = amqp_cstring_bytes(p.message_id);
    props.correlation_id = amqp_cstring_bytes("corr-7");
    props.timestamp = 1700000123;
    props.app_id = amqp_cstring_bytes("itest");
    props.headers = (amqp_table_t){(int)RP_ARRAY_LEN(headers), headers};
    amqp_table_entry_t headers_cc[RP_ARRAY_LEN(headers) + 1];
    if (EXTRA.user_id) {
        props._flags |= AMQP_BASIC_USER_ID_FLAG;
        props.user_id = amqp_cstring_bytes(EXTRA.user_id);
    }
    if (EXTRA.expiration) {
        props._flags |= AMQP_BASIC_EXPIRATION_FLAG;
        props.expiration = amqp_cstring_bytes(EXTRA.expiration);
    }
    if (EXTRA.bad_cc) {
        memcpy(headers_cc, headers, sizeof headers);
        amqp_field_value_t cc = {.kind = AMQP_FIELD_KIND_I32, .value.i32 = 5};
        headers_cc[RP_ARRAY_LEN(headers)] = te("CC", cc);
        props.headers = (amqp_table_t){(int)RP_ARRAY_LEN(headers_cc), headers_cc};
    }
    memset(&EXTRA, 0, sizeof EXTRA);
    char *pj = NULL, *hj = NULL;
    assert_int_equal(rp_amqp_restore_capture(&props, &pj, &hj), RP_OK);

    rp_pg_dl_handle h = {hj, pj};
    p.gate =
        pgfx_park(W.f, vhost, origin, NULL, p.message_id, (rp_bytes){body, len}, truncated, &h);
    free(pj);
    free(hj);
    return p;
}

static parked park(const char *origin, const void *body, size_t len, bool truncated) {
    return park_on("/", origin, body, len, truncated);
}

/* ---- requests ------------------------------------------------------------ */

/* Sends an answer and returns the reply (JSON). */
static json_t *answer(int64_t gate, const char *choice) {
    char body[200], corr[32];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%" PRId64 ",\"choice\":\"%s\"}",
             gate, choice);
    snprintf(corr, sizeof corr, "c-%d", ++W.seq);
    itest_reply r;
    if (itest_request(W.amqp, W.control, "application/json", body, strlen(body), NULL, true, corr,
                      &r, 20000) != 0) {
        fprintf(stderr, "no reply; reaperd said:\n%s\n", W.reaperd->log);
        fail();
    }
    json_error_t je;
    json_t *j = json_loadb(r.body, r.len, 0, &je);
    assert_non_null(j);
    itest_reply_free(&r);
    return j;
}

static void assert_outcome(json_t *reply, const char *choice, const char *outcome) {
    if (!json_is_true(json_object_get(reply, "ok"))) {
        char *s = json_dumps(reply, 0);
        fprintf(stderr, "reply: %s\n", s);
        free(s);
    }
    assert_true(json_is_true(json_object_get(reply, "ok")));
    json_t *res = json_object_get(reply, "result");
    assert_string_equal(json_string_value(json_object_get(res, "choice")), choice);
    assert_string_equal(json_string_value(json_object_get(res, "outcome")), outcome);
    json_decref(reply);
}

/* An error reply with this code whose message holds needle. */
static void assert_refused(json_t *reply, const char *code, const char *needle) {
    assert_false(json_is_true(json_object_get(reply, "ok")));
    json_t *e = json_object_get(reply, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (strcmp(json_string_value(json_object_get(e, "code")), code) != 0 || !strstr(msg, needle))
        fprintf(stderr, "error: %s %s\n", json_string_value(json_object_get(e, "code")), msg);
    assert_string_equal(json_string_value(json_object_get(e, "code")), code);
    assert_non_null(strstr(msg, needle));
    json_decref(reply);
}

static bool gate_open(int64_t gate) {
    return pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE id = %" PRId64 " AND answer IS NULL",
                    gate) == 1;
}

/* ---- reading the origin queue back --------------------------------------- */

typedef struct got {
    bool any;
    amqp_message_t msg;
} got;

static got get_one(const char *queue) {
    got g;
    memset(&g, 0, sizeof g);
    amqp_rpc_reply_t r = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(queue), 1);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) return g;
    g.any = true;
    assert_int_equal(amqp_read_message(W.amqp, 1, &g.msg, 0).reply_type, AMQP_RESPONSE_NORMAL);
    return g;
}

static const amqp_field_value_t *header(const amqp_basic_properties_t *p, const char *k) {
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG)) return NULL;
    for (int i = 0; i < p->headers.num_entries; i++)
        if (p->headers.entries[i].key.len == strlen(k) &&
            memcmp(p->headers.entries[i].key.bytes, k, strlen(k)) == 0)
            return &p->headers.entries[i].value;
    return NULL;
}

static void assert_amqp_str(amqp_bytes_t b, const char *want) {
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.bytes, want, b.len);
}

/* ---- the tests ----------------------------------------------------------- */

/* Replay: the same bytes and properties (less the dead-letter headers) on
 * the origin queue, once; the gate settled with its event; a second answer
 * is already_answered and sends nothing. */
static void test_replay_once(void **state) {
    (void)state;
    const char *origin = name("orders");
    declare(origin, amqp_empty_table);
    uint8_t body[300];
    for (size_t i = 0; i < sizeof body; i++) body[i] = (uint8_t)(i * 7); /* NULs and high bytes */
    parked p = park(origin, body, sizeof body, false);
    int64_t events = pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'");

    assert_outcome(answer(p.gate, "replay"), "replay", "replayed");
    got g = get_one(origin);
    assert_true(g.any);
    assert_int_equal(g.msg.body.len, sizeof body);
    assert_memory_equal(g.msg.body.bytes, body, sizeof body);
    const amqp_basic_properties_t *pr = &g.msg.properties;
    assert_amqp_str(pr->content_type, "application/octet-stream");
    assert_int_equal(pr->delivery_mode, 2);
    assert_int_equal(pr->priority, 3);
    assert_amqp_str(pr->message_id, p.message_id);
    assert_amqp_str(pr->correlation_id, "corr-7");
    assert_amqp_str(pr->app_id, "itest");
    assert_int_equal(pr->timestamp, 1700000123);
    const amqp_field_value_t *h = header(pr, "x-custom");
    assert_non_null(h);
    assert_amqp_str(h->value.bytes, "kept");
    h = header(pr, "x-int");
    assert_non_null(h);
    assert_int_equal(h->kind, AMQP_FIELD_KIND_I32);
    assert_int_equal(h->value.i32, -7);
    assert_null(header(pr, "x-death"));
    assert_null(header(pr, "x-first-death-queue"));
    assert_null(header(pr, "x-first-death-reason"));
    assert_null(header(pr, "x-first-death-exchange"));
    assert_int_equal(pr->headers.num_entries, 2);
    amqp_destroy_message(&g.msg);
    /* Once. */
    assert_false(get_one(origin).any);
    assert_false(gate_open(p.gate));
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                   " AND answer = 'replay'", p.gate), 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM job j JOIN gate g ON g.job_id = j.id "
                                   "WHERE g.id = %" PRId64 " AND j.state = 'succeeded'", p.gate), 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'"),
                     events + 1);

    /* A second answer, replay or dismiss: the first answer, nothing sent. */
    assert_outcome(answer(p.gate, "replay"), "replay", "already_answered");
    assert_outcome(answer(p.gate, "dismiss"), "replay", "already_answered");
    usleep(300 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 0);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'"),
                     events + 1);
    /* The broker's copy is reaper's to keep: nothing of the row is gone. */
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE gate_id = %" PRId64,
                              p.gate), 1);
    delete_queue(origin);
}

/* Dismiss settles with nothing sent; a replay after it is already_answered. */
static void test_dismiss(void **state) {
    (void)state;
    const char *origin = name("mail");
    declare(origin, amqp_empty_table);
    parked p = park(origin, "hello", 5, false);
    assert_outcome(answer(p.gate, "dismiss"), "dismiss", "dismissed");
    assert_outcome(answer(p.gate, "replay"), "dismiss", "already_answered");
    usleep(300 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 0);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM job j JOIN gate g ON g.job_id = j.id "
                                   "WHERE g.id = %" PRId64 " AND j.state = 'failed'", p.gate), 1);
    delete_queue(origin);
}

/* Forged headers naming a foreign queue: stored, but never a replay
 * target; the gate stays open and the foreign queue gets nothing. */
static void test_forged_foreign_origin(void **state) {
    (void)state;
    char foreign[96];
    snprintf(foreign, sizeof foreign, "celery.itest.%d", (int)getpid());
    declare(foreign, amqp_empty_table);
    parked p = park(foreign, "evil", 4, false);
    char *stored = pgfx_text(W.f, "SELECT origin_queue FROM dead_letter WHERE gate_id = %" PRId64,
                             p.gate);
    char want[128];
    snprintf(want, sizeof want, "\"%s\"", foreign);
    assert_string_equal(stored, want);
    free(stored);
    assert_refused(answer(p.gate, "replay"), "conflict", "not owned");
    assert_true(gate_open(p.gate));
    usleep(300 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(foreign), 0);
    /* Dismiss is still possible. */
    assert_outcome(answer(p.gate, "dismiss"), "dismiss", "dismissed");
    delete_queue(foreign);
}

/* A body not stored whole is never replayed. */
static void test_truncated_refused(void **state) {
    (void)state;
    const char *origin = name("big");
    declare(origin, amqp_empty_table);
    parked p = park(origin, "partial", 7, true);
    assert_refused(answer(p.gate, "replay"), "conflict", "whole");
    assert_true(gate_open(p.gate));
    usleep(200 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 0);
    delete_queue(origin);
}

/* A returned publish (the origin queue is gone) leaves the gate open; once
 * the queue is back, the replay goes through. */
static void test_returned_leaves_gate_open(void **state) {
    (void)state;
    const char *origin = name("gone");
    parked p = park(origin, "back", 4, false);
    assert_refused(answer(p.gate, "replay"), "conflict", "could not route");
    assert_true(gate_open(p.gate));
    declare(origin, amqp_empty_table);
    assert_outcome(answer(p.gate, "replay"), "replay", "replayed");
    assert_int_equal(depth(origin), 1);
    delete_queue(origin);
}

/* A nacked publish (a full queue that rejects publishes) leaves the gate
 * open; once there is room, the replay goes through. */
static void test_nacked_leaves_gate_open(void **state) {
    (void)state;
    const char *origin = name("full");
    amqp_table_entry_t args[2];
    args[0].key = amqp_cstring_bytes("x-max-length");
    args[0].value.kind = AMQP_FIELD_KIND_I64;
    args[0].value.value.i64 = 1;
    args[1] = te("x-overflow", fstr("reject-publish"));
    declare(origin, (amqp_table_t){2, args});
    amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(origin), 0, 0, NULL,
                       amqp_cstring_bytes("filler"));
    ITEST_POLL(depth(origin) == 1, 10000);
    assert_int_equal(depth(origin), 1);
    parked p = park(origin, "room?", 5, false);
    assert_refused(answer(p.gate, "replay"), "unavailable", "refused");
    assert_true(gate_open(p.gate));
    assert_int_equal(depth(origin), 1);
    amqp_queue_purge(W.amqp, 1, amqp_cstring_bytes(origin));
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    assert_outcome(answer(p.gate, "replay"), "replay", "replayed");
    got g = get_one(origin);
    assert_true(g.any);
    assert_int_equal(g.msg.body.len, 5);
    assert_memory_equal(g.msg.body.bytes, "room?", 5);
    amqp_destroy_message(&g.msg);
    delete_queue(origin);
}

/* Two replays of one gate sent at once: one publish. */
static void test_concurrent_replays_publish_once(void **state) {
    (void)state;
    const char *origin = name("race");
    declare(origin, amqp_empty_table);
    parked p = park(origin, "once", 4, false);
    char body[200];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%" PRId64
                                ",\"choice\":\"replay\"}", p.gate);
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
                   AMQP_BASIC_USER_ID_FLAG; /* reaperd answers only its own user by default */
    props.user_id = amqp_cstring_bytes(itest_broker_user());
    props.content_type = amqp_cstring_bytes("application/json");
    props.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    for (int i = 0; i < 4; i++)
        assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(W.control), 0, 0, &props,
                                            amqp_cstring_bytes(body)),
                         AMQP_STATUS_OK);
    int replayed = 0, other = 0;
    for (int i = 0; i < 4; i++) {
        amqp_envelope_t env;
        struct timeval tv = {20, 0};
        amqp_maybe_release_buffers(W.amqp);
        assert_int_equal(amqp_consume_message(W.amqp, &env, &tv, 0).reply_type,
                         AMQP_RESPONSE_NORMAL);
        json_error_t je;
        json_t *j = json_loadb(env.message.body.bytes, env.message.body.len, 0, &je);
        assert_non_null(j);
        const char *outcome =
            json_string_value(json_object_get(json_object_get(j, "result"), "outcome"));
        if (outcome && strcmp(outcome, "replayed") == 0) replayed++;
        else other++; /* already_answered, or conflict: a replay is in progress */
        json_decref(j);
        amqp_destroy_envelope(&env);
    }
    assert_int_equal(replayed, 1);
    assert_int_equal(other, 3);
    usleep(300 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 1);
    delete_queue(origin);
}

/* A dismiss sent right behind a replay of the same gate never dismisses a
 * message that is being replayed: it is refused (busy) while the replay is
 * in flight, or finds the gate answered by the replay. */
static void test_dismiss_behind_replay(void **state) {
    (void)state;
    const char *origin = name("behind");
    declare(origin, amqp_empty_table);
    parked p = park(origin, "first", 5, false);
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
                   AMQP_BASIC_USER_ID_FLAG; /* reaperd answers only its own user by default */
    props.user_id = amqp_cstring_bytes(itest_broker_user());
    props.content_type = amqp_cstring_bytes("application/json");
    props.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    const char *choices[2] = {"replay", "dismiss"};
    for (int i = 0; i < 2; i++) {
        char body[200];
        snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%" PRId64
                                    ",\"choice\":\"%s\"}", p.gate, choices[i]);
        assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(W.control), 0, 0, &props,
                                            amqp_cstring_bytes(body)),
                         AMQP_STATUS_OK);
    }
    int replayed = 0;
    for (int i = 0; i < 2; i++) {
        amqp_envelope_t env;
        struct timeval tv = {20, 0};
        amqp_maybe_release_buffers(W.amqp);
        assert_int_equal(amqp_consume_message(W.amqp, &env, &tv, 0).reply_type,
                         AMQP_RESPONSE_NORMAL);
        json_error_t je;
        json_t *j = json_loadb(env.message.body.bytes, env.message.body.len, 0, &je);
        assert_non_null(j);
        const char *outcome =
            json_string_value(json_object_get(json_object_get(j, "result"), "outcome"));
        assert_true(outcome == NULL || strcmp(outcome, "dismissed") != 0);
        if (outcome && strcmp(outcome, "replayed") == 0) replayed++;
        if (outcome == NULL) {
            /* Refused while the replay was in flight: busy, saying by whom
             * (issue #15), like a claim held by another replica. */
            json_t *e = json_object_get(j, "error");
            const char *code = json_string_value(json_object_get(e, "code"));
            const char *msg = json_string_value(json_object_get(e, "message"));
            assert_non_null(code);
            assert_non_null(msg);
            assert_string_equal(code, "busy");
            assert_non_null(strstr(msg, "is being replayed by"));
        }
        json_decref(j);
        amqp_destroy_envelope(&env);
    }
    assert_int_equal(replayed, 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                   " AND answer = 'replay'", p.gate), 1);
    ITEST_POLL(depth(origin) == 1, 10000);
    assert_int_equal(depth(origin), 1);
    delete_queue(origin);
}

/* A dead letter found on another vhost is not replayed on reaperd's. */
static void test_other_vhost_refused(void **state) {
    (void)state;
    const char *origin = name("elsewhere");
    declare(origin, amqp_empty_table);
    parked p = park_on("tenant-b", origin, "x", 1, false);
    assert_refused(answer(p.gate, "replay"), "conflict", "vhost tenant-b");
    assert_true(gate_open(p.gate));
    usleep(200 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 0);
    delete_queue(origin);
}

/* A gate that does not exist, and a delivery_exhausted gate, refuse replay. */
static void test_bad_targets(void **state) {
    (void)state;
    assert_refused(answer(999999999, "replay"), "not_found", "no such gate");
    pgfx_exec(W.f, "INSERT INTO job (project_id, kind, state) VALUES ('p', 'k', 'awaiting_human')");
    pgfx_exec(W.f, "INSERT INTO gate (job_id, kind, question, choices) SELECT max(id), "
                   "'delivery_exhausted', 'q', ARRAY['retry','dismiss'] FROM job");
    int64_t gate = pgfx_i64(W.f, "SELECT max(id) FROM gate");
    assert_refused(answer(gate, "replay"), "conflict", "does not take");
    assert_true(gate_open(gate));
}

/* ---- replays the broker would refuse (issue 14 item 4) ------------------- */

/* How many times reaperd has connected to the broker so far (its log). */
static int connects(void) {
    rp_child_drain(W.reaperd, 200);
    int n = 0;
    for (const char *p = W.reaperd->log; (p = strstr(p, "\"msg\":\"broker connected\"")); p++) n++;
    return n;
}

/* The control queue holds nothing: every request was acked. */
static void assert_control_empty(void) {
    ITEST_POLL(depth(W.control) == 0, 10000);
    assert_int_equal(depth(W.control), 0);
}

/* The note of a successful answer reply holds needle. */
static void assert_note(json_t *reply, const char *needle) {
    const char *note =
        json_string_value(json_object_get(json_object_get(reply, "result"), "note"));
    if (note == NULL || strstr(note, needle) == NULL) fprintf(stderr, "note: %s\n", note);
    assert_non_null(note);
    assert_non_null(strstr(note, needle));
}

/* A dead letter first published with user_id alice: reaperd (logged in as
 * another user) replays it without the user_id and says so; the stored row
 * keeps it; the connection is never rebuilt. Before: the broker closed the
 * channel with 406, reaperd reconnected, and the request came back forever. */
static void test_replay_foreign_user_id(void **state) {
    (void)state;
    const char *origin = name("alice");
    declare(origin, amqp_empty_table);
    int before = connects();
    EXTRA.user_id = "alice";
    parked p = park(origin, "from alice", 10, false);
    json_t *reply = answer(p.gate, "replay");
    assert_note(reply, "user_id \"alice\" was left out");
    assert_outcome(reply, "replay", "replayed");
    got g = get_one(origin);
    assert_true(g.any);
    assert_memory_equal(g.msg.body.bytes, "from alice", 10);
    assert_false(g.msg.properties._flags & AMQP_BASIC_USER_ID_FLAG);
    assert_amqp_str(g.msg.properties.message_id, p.message_id);
    amqp_destroy_message(&g.msg);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE gate_id = %" PRId64
                                   " AND properties::text LIKE '%%alice%%'", p.gate), 1);
    assert_control_empty();
    assert_int_equal(connects(), before);
    delete_queue(origin);
}

/* A stored expiration the broker refuses is left out (and said so); a
 * valid one is kept. */
static void test_replay_bad_expiration(void **state) {
    (void)state;
    const char *origin = name("ttl");
    declare(origin, amqp_empty_table);
    int before = connects();
    EXTRA.expiration = "soon";
    parked p = park(origin, "late", 4, false);
    json_t *reply = answer(p.gate, "replay");
    assert_note(reply, "expiration \"soon\" was left out");
    assert_outcome(reply, "replay", "replayed");
    got g = get_one(origin);
    assert_true(g.any);
    assert_false(g.msg.properties._flags & AMQP_BASIC_EXPIRATION_FLAG);
    amqp_destroy_message(&g.msg);

    EXTRA.expiration = "600000";
    p = park(origin, "fine", 4, false);
    reply = answer(p.gate, "replay");
    assert_null(json_object_get(json_object_get(reply, "result"), "note"));
    assert_outcome(reply, "replay", "replayed");
    g = get_one(origin);
    assert_true(g.any);
    assert_true(g.msg.properties._flags & AMQP_BASIC_EXPIRATION_FLAG);
    assert_amqp_str(g.msg.properties.expiration, "600000");
    amqp_destroy_message(&g.msg);
    assert_control_empty();
    assert_int_equal(connects(), before);
    delete_queue(origin);
}

/* A replay the broker refuses for a reason reaperd does not foresee (a CC
 * header that is not an array: 406 "invalid message"): a conflict reply
 * with the broker's reason, the gate open, the request acked, the
 * connection kept, and replays and other requests go on working. */
static void test_replay_refused_by_broker(void **state) {
    (void)state;
    const char *origin = name("cc");
    declare(origin, amqp_empty_table);
    int before = connects();
    EXTRA.bad_cc = true;
    parked bad = park(origin, "bad cc", 6, false);
    assert_refused(answer(bad.gate, "replay"), "conflict", "406");
    assert_true(gate_open(bad.gate));
    assert_control_empty();
    usleep(500 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 0);
    /* Again: the same answer, still no loop. */
    assert_refused(answer(bad.gate, "replay"), "conflict", "refused");
    /* The replay channel is open again: a good replay goes through. */
    parked good = park(origin, "good", 4, false);
    assert_outcome(answer(good.gate, "replay"), "replay", "replayed");
    assert_int_equal(depth(origin), 1);
    assert_control_empty();
    assert_int_equal(connects(), before);
    assert_outcome(answer(bad.gate, "dismiss"), "dismiss", "dismissed");
    delete_queue(origin);
}

/* reaper's own queues are never a destination, even when the owned
 * pattern matches them (here it does: the control queue is named like the
 * run's queues). */
static void test_replay_to_own_queue_refused(void **state) {
    (void)state;
    parked p = park(W.control, "loop", 4, false);
    long before = depth(W.control);
    assert_refused(answer(p.gate, "replay"), "conflict", "reaper's own queues");
    assert_true(gate_open(p.gate));
    assert_int_equal(depth(W.control), before);
}

/* A request the broker keeps handing back is answered internal and acked
 * after its 4th redelivery: here a gates request whose store work is held
 * by a lock, while the broker closes reaperd's connection four times. The
 * request is gone from the control queue afterwards; every connection
 * reaperd makes past that finds nothing to redo. */
static void test_request_redelivered_too_often(void **state) {
    (void)state;
    const char *replies = name("replies"); /* outlives the test's connections */
    char rq[160];
    snprintf(rq, sizeof rq, "%s", replies);
    declare(rq, amqp_empty_table);
    pgfx *lock = W.lock = pgfx_attach(W.f->schema);
    pgfx_exec(lock, "BEGIN");
    pgfx_exec(lock, "LOCK TABLE gate IN ACCESS EXCLUSIVE MODE");

    char msgid[64];
    snprintf(msgid, sizeof msgid, "loop-%d", (int)getpid());
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
                   AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                   AMQP_BASIC_USER_ID_FLAG;
    props.user_id = amqp_cstring_bytes(itest_broker_user()); /* reaperd's own: allowed */
    props.content_type = amqp_cstring_bytes("application/json");
    props.reply_to = amqp_cstring_bytes(rq);
    props.correlation_id = amqp_cstring_bytes("loop");
    props.message_id = amqp_cstring_bytes(msgid);
    const char *body = "{\"v\":1,\"op\":\"gates\",\"state\":\"all\",\"limit\":1}";
    assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                        amqp_cstring_bytes(W.control), 0, 0, &props,
                                        amqp_cstring_bytes(body)),
                     AMQP_STATUS_OK);
    int before = connects();
    for (int round = 1; round <= 4; round++) {
        /* reaperd holds it (its store work waits for the lock). */
        ITEST_POLL(depth(W.control) == 0, 10000);
        assert_int_equal(depth(W.control), 0);
        /* Deliberate: a margin for reaperd to take the delivery in hand before its
         * connection goes (nothing marks it: its store session already waits
         * for the lock since the first delivery). */
        usleep(200 * 1000);
        assert_int_equal(itest_broker_ctl("close_all_connections itest-redelivered"), 0);
        itest_amqp_close(W.amqp);
        W.amqp = itest_amqp_connect();
        assert_non_null(W.amqp);
        ITEST_POLL(connects() >= before + round, 30000);
        assert_int_equal(connects(), before + round);
    }
    /* The fifth delivery, the fourth redelivery: answered internal. */
    json_t *reply = NULL;
    for (long long t0 = itest_mono_ms(); reply == NULL && itest_mono_ms() - t0 < 20000;) {
        got g = get_one(rq);
        if (!g.any) {
            usleep(50 * 1000);
            continue;
        }
        json_error_t je;
        reply = json_loadb(g.msg.body.bytes, g.msg.body.len, 0, &je);
        amqp_destroy_message(&g.msg);
    }
    if (reply == NULL) {
        fprintf(stderr, "%s\n", W.reaperd->log);
        pgfx_exec(lock, "COMMIT"); /* so that the teardown is not held */
        pgfx_free(lock);
        W.lock = NULL;
        fail_msg("no reply to a request delivered five times");
    }
    assert_refused(reply, "internal", "more than 3 times");
    assert_non_null(strstr(W.reaperd->log, "answered internal and acked"));
    /* Acked: one more lost connection brings nothing back. */
    assert_int_equal(itest_broker_ctl("close_all_connections itest-redelivered"), 0);
    itest_amqp_close(W.amqp);
    W.amqp = itest_amqp_connect();
    ITEST_POLL(connects() >= before + 5, 30000);
    assert_int_equal(connects(), before + 5);
    pgfx_exec(lock, "COMMIT");
    pgfx_free(lock);
    W.lock = NULL;
    usleep(500 * 1000); /* Deliberate: a window for a redelivery that must not happen. */
    assert_int_equal(depth(W.control), 0);
    delete_queue(rq);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_once),
        cmocka_unit_test(test_dismiss),
        cmocka_unit_test(test_forged_foreign_origin),
        cmocka_unit_test(test_truncated_refused),
        cmocka_unit_test(test_returned_leaves_gate_open),
        cmocka_unit_test(test_nacked_leaves_gate_open),
        cmocka_unit_test(test_concurrent_replays_publish_once),
        cmocka_unit_test(test_dismiss_behind_replay),
        cmocka_unit_test(test_other_vhost_refused),
        cmocka_unit_test(test_bad_targets),
        cmocka_unit_test(test_replay_foreign_user_id),
        cmocka_unit_test(test_replay_bad_expiration),
        cmocka_unit_test(test_replay_refused_by_broker),
        cmocka_unit_test(test_replay_to_own_queue_refused),
        cmocka_unit_test(test_request_redelivered_too_often),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
