/*
 * Issue 18 item 1, the broker half of STALLED, end to end: a real consumer
 * (rabbitmq-c, its own connection with 2 s heartbeats that it keeps
 * answering) takes one message of an owned queue and holds it unacked past
 * a short reap.held_ceiling_seconds while a reaperd sweeps every second:
 * STALLED / SURFACED on the queue once (ledger event, fleet-wide sighting),
 * naming the connection and the channel, and not before the ceiling; the
 * consumer acks: STALLED / CLEARED once. Both brokers (label broker).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"

#define CEILING_S 6

static char schema[64], control[128], env_owned[160], queue[128], object[200];
static PGconn *PG;
static rp_child *D;

static int setup(void **state) {
    (void)state;
    snprintf(schema, sizeof schema, "itest_rstall_%d", (int)getpid());
    snprintf(control, sizeof control, "vibey.reap.control.itest.stall.%d", (int)getpid());
    snprintf(queue, sizeof queue, "vibey.itstall%d.work", (int)getpid());
    snprintf(object, sizeof object, "queue:/:%s", queue);
    snprintf(env_owned, sizeof env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.itstall%d\\.",
             (int)getpid());
    if (itest_migrate(schema) != 0) return -1;
    PG = itest_pg_connect();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    amqp_connection_state_t c = itest_amqp_connect_plain();
    amqp_queue_delete(c, 1, amqp_cstring_bytes(queue), 0, 0);
    itest_daemon_stop_group(D, c, control);
    itest_amqp_close(c);
    itest_drop_schema(PG, schema);
    PQfinish(PG);
    return 0;
}

/* The consumer's own connection: heartbeats every 2 s (rabbitmq-c sends
 * them from inside its frame waits, which pump() keeps calling). */
static amqp_connection_state_t connect_heartbeating(int *local_port) {
    struct amqp_connection_info info;
    char url[512];
    snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
    assert_int_equal(amqp_parse_url(url, &info), AMQP_STATUS_OK);
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    assert_int_equal(amqp_socket_open(s, info.host, info.port), AMQP_STATUS_OK);
    amqp_rpc_reply_t r = amqp_login(c, info.vhost, 0, 131072, 2, AMQP_SASL_METHOD_PLAIN,
                                    info.user, itest_broker_password());
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    amqp_channel_open(c, 1);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(amqp_get_sockfd(c), (struct sockaddr *)&a, &al), 0);
    *local_port = ntohs(a.sin_port);
    return c;
}

/* Keeps the consumer's connection alive (heartbeats sent and read) and
 * the daemon's log drained for about ms. */
static void pump(amqp_connection_state_t c, int ms) {
    long long end = itest_mono_ms() + ms;
    while (itest_mono_ms() < end) {
        struct timeval tv = {0, 100000};
        amqp_envelope_t e;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &e, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_NORMAL) {
            fail_msg("a second delivery arrived (one message was published)");
        } else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                   r.library_error != AMQP_STATUS_TIMEOUT) {
            fail_msg("the consumer's connection failed: %s",
                     amqp_error_string2(r.library_error));
        }
        rp_child_drain(D, 1);
    }
}

static long ledger(const char *action) {
    return itest_sqln(PG, schema,
                      "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND"
                      " payload->>'condition' = 'STALLED' AND payload->>'source' = 'broker' AND"
                      " payload->>'action' = '%s' AND payload->>'object' = '%s'",
                      action, object);
}

static void test_held_past_ceiling_surfaced_then_cleared(void **state) {
    (void)state;
    char ceiling[64];
    snprintf(ceiling, sizeof ceiling, "REAPER_REAP_HELD_CEILING_SECONDS=%d", CEILING_S);
    char *env[] = {env_owned, ceiling, "REAPER_REAP_INTERVAL_SECONDS=1",
                   "REAPER_REAP_STALE_READY_SECONDS=86400", NULL};
    itest_daemon_opts o = {.schema = schema, .control = control, .env = env};
    D = itest_daemon_start(&o);

    int port = 0;
    amqp_connection_state_t c = connect_heartbeating(&port);
    amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 0, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    assert_int_equal(amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(queue),
                                        0, 0, NULL, amqp_cstring_bytes("work")),
                     AMQP_STATUS_OK);
    amqp_basic_qos(c, 1, 0, 1, 0);
    amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_envelope_t e;
    struct timeval tv = {10, 0};
    assert_int_equal(amqp_consume_message(c, &e, &tv, 0).reply_type, AMQP_RESPONSE_NORMAL);
    uint64_t tag = e.delivery_tag;
    amqp_destroy_envelope(&e);
    long long taken = itest_mono_ms();

    /* Held (heartbeating, no ack) until the STALLED event is in. */
    long long surfaced_after = -1;
    while (itest_mono_ms() - taken < 60000) {
        pump(c, 250);
        if (ledger("SURFACED") >= 1) {
            surfaced_after = itest_mono_ms() - taken;
            break;
        }
    }
    assert_true(surfaced_after >= 0);
    fprintf(stderr, "-- STALLED surfaced %lld ms after the delivery\n", surfaced_after);
    /* Never before the ceiling. */
    assert_true(surfaced_after >= CEILING_S * 1000);
    char channel[160];
    snprintf(channel, sizeof channel, ":%d -> ", port);
    const char *detail = itest_sql(PG, schema,
                                   "SELECT payload->>'detail' FROM ledger WHERE kind ="
                                   " 'QueueReaped' AND payload->>'condition' = 'STALLED' AND"
                                   " payload->>'action' = 'SURFACED' AND payload->>'object' ="
                                   " '%s'",
                                   object);
    fprintf(stderr, "-- %s\n", detail);
    assert_non_null(strstr(detail, channel));        /* the connection ... */
    assert_non_null(strstr(detail, " (1) of connection")); /* ... and its channel 1 */
    assert_non_null(strstr(detail, queue));
    double measured = atof(itest_sql(PG, schema,
                                     "SELECT payload->>'measured' FROM ledger WHERE kind ="
                                     " 'QueueReaped' AND payload->>'condition' = 'STALLED' AND"
                                     " payload->>'object' = '%s'",
                                     object));
    assert_true(measured >= CEILING_S);
    assert_int_equal(itest_sqln(PG, schema, "SELECT count(*) FROM sighting WHERE key LIKE"
                                            " 'broker|STALLED|%s'", object), 1);
    /* Still held over more sweeps: recorded once. */
    pump(c, 3000);
    assert_int_equal(ledger("SURFACED"), 1);
    assert_int_equal(ledger("CLEARED"), 0);

    /* It acks: its ack count moves, the sighting clears once. */
    assert_int_equal(amqp_basic_ack(c, 1, tag, 0), 0);
    long long acked = itest_mono_ms();
    while (itest_mono_ms() - acked < 60000 && ledger("CLEARED") < 1) pump(c, 250);
    fprintf(stderr, "-- STALLED cleared %lld ms after the ack\n", itest_mono_ms() - acked);
    assert_int_equal(ledger("CLEARED"), 1);
    assert_int_equal(itest_sqln(PG, schema, "SELECT count(*) FROM sighting WHERE key LIKE"
                                            " 'broker|STALLED|%%'"), 0);
    itest_amqp_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_past_ceiling_surfaced_then_cleared, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("reaperd_stalled", tests, NULL, NULL);
}
