/*
 * Issue 18 item 4, the broker half and the restart-loop breaker, through
 * reaperd itself (reaperd --once --json; each pass a process of its own, so
 * the consecutive checks, the ack quiet and the restarts live in
 * PostgreSQL), against the real broker (label broker: 3.10 and 4.0).
 *
 * A real consumer (a child process with a heartbeating rabbitmq-c
 * connection, prefetch 1) takes a message of an owned queue and never acks
 * it; whenever its connection is closed it reconnects at once and does the
 * same again, as a supervised worker that wedges after every restart
 * would. With reap.wedge_restart on (wedged_seconds 3, wedged_checks 2,
 * wedge_restart_max 3), and TWO replicas' passes run side by side at every
 * step: the queue is surfaced WEDGED once; its consumer's connection is
 * closed exactly 3 times (each a WEDGED / RESTARTED ledger event, the
 * consumer told the reason through the X-Reason header); then one WEDGED /
 * RESTART_LOOP event; then quiet (no restart, no event) for more passes
 * than a restart would need. With reap.wedge_restart off the queue is
 * surfaced and nothing is closed. The same through a running reaperd,
 * whose sweeps use the daemon's own (wrapped) broker port.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"

static char schema[64], env_owned[160], queue[128], object[200];
static amqp_connection_state_t C;
static PGconn *PG;
static pid_t consumer = -1;
static int consumer_fd = -1;
static char consumer_log[8192];
static size_t consumer_len;

/* ---- the wedging consumer (a child process) ----------------------------- */

static amqp_connection_state_t consumer_connect(void) {
    char url[512];
    snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) return NULL;
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (s == NULL || amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK) {
        amqp_destroy_connection(c);
        return NULL;
    }
    /* Heartbeats every 5 s: the connection stays alive while it holds. */
    amqp_rpc_reply_t r = amqp_login(c, info.vhost, 0, 131072, 5, AMQP_SASL_METHOD_PLAIN,
                                    info.user, itest_broker_password());
    if (r.reply_type != AMQP_RESPONSE_NORMAL || !amqp_channel_open(c, 1)) {
        amqp_destroy_connection(c);
        return NULL;
    }
    amqp_basic_qos(c, 1, 0, 1, 0);
    amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
        amqp_destroy_connection(c);
        return NULL;
    }
    return c;
}

/* Takes a message, never acks it; when the broker closes the connection,
 * says why on fd and connects again. */
static void consumer_main(int fd) {
    for (int round = 0; round < 50; round++) {
        amqp_connection_state_t c = consumer_connect();
        if (c == NULL) {
            usleep(200 * 1000);
            continue;
        }
        dprintf(fd, "connected\n");
        for (;;) {
            amqp_envelope_t env;
            struct timeval tv = {1, 0};
            amqp_maybe_release_buffers(c);
            amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
            if (r.reply_type == AMQP_RESPONSE_NORMAL) {
                dprintf(fd, "took\n");
                amqp_destroy_envelope(&env); /* held: never acked */
                continue;
            }
            if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                r.library_error == AMQP_STATUS_TIMEOUT)
                continue;
            amqp_frame_t f;
            if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                r.library_error == AMQP_STATUS_UNEXPECTED_STATE &&
                amqp_simple_wait_frame(c, &f) == AMQP_STATUS_OK &&
                f.frame_type == AMQP_FRAME_METHOD &&
                f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
                amqp_connection_close_t *m = f.payload.method.decoded;
                dprintf(fd, "closed %.*s\n", (int)m->reply_text.len, (char *)m->reply_text.bytes);
                amqp_connection_close_ok_t ok;
                amqp_send_method(c, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
            } else {
                dprintf(fd, "lost\n");
            }
            break;
        }
        amqp_destroy_connection(c);
    }
    _exit(0);
}

static void consumer_start(void) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    consumer = fork();
    assert_true(consumer >= 0);
    if (consumer == 0) {
        close(p[0]);
        consumer_main(p[1]);
    }
    close(p[1]);
    consumer_fd = p[0];
    fcntl(consumer_fd, F_SETFL, O_NONBLOCK);
    consumer_len = 0;
    consumer_log[0] = '\0';
}

/* What the consumer said so far. */
static const char *consumer_said(void) {
    for (;;) {
        ssize_t n = read(consumer_fd, consumer_log + consumer_len,
                         sizeof consumer_log - 1 - consumer_len);
        if (n <= 0) break;
        consumer_len += (size_t)n;
    }
    consumer_log[consumer_len] = '\0';
    return consumer_log;
}

static int count_lines(const char *prefix) {
    int n = 0;
    const char *s = consumer_said();
    size_t len = strlen(prefix);
    for (const char *l = s; *l;) {
        if (strncmp(l, prefix, len) == 0) n++;
        const char *nl = strchr(l, '\n');
        if (nl == NULL) break;
        l = nl + 1;
    }
    return n;
}

static void consumer_stop(void) {
    if (consumer > 0) {
        kill(consumer, SIGKILL);
        waitpid(consumer, NULL, 0);
    }
    consumer = -1;
    if (consumer_fd >= 0) close(consumer_fd);
    consumer_fd = -1;
}

/* ---- fixture ------------------------------------------------------------ */

static int setup(void **state) {
    (void)state;
    snprintf(schema, sizeof schema, "itest_wrst_%d", (int)getpid());
    snprintf(queue, sizeof queue, "vibey.itwrst%d.work", (int)getpid());
    snprintf(object, sizeof object, "queue:/:%s", queue);
    snprintf(env_owned, sizeof env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.itwrst%d\\.",
             (int)getpid());
    if (itest_migrate(schema) != 0) return -1;
    C = itest_amqp_connect_plain();
    PG = itest_pg_connect();
    amqp_queue_declare(C, 1, amqp_cstring_bytes(queue), 0, 0, 0, 0, amqp_empty_table);
    if (amqp_get_rpc_reply(C).reply_type != AMQP_RESPONSE_NORMAL) return -1;
    for (int i = 0; i < 5; i++)
        amqp_basic_publish(C, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(queue), 0, 0, NULL,
                           amqp_cstring_bytes("work"));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    consumer_stop();
    amqp_queue_delete(C, 1, amqp_cstring_bytes(queue), 0, 0);
    itest_amqp_close(C);
    itest_drop_schema(PG, schema);
    PQfinish(PG);
    return 0;
}

/* One pass of reaperd --once --json with the breaker's keys. */
typedef struct pass_run {
    bool restart;
    int rc;
} pass_run;

static void *run_once(void *arg) {
    pass_run *r = arg;
    char *args[] = {"--once", "--json", NULL};
    char *env[] = {env_owned,
                   "REAPER_LOG_LEVEL=warn",
                   "REAPER_REAP_WEDGED_SECONDS=3",
                   "REAPER_REAP_WEDGED_CHECKS=2",
                   r->restart ? "REAPER_REAP_WEDGE_RESTART=true" : "REAPER_REAP_WEDGE_RESTART=false",
                   "REAPER_REAP_WEDGE_RESTART_MAX=3",
                   "REAPER_REAP_WEDGE_RESTART_WINDOW_SECONDS=1800",
                   "REAPER_REAP_STALE_READY_SECONDS=86400",
                   NULL};
    itest_daemon_opts o = {.schema = schema, .env = env, .args = args, .no_interval = true};
    char *out = NULL, *err = NULL;
    r->rc = itest_daemon_run(&o, &out, &err);
    if (r->rc != 0 && r->rc != 1) fprintf(stderr, "reaperd rc %d\n%s\n%s\n", r->rc, out, err);
    free(out);
    free(err);
    return NULL;
}

/* Two replicas' passes at once. */
static void two_passes(bool restart) {
    pass_run a = {.restart = restart}, b = {.restart = restart};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, run_once, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, run_once, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_true(a.rc == 0 || a.rc == 1);
    assert_true(b.rc == 0 || b.rc == 1);
}

static long ledger(const char *action) {
    return itest_sqln(PG, schema,
                      "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND"
                      " payload->>'condition' = 'WEDGED' AND payload->>'action' = '%s' AND"
                      " payload->>'object' = '%s'",
                      action, object);
}

/* The consumer holds one message with the rest ready. */
static void wait_consumer_holds(void) {
    ITEST_POLL(count_lines("took") >= 1, 10000);
    assert_int_equal(count_lines("took"), 1);
}

static void test_restarts_then_one_loop_then_quiet(void **state) {
    (void)state;
    consumer_start();
    wait_consumer_holds();
    long long deadline = itest_mono_ms() + 150000;
    while (ledger("RESTART_LOOP") == 0 && itest_mono_ms() < deadline) {
        two_passes(true);
        usleep(300 * 1000);
    }
    assert_int_equal(ledger("RESTART_LOOP"), 1);
    assert_int_equal(ledger("RESTARTED"), 3);
    assert_int_equal(ledger("SURFACED"), 1);
    /* The restarts were real: the consumer's connection was closed by the
     * broker three times, with reaper's reason, and it reconnected each time. */
    ITEST_POLL(count_lines("closed") >= 3, 10000);
    assert_int_equal(count_lines("closed"), 3);
    assert_int_equal(count_lines("lost"), 0);
    assert_int_equal(count_lines("connected"), 4);
    char reason[200];
    snprintf(reason, sizeof reason, "reaper: queue %s wedged", queue);
    assert_non_null(strstr(consumer_said(), reason));
    /* The restarts are spaced by the wedged window (3 s) at least, decided
     * once among the two replicas. */
    assert_int_equal(itest_sqln(PG, schema, "SELECT count(*) FROM wedge_restart WHERE subject ="
                                            " '%s'", object), 3);
    assert_true(itest_sqln(PG, schema, "SELECT min(d) FROM (SELECT at - lag(at) OVER (ORDER BY"
                                       " at) AS d FROM wedge_restart) x WHERE d IS NOT NULL") >=
                3000);
    /* Quiet: passes for longer than a restart would need, nothing more. */
    long long until = itest_mono_ms() + 8000;
    while (itest_mono_ms() < until) {
        two_passes(true);
        usleep(300 * 1000);
    }
    assert_int_equal(ledger("RESTART_LOOP"), 1);
    assert_int_equal(ledger("RESTARTED"), 3);
    assert_int_equal(ledger("CLEARED"), 0);
    assert_int_equal(count_lines("closed"), 3);
    /* The metric's series and the event reached the ledger's payload whole. */
    assert_int_equal(itest_sqln(PG, schema, "SELECT count(*) FROM ledger WHERE"
                                            " payload->>'action' = 'RESTART_LOOP' AND"
                                            " payload->>'unit' = 'restarts' AND"
                                            " (payload->>'threshold')::int = 3 AND"
                                            " payload->>'source' = 'broker'"), 1);
}

static void test_off_surfaces_and_closes_nothing(void **state) {
    (void)state;
    consumer_start();
    wait_consumer_holds();
    long long deadline = itest_mono_ms() + 60000;
    while (ledger("SURFACED") == 0 && itest_mono_ms() < deadline) {
        two_passes(false);
        usleep(300 * 1000);
    }
    assert_int_equal(ledger("SURFACED"), 1);
    two_passes(false);
    sleep(4); /* Deliberate: a window for a restart that must not happen. */
    two_passes(false);
    assert_int_equal(ledger("RESTARTED"), 0);
    assert_int_equal(ledger("RESTART_LOOP"), 0);
    assert_int_equal(count_lines("closed"), 0);
    assert_int_equal(count_lines("connected"), 1);
    /* Its consumer goes: no longer wedged (nobody to take the work), and
     * the sighting clears. */
    consumer_stop();
    deadline = itest_mono_ms() + 60000;
    while (ledger("CLEARED") == 0 && itest_mono_ms() < deadline) {
        two_passes(false);
        usleep(500 * 1000);
    }
    assert_int_equal(ledger("CLEARED"), 1);
}

/* The same through a running reaperd (a sweep a second, the daemon's own
 * broker port: the sweep's port wrapped by the broker-events part). */
static void test_daemon_restarts_then_one_loop(void **state) {
    (void)state;
    char control[128];
    snprintf(control, sizeof control, "vibey.itest.wrst%d.control", (int)getpid());
    consumer_start();
    wait_consumer_holds();
    char *env[] = {env_owned,
                   "REAPER_REAP_INTERVAL_SECONDS=1",
                   "REAPER_REAP_WEDGED_SECONDS=3",
                   "REAPER_REAP_WEDGED_CHECKS=2",
                   "REAPER_REAP_WEDGE_RESTART=true",
                   "REAPER_REAP_WEDGE_RESTART_MAX=3",
                   "REAPER_REAP_STALE_READY_SECONDS=86400",
                   NULL};
    rp_child *d = itest_daemon_start(&(itest_daemon_opts){
        .schema = schema, .control = control, .env = env, .ready = {ITEST_READY_BROKER, NULL}});
    ITEST_POLL(ledger("RESTART_LOOP") != 0, 120000);
    assert_int_equal(ledger("RESTART_LOOP"), 1);
    assert_int_equal(ledger("RESTARTED"), 3);
    sleep(6); /* two wedged windows of sweeps: quiet */
    assert_int_equal(itest_daemon_stop_group(d, C, control), 0);
    assert_int_equal(ledger("RESTART_LOOP"), 1);
    assert_int_equal(ledger("RESTARTED"), 3);
    assert_int_equal(ledger("SURFACED"), 1);
    assert_int_equal(count_lines("closed"), 3);
    assert_int_equal(count_lines("connected"), 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restarts_then_one_loop_then_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_off_surfaces_and_closes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_restarts_then_one_loop, setup, teardown),
    };
    return cmocka_run_group_tests_name("reaperd_wedge_restart", tests, NULL, NULL);
}
