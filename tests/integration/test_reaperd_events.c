/*
 * reaperd acting on broker events as they happen (core/rp_consumers.c),
 * against the real broker (RabbitMQ 3.10.8 and 4.0.5: label broker) and
 * PostgreSQL: a consumer killed while it holds unacknowledged messages, and
 * what reaper judged and when.
 *
 * What the brokers do (checked here; see the comment at the top of
 * core/rp_consumers.c): a basic.cancel with the channel left open leaves the
 * deliveries unacknowledged with nobody consuming - held work whose holder
 * is gone - while the management API still shows the consumer for 4 to 6 s.
 * Closing the channel (or killing its connection) requeues the deliveries:
 * nothing is held. 3.10.8 sends consumer.deleted then channel.closed; 4.0.5
 * sends only channel.closed.
 *
 * So the test asserts:
 *  1. cancel: HOLDER_GONE is surfaced (sighting row, ledger event) within a
 *     second of the cancel, from the consumer count the events give, while
 *     the management API still reported the consumer; the check after the
 *     statistics emission then reads consumers 0 and judges nothing new;
 *     closing the channel clears the sighting once the statistics show it.
 *  2. killed connection: a check runs within a second and judges nothing
 *     (the stale reading is not overridden after a channel close), the
 *     check after the statistics sees the deliveries back to ready, and no
 *     ledger event or sighting is ever written for the queue.
 *  3. after a reconnect (forced by deleting this reaperd's own control
 *     queue) the owned queues are listed again, consumer counts included,
 *     and a cancel is still judged at once;
 *  4. policy.cleared of reaper's policy brings a reconcile that writes it
 *     back, with no loop on its own write; a new owned queue brings one;
 *  5. the management API unreachable: the listing is retried with backoff,
 *     a check names the broker unreadable and writes nothing, and reaperd
 *     stops cleanly.
 * Also, in 1: a sweep asked for right after the cancel, while the API
 * still reports the consumer, does not clear the sighting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_daemon.h"
#include "test_mgmt_common.h" /* and itest.h */

static char schema[64], env_owned[160], prefix[64], control[96];
static rp_child *reaperd;
static PGconn *pg;

static long wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int setup(void **state) {
    (void)state;
    snprintf(schema, sizeof schema, "itest_ev_%d", (int)getpid());
    snprintf(prefix, sizeof prefix, "vibey.ite%d.", (int)getpid());
    snprintf(env_owned, sizeof env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.ite%d\\.",
             (int)getpid());
    /* A control queue of its own: deleting it makes this reaperd (and no
     * other) reconnect (the broker cancels its consumer). */
    snprintf(control, sizeof control, "vibey.reap.control.ite%d", (int)getpid());
    if (itest_migrate(schema) != 0) return -1;
    pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    if (PQstatus(pg) != CONNECTION_OK) return -1;
    /* The sweep only at start (before the test's queues exist): whatever
     * is judged afterwards is judged from the events. */
    char *env[] = {env_owned, "REAPER_LOG_FORMAT=text", "REAPER_LOG_LEVEL=info", NULL};
    reaperd = itest_daemon_start(&(itest_daemon_opts){
        .schema = schema, .control = control, .env = env,
        .ready = {"owned queues listed", "\"pass finished\" scope=sweep"}, .ready_ms = 20000});
    return 0;
}

static int teardown(void **state) {
    (void)state;
    int rc = itest_daemon_stop(reaperd);
    amqp_connection_state_t c = mt_amqp("/");
    amqp_queue_delete(c, 1, amqp_cstring_bytes(control), 0, 0);
    const char *names[] = {"cancel", "killed", "seeded"};
    for (size_t i = 0; i < 3; i++) {
        char q[128];
        snprintf(q, sizeof q, "%s%s", prefix, names[i]);
        amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
    }
    mt_amqp_close(c);
    char sql[160];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    PQclear(PQexec(pg, "SET client_min_messages = warning"));
    PQclear(PQexec(pg, sql));
    PQfinish(pg);
    return rc == 0 ? 0 : -1;
}

/* ---- helpers ---- */

/* The first log line (from offset *from on) holding every needle; its
 * text in a static buffer, *from moved past it. NULL when none yet. */
static const char *find_line(size_t *from, const char *a, const char *b, const char *c) {
    static char line[4096];
    const char *log = reaperd->log;
    size_t pos = *from;
    while (pos < reaperd->log_len) {
        const char *nl = strchr(log + pos, '\n');
        if (nl == NULL) return NULL; /* a line not finished yet */
        size_t len = (size_t)(nl - (log + pos));
        snprintf(line, sizeof line, "%.*s", (int)len, log + pos);
        pos += len + 1;
        if (strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c))) {
            *from = pos;
            return line;
        }
    }
    return NULL;
}

/* Waits up to ms for such a line. */
static const char *wait_line(size_t *from, const char *a, const char *b, const char *c, int ms) {
    long until = mt_now_ms() + ms;
    for (;;) {
        const char *l = find_line(from, a, b, c);
        if (l) return l;
        if (mt_now_ms() > until) {
            size_t tail = reaperd->log_len > 6000 ? reaperd->log_len - 6000 : 0;
            fprintf(stderr, "no line with %s %s %s; reaperd's log ends:\n%s\n", a, b ? b : "",
                    c ? c : "", reaperd->log + tail);
            return NULL;
        }
        rp_child_drain(reaperd, 50);
    }
}

static int64_t sql_i64(const char *sql) {
    PGresult *r = PQexec(pg, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fprintf(stderr, "%s: %s\n", sql, PQerrorMessage(pg));
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    int64_t v = PQntuples(r) && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

static int64_t sighting_count(const char *key) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.sighting WHERE key = '%s'", schema, key);
    return sql_i64(sql);
}

/* Unix ms of the first ledger event of object with condition and action;
 * -1 when there is none. */
static int64_t ledger_at(const char *object, const char *cond, const char *action) {
    char sql[700];
    snprintf(sql, sizeof sql,
             "SELECT (extract(epoch FROM at) * 1000)::bigint FROM %s.ledger WHERE "
             "payload->>'object' = '%s' AND payload->>'condition' = '%s' AND "
             "payload->>'action' = '%s' ORDER BY seq LIMIT 1",
             schema, object, cond, action);
    return sql_i64(sql);
}

static int64_t ledger_count(const char *object) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.ledger WHERE payload->>'object' = '%s'",
             schema, object);
    return sql_i64(sql);
}

/* A consumer on channel ch of c, holding 3 deliveries of queue q unacked,
 * and the management API showing it (consumers 1, unacked 3). */
static void hold_three(amqp_connection_state_t c, amqp_channel_t ch, const char *q) {
    mt_declare(c, q, "classic");
    for (int i = 0; i < 3; i++) mt_publish(c, q, "work", 0);
    mt_hold(c, ch, q, "itest.victim", 3);
    assert_true(mt_wait_queue_field("/", q, "messages_unacknowledged", "#", 3, 30000));
    assert_true(mt_wait_queue_field("/", q, "consumers", "#", 1, 30000));
}

/* ---- the tests ---- */

static void test_cancel_holding_unacked(void **state) {
    (void)state;
    char q[128], object[160], key[200];
    snprintf(q, sizeof q, "%scancel", prefix);
    snprintf(object, sizeof object, "queue:/:%s", q);
    snprintf(key, sizeof key, "broker|HOLDER_GONE|%s", object);
    amqp_connection_state_t c = mt_amqp("/");
    hold_three(c, 2, q);
    rp_child_drain(reaperd, 200);
    size_t from = reaperd->log_len;
    char qfield[160];
    snprintf(qfield, sizeof qfield, "queue=%s ", q);

    long t0 = wall_ms();
    amqp_basic_cancel(c, 2, amqp_cstring_bytes("itest.victim"));
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);

    /* Judged at once, from the events' consumer count, while the
     * management API still reports the consumer. */
    const char *l = wait_line(&from, qfield, "phase=\"at once\"", NULL, 3000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    assert_non_null(strstr(l, "trigger=consumer.deleted"));
    assert_non_null(strstr(l, "consumers_from_events=0"));
    assert_non_null(strstr(l, "unacked=3"));
    assert_non_null(strstr(l, "judged=\"HOLDER_GONE SURFACED\""));
    assert_int_equal(sighting_count(key), 1);
    int64_t at = ledger_at(object, "HOLDER_GONE", "SURFACED");
    assert_true(at > 0);
    fprintf(stderr, "# holder gone on the ledger %lld ms after the cancel\n", (long long)(at - t0));
    assert_true(at - t0 >= 0);
    assert_true(at - t0 < 1000);

    /* A sweep right now (asked for on the control queue) reads the stale
     * statistic too; it uses the events' count as the check did, so it
     * does not clear the sighting (which the next check would open again). */
    json_t *now = mt_queue("/", q);
    assert_non_null(now);
    long stale_consumers = (long)json_integer_value(json_object_get(now, "consumers"));
    json_decref(now);
    amqp_connection_state_t rc = itest_amqp_connect();
    itest_reply rep;
    const char *req = "{\"v\":1,\"op\":\"reap\"}";
    assert_int_equal(itest_request(rc, control, "application/json", req, strlen(req), NULL, true,
                                   "ev-reap", &rep, 60000),
                     0);
    fprintf(stderr, "# a sweep %ld ms after the cancel, the API saying consumers %ld: %.300s\n",
            wall_ms() - t0, stale_consumers, rep.body);
    assert_non_null(strstr(rep.body, "\"ok\":true"));
    assert_null(strstr(rep.body, "CLEARED"));
    itest_reply_free(&rep);
    itest_amqp_close(rc);
    assert_int_equal(sighting_count(key), 1);
    assert_int_equal(ledger_count(object), 1);

    /* Measured again after the statistics emission: they now say 0
     * consumers too; the sighting is open already, nothing new. */
    /* (A later check that reads what the first one read, before the
     * emission, is made again an interval later.) */
    l = wait_line(&from, qfield, "phase=\"after statistics\"", "consumers_reported=0", 25000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    assert_non_null(strstr(l, "judged=\"nothing new\""));
    assert_int_equal(ledger_count(object), 1);

    /* The holder's channel closes: the deliveries go back to ready and the
     * sighting clears once the statistics show it. */
    amqp_channel_close(c, 2, AMQP_REPLY_SUCCESS);
    l = wait_line(&from, qfield, "judged=\"HOLDER_GONE CLEARED\"", NULL, 25000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    assert_non_null(strstr(l, "unacked=0"));
    assert_int_equal(sighting_count(key), 0);
    assert_int_equal(ledger_count(object), 2);
    mt_amqp_close(c);
}

static void test_killed_connection_holding_unacked(void **state) {
    (void)state;
    char q[128], object[160];
    snprintf(q, sizeof q, "%skilled", prefix);
    snprintf(object, sizeof object, "queue:/:%s", q);
    amqp_connection_state_t c = mt_amqp("/");
    hold_three(c, 1, q);
    rp_child_drain(reaperd, 200);
    size_t from = reaperd->log_len;
    char qfield[160];
    snprintf(qfield, sizeof qfield, "queue=%s ", q);

    long t0 = wall_ms();
    close(amqp_get_sockfd(c)); /* the consumer dies: no close handshake */

    /* Checked at once (triggered by consumer.deleted on 3.10, by
     * channel.closed on 4.0), and the stale reading is NOT overridden: the
     * deliveries were requeued, so nothing is judged. */
    const char *l = wait_line(&from, qfield, "phase=\"at once\"", NULL, 3000);
    long t1 = wall_ms();
    assert_non_null(l);
    fprintf(stderr, "# %s (%ld ms after the kill)\n", l, t1 - t0);
    assert_true(t1 - t0 < 1000);
    assert_non_null(strstr(l, "consumers_from_events=unknown"));
    assert_non_null(strstr(l, "judged=\"nothing new\""));

    /* After the statistics emission: back to ready, nothing held. */
    l = wait_line(&from, qfield, "phase=\"after statistics\"", "ready=3", 25000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    assert_non_null(strstr(l, "unacked=0"));
    assert_non_null(strstr(l, "judged=\"nothing new\""));
    assert_int_equal(ledger_count(object), 0);
    assert_true(mt_wait_queue_field("/", q, "messages_ready", "#", 3, 10000));
    amqp_destroy_connection(c);
}

/* After a reconnect the inventory is listed again (events are not
 * replayed), consumers included: a consumer reaperd saw created before the
 * reconnect is counted from the listing afterwards, and its cancel is still
 * judged at once. */
static void test_reseeded_after_reconnect(void **state) {
    (void)state;
    char q[128], object[160];
    snprintf(q, sizeof q, "%sseeded", prefix);
    snprintf(object, sizeof object, "queue:/:%s", q);
    amqp_connection_state_t c = mt_amqp("/");
    hold_three(c, 2, q);
    rp_child_drain(reaperd, 200);
    size_t from = reaperd->log_len;

    amqp_queue_delete(c, 1, amqp_cstring_bytes(control), 0, 0);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    assert_non_null(wait_line(&from, "broker unreachable", NULL, NULL, 10000));
    assert_non_null(wait_line(&from, "\"broker connected\"", NULL, NULL, 30000));
    /* The queues of this run that exist now: cancel, killed, seeded. */
    const char *l = wait_line(&from, "owned queues listed", NULL, NULL, 10000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    assert_non_null(strstr(l, "owned=3 "));

    char qfield[160];
    snprintf(qfield, sizeof qfield, "queue=%s ", q);
    long t0 = wall_ms();
    amqp_basic_cancel(c, 2, amqp_cstring_bytes("itest.victim"));
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    l = wait_line(&from, qfield, "phase=\"at once\"", NULL, 3000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    assert_non_null(strstr(l, "consumers_from_events=0"));
    assert_non_null(strstr(l, "judged=\"HOLDER_GONE SURFACED\""));
    int64_t at = ledger_at(object, "HOLDER_GONE", "SURFACED");
    assert_true(at > 0 && at - t0 < 1000);
    amqp_channel_close(c, 2, AMQP_REPLY_SUCCESS);
    mt_amqp_close(c);
}

/* Counts the log lines from offset from on that hold needle. */
static int count_lines(size_t from, const char *needle) {
    int n = 0;
    while (find_line(&from, needle, NULL, NULL)) n++;
    return n;
}

/* An operator removes reaper's policy: policy.cleared brings a reconcile
 * that writes it back (debounced, at most one per 10 s, so no loop on its
 * own write's policy.set); a new owned queue brings one too. */
static void test_policy_events_reconcile(void **state) {
    (void)state;
    rp_child_drain(reaperd, 200);
    size_t from = reaperd->log_len;
    assert_int_equal(mt_http("DELETE", "/api/policies/%2F/vibey-reap", NULL, NULL), 204);
    const char *l = wait_line(&from, "\"policy written\"", "policy=vibey-reap", NULL, 25000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    l = wait_line(&from, "\"policy reconciled on event\"", "policy=vibey-reap", NULL, 25000);
    assert_non_null(l);
    json_t *pol = mt_get_json("/api/policies/%2F/vibey-reap");
    assert_non_null(pol);
    char want[64];
    snprintf(want, sizeof want, "ite%d", (int)getpid());
    assert_non_null(strstr(json_string_value(json_object_get(pol, "pattern")), want));
    json_decref(pol);
    /* Its own write's policy.set may bring one more reconcile, which finds
     * the policy in force; then it stays quiet. */
    size_t mark = from;
    rp_child_drain(reaperd, 12000);
    int n = count_lines(mark, "\"policy reconcile on event finished\"");
    fprintf(stderr, "# %d more reconcile(s) in the 12 s after\n", n);
    assert_true(n <= 1);
    assert_int_equal(count_lines(mark, "\"policy written\""), 0);

    /* A new owned queue: its policy verified on the event. */
    char q[128];
    snprintf(q, sizeof q, "%snewq", prefix);
    amqp_connection_state_t c = mt_amqp("/");
    from = reaperd->log_len;
    mt_declare(c, q, "quorum");
    l = wait_line(&from, "\"policy reconcile on event finished\"", NULL, NULL, 25000);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
    mt_amqp_close(c);
}

/* The management API cannot be reached: the listing is retried with
 * backoff, events still arrive, a check names the broker unreadable and
 * clears nothing, and reaperd stops cleanly. */
static void test_management_api_unreachable(void **state) {
    (void)state;
    char ctl[128];
    snprintf(ctl, sizeof ctl, "%s.down", control);
    char *env[] = {env_owned, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:9",
                   "REAPER_LOG_FORMAT=text", "REAPER_LOG_LEVEL=info", NULL};
    rp_child *r = itest_daemon_start(&(itest_daemon_opts){
        .schema = schema, .control = ctl, .env = env, .no_wait = true});
    bool failed = rp_child_wait_for(r, "owned-queue listing failed; trying again", 20000);
    if (!failed) fprintf(stderr, "%s\n", r->log);
    assert_true(failed);
    assert_non_null(strstr(r->log, "in_seconds=5"));
    /* A consumer goes away on an owned queue made since: it is checked at
     * once, cannot be read, and nothing is written. */
    char q[128];
    snprintf(q, sizeof q, "%sdown", prefix);
    amqp_connection_state_t c = mt_amqp("/");
    mt_declare(c, q, "classic");
    amqp_basic_consume(c, 1, amqp_cstring_bytes(q), amqp_cstring_bytes("x"), 0, 0, 0,
                       amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_cancel(c, 1, amqp_cstring_bytes("x"));
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    /* queue.created put it in the inventory: its check cannot read it. */
    assert_true(rp_child_wait_for(r, "\"event check\"", 3000));
    const char *seen = strstr(r->log, "\"event check\"");
    assert_non_null(strstr(seen, "read=no"));
    assert_non_null(strstr(r->log, "broker: reading a queue: unavailable"));
    char object[160];
    snprintf(object, sizeof object, "queue:/:%s", q);
    assert_int_equal(ledger_count(object), 0);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(ctl), 0, 0);
    mt_amqp_close(c);
    assert_int_equal(itest_daemon_stop(r), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancel_holding_unacked),
        cmocka_unit_test(test_killed_connection_holding_unacked),
        cmocka_unit_test(test_reseeded_after_reconnect),
        cmocka_unit_test(test_policy_events_reconcile),
        cmocka_unit_test(test_management_api_unreachable),
    };
    return cmocka_run_group_tests_name("reaperd_events", tests, setup, teardown);
}
