/*
 * AMQP over TLS (broker.tls.*) against the broker's TLS listener, which
 * scripts/services opens with a certificate for localhost signed by a
 * private CA (RP_BROKER_TLS_URL, RP_TLS_CA_FILE). Every path reaper has to
 * the broker speaks it:
 *   - the daemon's connection (rp_amqp_conn): connected, /readyz 200, and a
 *     control request answered through it;
 *   - reaperctl's (cmd/reaperctl/client.c): `status` exits 0;
 *   - `reaperd --once`: the backfill's peek (rp_amqp_peek) parks a dead
 *     letter read over TLS, and the feed (rp_amqp_feed)
 *     publishes its event over TLS;
 *   - the wrong trust anchor (a CA that signed nothing here) is refused by
 *     each, with a reason that says so: the daemon stays up with /readyz
 *     503 "broker down", reaperctl exits 1; with verify_peer false the
 *     same CA is accepted (the documented trade);
 *   - a CA file that does not exist is named as the reason (it used to be
 *     ignored, and the failure read "SSL peer cert verification failed").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "pg_fixture.h"
#include "test_daemon.h"

typedef struct world {
    pgfx *f;
    char tag[32];
    char env_schema[128], env_url[256], env_ca[512], env_control[160], env_tap[160];
    char env_owned[160], env_dlq[160], env_exchange[160];
    char other_ca[512];
} world;

static world W;

static int group_setup(void **state) {
    (void)state;
    W.f = pgfx_new("tls");
    snprintf(W.tag, sizeof W.tag, "tls%d", (int)getpid());
    snprintf(W.env_schema, sizeof W.env_schema, "REAPER_STORE_SCHEMA=%s", W.f->schema);
    snprintf(W.env_url, sizeof W.env_url, "REAPER_BROKER_URL=%s", itest_env("RP_BROKER_TLS_URL"));
    const char *ca = itest_env("RP_TLS_CA_FILE");
    snprintf(W.env_ca, sizeof W.env_ca, "REAPER_BROKER_TLS_CA_FILE=%s", ca);
    snprintf(W.other_ca, sizeof W.other_ca, "%.*sother-ca.pem",
             (int)(strrchr(ca, '/') - ca + 1), ca);
    snprintf(W.env_control, sizeof W.env_control,
             "REAPER_BROKER_CONTROL_QUEUE=vibey.reap.control.itest.%s", W.tag);
    snprintf(W.env_tap, sizeof W.env_tap, "REAPER_BROKER_TAP_QUEUE=itest.%s.tap", W.tag);
    snprintf(W.env_owned, sizeof W.env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.%s\\.",
             W.tag);
    snprintf(W.env_dlq, sizeof W.env_dlq,
             "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=^vibey\\.%s\\..*\\.dlq$", W.tag);
    snprintf(W.env_exchange, sizeof W.env_exchange,
             "REAPER_BROKER_EVENTS_EXCHANGE=vibey.reap.events.itest.%s", W.tag);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    amqp_connection_state_t c = itest_amqp_connect();
    char q[160];
    snprintf(q, sizeof q, "vibey.reap.control.itest.%s", W.tag);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
    amqp_get_rpc_reply(c);
    snprintf(q, sizeof q, "itest.%s.tap", W.tag);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
    amqp_get_rpc_reply(c);
    snprintf(q, sizeof q, "vibey.reap.events.itest.%s", W.tag);
    amqp_exchange_delete(c, 1, amqp_cstring_bytes(q), 0);
    amqp_get_rpc_reply(c);
    itest_amqp_close(c);
    pgfx_free(W.f);
    return 0;
}

/* reaperctl status with the TLS URL and ca (a "K=V" entry, or NULL for
 * none), plus one more entry; its exit code, stderr in *err (heap). */
static int ctl_status(const char *ca, const char *more, char **err) {
    char *argv[] = {(char *)itest_env("REAPERCTL"), "status", "--timeout", "10", NULL};
    char *env[] = {W.env_url, W.env_control, (char *)ca, (char *)more, NULL};
    if (ca == NULL) env[2] = (char *)more, env[3] = NULL;
    char *out = NULL;
    int rc = rp_run_capture(argv, env, &out, err);
    if (rc != 0) fprintf(stderr, "reaperctl status: exit %d\n%s\n%s\n", rc, out, *err);
    free(out);
    return rc;
}

/* reaperd over TLS with the CA entry ca ("K=V"), waiting for ready1 and
 * then ready2 (may be NULL). */
static rp_child *tls_daemon(char *ca, const char *ready1, const char *ready2) {
    char *env[] = {W.env_url, ca, W.env_control, W.env_tap, W.env_owned, W.env_dlq,
                   W.env_exchange, NULL};
    itest_daemon_opts o = {.schema = W.f->schema, .env = env, .ready = {ready1, ready2}};
    return itest_daemon_start(&o);
}

static void test_daemon_and_reaperctl_over_tls(void **state) {
    (void)state;
    rp_child *c = tls_daemon(W.env_ca, "broker connected", ITEST_READY_PASS);
    int port = itest_reaperd_http_port(c, 10000);
    assert_true(port > 0);
    char *body = NULL;
    /* Ready once the tap's bindings are derived too (on their own thread,
     * after the connection): asked until then. */
    int code = 0;
    for (long long t0 = itest_mono_ms(); itest_mono_ms() - t0 < 30000; rp_child_drain(c, 200)) {
        free(body);
        body = NULL;
        code = itest_http(port, "GET", "/readyz", &body, 5000);
        if (code == 200) break;
    }
    if (code != 200) fprintf(stderr, "/readyz %d: %s\n%s\n", code, body ? body : "", c->log);
    assert_int_equal(code, 200);
    free(body);
    /* The daemon's log names the broker it reached: the TLS port. */
    const char *url = itest_env("RP_BROKER_TLS_URL");
    const char *hostport = strstr(url, "@") + 1;
    char want[64];
    snprintf(want, sizeof want, "%.*s", (int)(strchr(hostport, '/') - hostport), hostport);
    assert_non_null(strstr(c->log, want));
    /* A control request answered by the daemon, both ends over TLS. */
    char *err = NULL;
    assert_int_equal(ctl_status(W.env_ca, NULL, &err), 0);
    free(err);
    assert_int_equal(itest_daemon_stop(c), 0);
}

static void test_wrong_ca_refused(void **state) {
    (void)state;
    char bad[600];
    snprintf(bad, sizeof bad, "REAPER_BROKER_TLS_CA_FILE=%s", W.other_ca);
    rp_child *c = tls_daemon(bad, "http listening", NULL);
    int port = itest_reaperd_http_port(c, 10000);
    assert_true(port > 0);
    /* It keeps trying, says why, and is not ready. */
    assert_true(rp_child_wait_for(c, "broker unreachable", 30000));
    fprintf(stderr, "daemon with the wrong CA said:\n%.2000s\n", c->log);
    assert_true(strstr(c->log, "SSL") != NULL || strstr(c->log, "TLS") != NULL ||
                strstr(c->log, "certificate") != NULL || strstr(c->log, "ssl") != NULL);
    assert_null(strstr(c->log, "broker connected"));
    char *body = NULL;
    assert_int_equal(itest_http(port, "GET", "/readyz", &body, 5000), 503);
    assert_non_null(strstr(body, "broker down"));
    free(body);
    assert_int_equal(itest_daemon_stop(c), 0);

    /* reaperctl: exit 1 and a reason. */
    char *err = NULL;
    assert_int_equal(ctl_status(bad, NULL, &err), 1);
    assert_non_null(strstr(err, "reaperctl: "));
    assert_non_null(strstr(err, "connect"));
    free(err);
    /* verify_peer false accepts a certificate it cannot verify. This needs
     * a daemon to answer: one on the right CA. */
    c = tls_daemon(W.env_ca, "broker connected", NULL);
    err = NULL;
    assert_int_equal(ctl_status(bad, "REAPER_BROKER_TLS_VERIFY_PEER=false", &err), 0);
    free(err);
    /* A CA file that is not there: a clear failure. */
    err = NULL;
    assert_int_equal(ctl_status("REAPER_BROKER_TLS_CA_FILE=/nonexistent/ca.pem", NULL, &err), 1);
    assert_non_null(strstr(err, "reaperctl: TLS: broker.tls.ca_file /nonexistent/ca.pem cannot be used"));
    free(err);
    /* A client certificate that cannot be read: named too. */
    err = NULL;
    assert_int_equal(ctl_status("REAPER_BROKER_TLS_CERT_FILE=/nonexistent/client.pem",
                                "REAPER_BROKER_TLS_KEY_FILE=/nonexistent/client.key", &err),
                     1);
    assert_non_null(strstr(err, "reaperctl: TLS: the client certificate /nonexistent/client.pem"));
    free(err);
    assert_int_equal(itest_daemon_stop(c), 0);
}

static void delete_queues(const char *origin, const char *dlq) {
    amqp_connection_state_t a = itest_amqp_connect();
    itest_queue_delete(a, 1, origin);
    itest_queue_delete(a, 1, dlq);
    char dlx[200];
    snprintf(dlx, sizeof dlx, "%s.dlx", origin);
    amqp_exchange_delete(a, 1, amqp_cstring_bytes(dlx), 0);
    amqp_get_rpc_reply(a);
    itest_amqp_close(a);
}

/* reaperd --once over TLS: the backfill reads the dead letter over TLS and
 * parks it; its event goes out over TLS (no note about the feed). */
static void test_once_over_tls(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "vibey.%s.orders", W.tag);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    amqp_connection_state_t a = itest_amqp_connect();
    itest_dead_letters(a, origin, dlq, 1, 0); /* over plain AMQP */
    itest_amqp_close(a);
    int64_t parked = 0;
    json_t *rep = NULL;
    for (int i = 0; i < 20 && parked < 1; i++) {
        char *argv[] = {(char *)itest_env("REAPERD"), "--once", "--json", NULL};
        char *env[] = {W.env_schema, W.env_url,   W.env_ca,      W.env_control, W.env_tap,
                       W.env_owned,  W.env_dlq,   W.env_exchange, "REAPER_LOG_FORMAT=json", NULL};
        char *out = NULL, *err = NULL;
        int rc = rp_run_capture(argv, env, &out, &err);
        if (rc != 0) fprintf(stderr, "reaperd --once: exit %d\n%s\n%s\n", rc, out, err);
        assert_int_equal(rc, 0);
        json_decref(rep);
        json_error_t je;
        rep = json_loads(out, 0, &je);
        assert_non_null(rep);
        free(out);
        free(err);
        parked = pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE queue = '%s'", dlq);
        if (parked < 1) usleep(500 * 1000); /* the management API's depth lags */
    }
    assert_int_equal(parked, 1);
    assert_true(json_is_true(json_object_get(rep, "ok")));
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(rep, "notes"), i, n) {
        const char *s = json_string_value(n);
        if (s && (strstr(s, "feed") || strstr(s, "events exchange"))) fail_msg("note: %s", s);
    }
    json_decref(rep);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE queue = '%s' AND "
                                   "convert_from(body, 'UTF8') = 'body 0'",
                              dlq),
                     1);
    delete_queues(origin, dlq);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemon_and_reaperctl_over_tls),
        cmocka_unit_test(test_wrong_ca_refused),
        cmocka_unit_test(test_once_over_tls),
    };
    return cmocka_run_group_tests_name("broker_tls", tests, group_setup, group_teardown);
}
