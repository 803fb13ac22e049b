/*
 * The private broker and database really run, with the event exchange, and
 * reaperd connects to both, keeps running while either is unreachable, and
 * stops cleanly on SIGTERM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <amqp.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

/* A queue created now shows up as a queue.created event on
 * amq.rabbitmq.event, so the event-exchange plugin is really on. */
static void test_broker_publishes_queue_events(void **state) {
    (void)state;
    amqp_connection_state_t c = itest_amqp_connect_plain();
    amqp_queue_declare_ok_t *q =
        amqp_queue_declare(c, 1, amqp_empty_bytes, 0, 0, 1, 1, amqp_empty_table);
    assert_non_null(q);
    amqp_bytes_t events = amqp_bytes_malloc_dup(q->queue);
    amqp_queue_bind(c, 1, events, amqp_cstring_bytes("amq.rabbitmq.event"),
                    amqp_cstring_bytes("queue.created"), amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(c, 1, events, amqp_empty_bytes, 0, 1, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);

    char name[64];
    snprintf(name, sizeof name, "reaper.itest.%d", (int)getpid());
    amqp_queue_declare(c, 1, amqp_cstring_bytes(name), 0, 0, 0, 1, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);

    bool seen = false;
    for (int i = 0; i < 50 && !seen; i++) {
        amqp_envelope_t env;
        struct timeval tv = {5, 0};
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
        assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
        assert_true(env.routing_key.len == strlen("queue.created"));
        amqp_table_t *h = &env.message.properties.headers;
        for (int k = 0; k < h->num_entries; k++) {
            amqp_table_entry_t *e = &h->entries[k];
            if (e->key.len == 4 && memcmp(e->key.bytes, "name", 4) == 0 &&
                e->value.kind == AMQP_FIELD_KIND_UTF8 && e->value.value.bytes.len == strlen(name) &&
                memcmp(e->value.value.bytes.bytes, name, strlen(name)) == 0)
                seen = true;
        }
        amqp_destroy_envelope(&env);
    }
    assert_true(seen);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(name), 0, 0);
    amqp_bytes_free(events);
    itest_amqp_close(c);
}

/* The database answers as the reaper role, over TCP with its password from
 * the passfile. */
static void test_database_answers(void **state) {
    (void)state;
    PGconn *pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    PGresult *r = PQexec(pg, "SELECT current_user, current_setting('server_version_num')::int");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "reaper");
    assert_true(atoi(PQgetvalue(r, 0, 1)) >= 150000);
    PQclear(r);
    PQfinish(pg);
}

static char *reaperd_argv[] = {NULL, NULL};

static void test_reaperd_connects_and_stops_on_sigterm(void **state) {
    (void)state;
    reaperd_argv[0] = (char *)itest_env("REAPERD");
    /* Its passes leave the other tests' queues on the broker alone. */
    char owned[128], dlq[160];
    char *env[] = {"REAPER_LOG_FORMAT=json", "REAPER_LOG_LEVEL=info",
                   (char *)itest_env_owned(owned, sizeof owned, "svc"),
                   (char *)itest_env_dead_letters(dlq, sizeof dlq, "svc"), NULL};
    rp_child *c = rp_child_start(reaperd_argv, env);
    assert_non_null(c);
    bool broker = rp_child_wait_for(c, "\"msg\":\"broker connected\"", 30000);
    bool store = rp_child_wait_for(c, "\"msg\":\"store connected\"", 30000);
    if (!broker || !store) fprintf(stderr, "reaperd said:\n%s\n", c->log);
    assert_true(broker);
    assert_true(store);
    assert_int_equal(rp_child_stop(c, SIGTERM, 20000), 0);
    assert_non_null(strstr(c->log, "\"msg\":\"reaperd stopped\""));
    /* No secret in the log: the broker password never appears. */
    assert_null(strstr(c->log, itest_broker_password()));
    rp_child_free(c);
}

/* An unreachable broker and database are not fatal: reaperd says so, keeps
 * retrying, and still stops cleanly. */
static void test_reaperd_survives_unreachable_backends(void **state) {
    (void)state;
    reaperd_argv[0] = (char *)itest_env("REAPERD");
    /* Port 1 on loopback: nothing listens there, connections are refused. */
    char *env[] = {"REAPER_BROKER_URL=amqp://reaper@127.0.0.1:1/%2f",
                   "REAPER_STORE_DSN=host=127.0.0.1 port=1 dbname=vibey user=reaper",
                   "REAPER_LOG_FORMAT=text", NULL};
    rp_child *c = rp_child_start(reaperd_argv, env);
    assert_non_null(c);
    assert_true(rp_child_wait_for(c, "broker unreachable; retrying", 20000));
    assert_true(rp_child_wait_for(c, "store unreachable; retrying", 20000));
    /* It keeps running (retrying with backoff) rather than exiting.
     * Deliberate: a window for an exit that must not happen. */
    usleep(1500 * 1000);
    assert_false(c->exited);
    assert_int_equal(rp_child_stop(c, SIGINT, 20000), 0);
    assert_null(strstr(c->log, "broker connected"));
    rp_child_free(c);
}

/* A wrong broker password is refused by the broker and said so in the log,
 * without the password. */
static void test_reaperd_reports_refused_login(void **state) {
    (void)state;
    reaperd_argv[0] = (char *)itest_env("REAPERD");
    char *env[] = {"REAPER_BROKER_PASSWORD=not-the-password-XYZZY", "REAPER_LOG_FORMAT=json", NULL};
    rp_child *c = rp_child_start(reaperd_argv, env);
    assert_true(rp_child_wait_for(c, "broker unreachable; retrying", 20000));
    assert_non_null(strstr(c->log, "login"));
    assert_null(strstr(c->log, "XYZZY"));
    assert_int_equal(rp_child_stop(c, SIGTERM, 20000), 0);
    rp_child_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broker_publishes_queue_events),
        cmocka_unit_test(test_database_answers),
        cmocka_unit_test(test_reaperd_connects_and_stops_on_sigterm),
        cmocka_unit_test(test_reaperd_survives_unreachable_backends),
        cmocka_unit_test(test_reaperd_reports_refused_login),
    };
    return cmocka_run_group_tests_name("services", tests, NULL, NULL);
}
