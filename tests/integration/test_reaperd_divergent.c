/*
 * Issue 18 item 3 end to end (reaperd --once --json against the real
 * broker and database): an owned work queue that takes publishes and acks
 * none is surfaced DIVERGENT once (its counters sampled into the store
 * pass after pass, from a baseline), with its ledger event, and cleared
 * when its consumer drains it; a kind of the job table whose intake
 * outruns its successes likewise. Both brokers (label broker).
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
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"

static char schema[64], env_owned[160], queue[128];
static amqp_connection_state_t C;
static PGconn *PG;

static int setup(void **state) {
    (void)state;
    snprintf(schema, sizeof schema, "itest_rdiv_%d", (int)getpid());
    snprintf(queue, sizeof queue, "vibey.itdiv%d.work", (int)getpid());
    snprintf(env_owned, sizeof env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.itdiv%d\\.",
             (int)getpid());
    if (itest_migrate(schema) != 0) return -1;
    C = itest_amqp_connect();
    PG = itest_pg_connect();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    amqp_queue_delete(C, 1, amqp_cstring_bytes(queue), 0, 0);
    itest_amqp_close(C);
    itest_drop_schema(PG, schema);
    PQfinish(PG);
    return 0;
}

/* reaperd --once --json with the divergence keys of the test. */
static json_t *once(void) {
    char *args[] = {"--once", "--json", NULL};
    char *env[] = {env_owned, "REAPER_LOG_LEVEL=warn", "REAPER_REAP_DIVERGENCE_MIN_WAITING=5",
                   "REAPER_REAP_DIVERGENCE_RATIO=2", "REAPER_REAP_DIVERGENCE_WINDOW_SECONDS=3600",
                   "REAPER_REAP_STALE_READY_SECONDS=86400", NULL};
    itest_daemon_opts o = {.schema = schema, .env = env, .args = args, .no_interval = true};
    char *out, *err;
    int rc = itest_daemon_run(&o, &out, &err);
    json_t *rep = json_loads(out, 0, NULL);
    if (rep == NULL) fprintf(stderr, "rc %d\n%s\n%s\n", rc, out, err);
    assert_non_null(rep);
    free(out);
    free(err);
    return rep;
}

/* The DIVERGENT verdict of the report with action on object, or NULL. */
static json_t *find(const json_t *rep, const char *action, const char *object) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(rep, "verdicts"), i, v) {
        if (strcmp(json_string_value(json_object_get(v, "condition")), "DIVERGENT") == 0 &&
            strcmp(json_string_value(json_object_get(v, "action")), action) == 0 &&
            strcmp(json_string_value(json_object_get(v, "object")), object) == 0)
            return v;
    }
    return NULL;
}

static long ledger(const char *action, const char *object) {
    return itest_sqln(PG, schema,
                      "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND"
                      " payload->>'condition' = 'DIVERGENT' AND payload->>'action' = '%s' AND"
                      " payload->>'object' = '%s'",
                      action, object);
}

static void test_queue_divergent_surfaced_and_cleared(void **state) {
    (void)state;
    char object[200];
    snprintf(object, sizeof object, "queue:/:%s", queue);
    amqp_queue_declare(C, 1, amqp_cstring_bytes(queue), 0, 0, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(C).reply_type, AMQP_RESPONSE_NORMAL);
    /* Passes until the queue's baseline reading is in the store (the
     * broker's statistics lag a few seconds after a declare). */
    for (int i = 0; i < 30; i++) {
        if (i) sleep(1);
        json_decref(once());
        if (itest_sqln(PG, schema, "SELECT count(*) FROM queue_counter WHERE queue = '%s'",
                       queue) == 1)
            break;
    }
    assert_int_equal(itest_sqln(PG, schema, "SELECT count(*) FROM queue_counter WHERE queue ="
                                            " '%s'", queue), 1);
    /* 8 publishes, no ack, 8 ready (above 5): DIVERGENT once. */
    for (int i = 0; i < 8; i++)
        assert_int_equal(amqp_basic_publish(C, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(queue), 0, 0, NULL,
                                            amqp_cstring_bytes("work")),
                         AMQP_STATUS_OK);
    int seen = 0;
    for (int i = 0; i < 30 && !seen; i++) {
        if (i) sleep(1);
        json_t *rep = once();
        json_t *v = find(rep, "SURFACED", object);
        if (v) {
            seen++;
            assert_true(json_number_value(json_object_get(v, "measured")) == 8);
            assert_int_equal(json_integer_value(json_object_get(v, "threshold")), 0);
            assert_string_equal(json_string_value(json_object_get(v, "source")), "broker");
            assert_string_equal(json_string_value(json_object_get(v, "unit")), "messages");
            assert_non_null(strstr(json_string_value(json_object_get(v, "detail")),
                                   "8 publishes"));
        }
        json_decref(rep);
    }
    assert_int_equal(seen, 1);
    assert_int_equal(ledger("SURFACED", object), 1);
    /* Open: not again. */
    json_t *rep = once();
    assert_null(find(rep, "SURFACED", object));
    json_decref(rep);
    assert_int_equal(ledger("SURFACED", object), 1);
    /* A consumer takes and acks every message: 8 acks, nothing ready. */
    for (int i = 0; i < 8; i++) {
        amqp_rpc_reply_t r = amqp_basic_get(C, 1, amqp_cstring_bytes(queue), 0);
        assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
        assert_int_equal(r.reply.id, AMQP_BASIC_GET_OK_METHOD);
        amqp_basic_get_ok_t *ok = r.reply.decoded;
        uint64_t tag = ok->delivery_tag;
        amqp_message_t m;
        assert_int_equal(amqp_read_message(C, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_destroy_message(&m);
        assert_int_equal(amqp_basic_ack(C, 1, tag, 0), 0);
    }
    for (int i = 0; i < 30; i++) {
        if (i) sleep(1);
        rep = once();
        int cleared = find(rep, "CLEARED", object) != NULL;
        json_decref(rep);
        if (cleared) {
            assert_int_equal(ledger("CLEARED", object), 1);
            assert_true(itest_sqln(PG, schema, "SELECT sum(acked) FROM queue_increment WHERE"
                                               " queue = '%s'", queue) == 8);
            return;
        }
    }
    fail_msg("DIVERGENT on %s never cleared", queue);
}

static void test_kind_divergent_surfaced_and_cleared(void **state) {
    (void)state;
    /* 12 created in the window, 5 of them succeeded, 7 waiting: 12 > 10. */
    itest_sql(PG, schema, "INSERT INTO job (project_id, kind, state) SELECT 'alpha', 'render',"
                          " 'ready' FROM generate_series(1, 12)");
    itest_sql(PG, schema, "UPDATE job SET state = 'succeeded' WHERE id IN (SELECT id FROM job"
                          " ORDER BY id LIMIT 5)");
    json_t *rep = once();
    json_t *v = find(rep, "SURFACED", "kind:alpha:render");
    assert_non_null(v);
    assert_true(json_number_value(json_object_get(v, "measured")) == 12);
    assert_int_equal(json_integer_value(json_object_get(v, "threshold")), 10);
    assert_string_equal(json_string_value(json_object_get(v, "source")), "job_queue");
    json_decref(rep);
    assert_int_equal(ledger("SURFACED", "kind:alpha:render"), 1);
    /* One more succeeds: 12 <= 2 x 6: cleared. */
    itest_sql(PG, schema, "UPDATE job SET state = 'succeeded' WHERE id = (SELECT min(id) FROM"
                          " job WHERE state = 'ready')");
    rep = once();
    assert_non_null(find(rep, "CLEARED", "kind:alpha:render"));
    json_decref(rep);
    assert_int_equal(ledger("CLEARED", "kind:alpha:render"), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue_divergent_surfaced_and_cleared, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kind_divergent_surfaced_and_cleared, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("reaperd_divergent", tests, NULL, NULL);
}
