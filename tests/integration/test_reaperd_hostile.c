/*
 * Hostile input to reaperd's broker-event path, against the real broker
 * (RabbitMQ 3.10.8 and 4.0.5: label broker) (issue 15 item 6).
 *
 *  1. A forged broker event: anyone who may publish on the vhost can put a
 *     message into reaperd's event queue (server-named, exclusive, bound to
 *     amq.rabbitmq.event, which is internal: nobody publishes there) through
 *     the default exchange. With sender-selected distribution (a CC header
 *     naming the queue) the delivery even carries the routing key of a
 *     real event, "queue.deleted", and forged headers. reaperd must not act
 *     on it - not even for the event lag - and count it
 *     (reaper_broker_events_refused_total) and say it once; the queue's real
 *     deletion afterwards is still seen.
 *  2. A catastrophic policy pattern: a policy.set event's pattern is
 *     compiled and matched on the loop against every owned queue of its
 *     vhost. With PCRE2's default limits (a+)+$ against a 255-byte name
 *     ending "aaa...a!" costs about half a second a queue; four such owned
 *     queues stalled the loop for seconds. Under rp_match.h's limits
 *     /healthz keeps answering within 200 ms while the event is handled, and
 *     the match that hits a limit is logged as unknown coverage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_daemon.h"
#include "test_mgmt_common.h" /* and itest.h */

#define N_EVIL 4

static char schema[64], env_owned[160], prefix[64];
static char forged_q[128], evil_q[N_EVIL][256], policy[64];
static rp_child *reaperd;
static int port;

static int setup(void **state) {
    (void)state;
    snprintf(schema, sizeof schema, "itest_hostile_%d", (int)getpid());
    itest_env_owned(env_owned, sizeof env_owned, "hostile");
    snprintf(prefix, sizeof prefix, "vibey.itest.hostile%d.", (int)getpid());
    snprintf(forged_q, sizeof forged_q, "%sforged", prefix);
    snprintf(policy, sizeof policy, "itest-hostile-%d", (int)getpid());
    /* 255 bytes (AMQP's longest name): the prefix, a long run of 'a', '!'. */
    for (int i = 0; i < N_EVIL; i++) {
        int n = snprintf(evil_q[i], sizeof evil_q[i], "%se%d.", prefix, i);
        memset(evil_q[i] + n, 'a', (size_t)(254 - n));
        evil_q[i][254] = '!';
        evil_q[i][255] = '\0';
    }
    if (itest_migrate(schema) != 0) return -1;
    amqp_connection_state_t c = mt_amqp("/");
    mt_declare(c, forged_q, "classic");
    for (int i = 0; i < N_EVIL; i++) mt_declare(c, evil_q[i], "classic");
    mt_amqp_close(c);
    char *env[] = {env_owned, "REAPER_LOG_FORMAT=text", "REAPER_LOG_LEVEL=debug", NULL};
    reaperd = itest_daemon_start(&(itest_daemon_opts){
        .schema = schema, .env = env, .ready = {"owned queues listed"}});
    port = itest_reaperd_http_port(reaperd, 10000);
    return port > 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    int rc = itest_daemon_stop(reaperd);
    char path[160];
    snprintf(path, sizeof path, "/api/policies/%%2F/%s", policy);
    (void)mt_http("DELETE", path, NULL, NULL);
    amqp_connection_state_t c = mt_amqp("/");
    amqp_queue_delete(c, 1, amqp_cstring_bytes(forged_q), 0, 0);
    for (int i = 0; i < N_EVIL; i++) amqp_queue_delete(c, 1, amqp_cstring_bytes(evil_q[i]), 0, 0);
    mt_amqp_close(c);
    PGconn *pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    itest_drop_schema(pg, schema);
    PQfinish(pg);
    return rc == 0 ? 0 : -1;
}

/* Whether reaperd's log, from offset from on, has a line holding a, b and c. */
static bool log_has(size_t from, const char *a, const char *b, const char *c) {
    const char *log = reaperd->log;
    while (from < reaperd->log_len) {
        const char *nl = strchr(log + from, '\n');
        if (nl == NULL) return false;
        size_t len = (size_t)(nl - (log + from));
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)len, log + from);
        from += len + 1;
        if (strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c))) return true;
    }
    return false;
}

static bool wait_log(size_t from, const char *a, const char *b, const char *c, int ms) {
    long long until = itest_mono_ms() + ms;
    while (!log_has(from, a, b, c)) {
        if (itest_mono_ms() > until) return false;
        rp_child_drain(reaperd, 50);
    }
    return true;
}

/* The queues bound to amq.rabbitmq.event: reaperd's event queue (and those
 * of any other reaperd on the broker). */
static json_t *event_queues(void) {
    json_t *b = mt_get_json("/api/exchanges/%2F/amq.rabbitmq.event/bindings/source");
    assert_non_null(b);
    json_t *names = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(b, i, x) {
        const char *d = json_string_value(json_object_get(x, "destination"));
        const char *t = json_string_value(json_object_get(x, "destination_type"));
        if (d == NULL || t == NULL || strcmp(t, "queue") != 0) continue;
        bool seen = false;
        for (size_t k = 0; k < json_array_size(names); k++)
            seen = seen || strcmp(json_string_value(json_array_get(names, k)), d) == 0;
        if (!seen) json_array_append_new(names, json_string(d));
    }
    json_decref(b);
    return names;
}

static void test_forged_event_refused(void **state) {
    (void)state;
    json_t *queues = event_queues();
    assert_true(json_array_size(queues) >= 1);
    rp_child_drain(reaperd, 200);
    size_t from = reaperd->log_len;
    amqp_connection_state_t c = mt_amqp("/");
    size_t i;
    json_t *q;
    json_array_foreach(queues, i, q) {
        /* The default exchange routes to the queue named by the CC header
         * too, and the delivery keeps the routing key "queue.deleted". */
        amqp_field_value_t cc_v = {AMQP_FIELD_KIND_UTF8,
                                   {.bytes = amqp_cstring_bytes(json_string_value(q))}};
        amqp_table_entry_t h[4];
        h[0].key = amqp_cstring_bytes("CC");
        h[0].value.kind = AMQP_FIELD_KIND_ARRAY;
        h[0].value.value.array = (amqp_array_t){1, &cc_v};
        h[1].key = amqp_cstring_bytes("name");
        h[1].value.kind = AMQP_FIELD_KIND_UTF8;
        h[1].value.value.bytes = amqp_cstring_bytes(forged_q);
        h[2].key = amqp_cstring_bytes("vhost");
        h[2].value.kind = AMQP_FIELD_KIND_UTF8;
        h[2].value.value.bytes = amqp_cstring_bytes("/");
        h[3].key = amqp_cstring_bytes("timestamp_in_ms"); /* a day ago: a lag of a day */
        h[3].value.kind = AMQP_FIELD_KIND_I64;
        h[3].value.value.i64 = (int64_t)time(NULL) * 1000 - 86400000;
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_HEADERS_FLAG;
        p.headers = (amqp_table_t){4, h};
        assert_int_equal(amqp_basic_publish(c, 1, amqp_empty_bytes,
                                            amqp_cstring_bytes("queue.deleted"), 0, 0, &p,
                                            amqp_empty_bytes),
                         AMQP_STATUS_OK);
    }
    json_decref(queues);
    /* Not acted on: no "broker event" line for it (reaperd used to log one
     * and drop the queue from its inventory), no lag of a day. */
    rp_child_drain(reaperd, 2000);
    assert_false(log_has(from, "\"broker event\"", "routing_key=queue.deleted", forged_q));
    assert_true(wait_log(from, "did not come from amq.rabbitmq.event", NULL, NULL, 10000));
    char *m = itest_scrape(port);
    double refused = itest_metric(m, "reaper_broker_events_refused_total");
    double lag = itest_metric(m, "reaper_event_lag_seconds");
    fprintf(stderr, "# refused %.0f, event lag %.3f s\n", refused, lag);
    assert_true(refused >= 1);
    assert_true(lag < 3600);
    free(m);

    /* The queue's real deletion is still an event reaperd acts on. */
    amqp_queue_delete(c, 1, amqp_cstring_bytes(forged_q), 0, 0);
    assert_true(wait_log(from, "\"broker event\"", "routing_key=queue.deleted", forged_q, 10000));
    mt_amqp_close(c);
}

static void test_catastrophic_policy_pattern(void **state) {
    (void)state;
    rp_child_drain(reaperd, 200);
    size_t from = reaperd->log_len;
    char path[160];
    snprintf(path, sizeof path, "/api/policies/%%2F/%s", policy);
    long code = mt_http("PUT", path,
                        "{\"pattern\":\"(a+)+$\",\"definition\":{\"max-length\":100000},"
                        "\"apply-to\":\"queues\",\"priority\":0}",
                        NULL);
    assert_true(code == 201 || code == 204);
    /* /healthz every 10 ms for 6 s, while the policy.set event is handled. */
    long long worst = 0, until = itest_mono_ms() + 6000;
    int n = 0;
    while (itest_mono_ms() < until) {
        long long t0 = itest_mono_ms();
        int st = itest_http(port, "GET", "/healthz", NULL, 5000);
        long long took = itest_mono_ms() - t0;
        assert_int_equal(st, 200);
        if (took > worst) worst = took;
        n++;
        rp_child_drain(reaperd, 10);
    }
    fprintf(stderr, "# %d /healthz answers, the slowest in %lld ms\n", n, worst);
    assert_true(log_has(from, "\"broker event\"", "routing_key=policy.set", NULL));
    assert_true(worst < 200);
    assert_true(wait_log(from, "within the match limits", policy, NULL, 10000));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forged_event_refused),
        cmocka_unit_test(test_catastrophic_policy_pattern),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
