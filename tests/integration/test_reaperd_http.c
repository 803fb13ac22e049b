/*
 * reaperd's HTTP endpoints, logs and signals, from the outside, against the
 * real broker and database (issue #6):
 *  - /metrics after a pass with known reaps: the values agree with the
 *    ledger, the text is well formed; control requests, gate answers and
 *    the broker event lag are counted; the process's metrics, the build's
 *    revision, every reaped series from the start, the last successful
 *    pass, the oldest open gate's age (it grows), the events published;
 *  - reaper_reconnects_total{backend="broker"} counts the broker's return;
 *  - /healthz and /metrics answer while the store thread is stuck in a pass;
 *  - /readyz is 503 while the broker is stopped and 200 once it is back;
 *  - SIGHUP applies a valid change (the sweep's interval, the log level),
 *    keeps broker.* for the next start, and keeps the old configuration
 *    when the new file is invalid;
 *  - SIGTERM: exit 0 within the bound, and a control request in flight is
 *    answered and acked before the exit;
 *  - an http.listen that cannot be bound stops reaperd at start (exit 1).
 * Each test works in a schema and a control queue of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"

typedef struct fixture {
    PGconn *pg;
    char schema[64];
    char queue[96];
    char env_owned[128], env_dlq[160]; /* no queue of other tests on the broker */
    char config[128];
    rp_child *child; /* the reaperd running, killed by teardown if a test fails */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->pg = itest_pg_connect();
    static int n;
    snprintf(f->schema, sizeof f->schema, "itest_http_%d_%d", (int)getpid(), n);
    snprintf(f->queue, sizeof f->queue, "vibey.reap.control.itest-http.%d.%d", (int)getpid(), n);
    snprintf(f->config, sizeof f->config, "/tmp/itest-http-%d-%d.yaml", (int)getpid(), n);
    n++;
    itest_env_owned(f->env_owned, sizeof f->env_owned, "http");
    itest_env_dead_letters(f->env_dlq, sizeof f->env_dlq, "http");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_child_free(f->child);
    if (f->pg == NULL) f->pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    itest_drop_schema(f->pg, f->schema);
    PQfinish(f->pg);
    unlink(f->config);
    amqp_connection_state_t c = itest_amqp_connect();
    amqp_queue_delete(c, 1, amqp_cstring_bytes(f->queue), 0, 0);
    itest_amqp_close(c);
    free(f);
    return 0;
}

static void migrate(fixture *f) { assert_int_equal(itest_migrate(f->schema), 0); }

/* Starts the daemon (argv after the program: a1, a2 may be NULL) with the
 * fixture's schema and queue and the extra environment entries (may be
 * NULL), without waiting. */
static rp_child *start(fixture *f, const char *a1, const char *a2, const char *e1,
                       const char *e2) {
    char *args[] = {(char *)a1, (char *)a2, NULL};
    char *env[] = {f->env_owned, f->env_dlq, (char *)(e1 ? e1 : "REAPER_UNUSED_X="),
                   (char *)(e2 ? e2 : "REAPER_UNUSED_Y="), NULL};
    itest_daemon_opts o = {.schema = f->schema, .control = f->queue, .env = env, .args = args,
                           .no_wait = true, .no_interval = true};
    f->child = itest_daemon_start(&o);
    return f->child;
}

static void finish(fixture *f, rp_child *c) {
    rp_child_free(c);
    if (f->child == c) f->child = NULL;
}

/* itest_daemon_stop, and c is no longer the fixture's. */
static int stop(fixture *f, rp_child *c) {
    if (f->child == c) f->child = NULL;
    return itest_daemon_stop(c);
}

/* Every line is a comment or "name{labels} value"; no series twice. */
static void assert_text_format(const char *text) {
    char seen[200][200];
    size_t n = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        size_t len = (size_t)(end - line);
        assert_true(len > 0 && len < 200);
        if (line[0] != '#') {
            assert_true(strncmp(line, "reaper_", 7) == 0 || strncmp(line, "process_", 8) == 0);
            const char *sp = NULL; /* the last space: label values may hold spaces */
            for (const char *x = line; x < end; x++)
                if (*x == ' ') sp = x;
            assert_non_null(sp);
            char *vend = NULL;
            strtod(sp + 1, &vend);
            assert_ptr_equal(vend, end);
            for (size_t i = 0; i < n; i++)
                assert_false(strlen(seen[i]) == (size_t)(sp - line) &&
                             strncmp(seen[i], line, (size_t)(sp - line)) == 0);
            assert_true(n < 200);
            snprintf(seen[n++], sizeof seen[0], "%.*s", (int)(sp - line), line);
        }
        line = end + 1;
    }
}

static void send_request(fixture *f, amqp_connection_state_t c, const char *json, bool *ok) {
    itest_reply r;
    assert_int_equal(itest_request(c, f->queue, "application/json", json, strlen(json), NULL,
                                   true, "corr-http", &r, 20000),
                     0);
    *ok = strstr(r.body, "\"ok\":true") != NULL || strstr(r.body, "\"ok\": true") != NULL;
    itest_reply_free(&r);
}

/* /metrics after a pass whose reaps are known, checked against the ledger;
 * then a control request of each outcome, a gate answer and a broker event. */
static void test_metrics_after_a_pass(void **state) {
    fixture *f = *state;
    migrate(f);
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
              " lease_expires_at) SELECT 'alpha', 'k', 'leased', 1, 7, 'w', now() - interval '30 s'"
              " FROM generate_series(1, 3)");
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
              " lease_expires_at) SELECT 'alpha', 'k', 'leased', 7, 7, 'w', now() - interval '30 s'"
              " FROM generate_series(1, 2)");
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, run_after) VALUES"
              " ('beta', 'k', 'ready', now() - interval '2 hours')");
    double started = (double)time(NULL);
    rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", NULL);
    int port = itest_reaperd_http_port(c, 30000);
    assert_true(port > 0);
    /* Before any pass: every series a ledger event can carry, at 0 (so
     * that increase() sees the first event); the process's metrics. */
    char *t = itest_scrape(port);
    assert_text_format(t);
    assert_true(itest_metric(t, "reaper_reaped_total{source=\"broker\",condition=\"dead_letter\","
                                "action=\"parked\"}") >= 0);
    assert_true(itest_metric(t, "reaper_reaped_total{source=\"broker\",condition=\"holder_gone\","
                                "action=\"cleared\"}") == 0);
    assert_true(itest_metric(t, "reaper_reaped_total{source=\"job_queue\",condition=\"dead_letter\","
                                "action=\"parked\"}") == -1); /* cannot happen: not there */
    double cpu0 = itest_metric(t, "process_cpu_seconds_total");
    assert_true(cpu0 >= 0);
    assert_true(itest_metric(t, "process_resident_memory_bytes") > 1024 * 1024);
    double fds = itest_metric(t, "process_open_fds"), max_fds = itest_metric(t, "process_max_fds");
    assert_true(fds >= 4 && fds < max_fds);
    double start_s = itest_metric(t, "process_start_time_seconds");
    assert_true(start_s >= started - 2 && start_s <= (double)time(NULL) + 1);
    /* The revision CMake saw, beside the version. */
    assert_non_null(strstr(t, "\nreaper_build_info{version=\""));
    assert_non_null(strstr(t, "\",revision=\""));
    assert_null(strstr(t, "revision=\"\""));
    free(t);
    assert_true(rp_child_wait_for(c, "\"msg\":\"pass finished\"", 30000));
    t = itest_scrape(port);
    assert_text_format(t);
    /* What the ledger holds, the counters say. */
    assert_int_equal(atol(itest_sql(f->pg, f->schema,
                                    "SELECT count(*) FROM ledger WHERE payload->>'condition' = "
                                    "'LEASE_EXPIRED' AND payload->>'action' = 'REQUEUED'")),
                     3);
    assert_true(itest_metric(t,
                             "reaper_reaped_total{source=\"job_queue\",condition=\"lease_expired\","
                             "action=\"requeued\"}") == 3);
    assert_int_equal(atol(itest_sql(f->pg, f->schema,
                                    "SELECT count(*) FROM ledger WHERE payload->>'condition' = "
                                    "'POISON' AND payload->>'action' = 'PARKED'")),
                     2);
    assert_true(itest_metric(t, "reaper_reaped_total{source=\"job_queue\",condition=\"poison\","
                                "action=\"parked\"}") == 2);
    assert_true(itest_metric(t,
                             "reaper_reaped_total{source=\"job_queue\",condition=\"stale_ready\","
                             "action=\"surfaced\"}") == 1);
    assert_int_equal(
        atol(itest_sql(f->pg, f->schema,
                       "SELECT count(*) FROM sighting WHERE condition = 'STALE_READY'")),
        1);
    assert_true(itest_metric(t, "reaper_sightings_open{condition=\"stale_ready\"}") == 1);
    assert_int_equal(
        atol(itest_sql(f->pg, f->schema, "SELECT count(*) FROM gate WHERE answer IS NULL")), 2);
    assert_true(itest_metric(t, "reaper_gates_open{kind=\"delivery_exhausted\"}") == 2);
    assert_true(itest_metric(t, "reaper_gates_open{kind=\"bus_dead_lettered\"}") == 0);
    assert_true(itest_metric(t, "reaper_pass_duration_seconds_count{scope=\"full\"}") == 1);
    assert_true(
        itest_metric(t, "reaper_pass_duration_seconds_bucket{scope=\"full\",le=\"+Inf\"}") == 1);
    assert_true(itest_metric(t, "reaper_passes_total{scope=\"full\",result=\"ok\"}") +
                    itest_metric(t, "reaper_passes_total{scope=\"full\",result=\"unreadable\"}") ==
                1);
    assert_true(itest_metric(t, "reaper_up{backend=\"broker\"}") == 1);
    assert_true(itest_metric(t, "reaper_up{backend=\"store\"}") == 1);
    /* Issue 18 item 5: the pass checked reaper's policy (this test owns no
     * queue, so no vhost needs it: verified), and said so. */
    assert_true(itest_metric(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"/\"}") == 1);
    assert_non_null(strstr(t, "reaper_build_info{version=\""));
    assert_true(itest_metric(t, "reaper_dead_letters_parked_total{vhost=\"/\"}") == 0);
    /* The last successful pass: when it ended ok, its time, now or just
     * before; never before this test started. */
    if (itest_metric(t, "reaper_passes_total{scope=\"full\",result=\"ok\"}") == 1) {
        double last = itest_metric(t, "reaper_last_successful_pass_timestamp_seconds{scope=\"full\"}");
        assert_true(last >= started - 1 && last <= (double)time(NULL) + 1);
    } else {
        assert_true(itest_metric(t, "reaper_last_successful_pass_timestamp_seconds{scope=\"full\"}") == -1);
    }
    /* The two gates opened in this pass: their age grows with the clock. */
    double age0 = itest_metric(t, "reaper_oldest_open_gate_age_seconds{kind=\"delivery_exhausted\"}");
    assert_true(age0 >= 0 && age0 < 30);
    assert_true(itest_metric(t, "reaper_oldest_open_gate_age_seconds{kind=\"bus_dead_lettered\"}") == 0);
    assert_true(itest_metric(t, "process_cpu_seconds_total") >= cpu0);
    free(t);
    /* The pass's 6 ledger events are published to the events exchange. */
    double published = -1;
    for (long p0 = itest_mono_ms(); itest_mono_ms() - p0 < 10000 && published < 6;) {
        rp_child_drain(c, 200);
        t = itest_scrape(port);
        published = itest_metric(t, "reaper_feed_published_total");
        free(t);
    }
    assert_true(published == 6);
    rp_child_drain(c, 1500);
    t = itest_scrape(port);
    double age1 = itest_metric(t, "reaper_oldest_open_gate_age_seconds{kind=\"delivery_exhausted\"}");
    assert_true(age1 >= age0 + 1.4);
    assert_true(itest_metric(t, "reaper_reconnects_total{backend=\"broker\"}") == 0);
    assert_true(itest_metric(t, "reaper_reconnects_total{backend=\"store\"}") == 0);
    free(t);
    /* Other paths and methods. */
    assert_int_equal(itest_http(port, "GET", "/nope", NULL, 5000), 404);
    assert_int_equal(itest_http(port, "HEAD", "/healthz", NULL, 5000), 200);
    /* Read only: other methods get 405 and what to use instead. */
    const char *refused[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *why = NULL;
        assert_int_equal(itest_http(port, refused[i], "/metrics", &why, 5000), 405);
        assert_non_null(strstr(why, "use GET or HEAD"));
        free(why);
    }
    char *body = NULL;
    assert_int_equal(itest_http(port, "GET", "/metrics?name=x", &body, 5000), 200);
    assert_non_null(strstr(body, "# TYPE reaper_up gauge\n"));
    free(body);

    /* Control requests: ok, a refused one, a gate answered. */
    amqp_connection_state_t a = itest_amqp_connect();
    bool ok;
    send_request(f, a, "{\"v\":1,\"op\":\"status\"}", &ok);
    assert_true(ok);
    send_request(f, a, "{\"v\":1,\"op\":\"status\"", &ok); /* cut short */
    assert_false(ok);
    send_request(f, a, "{\"v\":1,\"op\":\"answer\",\"gate\":999999,\"choice\":\"retry\"}", &ok);
    assert_false(ok);
    char answer[128];
    snprintf(answer, sizeof answer, "{\"v\":1,\"op\":\"answer\",\"gate\":%s,\"choice\":\"retry\"}",
             itest_sql(f->pg, f->schema, "SELECT min(id) FROM gate"));
    send_request(f, a, answer, &ok);
    assert_true(ok);
    send_request(f, a, answer, &ok); /* already answered: not counted again */
    assert_true(ok);
    /* The open gates gauge follows the answer without waiting for a pass
     * (the next is an hour away): recounted after the answer's event. */
    double open_gates = -1;
    for (long g0 = itest_mono_ms(); itest_mono_ms() - g0 < 8000;) {
        rp_child_drain(c, 200);
        t = itest_scrape(port);
        open_gates = itest_metric(t, "reaper_gates_open{kind=\"delivery_exhausted\"}");
        free(t);
        if (open_gates == 1) break;
    }
    assert_true(open_gates == 1);
    /* A broker event: a queue made and deleted. */
    char qname[64];
    snprintf(qname, sizeof qname, "itest-http-event-%d", (int)getpid());
    amqp_queue_declare(a, 1, amqp_cstring_bytes(qname), 0, 0, 0, 1, amqp_empty_table);
    amqp_get_rpc_reply(a);
    amqp_queue_delete(a, 1, amqp_cstring_bytes(qname), 0, 0);
    itest_amqp_close(a);
    long t0 = itest_mono_ms();
    double lag = -1;
    while (lag < 0 && itest_mono_ms() - t0 < 10000) {
        rp_child_drain(c, 100);
        t = itest_scrape(port);
        lag = itest_metric(t, "reaper_event_lag_seconds");
        free(t);
    }
    assert_true(lag >= 0 && lag < 5);
    t = itest_scrape(port);
    assert_text_format(t);
    assert_true(itest_metric(t, "reaper_control_requests_total{op=\"status\",outcome=\"ok\"}") ==
                1);
    assert_true(
        itest_metric(t, "reaper_control_requests_total{op=\"unknown\",outcome=\"bad_request\"}") ==
        1);
    assert_true(
        itest_metric(t, "reaper_control_requests_total{op=\"answer\",outcome=\"not_found\"}") == 1);
    assert_true(itest_metric(t, "reaper_control_requests_total{op=\"answer\",outcome=\"ok\"}") ==
                2);
    assert_true(
        itest_metric(
            t, "reaper_gates_answered_total{kind=\"delivery_exhausted\",choice=\"retry\"}") == 1);
    assert_true(
        itest_metric(
            t, "reaper_gates_answered_total{kind=\"delivery_exhausted\",choice=\"dismiss\"}") == 0);
    free(t);
    assert_int_equal(stop(f, c), 0);
}

/* A connection holding the job table in ACCESS EXCLUSIVE mode (in an open
 * transaction) until it is closed. */
static PGconn *lock_job_table(fixture *f) {
    PGconn *lock = itest_pg_connect();
    itest_sql(lock, f->schema, "BEGIN; LOCK TABLE job IN ACCESS EXCLUSIVE MODE");
    return lock;
}

/* The store thread is stuck (the job table locked): the loop still answers
 * /healthz and /metrics at once. */
static void test_healthz_during_a_long_pass(void **state) {
    fixture *f = *state;
    migrate(f);
    PGconn *lock = lock_job_table(f);
    rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", NULL);
    int port = itest_reaperd_http_port(c, 30000);
    assert_true(port > 0);
    long worst = 0;
    long t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 3000) {
        long s = itest_mono_ms();
        char *body = NULL;
        assert_int_equal(itest_http(port, "GET", "/healthz", &body, 2000), 200);
        assert_string_equal(body, "ok\n");
        free(body);
        char *m = itest_scrape(port);
        free(m);
        if (itest_mono_ms() - s > worst) worst = itest_mono_ms() - s;
        rp_child_drain(c, 100);
    }
    /* The pass was stuck all along. */
    assert_null(strstr(c->log, "\"msg\":\"pass finished\""));
    fprintf(stderr, "slowest /healthz + /metrics during the stuck pass: %ld ms\n", worst);
    assert_true(worst < 1000);
    PQclear(PQexec(lock, "ROLLBACK"));
    PQfinish(lock);
    assert_true(rp_child_wait_for(c, "\"msg\":\"pass finished\"", 30000));
    assert_int_equal(stop(f, c), 0);
}

/* Polls /readyz until it answers want (or timeout_ms passes); returns the
 * last code and body. */
static int readyz_until(rp_child *c, int port, int want, char **body, int timeout_ms) {
    long t0 = itest_mono_ms();
    int code = -1;
    *body = NULL;
    do {
        free(*body);
        code = itest_http(port, "GET", "/readyz", body, 2000);
        if (code == want) break;
        rp_child_drain(c, 200);
    } while (itest_mono_ms() - t0 < timeout_ms);
    return code;
}

/* /readyz waits for the dead-letter tap's bindings (issue #14): with the
 * broker and the store connected but the management API unreachable, the
 * tap cannot be bound, and reaperd does not call itself ready. */
static void test_readyz_waits_for_the_tap(void **state) {
    fixture *f = *state;
    migrate(f);
    char mgmt[96];
    snprintf(mgmt, sizeof mgmt, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:%d",
             itest_closed_port());
    rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", mgmt);
    int port = itest_reaperd_http_port(c, 30000);
    assert_true(port > 0);
    assert_true(rp_child_wait_for(c, "\"msg\":\"broker connected\"", 30000));
    char *body = NULL;
    /* Given time to be ready (broker and store are up), it still is not. */
    assert_int_equal(readyz_until(c, port, 200, &body, 4000), 503);
    assert_non_null(strstr(body, "dead-letter tap not bound yet"));
    free(body);
    assert_int_equal(stop(f, c), 0);
}

/* /readyz follows the broker: 503 while it is stopped, 200 once it is
 * back; /healthz stays 200 throughout. */
static void test_readyz_follows_the_broker(void **state) {
    fixture *f = *state;
    migrate(f);
    rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", NULL);
    int port = itest_reaperd_http_port(c, 30000);
    assert_true(port > 0);
    char *body = NULL;
    assert_int_equal(readyz_until(c, port, 200, &body, 30000), 200);
    assert_string_equal(body, "ready\n");
    free(body);
    assert_int_equal(itest_services("stop", itest_broker_service()), 0);
    int code = readyz_until(c, port, 503, &body, 30000);
    if (code != 503 && itest_services("start", itest_broker_service()) != 0)
        fprintf(stderr, "cannot start the broker again\n");
    assert_int_equal(code, 503);
    assert_non_null(strstr(body, "broker down"));
    free(body);
    assert_int_equal(itest_http(port, "GET", "/healthz", NULL, 2000), 200);
    char *t = itest_scrape(port);
    assert_true(itest_metric(t, "reaper_up{backend=\"broker\"}") == 0);
    assert_true(itest_metric(t, "reaper_up{backend=\"store\"}") == 1);
    assert_true(itest_metric(t, "reaper_reconnects_total{backend=\"broker\"}") == 0);
    free(t);
    assert_int_equal(itest_services("start", itest_broker_service()), 0);
    assert_int_equal(readyz_until(c, port, 200, &body, 90000), 200);
    free(body);
    t = itest_scrape(port);
    assert_true(itest_metric(t, "reaper_up{backend=\"broker\"}") == 1);
    assert_true(itest_metric(t, "reaper_reconnects_total{backend=\"broker\"}") >= 1);
    assert_true(itest_metric(t, "reaper_reconnects_total{backend=\"store\"}") == 0);
    free(t);
    assert_false(c->exited);
    assert_int_equal(stop(f, c), 0);
}

static void write_file(const char *path, const char *text) {
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static double full_passes(int port) {
    char *t = itest_scrape(port);
    double n = itest_metric(t, "reaper_passes_total{scope=\"full\",result=\"ok\"}") +
               itest_metric(t, "reaper_passes_total{scope=\"full\",result=\"unreadable\"}") +
               itest_metric(t, "reaper_passes_total{scope=\"full\",result=\"error\"}");
    free(t);
    return n;
}

static void hup_and_wait(rp_child *c, const char *needle) {
    size_t before = strlen(c->log);
    kill(c->pid, SIGHUP);
    long t0 = itest_mono_ms();
    while (strstr(c->log + before, needle) == NULL && itest_mono_ms() - t0 < 10000)
        rp_child_drain(c, 50);
    if (strstr(c->log + before, needle) == NULL) fprintf(stderr, "%s\n", c->log + before);
    assert_non_null(strstr(c->log + before, needle));
}

/* SIGHUP: a valid change applies (interval, log level), broker.* waits for
 * a restart, an invalid file is refused and the old configuration stays. */
static void test_sighup_reload(void **state) {
    fixture *f = *state;
    migrate(f);
    write_file(f->config, "reap:\n  interval_seconds: 3600\nlog:\n  level: info\n");
    rp_child *c = start(f, "--config", f->config, NULL, NULL);
    int port = itest_reaperd_http_port(c, 30000);
    assert_true(port > 0);
    assert_true(rp_child_wait_for(c, "\"msg\":\"pass finished\"", 30000));
    rp_child_drain(c, 1500);
    assert_true(full_passes(port) == 1);

    write_file(f->config, "reap:\n  interval_seconds: 1\nlog:\n  level: debug\n"
                          "broker:\n  events_exchange: vibey.reap.events.elsewhere\n");
    hup_and_wait(c, "\"msg\":\"configuration reloaded\"");
    assert_non_null(strstr(c->log, "\"msg\":\"configuration key changed; applied\",\"key\":\"reap.interval_seconds\""));
    assert_non_null(strstr(c->log, "\"msg\":\"configuration key changed; applied\",\"key\":\"log.level\""));
    assert_non_null(strstr(c->log, "\"msg\":\"configuration key changed; it applies at the next start, not now\",\"key\":\"broker.events_exchange\""));
    /* The sweep now runs every second. */
    long t0 = itest_mono_ms();
    while (full_passes(port) < 3 && itest_mono_ms() - t0 < 6000) rp_child_drain(c, 200);
    assert_true(full_passes(port) >= 3);
    /* Debug lines now: a broker event (a queue made and deleted) is one. */
    amqp_connection_state_t a = itest_amqp_connect();
    char qname[64];
    snprintf(qname, sizeof qname, "itest-http-debug-%d", (int)getpid());
    amqp_queue_declare(a, 1, amqp_cstring_bytes(qname), 0, 0, 0, 1, amqp_empty_table);
    amqp_get_rpc_reply(a);
    amqp_queue_delete(a, 1, amqp_cstring_bytes(qname), 0, 0);
    amqp_get_rpc_reply(a);
    assert_true(rp_child_wait_for(c, "\"level\":\"debug\"", 5000));
    /* broker.events_exchange was kept: the new name was never declared. */
    amqp_exchange_declare(a, 1, amqp_cstring_bytes("vibey.reap.events.elsewhere"),
                          amqp_cstring_bytes("topic"), 1, 0, 0, 0, amqp_empty_table);
    assert_int_not_equal(amqp_get_rpc_reply(a).reply_type, AMQP_RESPONSE_NORMAL); /* passive: absent */
    amqp_destroy_connection(a);

    /* An invalid file: refused, named, and the old one (interval 1) stays. */
    write_file(f->config, "reap:\n  interval_seconds: 0\n  bogus_key: 1\nlog:\n  level: info\n");
    hup_and_wait(c, "\"msg\":\"new configuration refused; the one in force stays\"");
    assert_non_null(strstr(c->log, "reap.interval_seconds"));
    assert_non_null(strstr(c->log, "bogus_key"));
    double before = full_passes(port);
    rp_child_drain(c, 3000);
    assert_true(full_passes(port) >= before + 2);
    assert_false(c->exited);
    /* A file that no longer exists is refused the same way. */
    unlink(f->config);
    hup_and_wait(c, "\"msg\":\"new configuration refused; the one in force stays\"");
    assert_false(c->exited);
    assert_int_equal(stop(f, c), 0);
}

/* SIGTERM while a control request is being worked on (its pass stuck on a
 * locked table): the request is finished, answered and acked, then
 * reaperd exits 0, well within the grace. */
static void test_sigterm_finishes_what_is_in_flight(void **state) {
    fixture *f = *state;
    migrate(f);
    rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", "REAPER_LOG_LEVEL=debug");
    assert_true(rp_child_wait_for(c, "\"msg\":\"pass finished\"", 30000));
    PGconn *lock = lock_job_table(f);
    amqp_connection_state_t a = itest_amqp_connect();
    const char *req = "{\"v\":1,\"op\":\"reap\",\"dry_run\":true}";
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
               AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_USER_ID_FLAG;
    p.user_id = amqp_cstring_bytes(itest_broker_user());
    p.content_type = amqp_cstring_bytes("application/json");
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    p.correlation_id = amqp_cstring_bytes("in-flight");
    assert_int_equal(amqp_basic_publish(a, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(f->queue),
                                        0, 0, &p, amqp_cstring_bytes(req)),
                     AMQP_STATUS_OK);
    assert_true(rp_child_wait_for(c, "\"msg\":\"control request\",\"op\":\"reap\"", 10000));
    long t0 = itest_mono_ms();
    kill(c->pid, SIGTERM);
    assert_true(rp_child_wait_for(c, "\"msg\":\"stopping\"", 5000));
    rp_child_drain(c, 1000);
    assert_false(c->exited); /* waiting for the request in flight */
    PQclear(PQexec(lock, "ROLLBACK"));
    PQfinish(lock);
    int rc = rp_child_wait_exit(c, 20000);
    long took = itest_mono_ms() - t0;
    if (rc != 0) fprintf(stderr, "%s\n", c->log);
    assert_int_equal(rc, 0);
    fprintf(stderr, "SIGTERM to exit with a request in flight: %ld ms\n", took);
    assert_true(took < 10000 + 2000);
    assert_non_null(strstr(c->log, "\"msg\":\"work in flight finished; closing\""));
    assert_non_null(strstr(c->log, "\"msg\":\"reaperd stopped\""));
    /* The reply came... */
    struct timeval tv = {5, 0};
    amqp_envelope_t env;
    amqp_maybe_release_buffers(a);
    amqp_rpc_reply_t rr = amqp_consume_message(a, &env, &tv, 0);
    assert_int_equal(rr.reply_type, AMQP_RESPONSE_NORMAL);
    assert_int_equal((int)env.message.properties.correlation_id.len, 9);
    amqp_destroy_envelope(&env);
    /* ...and the request was acked: nothing left in the queue. */
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(a, 1, amqp_cstring_bytes(f->queue), 1, 0, 0, 0,
                                                     amqp_empty_table);
    assert_non_null(ok);
    assert_int_equal(ok->message_count, 0);
    itest_amqp_close(a);
    finish(f, c);
}

/* SIGTERM while the store thread waits on a lock that is never released:
 * after the grace (10 s) the store's command is cancelled and reaperd
 * exits 0, without waiting for the store's own 30 s time-out. */
static void test_sigterm_bounded_when_the_store_is_stuck(void **state) {
    fixture *f = *state;
    migrate(f);
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, attempts, max_attempts, lease_owner,"
              " lease_expires_at) SELECT 'alpha', 'k', 'leased', 1, 7, 'w', now() - interval '30 s'"
              " FROM generate_series(1, 5)");
    PGconn *lock = lock_job_table(f);
    rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", NULL);
    assert_true(itest_reaperd_http_port(c, 30000) > 0);
    rp_child_drain(c, 1000);
    long t0 = itest_mono_ms();
    int rc = rp_child_stop(c, SIGTERM, 25000);
    long took = itest_mono_ms() - t0;
    PQclear(PQexec(lock, "ROLLBACK"));
    PQfinish(lock);
    if (rc != 0) fprintf(stderr, "%s\n", c->log);
    assert_int_equal(rc, 0);
    fprintf(stderr, "SIGTERM to exit with the store stuck: %ld ms\n", took);
    assert_true(took >= 10000 - 500);
    assert_true(took < 10000 + 5000 + 2000);
    assert_non_null(strstr(c->log, "cancelling the store's command in progress"));
    assert_non_null(strstr(c->log, "\"msg\":\"reaperd stopped\""));
    /* Nothing moved: the row transactions never began. */
    assert_int_equal(
        atol(itest_sql(f->pg, f->schema, "SELECT count(*) FROM job WHERE state = 'leased'")), 5);
    finish(f, c);
}

/* An idle reaperd stops at once on SIGTERM and on SIGINT, exit 0. */
static void test_sigterm_idle(void **state) {
    fixture *f = *state;
    migrate(f);
    int sigs[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        rp_child *c = start(f, NULL, NULL, "REAPER_REAP_INTERVAL_SECONDS=3600", NULL);
        assert_true(rp_child_wait_for(c, "\"msg\":\"pass finished\"", 30000));
        long t0 = itest_mono_ms();
        assert_int_equal(rp_child_stop(c, sigs[i], 15000), 0);
        long took = itest_mono_ms() - t0;
        fprintf(stderr, "signal %d to exit, idle: %ld ms\n", sigs[i], took);
        assert_true(took < 3000);
        assert_non_null(strstr(c->log, "\"msg\":\"reaperd stopped\""));
        finish(f, c);
    }
}

/* http.listen that cannot be bound: a clear error at start, exit 1, before
 * anything else starts; one that is not host:port: a configuration error,
 * exit 2. */
static void test_bad_listen_is_refused(void **state) {
    fixture *f = *state;
    /* A port held by someone else. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t sl = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &sl);
    char env[64];
    snprintf(env, sizeof env, "REAPER_HTTP_LISTEN=127.0.0.1:%u", ntohs(a.sin_port));
    rp_child *c = start(f, NULL, NULL, env, NULL);
    assert_int_equal(rp_child_wait_exit(c, 15000), 1);
    assert_non_null(strstr(c->log, "\"msg\":\"cannot serve HTTP (/metrics, /healthz, /readyz)\""));
    assert_non_null(strstr(c->log, "Address already in use"));
    assert_non_null(strstr(c->log, "\"key\":\"http.listen\""));
    assert_null(strstr(c->log, "reaperd started"));
    assert_null(strstr(c->log, "broker connected"));
    finish(f, c);
    close(fd);
    /* A host that does not resolve. */
    c = start(f, NULL, NULL, "REAPER_HTTP_LISTEN=no-such-host.invalid:9464", NULL);
    assert_int_equal(rp_child_wait_exit(c, 30000), 1);
    assert_non_null(strstr(c->log, "cannot listen on no-such-host.invalid:9464"));
    finish(f, c);
    /* Not host:port at all: refused with the configuration. */
    c = start(f, NULL, NULL, "REAPER_HTTP_LISTEN=localhost", NULL);
    assert_int_equal(rp_child_wait_exit(c, 15000), 2);
    assert_non_null(strstr(c->log, "http.listen"));
    finish(f, c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_metrics_after_a_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_healthz_during_a_long_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sighup_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_finishes_what_is_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_bounded_when_the_store_is_stuck, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_listen_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readyz_follows_the_broker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readyz_waits_for_the_tap, setup, teardown),
    };
    return cmocka_run_group_tests_name("reaperd_http", tests, NULL, NULL);
}
