/*
 * The control protocol end to end: a running reaperd, requests over AMQP
 * with direct reply-to, in msgpack and JSON; every op, every error code,
 * garbage and hostile requests (answered, acked, never requeued, the daemon
 * unharmed), control.allowed_users (least privilege by default: no reply
 * to anyone else), reply_to only to reply queues, replies the broker nacks,
 * the reap rate, answered_by from the broker-checked user, and a broker
 * restart under reaperd.
 * One reaperd per group, on a control queue and schema of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <amqp_tcp_socket.h>
#include <time.h>
#include <unistd.h>

#include "control_common.h"
#include "itest.h"
#include "rp_proto.h"
#include "test_daemon.h"
#include "test_mgmt_common.h"

/* One reaperd per group: the group's names, connections and calls are
 * control_common's (strict: every reply's content type, app_id and user
 * are checked too). */
static ctl_group W = {.strict = true};

static struct {
    char replies[96]; /* prefix of the reply queues the pattern admits */
    char env_replies[192];
} R;

#define sql(...)  (void)itest_sql(W.pg, W.schema, __VA_ARGS__)
#define sqln(...) itest_sqln(W.pg, W.schema, __VA_ARGS__)
#define call(ct, body, len, user) ctl_call(&W, ct, body, len, user)
#define call_json(text)           ctl_call_json(&W, text)
#define call_msgpack(text)        ctl_call_msgpack(&W, text)

/* rate_env: NULL for no reap rate limit (most tests reap more often). */
static rp_child *start_reaperd_rate(const char *users_env, const char *rate_env) {
    char *env[] = {(char *)users_env, R.env_replies,
                   (char *)(rate_env ? rate_env : "REAPER_CONTROL_REAP_RATE_SECONDS=0"), NULL};
    assert_int_equal(itest_migrate(W.schema), 0);
    /* These tests plant expired leases and ask for the pass themselves
     * (reap on demand, reaperctl reap): the job table's deadline
     * notifications would have the daemon reap them first, on its own.
     * Reaping on the deadline is test_reaperd_store's. */
    sql("ALTER TABLE job DISABLE TRIGGER job_lease_notify");
    return ctl_group_start(&W, env);
}

static rp_child *start_reaperd(const char *users_env) { return start_reaperd_rate(users_env, NULL); }

static void restart_reaperd(const char *users_env, const char *rate_env) {
    itest_daemon_stop(W.reaperd);
    W.reaperd = start_reaperd_rate(users_env, rate_env);
}

/* How often needle occurs in the daemon's log so far. */
static int log_count(const char *needle) {
    int n = 0;
    for (const char *s = W.reaperd->log; (s = strstr(s, needle)) != NULL; s += strlen(needle)) n++;
    return n;
}

static long depth(const char *queue) {
    amqp_queue_declare_ok_t *q =
        amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(queue), 1, 0, 0, 0, amqp_empty_table);
    assert_non_null(q);
    return (long)q->message_count;
}

/* Publishes a status request as the test's user with any reply_to. */
static void send_status(const char *reply_to, const char *corr) {
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_USER_ID_FLAG |
               AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG;
    p.content_type = amqp_cstring_bytes("application/json");
    p.user_id = amqp_cstring_bytes(itest_broker_user());
    p.reply_to = amqp_cstring_bytes(reply_to);
    p.correlation_id = amqp_cstring_bytes(corr);
    const char *body = "{\"v\":1,\"op\":\"status\"}";
    assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                        amqp_cstring_bytes(W.queue), 0, 0, &p,
                                        (amqp_bytes_t){strlen(body), (void *)body}),
                     AMQP_STATUS_OK);
}

static int group_setup(void **state) {
    (void)state;
    ctl_group_begin(&W, "itest_ctl_", "vibey.reap.control.itest.", "ctlq", "corr");
    snprintf(R.replies, sizeof R.replies, "vibey.itest.replies.%d.", (int)getpid());
    snprintf(R.env_replies, sizeof R.env_replies,
             "REAPER_CONTROL_REPLY_QUEUE_PATTERN=^vibey\\.itest\\.replies\\.%d\\.",
             (int)getpid());
    W.reaperd = start_reaperd("REAPER_CONTROL_ALLOWED_USERS=");
    W.amqp = itest_amqp_connect();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ctl_group_end(&W, NULL, 0);
    return 0;
}

#define err_code ctl_err_code

static void test_status_in_both_encodings(void **state) {
    (void)state;
    json_t *r = call_json("{\"v\":1,\"op\":\"status\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_t *res = json_object_get(r, "result");
    assert_string_equal(json_string_value(json_object_get(res, "broker")), "up");
    assert_string_equal(json_string_value(json_object_get(res, "store")), "up");
    assert_non_null(json_string_value(json_object_get(res, "version")));
    json_decref(r);
    r = call_msgpack("{\"v\":1,\"op\":\"status\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(r, "op")), "status");
    json_decref(r);
    /* No content type at all means msgpack. */
    r = call(NULL, "\x82\xa1v\x01\xa2op\xa6status", 14, NULL);
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    /* The three replies went to direct reply-to and were delivered: none is
     * said to be undelivered once its confirm is in (RabbitMQ 3.10 returned
     * every mandatory one). */
    rp_child_drain(W.reaperd, 500);
    assert_int_equal(log_count("control reply not delivered"), 0);
}

static void test_reap_on_demand(void **state) {
    (void)state;
    /* The summary line of a lease reap that finished. */
    const char *lease_reaped = "\"scope\":\"lease reap\",\"ok\"";
    /* The daemon's own pass may requeue the planted row before the dry
     * run reads it (seen in CI under load): then the dry run rightly
     * finds nothing, the row is ready, and it is planted again. */
    json_t *r = NULL;
    int reaps_before = 0;
    size_t found = 0;
    for (int attempt = 0; attempt < 5 && found == 0; attempt++) {
        sql("DELETE FROM job WHERE project_id = 'alpha'");
        sql("INSERT INTO job (project_id, kind, state, attempts, lease_owner, lease_expires_at)"
            " VALUES ('alpha', 'k', 'leased', 1, 'w', now() - interval '1 minute')");
        rp_child_drain(W.reaperd, 0);
        reaps_before = log_count(lease_reaped);
        r = call_json("{\"v\":1,\"op\":\"reap\",\"dry_run\":true}");
        assert_true(json_is_true(json_object_get(r, "ok")));
        json_t *rep = json_object_get(r, "result");
        assert_true(json_is_true(json_object_get(rep, "dry_run")));
        found = json_array_size(json_object_get(rep, "verdicts"));
        json_decref(r);
        if (found == 0) { /* not lost: the daemon's reap moved it (or is moving it) */
            bool ready = false;
            for (int i = 0; i < 50 && !ready; i++) {
                rp_child_drain(W.reaperd, 100);
                ready = sqln("SELECT count(*) FROM job WHERE project_id = 'alpha'"
                             " AND state = 'ready'") == 1;
            }
            assert_true(ready);
        }
    }
    assert_int_equal(found, 1);
    /* Every pass arms the lease deadline for the earliest expired lease
     * left in the table, so right after a dry run the daemon's own lease
     * reap requeues the planted row (it would anyway: the lease ran out).
     * The dry run moved nothing: the row is still leased unless that reap
     * finished. Once it has, no expired lease is left to arm the deadline
     * again (the notify trigger is off), and a new row is planted for the
     * reap on demand. */
    bool reaped = false;
    for (int i = 0; i < 50 && !reaped; i++) {
        rp_child_drain(W.reaperd, 100);
        reaped = log_count(lease_reaped) > reaps_before;
    }
    if (reaped) {
        assert_int_equal(sqln("SELECT count(*) FROM job WHERE state = 'ready'"), 1);
        sql("DELETE FROM job WHERE project_id = 'alpha'");
        sql("INSERT INTO job (project_id, kind, state, attempts, lease_owner, lease_expires_at)"
            " VALUES ('alpha', 'k', 'leased', 1, 'w', now() - interval '1 minute')");
    }
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE state = 'leased'"), 1);
    r = call_msgpack("{\"v\":1,\"op\":\"reap\",\"project\":\"alpha\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_t *v = json_array_get(json_object_get(json_object_get(r, "result"), "verdicts"), 0);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "action")), "REQUEUED");
    json_decref(r);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE state = 'ready'"), 1);
}

static void test_gates_and_answers(void **state) {
    (void)state;
    sql("INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
        " lease_expires_at) VALUES ('poison', 'k', 'leased', 3, 3, 'w', now() - interval '1 minute')");
    json_t *r = call_json("{\"v\":1,\"op\":\"reap\",\"project\":\"poison\"}");
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"gates\",\"state\":\"open\",\"project\":\"poison\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_t *gates = json_object_get(json_object_get(r, "result"), "gates");
    assert_int_equal(json_array_size(gates), 1);
    json_int_t gate = json_integer_value(json_object_get(json_array_get(gates, 0), "id"));
    assert_true(gate > 0);
    json_decref(r);

    char req[256];
    /* A delivery_exhausted gate does not take replay: conflict, still open. */
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"answer\",\"gate\":%lld,\"choice\":\"replay\"}",
             (long long)gate);
    r = call_json(req);
    assert_string_equal(err_code(r), "conflict");
    json_decref(r);
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"answer\",\"gate\":%lld,\"choice\":\"retry\",\"by\":\"ops\"}",
             (long long)gate);
    r = call_json(req);
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "outcome")),
                        "retried");
    json_decref(r);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE project_id = 'poison' AND state = 'ready'"), 1);
    char note_want[160];
    snprintf(note_want, sizeof note_want, "%s/ops", itest_broker_user());
    /* answered_by is the user the broker checked, not the request's "by",
     * which the ledger keeps as a note only. */
    assert_string_equal(itest_sql(W.pg, W.schema, "SELECT answered_by FROM gate WHERE id = %lld",
                                  (long long)gate),
                        itest_broker_user());
    assert_string_equal(itest_sql(W.pg, W.schema,
                                  "SELECT payload->>'by' || '/' || (payload->>'note') FROM ledger "
                                  "WHERE kind = 'GateAnswered' AND (payload->>'gate')::bigint = %lld",
                                  (long long)gate),
                        note_want);
    /* A second answer changes nothing and reports the first. */
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"answer\",\"gate\":%lld,\"choice\":\"dismiss\"}",
             (long long)gate);
    r = call_msgpack(req);
    json_t *res = json_object_get(r, "result");
    assert_string_equal(json_string_value(json_object_get(res, "outcome")), "already_answered");
    assert_string_equal(json_string_value(json_object_get(res, "choice")), "retry");
    json_decref(r);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE project_id = 'poison' AND state = 'ready'"), 1);
    r = call_json("{\"v\":1,\"op\":\"answer\",\"gate\":999999,\"choice\":\"dismiss\"}");
    assert_string_equal(err_code(r), "not_found");
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"gates\",\"state\":\"answered\",\"limit\":5}");
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "result"), "gates")), 1);
    json_decref(r);
}

/* Garbage, truncated and hostile requests: an error reply each, acked (the
 * queue is empty afterwards), and the daemon still answers. */
static void test_hostile_requests(void **state) {
    (void)state;
    struct {
        const char *ct;
        const char *body;
        size_t len;
        const char *code;
    } cases[] = {
        {"application/json", "{not json", 9, "bad_request"},
        {"application/msgpack", "\x82\xa1v", 3, "bad_request"},           /* truncated */
        {"application/json", "{\"v\":1,\"op\":\"explode\"}", 22, "unknown_op"},
        {"application/json", "{\"v\":1,\"op\":\"gates\",\"limit\":\"ten\"}", 33, "bad_request"},
        {"application/json", "{\"v\":1,\"op\":\"gates\",\"limit\":5.0}", 31, "bad_request"},
        {"application/json", "{\"v\":2,\"op\":\"status\"}", 21, "bad_request"},
        {"text/plain", "status please", 13, "bad_request"},
        {"application/msgpack", "\xdd\xff\xff\xff\xff", 5, "bad_request"}, /* 4G-entry array */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = call(cases[i].ct, cases[i].body, cases[i].len, NULL);
        assert_string_equal(err_code(r), cases[i].code);
        json_decref(r);
    }
    /* Nested 200 deep, and a 2 MB body. */
    char deep[1024] = "{\"v\":1,\"op\":\"status\",\"x\":";
    for (int i = 0; i < 200; i++) strcat(deep, "[");
    for (int i = 0; i < 200; i++) strcat(deep, "]");
    strcat(deep, "}");
    json_t *r = call_json(deep);
    assert_string_equal(err_code(r), "bad_request");
    json_decref(r);
    size_t big = 2 * 1024 * 1024;
    char *huge = malloc(big);
    memset(huge, 'a', big);
    memcpy(huge, "{\"v\":1,\"op\":\"status\",\"x\":\"", 27);
    huge[big - 2] = '"';
    huge[big - 1] = '}';
    r = call("application/json", huge, big, NULL);
    assert_string_equal(err_code(r), "bad_request");
    /* Refused as too large: kept only up to the control channel's limit. */
    const char *why = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    assert_non_null(why);
    assert_non_null(strstr(why, "is 2097152 bytes; the limit is 65536"));
    json_decref(r);
    free(huge);
    /* A request without reply_to is consumed and acked, answering nobody. */
    itest_reply none;
    assert_int_equal(itest_request(W.amqp, W.queue, "application/json", "{\"v\":1,\"op\":\"status\"}",
                                   21, NULL, false, NULL, &none, 500), -1);
    /* Still alive, and nothing left on the control queue. */
    r = call_json("{\"v\":1,\"op\":\"status\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    amqp_queue_declare_ok_t *q = amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(W.queue), 1, 0,
                                                    0, 0, amqp_empty_table);
    assert_non_null(q);
    assert_int_equal(q->message_count, 0);
    /* The log says why, without the request's bytes. */
    assert_true(rp_child_wait_for(W.reaperd, "control request refused", 1000));
    assert_null(strstr(W.reaperd->log, "status please"));
    assert_false(W.reaperd->exited);
}

static long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The loop keeps turning during a 25,000-row reap on the store thread:
 * status requests are answered at once while the reap runs. (It was
 * 100,000 rows: the longest part of this test, 4 times what it proves; at
 * 25,000 the reap still lasts seconds, dozens of status round trips.) */
static void test_status_answers_during_a_long_reap(void **state) {
    (void)state;
    sql("INSERT INTO job (project_id, kind, state, attempts, lease_owner, lease_expires_at)"
        " SELECT 'long', 'k', 'leased', 1, 'w', now() - interval '1 minute'"
        " FROM generate_series(1, 25000)");
    /* Start the reap (its reply comes when it ends), then ask for status. */
    itest_reply none;
    const char *reap = "{\"v\":1,\"op\":\"reap\",\"project\":\"long\"}";
    assert_int_equal(itest_request(W.amqp, W.queue, "application/json", reap, strlen(reap), NULL,
                                   false, NULL, &none, 300), -1);
    int answered = 0;
    long worst = 0, start = mono_ms();
    while (sqln("SELECT count(*) FROM job WHERE project_id = 'long' AND state = 'leased'") > 0) {
        assert_true(mono_ms() - start < 180000);
        long t0 = mono_ms();
        json_t *r = call_json("{\"v\":1,\"op\":\"status\"}");
        long dt = mono_ms() - t0;
        assert_true(json_is_true(json_object_get(r, "ok")));
        json_decref(r);
        if (dt > worst) worst = dt;
        answered++;
        rp_child_drain(W.reaperd, 200);
    }
    print_message("status answered %d times during the reap; slowest %ld ms\n", answered, worst);
    assert_true(answered >= 3);
    assert_true(worst < 1000);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE project_id = 'long' AND state = 'ready'"), 25000);
}

/* Every committed ledger event is also published to the events exchange
 * (topic), routing key <source>.<condition>.<action>, the verdict as the
 * msgpack body: a subscriber bound to # sees the reap live. */
static void test_events_feed(void **state) {
    (void)state;
    amqp_connection_state_t c = itest_amqp_connect();
    amqp_queue_declare_ok_t *q = amqp_queue_declare(c, 1, amqp_empty_bytes, 0, 0, 1, 1, amqp_empty_table);
    assert_non_null(q);
    amqp_bytes_t name = amqp_bytes_malloc_dup(q->queue);
    amqp_queue_bind(c, 1, name, amqp_cstring_bytes("vibey.reap.events"), amqp_cstring_bytes("#"),
                    amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(c, 1, name, amqp_empty_bytes, 0, 1, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    sql("INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner, lease_expires_at)"
        " VALUES ('feed', 'k', 'leased', 1, 7, 'w', now() - interval '1 minute'),"
        "        ('feed', 'k', 'leased', 7, 7, 'w', now() - interval '1 minute')");
    json_t *r = call_json("{\"v\":1,\"op\":\"reap\",\"project\":\"feed\"}");
    json_decref(r);
    int requeued = 0, parked = 0;
    for (int i = 0; i < 20 && requeued + parked < 2; i++) {
        amqp_envelope_t env;
        struct timeval tv = {5, 0};
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t rr = amqp_consume_message(c, &env, &tv, 0);
        assert_int_equal(rr.reply_type, AMQP_RESPONSE_NORMAL);
        char rk[128];
        snprintf(rk, sizeof rk, "%.*s", (int)env.routing_key.len, (char *)env.routing_key.bytes);
        rp_proto_error err;
        rp_bytes ct = {env.message.properties.content_type.bytes, env.message.properties.content_type.len};
        json_t *v = rp_proto_to_json((rp_bytes){env.message.body.bytes, env.message.body.len}, ct, NULL, &err);
        assert_non_null(v);
        const char *project = json_string_value(json_object_get(v, "project"));
        if (project != NULL && strcmp(project, "feed") == 0) {
            if (strcmp(rk, "job_queue.lease_expired.requeued") == 0) requeued++;
            if (strcmp(rk, "job_queue.poison.parked") == 0) parked++;
            assert_true(env.message.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG);
        }
        json_decref(v);
        amqp_destroy_envelope(&env);
    }
    assert_int_equal(requeued, 1);
    assert_int_equal(parked, 1);
    amqp_bytes_free(name);
    itest_amqp_close(c);
}

/* Runs reaperctl against this group's reaperd; returns its exit code. */
static int ctl(char **out, char **err, const char *a1, const char *a2, const char *a3,
               const char *a4, const char *a5) {
    char *argv[] = {(char *)itest_env("REAPERCTL"), (char *)a1, (char *)a2, (char *)a3,
                    (char *)a4, (char *)a5, NULL};
    char *env[] = {W.env_queue, NULL};
    return rp_run_capture(argv, env, out, err);
}

/* The gates op's filters and pages, over the protocol and through
 * reaperctl: five poison gates of one project, listed two to a page. */
static void test_gates_filters_and_pages(void **state) {
    (void)state;
    sql("INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
        " lease_expires_at) SELECT 'pages', 'k', 'leased', 3, 3, 'w', now() - interval '1 minute'"
        " FROM generate_series(1, 5)");
    json_t *r = call_json("{\"v\":1,\"op\":\"reap\",\"project\":\"pages\"}");
    json_decref(r);
    assert_int_equal(sqln("SELECT count(*) FROM gate g JOIN job j ON j.id = g.job_id"
                          " WHERE j.project_id = 'pages'"), 5);
    json_int_t seen[5], after = 0;
    size_t n_seen = 0;
    for (int page = 0; page < 3; page++) {
        char req[256];
        int len = snprintf(req, sizeof req,
                           "{\"v\":1,\"op\":\"gates\",\"project\":\"pages\",\"limit\":2,"
                           "\"kind\":\"delivery_exhausted\"");
        if (after > 0) len += snprintf(req + len, sizeof req - (size_t)len, ",\"after\":%lld", (long long)after);
        snprintf(req + len, sizeof req - (size_t)len, "}");
        r = call_json(req);
        assert_true(json_is_true(json_object_get(r, "ok")));
        json_t *res = json_object_get(r, "result");
        assert_int_equal(json_integer_value(json_object_get(res, "total")), 5);
        json_t *gates = json_object_get(res, "gates");
        assert_int_equal(json_array_size(gates), page < 2 ? 2 : 1);
        size_t i;
        json_t *g;
        json_array_foreach(gates, i, g) {
            json_int_t id = json_integer_value(json_object_get(g, "id"));
            if (n_seen > 0) assert_true(id < seen[n_seen - 1]);
            seen[n_seen++] = id;
        }
        json_t *next = json_object_get(res, "next_after");
        if (page < 2) {
            assert_int_equal(json_integer_value(next), seen[n_seen - 1]);
            after = json_integer_value(next);
        } else {
            assert_true(json_is_null(next));
        }
        json_decref(r);
    }
    assert_int_equal(n_seen, 5);
    /* Filters that match nothing; a filter the codec refuses. */
    r = call_json("{\"v\":1,\"op\":\"gates\",\"project\":\"pages\",\"kind\":\"bus_dead_lettered\"}");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "result"), "total")), 0);
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"gates\",\"project\":\"pages\",\"older_than_seconds\":3600}");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "result"), "total")), 0);
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"gates\",\"kind\":\"poison\"}");
    assert_string_equal(err_code(r), "bad_request");
    json_decref(r);

    /* reaperctl: the page line, then the next page by --after. */
    char *out, *err;
    assert_int_equal(ctl(&out, &err, "gates", "--project", "pages", "--limit", "2"), 0);
    char want[128];
    snprintf(want, sizeof want, "2 shown of 5 matching; the next page: --after %lld",
             (long long)seen[1]);
    assert_non_null(strstr(out, want));
    free(out);
    free(err);
    char last[32];
    snprintf(last, sizeof last, "%lld", (long long)seen[3]);
    assert_int_equal(ctl(&out, &err, "gates", "--project", "pages", "--after", last), 0);
    assert_non_null(strstr(out, "1 shown of 5 matching\n"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, "gates", "--older-than", "2x", NULL, NULL), 2);
    assert_non_null(strstr(err, "--older-than"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, "status", "--reason", "expired", NULL, NULL), 2);
    free(out);
    free(err);
}

/* A parked dead letter planted as the tap parks one: its job, its gate (with
 * the dead letter's queue, origin and reason: migration 0013) and the stored
 * message (body: hex bytes). Returns the gate's id. */
static long long plant_dead_letter(const char *identity, const char *body_sql, bool answered) {
    return sqln("WITH j AS (INSERT INTO job (project_id, kind, state, attempts, max_attempts, payload)"
                " VALUES ('bus', 'bus.dead_letter', 'awaiting_human', 0, 1, '{\"vhost\": \"/\"}')"
                " RETURNING id),"
                " g AS (INSERT INTO gate (job_id, kind, question, choices, answer, answered_by,"
                " answered_at, queue, origin_queue, reason) SELECT id, 'bus_dead_lettered',"
                " 'replay or dismiss?', ARRAY['replay', 'dismiss'], %s, 'vibey.orders.dlq',"
                " '\"vibey.orders\"', '\"rejected\"' FROM j RETURNING id, job_id)"
                " INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue,"
                " reason, headers, properties, body, vhost) SELECT '%s', 'd1', job_id, id,"
                " 'vibey.orders.dlq', '\"vibey.orders\"', '\"rejected\"',"
                " '{\"x-death\": [{\"count\": 2, \"reason\": \"rejected\", \"queue\": \"vibey.orders\","
                " \"exchange\": \"\"}], \"x-first-death-queue\": \"vibey.orders\"}',"
                " '{\"content_type\": \"text/plain\", \"delivery_mode\": 2}', %s, '/' FROM g"
                " RETURNING gate_id",
                answered ? "'dismiss', 'ops', now()" : "NULL, NULL, NULL", identity, body_sql);
}

/* One gate looked inside: over the protocol, and through reaperctl as text
 * (hostile bytes escaped), as a hex dump, and as the exact bytes. */
/* Issue #20: past 10,000 matches the gates reply counts no further
 * (total 10,000, total_capped true) and reaperctl says "10,000+"; at
 * 10,000 the count is exact; the pages still end at the last gate. */
static void test_gates_total_capped(void **state) {
    (void)state;
    sql("INSERT INTO job (project_id, kind, state) SELECT 'capped', 'k', 'awaiting_human'"
        " FROM generate_series(1, 10001)");
    sql("INSERT INTO gate (job_id, kind, question, choices) SELECT id, 'delivery_exhausted',"
        " 'job ' || id, ARRAY['retry', 'dismiss'] FROM job WHERE project_id = 'capped'");
    json_t *r = call_json("{\"v\":1,\"op\":\"gates\",\"project\":\"capped\",\"limit\":1000}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_t *res = json_object_get(r, "result");
    assert_int_equal(json_integer_value(json_object_get(res, "total")), 10000);
    assert_true(json_is_true(json_object_get(res, "total_capped")));
    assert_int_equal(json_array_size(json_object_get(res, "gates")), 1000);
    json_decref(r);
    /* The last page: the oldest gate alone, no next one. */
    long long oldest = (long long)sqln("SELECT min(g.id) FROM gate g JOIN job j ON j.id = g.job_id"
                                       " WHERE j.project_id = 'capped'");
    char req[160];
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"gates\",\"project\":\"capped\",\"after\":%lld}",
             oldest + 1);
    r = call_json(req);
    res = json_object_get(r, "result");
    assert_int_equal(json_array_size(json_object_get(res, "gates")), 1);
    assert_true(json_is_null(json_object_get(res, "next_after")));
    assert_true(json_is_true(json_object_get(res, "total_capped")));
    json_decref(r);
    char *out, *err;
    assert_int_equal(ctl(&out, &err, "gates", "--project", "capped", "--limit", "5"), 0);
    assert_non_null(strstr(out, "5 shown of 10,000+ matching; the next page: --after"));
    free(out);
    free(err);
    /* One answered: 10,000 open, exact. */
    sql("UPDATE gate SET answer = 'dismiss', answered_by = 'ops', answered_at = now()"
        " WHERE id = (SELECT min(g.id) FROM gate g JOIN job j ON j.id = g.job_id"
        " WHERE j.project_id = 'capped')");
    r = call_json("{\"v\":1,\"op\":\"gates\",\"project\":\"capped\"}");
    res = json_object_get(r, "result");
    assert_int_equal(json_integer_value(json_object_get(res, "total")), 10000);
    assert_true(json_is_false(json_object_get(res, "total_capped")));
    json_decref(r);
    sql("DELETE FROM gate WHERE job_id IN (SELECT id FROM job WHERE project_id = 'capped')");
    sql("DELETE FROM job WHERE project_id = 'capped'");
}

static void test_gate_look_inside(void **state) {
    (void)state;
    long long text = plant_dead_letter("id:look-text",
                                       "convert_to(E'<script>alert(1)</script>\\n\\x1b[2J hello', 'UTF8')",
                                       false);
    long long bin = plant_dead_letter("id:look-bin", "decode('00ff41', 'hex')", true);
    /* 40,002 bytes: more than one window of 32 KiB. */
    long long big = plant_dead_letter("id:look-big", "decode(repeat('00ff41', 13334), 'hex')", false);

    char req[160];
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"gate\",\"gate\":%lld}", big);
    json_t *r = call_json(req);
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_t *res = json_object_get(r, "result");
    json_t *body = json_object_get(json_object_get(res, "dead_letter"), "body");
    assert_int_equal(json_integer_value(json_object_get(body, "size")), 40002);
    assert_int_equal(json_integer_value(json_object_get(body, "length")), 4096);
    assert_int_equal(json_string_length(json_object_get(body, "base64")), 4096 / 3 * 4 + 4);
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "job"), "state")),
                        "awaiting_human");
    json_decref(r);
    /* An answered gate says why a replay would not go ahead. */
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"gate\",\"gate\":%lld,\"body_offset\":1}", bin);
    r = call_json(req);
    res = json_object_get(r, "result");
    assert_false(json_is_true(json_object_get(json_object_get(res, "replay"), "possible")));
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(res, "replay"), "why")),
                           "answered"));
    body = json_object_get(json_object_get(res, "dead_letter"), "body");
    assert_string_equal(json_string_value(json_object_get(body, "base64")), "/0E="); /* ff 41 */
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"gate\",\"gate\":987654321}");
    assert_string_equal(err_code(r), "not_found");
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"gate\",\"gate\":1,\"body_limit\":40000}");
    assert_string_equal(err_code(r), "bad_request");
    json_decref(r);

    char id[32], *out, *err;
    snprintf(id, sizeof id, "%lld", text);
    assert_int_equal(ctl(&out, &err, "gate", id, NULL, NULL, NULL), 0);
    assert_non_null(strstr(out, "x-death history:"));
    assert_non_null(strstr(out, "<script>alert(1)</script>\n\\x1b[2J hello"));
    assert_null(strchr(out, 0x1b));
    assert_non_null(strstr(out, "content_type: text/plain"));
    free(out);
    free(err);
    snprintf(id, sizeof id, "%lld", bin);
    assert_int_equal(ctl(&out, &err, "gate", id, NULL, NULL, NULL), 0);
    assert_non_null(strstr(out, "00000000  00 ff 41"));
    assert_non_null(strstr(out, "replay: not possible: "));
    free(out);
    free(err);
    /* --body raw: every window in turn, the exact bytes. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "\"%s\" gate %lld --body raw | md5sum | cut -d' ' -f1",
             itest_env("REAPERCTL"), big);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    char *env[] = {W.env_queue, NULL};
    assert_int_equal(rp_run_capture(argv, env, &out, &err), 0);
    char want[64];
    snprintf(want, sizeof want, "%s\n",
             itest_sql(W.pg, W.schema, "SELECT md5(body) FROM dead_letter WHERE identity = 'id:look-big'"));
    assert_string_equal(out, want);
    free(out);
    free(err);
    snprintf(id, sizeof id, "%lld", big);
    assert_int_equal(ctl(&out, &err, "gate", id, "--body", "xml", NULL), 2);
    free(out);
    free(err);
}

/* reaperctl: tables for people, --json for scripts, exit codes 0/1/2. */
static void test_reaperctl(void **state) {
    (void)state;
    sql("INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
        " lease_expires_at) VALUES ('ctl', 'k', 'leased', 2, 2, 'w', now() - interval '1 minute')");
    char *out, *err;
    assert_int_equal(ctl(&out, &err, "reap", "--project", "ctl", NULL, NULL), 0);
    assert_non_null(strstr(out, "PARKED"));
    assert_non_null(strstr(out, "POISON"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, "gates", "--project", "ctl", NULL, NULL), 0);
    assert_non_null(strstr(out, "GATE"));
    assert_non_null(strstr(out, "delivery_exhausted"));
    assert_non_null(strstr(out, "retry|dismiss"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, "gates", "--project", "ctl", "--json", NULL), 0);
    json_t *g = json_loads(out, 0, NULL);
    assert_non_null(g);
    json_int_t id = json_integer_value(json_object_get(json_array_get(json_object_get(g, "gates"), 0), "id"));
    json_decref(g);
    free(out);
    free(err);
    char gate[32];
    snprintf(gate, sizeof gate, "%lld", (long long)id);
    assert_int_equal(ctl(&out, &err, "answer", gate, "--choice", "dismiss", NULL), 0);
    assert_non_null(strstr(out, "dismissed"));
    free(out);
    free(err);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE project_id = 'ctl' AND state = 'failed'"), 1);
    /* A refused answer: exit 1, the reason on standard error. */
    assert_int_equal(ctl(&out, &err, "answer", "987654", "--choice", "retry", NULL), 1);
    assert_non_null(strstr(err, "not_found"));
    free(out);
    free(err);
    /* Usage errors: exit 2 before anything is sent. */
    assert_int_equal(ctl(&out, &err, "gates", "--limit", "0", NULL, NULL), 2);
    assert_non_null(strstr(err, "limit"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, "answer", "12", NULL, NULL, NULL), 2);
    assert_non_null(strstr(err, "--choice"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, "explode", NULL, NULL, NULL, NULL), 2);
    free(out);
    free(err);
    /* Nobody consuming: a time-out, said clearly, exit 1. */
    char *argv[] = {(char *)itest_env("REAPERCTL"), "--timeout", "1", "status", NULL};
    char *env[] = {"REAPER_BROKER_CONTROL_QUEUE=vibey.reap.control.nobody.here", NULL};
    assert_int_equal(rp_run_capture(argv, env, &out, &err), 1);
    assert_non_null(strstr(err, "no reply from reaperd within 1 s"));
    free(out);
    free(err);
    /* REAPERCTL_REAPERD_USER names the user whose replies alone are taken:
     * naming another, reaperd's own reply is ignored (said, and a time-out);
     * naming reaperd's user (broker.url's, "reaper"), it is taken. */
    char *argv2[] = {(char *)itest_env("REAPERCTL"), "--timeout", "2", "status", NULL};
    char *other[] = {W.env_queue, "REAPERCTL_REAPERD_USER=someone-else", NULL};
    assert_int_equal(rp_run_capture(argv2, other, &out, &err), 1);
    assert_non_null(strstr(err, "not from reaperd"));
    assert_non_null(strstr(err, "\"someone-else\""));
    assert_non_null(strstr(err, "no reply from reaperd within 2 s"));
    free(out);
    free(err);
    char *same[] = {W.env_queue, "REAPERCTL_REAPERD_USER=reaper", NULL};
    assert_int_equal(rp_run_capture(argv2, same, &out, &err), 0);
    assert_null(strstr(err, "not from reaperd"));
    free(out);
    free(err);
}

/* reaperctl takes only a reply from reaperd (app_id reaperd and reaperd's
 * user_id, which the broker checks): a forged reply from another consumer
 * of the control queue is ignored and the request times out. */
static void test_reaperctl_ignores_forged_replies(void **state) {
    (void)state;
    char fake[128], env_fake[192];
    snprintf(fake, sizeof fake, "vibey.reap.control.itest.fake.%d", (int)getpid());
    snprintf(env_fake, sizeof env_fake, "REAPER_BROKER_CONTROL_QUEUE=%s", fake);
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(fake), 0, 0, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    char *argv[] = {(char *)itest_env("REAPERCTL"), "--timeout", "3", "status", NULL};
    char *env[] = {env_fake, NULL};
    rp_child *ch = rp_child_start(argv, env);
    bool answered = false;
    long start = mono_ms();
    while (!answered && mono_ms() - start < 10000) {
        amqp_rpc_reply_t g = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(fake), 1);
        assert_int_equal(g.reply_type, AMQP_RESPONSE_NORMAL);
        if (g.reply.id != AMQP_BASIC_GET_OK_METHOD) {
            usleep(50 * 1000);
            continue;
        }
        amqp_message_t m;
        assert_int_equal(amqp_read_message(W.amqp, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
                   AMQP_BASIC_APP_ID_FLAG;
        p.content_type = amqp_cstring_bytes("application/json");
        p.correlation_id = m.properties.correlation_id;
        p.app_id = amqp_cstring_bytes("reaperd"); /* but no user_id */
        const char *body = "{\"v\":1,\"op\":\"status\",\"ok\":true,\"result\":{\"version\":\"x\","
                           "\"broker\":\"up\",\"store\":\"up\",\"last_pass_at\":null,"
                           "\"open_sightings\":0}}";
        assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                            m.properties.reply_to, 0, 0, &p,
                                            (amqp_bytes_t){strlen(body), (void *)body}),
                         AMQP_STATUS_OK);
        amqp_destroy_message(&m);
        answered = true;
    }
    assert_true(answered);
    int rc = rp_child_wait_exit(ch, 15000);
    if (rc != 1) fprintf(stderr, "reaperctl exit %d:\n%s\n", rc, ch->log);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(ch->log, "not from reaperd"));
    rp_child_free(ch);
    itest_queue_delete(W.amqp, 1, fake);
}

/* A second broker user, for the duration of the test (through the
 * management API: milliseconds, where each rabbitmqctl call boots an
 * Erlang VM for about 2 s). */
static void add_user(const char *user, const char *pw) {
    char path[256], body[256];
    snprintf(path, sizeof path, "/api/users/%s", user);
    snprintf(body, sizeof body, "{\"password\":\"%s\",\"tags\":\"\"}", pw);
    long code = mt_http("PUT", path, body, NULL);
    assert_true(code == 201 || code == 204);
    snprintf(path, sizeof path, "/api/permissions/%%2F/%s", user);
    code = mt_http("PUT", path, "{\"configure\":\".*\",\"write\":\".*\",\"read\":\".*\"}", NULL);
    assert_true(code == 201 || code == 204);
}

/* A connection as user (channel 1, consuming direct reply-to). */
static amqp_connection_state_t connect_as(const char *user, const char *pw) {
    char url[512];
    snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    assert_int_equal(amqp_parse_url(url, &info), AMQP_STATUS_OK);
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    assert_int_equal(amqp_socket_open(s, info.host, info.port), AMQP_STATUS_OK);
    amqp_rpc_reply_t r =
        amqp_login(c, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user, pw);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    amqp_channel_open(c, 1);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(c, 1, amqp_cstring_bytes("amq.rabbitmq.reply-to"), amqp_empty_bytes, 0, 1,
                       0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    return c;
}

/* Least privilege by default: with allowed_users empty only reaperd's own
 * broker user is answered; another authenticated user, and a request
 * without user_id, get NO reply (acked, logged once per sender); ["*"]
 * admits the other user; a list admits only its names. */
static void test_forbidden_users(void **state) {
    (void)state;
    char other[64];
    snprintf(other, sizeof other, "itest-other-%d", (int)getpid());
    add_user(other, "other-pw");
    amqp_connection_state_t oc = connect_as(other, "other-pw");
    const char *status = "{\"v\":1,\"op\":\"status\"}";
    itest_reply r;
    /* The default (empty): the other user is refused silently, twice,
     * logged once. */
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=", NULL);
    for (int i = 0; i < 2; i++)
        assert_int_equal(itest_request(oc, W.queue, "application/json", status, strlen(status),
                                       other, true, "o", &r, 1500),
                         -1);
    /* No user_id at all: the same. */
    assert_int_equal(itest_request(W.amqp, W.queue, "application/json", status, strlen(status),
                                   "", true, "n", &r, 1500),
                     -1);
    assert_int_equal(depth(W.queue), 0); /* acked, not left to come back */
    json_t *j = call("application/json", status, strlen(status), NULL);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    assert_true(rp_child_wait_for(W.reaperd, "no user_id property", 5000));
    rp_child_drain(W.reaperd, 300);
    assert_int_equal(log_count("sender not allowed by control.allowed_users"), 1);
    assert_int_equal(log_count("no user_id property"), 1);
    /* ["*"]: any authenticated user, still not one without user_id. */
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=*", NULL);
    assert_int_equal(itest_request(oc, W.queue, "application/json", status, strlen(status), other,
                                   true, "o2", &r, 20000),
                     0);
    assert_non_null(strstr(r.body, "\"ok\":true"));
    itest_reply_free(&r);
    assert_int_equal(itest_request(W.amqp, W.queue, "application/json", status, strlen(status),
                                   "", true, "n2", &r, 1500),
                     -1);
    /* A list: only its names (reaperd's own user is not implied). */
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=someone-else,ops", NULL);
    assert_int_equal(itest_request(W.amqp, W.queue, "application/json", status, strlen(status),
                                   NULL, true, "l", &r, 1500),
                     -1);
    itest_amqp_close(oc);
    char path[128];
    snprintf(path, sizeof path, "/api/users/%s", other);
    (void)mt_http("DELETE", path, NULL, NULL);
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=reaper", NULL);
    j = call("application/json", status, strlen(status), NULL);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
}

/* reap requests: one per control.reap_rate_seconds per user; one too soon
 * is answered busy, and other ops are not held. */
static void test_reap_rate(void **state) {
    (void)state;
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=", "REAPER_CONTROL_REAP_RATE_SECONDS=10");
    json_t *r = call_json("{\"v\":1,\"op\":\"reap\",\"dry_run\":true}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"reap\",\"dry_run\":true}");
    assert_string_equal(err_code(r), "busy");
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"status\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=", NULL);
}

/* reply_to must be direct reply-to or a queue control.reply_queue_pattern
 * names: a request naming any other queue gets no reply (nothing lands
 * there), is acked, and the sender is logged once. */
static void test_reply_to_only_reply_queues(void **state) {
    (void)state;
    char victim[128], ok_queue[128];
    snprintf(victim, sizeof victim, "vibey.itest.victim.%d", (int)getpid());
    snprintf(ok_queue, sizeof ok_queue, "%sok", R.replies);
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(victim), 0, 0, 0, 1, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(ok_queue), 0, 0, 0, 1, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    int before = log_count("reply_to is neither direct reply-to");
    send_status(victim, "v1");
    send_status(victim, "v2");
    send_status(ok_queue, "k1");
    long start = mono_ms();
    while (depth(ok_queue) < 1 && mono_ms() - start < 10000) rp_child_drain(W.reaperd, 100);
    assert_int_equal(depth(ok_queue), 1);
    rp_child_drain(W.reaperd, 500);
    assert_int_equal(depth(victim), 0);
    assert_int_equal(depth(W.queue), 0);
    assert_int_equal(log_count("reply_to is neither direct reply-to") - before, 1);
    itest_queue_delete(W.amqp, 1, victim);
    itest_queue_delete(W.amqp, 1, ok_queue);
}

/* A reply the broker nacks (its queue rejects every publish) still acks
 * its request: 24 of them (more than the control prefetch) leave the
 * consumer free, and the next request is answered at once. */
static void test_nacked_replies_do_not_starve(void **state) {
    (void)state;
    char full[128];
    snprintf(full, sizeof full, "%sfull", R.replies);
    amqp_table_entry_t e[2];
    e[0].key = amqp_cstring_bytes("x-max-length");
    e[0].value.kind = AMQP_FIELD_KIND_I32;
    e[0].value.value.i32 = 0;
    e[1].key = amqp_cstring_bytes("x-overflow");
    e[1].value.kind = AMQP_FIELD_KIND_UTF8;
    e[1].value.value.bytes = amqp_cstring_bytes("reject-publish");
    amqp_table_t args = {2, e};
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(full), 0, 0, 0, 1, args);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    for (int i = 0; i < 24; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "f%d", i);
        send_status(full, corr);
    }
    long t0 = mono_ms();
    json_t *r = call_json("{\"v\":1,\"op\":\"status\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    print_message("status answered %ld ms after 24 nacked replies\n", mono_ms() - t0);
    /* The status reply (direct reply-to) may overtake the nacked ones,
     * which settle one at a time: every one of them is said and acked. */
    const char *said = "control reply not delivered; its request is acked";
    long start = mono_ms();
    while ((log_count(said) < 24 || depth(W.queue) > 0) && mono_ms() - start < 20000)
        rp_child_drain(W.reaperd, 100);
    assert_int_equal(depth(W.queue), 0);
    assert_int_equal(depth(full), 0);
    assert_true(log_count(said) >= 24);
    itest_queue_delete(W.amqp, 1, full);
}

/* A client that left before its reply: its direct reply-to name is gone.
 * The reply is dropped, the request acked, the connection kept, and the
 * next request answered. The stale name is a real one the broker made: a
 * channel consumes direct reply-to, publishes a message carrying it to a
 * scratch queue, reads the name back and closes. */
static void test_reply_to_a_client_that_left(void **state) {
    (void)state;
    char scratch[128], stale[256];
    snprintf(scratch, sizeof scratch, "%sscratch", R.replies);
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(scratch), 0, 0, 0, 1, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_channel_open(W.amqp, 2);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(W.amqp, 2, amqp_cstring_bytes("amq.rabbitmq.reply-to"), amqp_empty_bytes,
                       0, 1, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_REPLY_TO_FLAG;
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    assert_int_equal(amqp_basic_publish(W.amqp, 2, amqp_cstring_bytes(""),
                                        amqp_cstring_bytes(scratch), 0, 0, &p,
                                        amqp_cstring_bytes("x")),
                     AMQP_STATUS_OK);
    stale[0] = '\0';
    for (int i = 0; i < 50 && stale[0] == '\0'; i++) {
        amqp_rpc_reply_t g = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(scratch), 1);
        assert_int_equal(g.reply_type, AMQP_RESPONSE_NORMAL);
        if (g.reply.id != AMQP_BASIC_GET_OK_METHOD) {
            usleep(100000);
            continue;
        }
        amqp_message_t m;
        assert_int_equal(amqp_read_message(W.amqp, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
        assert_true(m.properties._flags & AMQP_BASIC_REPLY_TO_FLAG);
        snprintf(stale, sizeof stale, "%.*s", (int)m.properties.reply_to.len,
                 (const char *)m.properties.reply_to.bytes);
        amqp_destroy_message(&m);
    }
    assert_true(strncmp(stale, "amq.rabbitmq.reply-to.", 22) == 0);
    amqp_channel_close(W.amqp, 2, AMQP_REPLY_SUCCESS);
    itest_queue_delete(W.amqp, 1, scratch);

    int connects = log_count("\"msg\":\"broker connected\"");
    send_status(stale, "left");
    long start = mono_ms();
    while (depth(W.queue) > 0 && mono_ms() - start < 10000) rp_child_drain(W.reaperd, 100);
    rp_child_drain(W.reaperd, 500);
    assert_int_equal(depth(W.queue), 0); /* acked */
    /* (allowed_users is the broker user since test_forbidden_users.) */
    const char *status = "{\"v\":1,\"op\":\"status\"}";
    json_t *r = call("application/json", status, strlen(status), itest_broker_user());
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    /* The same connection answered: no reconnect. */
    assert_int_equal(log_count("\"msg\":\"broker connected\""), connects);
    assert_false(W.reaperd->exited);
}

/* The broker restarts under a running reaperd: it reconnects, declares
 * everything again and answers. */
static void test_broker_restart(void **state) {
    (void)state;
    itest_amqp_close(W.amqp);
    W.amqp = NULL; /* teardown reconnects if an assertion stops the test here */
    char cmd[512];
    const char *service = getenv("RP_BROKER_SERVICE");
    snprintf(cmd, sizeof cmd, "%s/scripts/services restart %s >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"), service && *service ? service : "rabbitmq");
    rp_child_drain(W.reaperd, 0);
    size_t mark = strlen(W.reaperd->log);
    assert_int_equal(system(cmd), 0);
    /* The restart can take long enough (a loaded machine) that reaperd has
     * lost the broker and connected again before it returns: both are
     * looked for in what it logged since the restart began, the connect
     * after the loss (looking only past the loss as first read missed a
     * reconnect read in the same chunk, and failed so in CI). */
    const char *down = NULL;
    for (int i = 0; i < 60 && down == NULL; i++) {
        rp_child_drain(W.reaperd, 500);
        down = strstr(W.reaperd->log + mark, "broker unreachable");
    }
    assert_non_null(down);
    size_t before = (size_t)(down - W.reaperd->log);
    bool back = false;
    for (int i = 0; i < 180 && !back; i++) {
        back = strstr(W.reaperd->log + before, "\"msg\":\"broker connected\"") != NULL;
        if (!back) rp_child_drain(W.reaperd, 500);
    }
    if (!back) {
        fprintf(stderr, "reaperd did not reconnect in 90 s; it said since:\n%s\n",
                W.reaperd->log + before);
        /* Where its threads are (gdb is on every machine CI runs on). */
        snprintf(cmd, sizeof cmd,
                 "gdb -batch -p %d -ex 'thread apply all bt' 2>&1 | grep -v '^\\[New LWP' >&2",
                 (int)W.reaperd->pid);
        (void)system(cmd);
    }
    assert_true(back);
    W.amqp = itest_amqp_connect();
    /* (allowed_users is "reaper" since test_forbidden_users.) */
    json_t *r = call("application/json", "{\"v\":1,\"op\":\"status\"}", 21, "reaper");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    assert_false(W.reaperd->exited);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_in_both_encodings),
        cmocka_unit_test(test_reap_on_demand),
        cmocka_unit_test(test_gates_and_answers),
        cmocka_unit_test(test_hostile_requests),
        cmocka_unit_test(test_reaperctl),
        cmocka_unit_test(test_gate_look_inside),
        cmocka_unit_test(test_gates_filters_and_pages),
        cmocka_unit_test(test_gates_total_capped),
        cmocka_unit_test(test_reaperctl_ignores_forged_replies),
        cmocka_unit_test(test_events_feed),
        cmocka_unit_test(test_status_answers_during_a_long_reap),
        cmocka_unit_test(test_reply_to_only_reply_queues),
        cmocka_unit_test(test_nacked_replies_do_not_starve),
        cmocka_unit_test(test_reap_rate),
        cmocka_unit_test(test_forbidden_users),
        cmocka_unit_test(test_reply_to_a_client_that_left),
        cmocka_unit_test(test_broker_restart),
    };
    return cmocka_run_group_tests_name("control", tests, group_setup, group_teardown);
}
