/*
 * The events feed (issue #4, "reaps as events") from the outside, with a
 * subscriber bound to `#` on an events exchange of each test's own:
 *  - reaperd --once publishes exactly the ledger events it commits (count
 *    and message ids equal to the ledger rows), and --json stays one JSON
 *    object;
 *  - --dry-run publishes nothing;
 *  - --once with the broker unreachable (a closed port), or an events
 *    exchange of another type, still commits, says so in a note and a
 *    warning, and exits 0 (the ledger is the record);
 *  - a gate answer's GateAnswered event arrives on the daemon's feed, its
 *    body equal to the ledger payload; an already answered gate publishes
 *    nothing;
 *  - a daemon whose broker stays away keeps its events queued, and at stop
 *    logs every one it drops by message id, without hanging;
 *  - broker.events_format: json (REAPER_BROKER_EVENTS_FORMAT=json): --once
 *    and the daemon publish JSON text with content_type application/json,
 *    each body equal field for field to its ledger row's payload (and the
 *    default stays msgpack); a bad value is refused (exit 2, the key named).
 * Each test works in a schema of its own, dropped after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "feed_common.h"
#include "itest.h"
#include "test_daemon.h"

typedef struct fixture {
    PGconn *pg;
    char schema[64];
    char exchange[128];
    char env_exchange[192];
    char env_owned[128], env_dlq[160]; /* no queue of other tests on the broker */
    feed_sub sub;
    rp_child *daemon; /* the reaperd running, killed by teardown if a test fails */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->pg = itest_pg_connect();
    static int n;
    snprintf(f->schema, sizeof f->schema, "itest_feed_%d_%d", (int)getpid(), n);
    snprintf(f->exchange, sizeof f->exchange, "vibey.reap.events.itest.%d.%d", (int)getpid(), n);
    n++;
    snprintf(f->env_exchange, sizeof f->env_exchange, "REAPER_BROKER_EVENTS_EXCHANGE=%s",
             f->exchange);
    itest_env_owned(f->env_owned, sizeof f->env_owned, "feed");
    itest_env_dead_letters(f->env_dlq, sizeof f->env_dlq, "feed");
    if (itest_migrate(f->schema) != 0) return -1;
    feed_sub_open(&f->sub, f->exchange, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_child_free(f->daemon);
    feed_sub_delete(&f->sub);
    char sql[160];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", f->schema);
    PQclear(PQexec(f->pg, sql));
    PQfinish(f->pg);
    free(f);
    return 0;
}

/* Expired leases in project: n to requeue and n_poison to park. */
static void expired(fixture *f, const char *project, int n, int n_poison) {
    if (n > 0)
        itest_sql(
            f->pg, f->schema,
            "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner, "
            "lease_expires_at) SELECT '%s', 'k', 'leased', 1, 7, 'w', now() - interval '1 minute' "
            "FROM generate_series(1, %d)",
            project, n);
    if (n_poison > 0)
        itest_sql(
            f->pg, f->schema,
            "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner, "
            "lease_expires_at) SELECT '%s', 'k', 'leased', 7, 7, 'w', now() - interval '1 minute' "
            "FROM generate_series(1, %d)",
            project, n_poison);
}

/* Runs reaperd --once with extra arguments and environment; returns the
 * exit code, stdout and stderr (heap). */
static int once(fixture *f, const char *a1, const char *a2, const char *a3, const char *a4,
                const char *env_extra, char **out, char **err) {
    char *args[] = {"--once", (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
    char *env[] = {f->env_exchange, f->env_owned, (char *)env_extra, NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .args = args, .no_interval = true};
    return itest_daemon_run(&o, out, err);
}

/* stdout is exactly one JSON object (json_loads refuses anything after it). */
static json_t *one_object(const char *out) {
    json_error_t e;
    json_t *r = json_loads(out, 0, &e);
    if (r == NULL) fprintf(stderr, "stdout is not one JSON value: %s\n%s\n", e.text, out);
    assert_non_null(r);
    assert_true(json_is_object(r));
    return r;
}

static bool notes_contain(const json_t *report, const char *needle) {
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(report, "notes"), i, n) {
        if (strstr(json_string_value(n), needle)) return true;
    }
    return false;
}

/* The routing key a verdict body must have come with. */
static void expect_key(const feed_msg *m) {
    char want[128];
    const char *src = json_string_value(json_object_get(m->body, "source"));
    const char *cond = json_string_value(json_object_get(m->body, "condition"));
    const char *act = json_string_value(json_object_get(m->body, "action"));
    assert_non_null(src);
    assert_non_null(cond);
    assert_non_null(act);
    snprintf(want, sizeof want, "%s.%s.%s", src, cond, act);
    for (char *p = want; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    assert_string_equal(m->routing_key, want);
}

static void test_once_publishes_every_committed_event(void **state) {
    fixture *f = *state;
    expired(f, "feedonce", 30, 10);
    char *out, *err;
    assert_int_equal(once(f, "--json", "--project", "feedonce", NULL, NULL, &out, &err), 0);
    json_t *report = one_object(out);
    assert_int_equal(json_array_size(json_object_get(report, "verdicts")), 40);
    assert_false(notes_contain(report, "events feed"));
    assert_non_null(strstr(err, "ledger events published to the events exchange"));
    json_decref(report);
    free(out);
    free(err);

    char **ids, **kinds;
    size_t n = feed_ledger(f->pg, f->schema, &ids, &kinds);
    assert_int_equal(n, 40);
    feed_msgs got = {0};
    feed_sub_read(&f->sub, &got, n, 1500, 15000);
    /* Exactly the committed events: no reconnect, so no duplicate. */
    assert_int_equal(got.n, n);
    assert_int_equal(feed_msgs_distinct(&got), n);
    size_t requeued = 0, parked = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(feed_msgs_count(&got, ids[i]), 1);
        const feed_msg *m = feed_msgs_find(&got, ids[i]);
        assert_string_equal(m->type, kinds[i]);
        assert_string_equal(m->type, "QueueReaped");
        assert_string_equal(m->content_type, "application/msgpack");
        assert_null(m->raw_json); /* msgpack, not JSON text */
        assert_int_equal(m->delivery_mode, 2);
        assert_true(m->timestamp > 0);
        assert_non_null(m->body);
        expect_key(m);
        if (strcmp(m->routing_key, "job_queue.lease_expired.requeued") == 0) requeued++;
        if (strcmp(m->routing_key, "job_queue.poison.parked") == 0) parked++;
        assert_string_equal(json_string_value(json_object_get(m->body, "project")), "feedonce");
    }
    assert_int_equal(requeued, 30);
    assert_int_equal(parked, 10);
    feed_msgs_free(&got);
    feed_ids_free(ids, n);
    feed_ids_free(kinds, n);

    /* Full passes: the broker half's events too. A dead-letter queue this
     * reaper does not own holds a message: surfaced (broker.dead_letter.
     * surfaced) once the management API counts it. Whatever else the
     * shared broker holds (sightings are per schema), the feed is still
     * exactly the ledger. */
    char dlq[128];
    snprintf(dlq, sizeof dlq, "itest.feed.%d.dlq", (int)getpid());
    amqp_queue_declare(f->sub.c, 1, amqp_cstring_bytes(dlq), 0, 0, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(f->sub.c).reply_type, AMQP_RESPONSE_NORMAL);
    assert_int_equal(amqp_basic_publish(f->sub.c, 1, amqp_empty_bytes, amqp_cstring_bytes(dlq), 0,
                                        0, NULL, amqp_cstring_bytes("dead")),
                     AMQP_STATUS_OK);
    expired(f, "feedonce", 3, 0);
    bool surfaced = false;
    for (int pass = 0; pass < 10 && !surfaced; pass++) {
        if (pass > 0) sleep(2);
        assert_int_equal(once(f, "--json", NULL, NULL, NULL, NULL, &out, &err), 0);
        report = one_object(out);
        assert_false(notes_contain(report, "events feed"));
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(report, "verdicts"), i, v) {
            const char *qn = json_string_value(json_object_get(v, "queue"));
            if (qn && strcmp(qn, dlq) == 0) surfaced = true;
        }
        json_decref(report);
        free(out);
        free(err);
    }
    assert_true(surfaced);
    amqp_queue_delete(f->sub.c, 1, amqp_cstring_bytes(dlq), 0, 0);
    size_t n2 = feed_ledger(f->pg, f->schema, &ids, &kinds);
    assert_true(n2 >= n + 4);
    feed_sub_read(&f->sub, &got, n2 - n, 1500, 15000);
    assert_int_equal(got.n, n2 - n);
    bool dlq_key = false;
    for (size_t i = n; i < n2; i++) {
        assert_int_equal(feed_msgs_count(&got, ids[i]), 1);
        const feed_msg *m = feed_msgs_find(&got, ids[i]);
        assert_string_equal(m->type, kinds[i]);
        expect_key(m);
        const char *qn = json_string_value(json_object_get(m->body, "queue"));
        if (qn && strcmp(qn, dlq) == 0 &&
            strcmp(m->routing_key, "broker.dead_letter.surfaced") == 0)
            dlq_key = true;
    }
    assert_true(dlq_key);
    fprintf(stderr, "full passes: %zu events on the feed, equal to the ledger\n", n2 - n);
    feed_msgs_free(&got);
    feed_ids_free(ids, n2);
    feed_ids_free(kinds, n2);
}

static void test_once_dry_run_publishes_nothing(void **state) {
    fixture *f = *state;
    expired(f, "feeddry", 5, 2);
    char *out, *err;
    assert_int_equal(once(f, "--dry-run", "--json", "--project", "feeddry", NULL, &out, &err), 0);
    json_t *report = one_object(out);
    assert_int_equal(json_array_size(json_object_get(report, "verdicts")), 7);
    assert_null(strstr(err, "events exchange"));
    json_decref(report);
    free(out);
    free(err);
    assert_string_equal(itest_sql(f->pg, f->schema, "SELECT count(*) FROM ledger"), "0");
    feed_msgs got = {0};
    feed_sub_read(&f->sub, &got, 0, 1500, 5000);
    assert_int_equal(got.n, 0);
    feed_msgs_free(&got);
}

/* REAPER_BROKER_URL with the port replaced by a closed one. */
static void unreachable_url(char *env, size_t n) {
    char url[512];
    snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    assert_int_equal(amqp_parse_url(url, &info), AMQP_STATUS_OK);
    snprintf(env, n, "REAPER_BROKER_URL=amqp://%s@127.0.0.1:%d/%%2f", info.user,
             itest_closed_port());
}

static void test_once_broker_unreachable(void **state) {
    fixture *f = *state;
    expired(f, "feedaway", 6, 2);
    char env[600];
    unreachable_url(env, sizeof env);
    char *out, *err;
    /* Exit 0: the pass was ok and committed; only the feed failed. */
    assert_int_equal(once(f, "--json", "--project", "feedaway", NULL, env, &out, &err), 0);
    json_t *report = one_object(out);
    assert_true(json_is_true(json_object_get(report, "ok")));
    assert_int_equal(json_array_size(json_object_get(report, "verdicts")), 8);
    assert_true(notes_contain(report, "events feed: 8 of 8 committed ledger events were not "
                                      "published to the events exchange"));
    assert_non_null(strstr(err, "ledger events committed but not published to the events exchange"));
    assert_non_null(strstr(err, "\"not_published\":\"8\""));
    json_decref(report);
    free(out);
    free(err);
    /* Committed all the same. */
    assert_string_equal(itest_sql(f->pg, f->schema, "SELECT count(*) FROM ledger"), "8");
    assert_string_equal(
        itest_sql(f->pg, f->schema, "SELECT count(*) FROM job WHERE state = 'leased'"), "0");
    /* The human report says it too. */
    itest_sql(f->pg, f->schema,
              "UPDATE job SET state = 'leased', lease_owner = 'w', lease_expires_at = now() - "
              "interval '1 minute', attempts = 1");
    assert_int_equal(once(f, "--project", "feedaway", NULL, NULL, env, &out, &err), 0);
    assert_non_null(strstr(out, "events feed: 8 of 8 committed ledger events"));
    free(out);
    free(err);
}

/* The events exchange exists with another type: the broker refuses
 * reaperd's declaration, the pass still commits, and the note says why. */
static void test_once_exchange_of_another_type(void **state) {
    fixture *f = *state;
    char name[160];
    snprintf(name, sizeof name, "%s.direct", f->exchange);
    snprintf(f->env_exchange, sizeof f->env_exchange, "REAPER_BROKER_EVENTS_EXCHANGE=%s", name);
    amqp_exchange_declare(f->sub.c, 1, amqp_cstring_bytes(name), amqp_cstring_bytes("direct"), 0,
                          0, 1, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(f->sub.c).reply_type, AMQP_RESPONSE_NORMAL);
    expired(f, "feedtype", 3, 0);
    char *out, *err;
    assert_int_equal(once(f, "--json", "--project", "feedtype", NULL, NULL, &out, &err), 0);
    json_t *report = one_object(out);
    assert_true(notes_contain(report, "events feed: 3 of 3 committed ledger events were not "
                                      "published"));
    assert_true(notes_contain(report, "declaring the events exchange"));
    assert_true(notes_contain(report, "PRECONDITION_FAILED"));
    json_decref(report);
    free(out);
    free(err);
    assert_string_equal(itest_sql(f->pg, f->schema, "SELECT count(*) FROM ledger"), "3");
    amqp_exchange_delete(f->sub.c, 1, amqp_cstring_bytes(name), 0);
}

/* ---- the daemon ----------------------------------------------------------- */

static rp_child *daemon_start(fixture *f, const char *queue_env, const char *extra1,
                              const char *extra2) {
    /* Its tests count the ledger: not-owned dead-letter queues of other
     * tests on the broker would add surfaced verdicts to it. */
    char *env[] = {f->env_exchange, f->env_owned, f->env_dlq, (char *)queue_env, (char *)extra1,
                   (char *)extra2, NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .no_wait = true};
    f->daemon = itest_daemon_start(&o);
    return f->daemon;
}

/* A clean stop of the fixture's daemon d (exit 0). */
static void daemon_stop(fixture *f, rp_child *d) {
    f->daemon = NULL;
    assert_int_equal(itest_daemon_stop(d), 0);
}

static void test_gate_answer_on_feed(void **state) {
    fixture *f = *state;
    expired(f, "feedgate", 0, 1);
    char queue[128], queue_env[192];
    snprintf(queue, sizeof queue, "vibey.reap.control.itest.feed.%d", (int)getpid());
    snprintf(queue_env, sizeof queue_env, "REAPER_BROKER_CONTROL_QUEUE=%s", queue);
    rp_child *d = daemon_start(f, queue_env, NULL, NULL);
    assert_true(rp_child_wait_for(d, "\"msg\":\"broker connected\"", 30000));
    assert_true(rp_child_wait_for(d, "\"msg\":\"pass finished\"", 30000));
    long gate = atol(itest_sql(f->pg, f->schema, "SELECT id FROM gate"));
    long job = atol(itest_sql(f->pg, f->schema, "SELECT job_id FROM gate"));
    assert_true(gate > 0);

    amqp_connection_state_t c = itest_amqp_connect();
    char body[160];
    snprintf(body, sizeof body,
             "{\"v\":1,\"op\":\"answer\",\"gate\":%ld,\"choice\":\"retry\",\"by\":\"tester\"}",
             gate);
    for (int round = 0; round < 2; round++) {
        itest_reply r;
        assert_int_equal(itest_request(c, queue, "application/json", body, strlen(body), NULL,
                                       true, "c1", &r, 20000),
                         0);
        json_t *reply = json_loads(r.body, 0, NULL);
        assert_non_null(reply);
        assert_true(json_is_true(json_object_get(reply, "ok")));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(reply, "result"), "outcome")),
            round == 0 ? "retried" : "already_answered");
        json_decref(reply);
        itest_reply_free(&r);
    }
    itest_amqp_close(c);

    char **ids, **kinds;
    size_t n = feed_ledger(f->pg, f->schema, &ids, &kinds);
    assert_int_equal(n, 2); /* the park, the answer; already_answered commits nothing */
    assert_string_equal(kinds[1], "GateAnswered");
    feed_msgs got = {0};
    feed_sub_read(&f->sub, &got, n, 2000, 20000);
    assert_int_equal(got.n, 2);
    for (size_t i = 0; i < n; i++) assert_int_equal(feed_msgs_count(&got, ids[i]), 1);
    const feed_msg *m = feed_msgs_find(&got, ids[1]);
    assert_string_equal(m->routing_key, "gate.delivery_exhausted.retried");
    assert_string_equal(m->type, "GateAnswered");
    assert_int_equal(m->delivery_mode, 2);
    assert_int_equal(json_integer_value(json_object_get(m->body, "gate")), gate);
    assert_int_equal(json_integer_value(json_object_get(m->body, "job")), job);
    /* by: the broker-checked user; the request's own "by" is a note. */
    assert_string_equal(json_string_value(json_object_get(m->body, "by")), itest_broker_user());
    assert_string_equal(json_string_value(json_object_get(m->body, "note")), "tester");
    /* The body is the ledger row's payload, field for field. */
    json_t *payload = json_loads(itest_sql(f->pg, f->schema,
                                           "SELECT payload::text FROM ledger WHERE kind = "
                                           "'GateAnswered'"),
                                 0, NULL);
    assert_non_null(payload);
    assert_true(json_equal(payload, m->body));
    json_decref(payload);
    expect_key(feed_msgs_find(&got, ids[0]));
    feed_msgs_free(&got);
    feed_ids_free(ids, n);
    feed_ids_free(kinds, n);

    daemon_stop(f, d);
    c = itest_amqp_connect();
    amqp_queue_delete(c, 1, amqp_cstring_bytes(queue), 0, 0);
    itest_amqp_close(c);
}

/* The broker stays away: the events wait in the publisher's queue (not
 * dropped while reaperd runs), and a stop drops them, each logged by its
 * message id, without waiting for a broker that is not there. */
static void test_daemon_drops_logged_when_broker_stays_away(void **state) {
    fixture *f = *state;
    expired(f, "feeddrop", 15, 5);
    char url_env[600], mgmt_env[128];
    unreachable_url(url_env, sizeof url_env);
    snprintf(mgmt_env, sizeof mgmt_env, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:%d",
             itest_closed_port());
    rp_child *d = daemon_start(f, "REAPER_BROKER_CONTROL_QUEUE=vibey.reap.control.itest.nobody",
                               url_env, mgmt_env);
    assert_true(rp_child_wait_for(d, "\"msg\":\"pass finished\"", 30000));
    assert_string_equal(itest_sql(f->pg, f->schema, "SELECT count(*) FROM ledger"), "20");
    rp_child_drain(d, 1500);
    assert_null(strstr(d->log, "\"outcome\":\"dropped\""));
    long long t0 = itest_mono_ms();
    int rc = rp_child_stop(d, SIGTERM, 20000);
    long long took = itest_mono_ms() - t0;
    fprintf(stderr, "stop with 20 events waiting for an absent broker: exit %d in %lld ms\n", rc,
            took);
    assert_int_equal(rc, 0);
    assert_true(took < 10000);
    char **ids, **kinds;
    size_t n = feed_ledger(f->pg, f->schema, &ids, &kinds);
    assert_int_equal(n, 20);
    size_t logged = 0;
    for (size_t i = 0; i < n; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "\"event\":\"%s\",\"outcome\":\"dropped\"", ids[i]);
        if (strstr(d->log, needle)) logged++;
        else fprintf(stderr, "not logged as dropped: %s\n", ids[i]);
    }
    assert_int_equal(logged, n);
    feed_ids_free(ids, n);
    feed_ids_free(kinds, n);
    rp_child_free(d);
    f->daemon = NULL;
}

/* ---- broker.events_format: json ------------------------------------------ */

/* Every ledger row of the schema arrived once, as JSON text with
 * content_type application/json, equal field for field to the row's
 * payload (jsonb read back as text by PostgreSQL), with the message
 * properties of SCHEMA.md section 7. Returns how many. */
static size_t expect_json_feed(fixture *f, size_t want_at_least) {
    char **ids, **kinds;
    size_t n = feed_ledger(f->pg, f->schema, &ids, &kinds);
    assert_true(n >= want_at_least);
    feed_msgs got = {0};
    feed_sub_read(&f->sub, &got, n, 1500, 20000);
    assert_int_equal(got.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(feed_msgs_count(&got, ids[i]), 1);
        const feed_msg *m = feed_msgs_find(&got, ids[i]);
        assert_string_equal(m->content_type, "application/json");
        assert_string_equal(m->type, kinds[i]);
        assert_int_equal(m->delivery_mode, 2);
        assert_true(m->timestamp > 0);
        assert_non_null(m->raw_json); /* JSON text, read by jansson alone */
        assert_true(json_is_object(m->raw_json));
        assert_null(json_object_get(m->raw_json, "v")); /* no envelope */
        json_t *payload = json_loads(itest_sql(f->pg, f->schema,
                                               "SELECT payload::text FROM ledger WHERE seq = %s",
                                               ids[i] + strlen("ledger-")),
                                     0, NULL);
        assert_non_null(payload);
        if (!json_equal(payload, m->raw_json)) {
            char *a = json_dumps(payload, JSON_SORT_KEYS), *b = json_dumps(m->raw_json, JSON_SORT_KEYS);
            fprintf(stderr, "%s: ledger %s\n  feed %s\n", ids[i], a, b);
            free(a);
            free(b);
            fail();
        }
        assert_int_equal(json_object_size(payload), json_object_size(m->raw_json));
        json_decref(payload);
        if (strcmp(m->type, "QueueReaped") == 0) expect_key(m);
    }
    feed_msgs_free(&got);
    feed_ids_free(ids, n);
    feed_ids_free(kinds, n);
    return n;
}

static void test_json_format_once(void **state) {
    fixture *f = *state;
    expired(f, "feedjson", 4, 2);
    char *out, *err;
    assert_int_equal(once(f, "--json", "--project", "feedjson", NULL,
                          "REAPER_BROKER_EVENTS_FORMAT=json", &out, &err),
                     0);
    json_t *report = one_object(out);
    assert_int_equal(json_array_size(json_object_get(report, "verdicts")), 6);
    assert_false(notes_contain(report, "events feed"));
    json_decref(report);
    free(out);
    free(err);
    size_t n = expect_json_feed(f, 6);
    assert_int_equal(n, 6);

    /* What --check-config shows, and a bad value refused at start: exit 2,
     * the key and its variable named, nothing run. */
    char *argv[] = {(char *)itest_env("REAPERD"), "--check-config", NULL};
    char *env_ok[] = {"REAPER_BROKER_EVENTS_FORMAT=json", NULL};
    assert_int_equal(rp_run_capture(argv, env_ok, &out, &err), 0);
    assert_non_null(strstr(out, "  events_format: json  # env REAPER_BROKER_EVENTS_FORMAT"));
    free(out);
    free(err);
    char *env_bad[] = {"REAPER_BROKER_EVENTS_FORMAT=yaml", NULL};
    assert_int_equal(rp_run_capture(argv, env_bad, &out, &err), 2);
    assert_non_null(strstr(err, "REAPER_BROKER_EVENTS_FORMAT: broker.events_format: expects one "
                                "of msgpack|json, got \"yaml\""));
    assert_non_null(strstr(err, "configuration refused (1 problem)"));
    free(out);
    free(err);
    expired(f, "feedjson", 2, 0);
    assert_int_equal(once(f, "--json", "--project", "feedjson", NULL,
                          "REAPER_BROKER_EVENTS_FORMAT=yaml", &out, &err),
                     2);
    assert_non_null(strstr(err, "broker.events_format"));
    free(out);
    free(err);
    assert_string_equal(itest_sql(f->pg, f->schema, "SELECT count(*) FROM ledger"),
                        "6"); /* nothing ran */
}

static void test_json_format_daemon(void **state) {
    fixture *f = *state;
    expired(f, "feedjsond", 5, 1);
    char queue_env[192];
    snprintf(queue_env, sizeof queue_env,
             "REAPER_BROKER_CONTROL_QUEUE=vibey.reap.control.itest.feedjson.%d", (int)getpid());
    rp_child *d = daemon_start(f, queue_env, "REAPER_BROKER_EVENTS_FORMAT=json", NULL);
    assert_true(rp_child_wait_for(d, "\"msg\":\"broker connected\"", 30000));
    assert_true(rp_child_wait_for(d, "\"msg\":\"pass finished\"", 30000));
    size_t n = expect_json_feed(f, 6);
    fprintf(stderr, "daemon, events_format json: %zu events on the feed, equal to the ledger\n",
            n);
    daemon_stop(f, d);
    amqp_connection_state_t c = itest_amqp_connect();
    char queue[160];
    snprintf(queue, sizeof queue, "vibey.reap.control.itest.feedjson.%d", (int)getpid());
    amqp_queue_delete(c, 1, amqp_cstring_bytes(queue), 0, 0);
    itest_amqp_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_once_publishes_every_committed_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_once_dry_run_publishes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_once_broker_unreachable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_once_exchange_of_another_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gate_answer_on_feed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_drops_logged_when_broker_stays_away, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_json_format_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_format_daemon, setup, teardown),
    };
    return cmocka_run_group_tests_name("feed", tests, NULL, NULL);
}
