/*
 * stats end to end (issue #18 item 7): the control op stats against a
 * running reaperd over AMQP, in JSON and msgpack, on a real broker and job
 * table: an owned queue with known counts (messages ready, two held
 * unacked by a real consumer) shows them, its intake and drain over the
 * window from queue_increment, its head message's age and its open
 * sighting's flag, while a dead-letter queue and a foreign queue are not
 * listed; a job table with known rows shows waiting, active, intake,
 * drained, the oldest waiting age and the flags of its sightings (one on
 * the kind, one STALLED on a job of the kind); reaperctl stats prints both
 * tables and --json; a reaperd whose management API is down still shows
 * the job table, with a note (reaperctl exits 1); a user outside
 * control.allowed_users gets no reply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control_common.h"
#include "itest.h"
#include "rp_proto.h"
#include "test_daemon.h"

/* One reaperd per group: the group's names, connections and calls are
 * control_common's. */
static ctl_group W;

static struct {
    amqp_connection_state_t consumer; /* holds two messages unacked */
    char work[96], dlq[96], foreign[96];
} S;

#define sql(...)  (void)itest_sql(W.pg, W.schema, __VA_ARGS__)
#define sqln(...) itest_sqln(W.pg, W.schema, __VA_ARGS__)
#define call(ct, body, len) ctl_call(&W, ct, body, len, NULL)
#define result              ctl_result

static void restart_reaperd(const char *users_env) {
    ctl_group_restart(&W, (char *[]){(char *)users_env, NULL});
}

static void declare(amqp_connection_state_t c, const char *name) {
    amqp_queue_declare(c, 1, amqp_cstring_bytes(name), 0, 1, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
}

static void publish(amqp_connection_state_t c, const char *queue, int n, time_t ts) {
    for (int i = 0; i < n; i++) {
        amqp_basic_properties_t p = {0};
        p._flags = AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
        p.timestamp = (uint64_t)ts;
        p.delivery_mode = 2;
        assert_int_equal(amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(queue),
                                            0, 0, &p, amqp_cstring_bytes("stats")),
                         AMQP_STATUS_OK);
    }
}

static int group_setup(void **state) {
    (void)state;
    int pid = (int)getpid();
    ctl_group_begin(&W, "itest_stats_", "vibey.reap.control.itest.stats.", "stats", "stats");
    snprintf(S.work, sizeof S.work, "vibey.itest.stats%d.work", pid);
    snprintf(S.dlq, sizeof S.dlq, "vibey.itest.stats%d.work.dlq", pid);
    snprintf(S.foreign, sizeof S.foreign, "itest.stats%d.foreign", pid);
    assert_int_equal(itest_migrate(W.schema), 0);
    W.reaperd = ctl_group_start(&W, (char *[]){"REAPER_CONTROL_ALLOWED_USERS=", NULL});
    W.amqp = itest_amqp_connect();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    if (S.consumer) itest_amqp_close(S.consumer);
    const char *queues[] = {S.work, S.dlq, S.foreign};
    ctl_group_end(&W, queues, 3);
    return 0;
}

static json_t *call_stats(bool msgpack) {
    if (!msgpack) return call("application/json", "{\"v\":1,\"op\":\"stats\"}", 20);
    rp_request req;
    rp_request_init(&req);
    req.op = RP_OP_STATS;
    rp_proto_buf buf = {0};
    rp_proto_error err;
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &buf, &err), RP_OK);
    json_t *reply = call("application/msgpack", buf.ptr, buf.len);
    rp_proto_buf_cleanup(&buf);
    rp_request_cleanup(&req);
    return reply;
}

static long jint(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) return -1;
    return (long)json_integer_value(v);
}

/* The row of array `list` whose field a is va and b is vb; NULL if none. */
static const json_t *row_of(const json_t *res, const char *list, const char *a, const char *va,
                            const char *b, const char *vb) {
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(res, list), i, o) {
        const char *x = json_string_value(json_object_get(o, a));
        const char *y = json_string_value(json_object_get(o, b));
        if (x && y && strcmp(x, va) == 0 && strcmp(y, vb) == 0) return o;
    }
    return NULL;
}

/* The flags of a row joined by ",". */
static const char *flags(const json_t *o, char *buf, size_t n) {
    buf[0] = '\0';
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(o, "flags"), i, f) {
        if (i) strncat(buf, ",", n - strlen(buf) - 1);
        strncat(buf, json_string_value(f), n - strlen(buf) - 1);
    }
    return buf;
}

/* A sighting row (with its ledger event), as a pass opens one. */
static void open_sighting(const char *key, const char *condition) {
    sql("WITH e AS (INSERT INTO ledger (kind, payload) VALUES ('QueueReaped', '{}') RETURNING seq) "
        "INSERT INTO sighting (key, condition, opened_seq, opened_at) "
        "SELECT '%s', '%s', seq, now() FROM e",
        key, condition);
}

/* An owned queue with known counts shows them; the window's intake and
 * drain come from queue_increment; its sighting flags it; a dead-letter
 * queue and a foreign queue are not rows. */
static void test_queue_counts(void **state) {
    (void)state;
    declare(W.amqp, S.work);
    declare(W.amqp, S.dlq);
    declare(W.amqp, S.foreign);
    time_t ts = time(NULL) - 100;
    publish(W.amqp, S.work, 5, ts);
    publish(W.amqp, S.dlq, 1, ts);
    publish(W.amqp, S.foreign, 1, ts);
    /* A real consumer holds two of them unacked. */
    S.consumer = itest_amqp_connect_plain();
    amqp_basic_qos(S.consumer, 1, 0, 2, 0);
    assert_int_equal(amqp_get_rpc_reply(S.consumer).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(S.consumer, 1, amqp_cstring_bytes(S.work), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(S.consumer).reply_type, AMQP_RESPONSE_NORMAL);

    /* The samples a pass would have kept: two increments in the window, one
     * before it (left out). */
    sql("DELETE FROM queue_increment WHERE queue = '%s'", S.work);
    sql("DELETE FROM queue_counter WHERE queue = '%s'", S.work);
    sql("INSERT INTO queue_counter (vhost, queue, published, acked, read_at) "
        "VALUES ('/', '%s', 100, 50, 0)", S.work);
    sql("INSERT INTO queue_increment (vhost, queue, at, published, acked) VALUES "
        "('/', '%s', now() - interval '10 minutes', 5, 3), "
        "('/', '%s', now() - interval '2 hours', 2, 1), "
        "('/', '%s', now() - interval '3 days', 100, 100)", S.work, S.work, S.work);
    char key[200];
    snprintf(key, sizeof key, "broker|WAITING_DEPTH|queue:/:%s", S.work);
    open_sighting(key, "WAITING_DEPTH");

    /* The management API's statistics lag a few seconds behind, and a
     * queue's head_message_timestamp can come after its message counts (a
     * field absent until its first emission): wait for both. */
    const json_t *q = NULL;
    json_t *r = NULL;
    long long deadline = itest_mono_ms() + 40000;
    for (;;) {
        r = call_stats(false);
        q = row_of(result(r), "queues", "vhost", "/", "queue", S.work);
        if (q && jint(q, "ready") == 3 && jint(q, "unacked") == 2 && jint(q, "consumers") == 1 &&
            jint(q, "oldest_waiting_seconds") >= 0)
            break;
        if (itest_mono_ms() > deadline) {
            char *s = json_dumps(r, JSON_COMPACT);
            fprintf(stderr,
                    "the queue never showed 3 ready, 2 unacked, 1 consumer and its head "
                    "message's age: %s\n",
                    s);
            free(s);
            fail();
        }
        json_decref(r);
        usleep(500000);
    }
    const json_t *res = result(r);
    assert_true(json_is_null(json_object_get(res, "broker_note")));
    assert_int_equal(jint(res, "window_seconds"), 86400);
    assert_int_equal(jint(q, "intake"), 7);
    assert_int_equal(jint(q, "drained"), 4);
    long age = jint(q, "oldest_waiting_seconds");
    if (!(age >= 100 && age < 1000)) fail_msg("oldest_waiting_seconds %ld, wanted 100..999", age);
    char fb[128];
    assert_string_equal(flags(q, fb, sizeof fb), "WAITING_DEPTH");
    assert_null(row_of(res, "queues", "vhost", "/", "queue", S.dlq));
    assert_null(row_of(res, "queues", "vhost", "/", "queue", S.foreign));
    assert_null(row_of(res, "queues", "vhost", "/", "queue", W.queue)); /* reaper's own */
    json_decref(r);

    /* The same in msgpack. */
    r = call_stats(true);
    q = row_of(result(r), "queues", "vhost", "/", "queue", S.work);
    assert_non_null(q);
    assert_int_equal(jint(q, "intake"), 7);
    assert_int_equal(jint(q, "unacked"), 2);
    json_decref(r);

    /* A queue no pass sampled has no rates: null, not 0. */
    sql("DELETE FROM queue_counter WHERE queue = '%s'", S.work);
    r = call_stats(false);
    q = row_of(result(r), "queues", "vhost", "/", "queue", S.work);
    assert_true(json_is_null(json_object_get(q, "intake")));
    assert_true(json_is_null(json_object_get(q, "drained")));
    json_decref(r);
}

static long add_job(const char *project, const char *kind, const char *state, const char *when,
                    const char *run_after) {
    const char *leased = strcmp(state, "leased") == 0 ? "'w-stats', now() + interval '1 hour'"
                                                      : "NULL, NULL";
    return atol(itest_sql(W.pg, W.schema,
                          "INSERT INTO job (project_id, kind, state, lease_owner, lease_expires_at, "
                          "created_at, run_after, succeeded_at) VALUES ('%s', '%s', '%s', %s, %s, %s, "
                          "%s) RETURNING id",
                          project, kind, state, leased, when, run_after,
                          strcmp(state, "succeeded") == 0 ? when : "NULL"));
}

/* A job table with known rows shows them per (project, kind). */
static void test_job_counts(void **state) {
    (void)state;
    const char *two_h = "now() - interval '2 hours'", *now = "now()";
    for (int i = 0; i < 3; i++) add_job("sp", "pdf", "ready", two_h, two_h);    /* waiting */
    add_job("sp", "pdf", "ready", now, "now() + interval '1 hour'");           /* not yet */
    for (int i = 0; i < 2; i++) add_job("sp", "pdf", "leased", now, now);        /* active */
    for (int i = 0; i < 2; i++) add_job("sp", "pdf", "succeeded", now, now);     /* drained */
    add_job("sp", "pdf", "failed", "now() - interval '3 days'", now);            /* nothing */
    long held = add_job("sp", "mail", "leased", now, now);
    add_job("old", "pdf", "succeeded", "now() - interval '3 days'", "now() - interval '3 days'");
    /* Dependencies: a child of a leased job is not claimable; a child of a
     * job that succeeded 30 minutes ago has been claimable since then. */
    long p1 = add_job("sp", "parent", "leased", now, now);
    long p2 = add_job("sp", "parent", "succeeded", now, now);
    sql("UPDATE job SET finished_at = now() - interval '30 minutes' WHERE id = %ld", p2);
    sql("INSERT INTO job (project_id, kind, state, depends_on, created_at, run_after) VALUES "
        "('sp', 'dep', 'ready', %ld, now() - interval '3 hours', now() - interval '3 hours'), "
        "('sp', 'dep', 'ready', %ld, now() - interval '3 hours', now() - interval '3 hours')",
        p1, p2);
    open_sighting("job_queue|WEDGED|kind:sp:pdf", "WEDGED");
    char key[80];
    snprintf(key, sizeof key, "job_queue|STALLED|job:%ld", held);
    open_sighting(key, "STALLED");
    open_sighting("job_queue|STALE_READY|project:sp", "STALE_READY"); /* flags nothing */

    for (int enc = 0; enc < 2; enc++) {
        json_t *r = call_stats(enc == 1);
        const json_t *res = result(r);
        const json_t *pdf = row_of(res, "kinds", "project", "sp", "kind", "pdf");
        assert_non_null(pdf);
        assert_int_equal(jint(pdf, "waiting"), 3);
        assert_int_equal(jint(pdf, "active"), 2);
        assert_int_equal(jint(pdf, "intake"), 8);
        assert_int_equal(jint(pdf, "drained"), 2);
        long age = jint(pdf, "oldest_waiting_seconds");
        assert_true(age >= 7199 && age < 7400);
        char fb[128];
        assert_string_equal(flags(pdf, fb, sizeof fb), "WEDGED");
        const json_t *mail = row_of(res, "kinds", "project", "sp", "kind", "mail");
        assert_non_null(mail);
        assert_int_equal(jint(mail, "waiting"), 0);
        assert_int_equal(jint(mail, "active"), 1);
        assert_int_equal(jint(mail, "intake"), 1);
        assert_int_equal(jint(mail, "drained"), 0);
        assert_true(json_is_null(json_object_get(mail, "oldest_waiting_seconds")));
        assert_string_equal(flags(mail, fb, sizeof fb), "STALLED");
        const json_t *dep = row_of(res, "kinds", "project", "sp", "kind", "dep");
        assert_non_null(dep);
        assert_int_equal(jint(dep, "waiting"), 1);
        assert_int_equal(jint(dep, "active"), 0);
        assert_int_equal(jint(dep, "intake"), 2);
        age = jint(dep, "oldest_waiting_seconds");
        assert_true(age >= 1799 && age < 2000);
        const json_t *parent = row_of(res, "kinds", "project", "sp", "kind", "parent");
        assert_int_equal(jint(parent, "active"), 1);
        assert_int_equal(jint(parent, "drained"), 1);
        /* Nothing waiting, active, created or drained in the window. */
        assert_null(row_of(res, "kinds", "project", "old", "kind", "pdf"));
        json_decref(r);
    }
}

/* Runs reaperctl against this group's reaperd; returns its exit code. */
static int ctl(char **out, char **err, const char *const *args) {
    char *argv[16] = {(char *)itest_env("REAPERCTL")};
    for (size_t i = 0; args[i] && i < 14; i++) argv[i + 1] = (char *)args[i];
    char *env[] = {W.env_queue, NULL};
    return rp_run_capture(argv, env, out, err);
}

/* reaperctl stats: two tables for people, --json for scripts. */
static void test_reaperctl_stats(void **state) {
    (void)state;
    char *out = NULL, *err = NULL;
    int rc = ctl(&out, &err, (const char *[]){"stats", NULL});
    if (rc != 0 || strstr(out, "PROJECT") == NULL || strstr(out, S.work) == NULL ||
        strstr(out, "WEDGED") == NULL || strstr(out, "over the last 1d") == NULL) {
        fprintf(stderr, "reaperctl stats: exit %d\nout: %s\nerr: %s\n", rc, out, err);
        fail();
    }
    /* The kind's row: sp pdf 3 waiting 2 active 8 intake 2 drained. */
    const char *line = NULL;
    int waiting = -1, active = -1, intake = -1, drained = -1;
    for (const char *p = out; p && *p && line == NULL; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (sscanf(p, "sp pdf %d %d %d %d", &waiting, &active, &intake, &drained) == 4) line = p;
    assert_non_null(line);
    assert_int_equal(waiting, 3);
    assert_int_equal(active, 2);
    assert_int_equal(intake, 8);
    assert_int_equal(drained, 2);
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, (const char *[]){"stats", "--json", NULL}), 0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    assert_non_null(row_of(j, "kinds", "project", "sp", "kind", "mail"));
    assert_non_null(row_of(j, "queues", "vhost", "/", "queue", S.work));
    json_decref(j);
    free(out);
    free(err);
}

/* A reaperd whose management API does not answer: stats says the broker
 * was not read, and still shows the job table; reaperctl exits 1. */
static void test_management_down(void **state) {
    (void)state;
    char mgmt[128];
    snprintf(mgmt, sizeof mgmt, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:%d",
             itest_closed_port());
    restart_reaperd(mgmt);
    json_t *j = call_stats(false);
    const json_t *res = result(j);
    const char *note = json_string_value(json_object_get(res, "broker_note"));
    if (note == NULL || strstr(note, "could not be listed") == NULL) {
        char *s = json_dumps(j, JSON_COMPACT);
        fprintf(stderr, "no broker note: %s\n", s);
        free(s);
        fail();
    }
    assert_int_equal(json_array_size(json_object_get(res, "queues")), 0);
    assert_int_equal(jint(row_of(res, "kinds", "project", "sp", "kind", "pdf"), "waiting"), 3);
    json_decref(j);
    char *out = NULL, *err = NULL;
    int rc = ctl(&out, &err, (const char *[]){"stats", NULL});
    if (rc != 1 || strstr(out, "owned queues: not read: the broker's queues could not be listed") ==
                       NULL || strstr(out, "PROJECT") == NULL) {
        fprintf(stderr, "reaperctl stats: exit %d\nout: %s\nerr: %s\n", rc, out, err);
        fail();
    }
    free(out);
    free(err);
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=");
}

/* control.allowed_users applies to stats as to every op: a sender not
 * listed gets no reply. */
static void test_sender_not_allowed(void **state) {
    (void)state;
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=someone-else");
    itest_reply r;
    assert_int_equal(itest_request(W.amqp, W.queue, "application/json", "{\"v\":1,\"op\":\"stats\"}",
                                   20, NULL, true, "deny", &r, 1500),
                     -1);
    assert_true(rp_child_wait_for(W.reaperd, "sender not allowed by control.allowed_users", 5000));
    assert_null(strstr(W.reaperd->log, "stats read"));
    /* Listed: answered. */
    char env[160];
    snprintf(env, sizeof env, "REAPER_CONTROL_ALLOWED_USERS=someone-else,%s", itest_broker_user());
    restart_reaperd(env);
    json_t *j = call_stats(false);
    assert_non_null(row_of(result(j), "kinds", "project", "sp", "kind", "pdf"));
    json_decref(j);
    assert_true(rp_child_wait_for(W.reaperd, "stats read", 5000));
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_counts),
        cmocka_unit_test(test_job_counts),
        cmocka_unit_test(test_reaperctl_stats),
        cmocka_unit_test(test_management_down),
        cmocka_unit_test(test_sender_not_allowed),
    };
    return cmocka_run_group_tests_name("control_stats", tests, group_setup, group_teardown);
}
