/*
 * Several vhosts (issue #19 item 1, broker.vhosts), on a running reaperd
 * against the real broker and database: a listed vhost B gets a tap of its
 * own (its own connection and tap queue in B), and B's dead letters are
 * parked once each with B in their identity and rows; an unwatched vhost
 * C's dead letters are untouched (no tap queue in C, its dead-letter queue
 * keeps them, no row); a listed vhost missing at start is said in the log
 * with its name, retried with backoff while B keeps working, and picked up
 * once it is created; a gate of B answered `replay` over the one control
 * queue (in broker.url's vhost) publishes back to B's origin queue; and
 * /metrics counts the parks per vhost (reaper_dead_letters_parked_total
 * {vhost}): each watched vhost from the start at 0, M's too while it is
 * missing, and no series for C. And reaper's policy is verified per
 * watched vhost (reaper_policy_verified{policy,vhost}): a vhost P where
 * another policy of a higher priority takes an owned queue from it says 0,
 * broker.url's vhost, where nothing contends, says 1.
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

#include "tap_common.h"
#include "test_mgmt_common.h"

static char vh_b[64], vh_c[64], vh_m[64], vh_p[64];

/* Reads reaperd's log for a moment, then counts the rows of prefix's
 * dead letters parked with vhost (their job's payload and identity). */
static long parked_in(const char *vhost, const char *origin) {
    rp_child_drain(T.reaperd, 50);
    return tap_sqln("SELECT count(*) FROM dead_letter d JOIN job j ON j.id = d.job_id "
                    "WHERE j.payload->>'vhost' = '%s' AND d.origin_queue = '\"%s\"' "
                    "AND d.identity LIKE 'id:%s/%%'",
                    vhost, origin, vhost);
}

/* reaper_dead_letters_parked_total{vhost="<vhost>"} on reaperd's /metrics
 * (-1: no such series). */
static double parked_metric(const char *vhost) {
    int port = itest_reaperd_http_port(T.reaperd, 5000);
    assert_true(port > 0);
    char *text = itest_scrape(port);
    assert_non_null(text);
    char series[160];
    snprintf(series, sizeof series, "reaper_dead_letters_parked_total{vhost=\"%s\"}", vhost);
    double v = itest_metric(text, series);
    free(text);
    return v;
}

static long rows_in(const char *vhost) {
    return tap_sqln("SELECT count(*) FROM dead_letter d JOIN job j ON j.id = d.job_id "
                    "WHERE j.payload->>'vhost' = '%s' OR d.identity LIKE '%%:%s/%%'",
                    vhost, vhost);
}

/* Whether the tap queue of vhost is bound to exchange (management API). */
static bool tap_bound_to(const char *vhost, const char *exchange) {
    rp_child_drain(T.reaperd, 50);
    return mt_queue_bound_to(vhost, T.tap, exchange);
}

/* Declares the dead-letter source origin -> origin.dlx -> dlq in vhost (no
 * message yet), waits for the tap of vhost to bind to it when watched,
 * then dead-letters n messages (message_id "<origin>-m<i>"). */
static void dead_letters_in(const char *vhost, const char *origin, const char *dlq, int n,
                            bool watched) {
    amqp_connection_state_t c = mt_amqp(vhost);
    itest_dead_letters(c, origin, dlq, 0, 0);
    char dlx[160];
    snprintf(dlx, sizeof dlx, "%s.dlx", origin);
    if (watched) {
        ITEST_POLL(tap_bound_to(vhost, dlx), 30000);
        if (!tap_bound_to(vhost, dlx)) {
            fprintf(stderr, "%s", T.reaperd->log);
            fail_msg("the tap of vhost %s never bound to %s", vhost, dlx);
        }
    }
    itest_dead_letters(c, origin, dlq, n, 0);
    mt_amqp_close(c);
}

/* Answers gate `replay` over the control queue (broker.url's vhost). */
static void answer_replay(long gate) {
    char body[200];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%ld,\"choice\":\"replay\"}",
             gate);
    itest_reply r;
    if (itest_request(T.amqp, T.control, "application/json", body, strlen(body), NULL, true,
                      "vh-1", &r, 20000) != 0)
        fail_msg("no reply; reaperd said:\n%s", T.reaperd->log);
    json_t *j = json_loadb(r.body, r.len, 0, NULL);
    itest_reply_free(&r);
    assert_non_null(j);
    const char *outcome = json_string_value(json_object_get(json_object_get(j, "result"), "outcome"));
    if (!json_is_true(json_object_get(j, "ok")) || outcome == NULL ||
        strcmp(outcome, "replayed") != 0) {
        char *s = json_dumps(j, 0);
        fprintf(stderr, "reply: %s\n%s\n", s, T.reaperd->log);
        free(s);
        fail();
    }
    json_decref(j);
}

/* `reaperctl gates --project bus` (with --json when json) over the one
 * control queue: its output. */
static char *ctl_gates(bool json) {
    char env_control[160];
    snprintf(env_control, sizeof env_control, "REAPER_BROKER_CONTROL_QUEUE=%s", T.control);
    char *argv[] = {(char *)itest_env("REAPERCTL"), "gates", "--project", "bus",
                    json ? "--json" : NULL, NULL};
    char *env[] = {env_control, NULL};
    char *out = NULL, *err = NULL;
    int rc = rp_run_capture(argv, env, &out, &err);
    if (rc != 0) fail_msg("reaperctl gates: %d\n%s%s", rc, out ? out : "", err ? err : "");
    free(err);
    return out;
}

/* Issue 19 item 1: B's gates say B, in the rows, in `reaperctl gates`
 * (the VHOST column) and in its JSON (`vhost`). */
static void assert_gates_say_vhost(const char *vhost, const char *origin, long n) {
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter d JOIN gate g ON g.id = d.gate_id "
                              "WHERE d.vhost = '%s' AND g.vhost = '%s' AND d.origin_queue = '\"%s\"'",
                              vhost, vhost, origin),
                     n);
    char *out = ctl_gates(true);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    long seen = 0;
    size_t i;
    json_t *g;
    char shown[200];
    snprintf(shown, sizeof shown, "\"%s\"", origin);
    json_array_foreach(json_object_get(j, "gates"), i, g) {
        const char *o = json_string_value(json_object_get(g, "origin_queue"));
        if (o == NULL || strcmp(o, shown) != 0) continue;
        const char *v = json_string_value(json_object_get(g, "vhost"));
        assert_non_null(v);
        assert_string_equal(v, vhost);
        seen++;
    }
    assert_int_equal(seen, n);
    json_decref(j);
    free(out);
    out = ctl_gates(false);
    const char *head = strstr(out, "VHOST");
    assert_non_null(head);
    /* Every row of B's origin shows B under VHOST. */
    long rows = 0;
    for (const char *l = out; l != NULL && *l != '\0';) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = strndup(l, len);
        if (line != NULL && strstr(line, shown) != NULL) {
            assert_true(len > (size_t)(head - out));
            assert_int_equal(strncmp(line + (head - out), vhost, strlen(vhost)), 0);
            rows++;
        }
        free(line);
        l = end ? end + 1 : NULL;
    }
    assert_int_equal(rows, n);
    free(out);
}

/* A line of reaperd's log holding every needle. */
static bool log_line_has(const char *a, const char *b) {
    for (const char *l = T.reaperd->log; l != NULL && *l != '\0';) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = strndup(l, len);
        bool both = line != NULL && strstr(line, a) != NULL && strstr(line, b) != NULL;
        free(line);
        if (both) return true;
        l = end ? end + 1 : NULL;
    }
    return false;
}

static void test_vhosts_each_parked_with_its_vhost(void **state) {
    (void)state;
    mt_vhost_create(vh_b);
    mt_vhost_create(vh_c);
    mt_vhost_delete(vh_m); /* missing at start */
    char env_vhosts[256];
    snprintf(env_vhosts, sizeof env_vhosts, "REAPER_BROKER_VHOSTS=%s,%s", vh_b, vh_m);
    char *env[] = {env_vhosts, NULL};
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});

    char work_b[128], dlq_b[128], work_c[128], dlq_c[128], work_m[128], dlq_m[128];
    tap_owned(work_b, sizeof work_b, "b.work");
    tap_owned(dlq_b, sizeof dlq_b, "b.dlq");
    tap_owned(work_c, sizeof work_c, "c.work");
    tap_owned(dlq_c, sizeof dlq_c, "c.dlq");
    tap_owned(work_m, sizeof work_m, "m.work");
    tap_owned(dlq_m, sizeof dlq_m, "m.dlq");

    /* Every watched vhost's series from the start, at 0 (so that rate()
     * sees the first park), the missing M's too; none for C. */
    assert_true(parked_metric("/") == 0);
    assert_true(parked_metric(vh_b) == 0);
    assert_true(parked_metric(vh_m) == 0);
    assert_true(parked_metric(vh_c) < 0);

    /* C first: were it watched, its dead letters would be parked by the
     * time B's are. */
    dead_letters_in(vh_c, work_c, dlq_c, 3, false);
    dead_letters_in(vh_b, work_b, dlq_b, 5, true);
    ITEST_POLL(parked_in(vh_b, work_b) >= 5, 30000);
    assert_int_equal(parked_in(vh_b, work_b), 5);
    /* Once each, with B in the job, the gate's look and the identity. */
    assert_int_equal(rows_in(vh_b), 5);
    assert_gates_say_vhost(vh_b, work_b, 5);
    /* Counted under B, not under broker.url's vhost. */
    ITEST_POLL(parked_metric(vh_b) == 5, 10000);
    assert_true(parked_metric(vh_b) == 5);
    assert_true(parked_metric("/") == 0);
    assert_true(parked_metric(vh_m) == 0);
    /* B's tap acked them all; the broker's dead-letter queue keeps its
     * copies. */
    amqp_connection_state_t cb = mt_amqp(vh_b);
    ITEST_POLL(itest_queue_depth(cb, 1, T.tap) == 0, 10000);
    assert_int_equal(itest_queue_depth(cb, 1, T.tap), 0);
    assert_int_equal(itest_queue_depth(cb, 1, dlq_b), 5);
    /* A gate of B replayed: back to B's origin queue (empty until now), not
     * to a queue of that name in broker.url's vhost. */
    assert_int_equal(itest_queue_depth(cb, 1, work_b), 0);
    long gate = tap_sqln("SELECT min(d.gate_id) FROM dead_letter d JOIN job j ON j.id = d.job_id "
                         "WHERE j.payload->>'vhost' = '%s'",
                         vh_b);
    assert_true(gate > 0);
    answer_replay(gate);
    ITEST_POLL(itest_queue_depth(cb, 1, work_b) == 1, 10000);
    assert_int_equal(itest_queue_depth(cb, 1, work_b), 1);
    json_t *wrong = mt_queue("/", work_b);
    assert_null(wrong);
    mt_amqp_close(cb);

    /* C is not watched: no tap queue there, nothing parked, its
     * dead-letter queue keeps the three. */
    assert_int_equal(rows_in(vh_c), 0);
    json_t *tq = mt_queue(vh_c, T.tap);
    assert_null(tq);
    amqp_connection_state_t cc = mt_amqp(vh_c);
    assert_int_equal(itest_queue_depth(cc, 1, dlq_c), 3);
    mt_amqp_close(cc);

    /* M is missing: its tap says so, naming it, and tries again. */
    char peer_m[96];
    snprintf(peer_m, sizeof peer_m, "vhost %s\"", vh_m);
    ITEST_POLL((rp_child_drain(T.reaperd, 50), log_line_has("tap's broker connection is down",
                                                            peer_m)),
               20000);
    if (!log_line_has("tap's broker connection is down", peer_m)) {
        fprintf(stderr, "%s", T.reaperd->log);
        fail_msg("no log line names the missing vhost %s", vh_m);
    }
    /* Created now: picked up at the next attempt (backoff at most 10 s). */
    mt_vhost_create(vh_m);
    dead_letters_in(vh_m, work_m, dlq_m, 2, true);
    ITEST_POLL(parked_in(vh_m, work_m) >= 2, 30000);
    assert_int_equal(parked_in(vh_m, work_m), 2);
    assert_int_equal(rows_in(vh_m), 2);
    assert_int_equal(rows_in(vh_c), 0);
    ITEST_POLL(parked_metric(vh_m) == 2, 10000);
    assert_true(parked_metric(vh_m) == 2);
    assert_true(parked_metric(vh_b) == 5);
    assert_true(parked_metric("/") == 0);
    assert_true(parked_metric(vh_c) < 0);
    tap_stop_reaperd(SIGTERM);
}

/* reaper_policy_verified{policy="vibey-reap",vhost="<vhost>"} on reaperd's
 * /metrics (-1: no such series). */
static double verified_metric(const char *vhost) {
    int port = itest_reaperd_http_port(T.reaperd, 5000);
    assert_true(port > 0);
    char *text = itest_scrape(port);
    assert_non_null(text);
    char series[200];
    snprintf(series, sizeof series, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"%s\"}",
             vhost);
    double v = itest_metric(text, series);
    free(text);
    return v;
}

/* Issue 19 item 1: in watched vhost P an owned quorum queue (with a
 * dead-letter exchange, so that reaper's policy selects it) is also
 * matched by policy ops of a higher priority: vibey-reap is not verified
 * on P (0), and is on broker.url's vhost (1), where nothing contends. */
static void test_policy_verified_per_vhost(void **state) {
    (void)state;
    mt_vhost_create(vh_p);
    char q[128];
    tap_owned(q, sizeof q, "p.work");
    amqp_connection_state_t cp = mt_amqp(vh_p);
    amqp_table_entry_t e[2] = {
        {amqp_cstring_bytes("x-queue-type"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("quorum")}}},
        {amqp_cstring_bytes("x-dead-letter-exchange"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("amq.direct")}}}};
    amqp_table_t args = {2, e};
    amqp_queue_declare(cp, 1, amqp_cstring_bytes(q), 0, 1, 0, 0, args);
    assert_int_equal(amqp_get_rpc_reply(cp).reply_type, AMQP_RESPONSE_NORMAL);
    mt_amqp_close(cp);
    char *ev = mt_enc(vh_p);
    char path[256], body[512];
    snprintf(path, sizeof path, "/api/policies/%s/ops", ev);
    free(ev);
    snprintf(body, sizeof body,
             "{\"pattern\":\"^%s$\",\"apply-to\":\"queues\",\"priority\":9,\"definition\":"
             "{\"max-length\":1000}}",
             q);
    long code = mt_http("PUT", path, body, NULL);
    assert_true(code == 201 || code == 204);

    char env_vhosts[128];
    snprintf(env_vhosts, sizeof env_vhosts, "REAPER_BROKER_VHOSTS=%s", vh_p);
    char *env[] = {env_vhosts, "REAPER_REAP_INTERVAL_SECONDS=5", NULL};
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});
    /* The passes' reconciles wait up to 12 s for the broker's statistics. */
    ITEST_POLL(verified_metric(vh_p) == 0 && verified_metric("/") == 1, 60000);
    if (!(verified_metric(vh_p) == 0 && verified_metric("/") == 1)) {
        fprintf(stderr, "%s", T.reaperd->log);
        fail_msg("reaper_policy_verified: %s %g, / %g", vh_p, verified_metric(vh_p),
                 verified_metric("/"));
    }
    /* No series for a vhost that is not watched. */
    assert_true(verified_metric(vh_c) < 0);
    tap_stop_reaperd(SIGTERM);
}

static int setup(void **state) {
    (void)state;
    if (tap_world_setup("vhosts") != 0) return -1;
    snprintf(vh_b, sizeof vh_b, "%s-b", T.tag);
    snprintf(vh_c, sizeof vh_c, "%s-c", T.tag);
    snprintf(vh_m, sizeof vh_m, "%s-m", T.tag);
    snprintf(vh_p, sizeof vh_p, "%s-p", T.tag);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.reaperd) tap_stop_reaperd(SIGKILL);
    mt_vhost_delete(vh_b);
    mt_vhost_delete(vh_c);
    mt_vhost_delete(vh_m);
    mt_vhost_delete(vh_p);
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vhosts_each_parked_with_its_vhost),
        cmocka_unit_test(test_policy_verified_per_vhost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
