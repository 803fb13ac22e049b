/*
 * reaperctl against a running reaperd (CONTRACT section 4): aligned tables
 * for people (gate id, queue, origin, reason, age, choices) whatever the
 * names hold, --json for scripts, answer replay|dismiss end to end with
 * exit codes 0 (answered), 1 (refused, time-out, broker unreachable) and 2
 * (usage or configuration).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"
#include "pg_fixture.h"
#include "rp_proto.h"

typedef struct world {
    pgfx *f;
    rp_child *reaperd;
    amqp_connection_state_t amqp;
    char control[96], prefix[64];
    char env_control[160], env_owned[128];
    int seq;
} world;

static world W;

static int group_setup(void **state) {
    (void)state;
    W.f = pgfx_new("ctl");
    snprintf(W.prefix, sizeof W.prefix, "vibey.itest.ctl%d", (int)getpid());
    snprintf(W.control, sizeof W.control, "vibey.reap.control.itest.ctl.%d", (int)getpid());
    snprintf(W.env_control, sizeof W.env_control, "REAPER_BROKER_CONTROL_QUEUE=%s", W.control);
    itest_env_owned(W.env_owned, sizeof W.env_owned, "ctl"); /* this run's queues only */
    W.amqp = itest_amqp_connect();
    char *env[] = {W.env_owned, NULL};
    W.reaperd = itest_daemon_start(
        &(itest_daemon_opts){.schema = W.f->schema, .control = W.control, .env = env});
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    /* A clean stop (and, under the sanitizers, no leak or error). */
    int rc = itest_daemon_stop_group(W.reaperd, W.amqp, W.control);
    itest_amqp_close(W.amqp);
    pgfx_free(W.f);
    return rc == 0 ? 0 : -1;
}

/* Parks a dead letter that died on origin, found on dlq; returns its gate. */
static int64_t park(const char *origin, const char *dlq, const char *body) {
    char id[64];
    snprintf(id, sizeof id, "ctl-%d-%d", (int)getpid(), ++W.seq);
    rp_pg_dl_handle h = {"{\"x-death\":[{\"count\":1}],\"x-app\":\"kept\"}",
                         "{\"content_type\":\"text/plain\",\"delivery_mode\":2}"};
    return pgfx_park(W.f, NULL, origin, dlq, id, (rp_bytes){(const uint8_t *)body, strlen(body)},
                     false, &h);
}

/* Runs reaperctl with up to 6 arguments (NULL-ended) and extra
 * environment entry env1 (may be NULL); returns its exit code. */
static int ctl(char **out, char **err, const char *env1, const char *a1, const char *a2,
               const char *a3, const char *a4, const char *a5, const char *a6) {
    char *argv[] = {(char *)itest_env("REAPERCTL"), (char *)a1, (char *)a2, (char *)a3,
                    (char *)a4, (char *)a5, (char *)a6, NULL};
    /* env1 first: the first of two entries with one name is the one read. */
    char *env[] = {env1 ? (char *)env1 : W.env_control, W.env_control, NULL};
    int rc = rp_run_capture(argv, env, out, err);
    return rc;
}

/* The byte offset of the heading `col` in the heading line. */
static long heading_at(const char *table, const char *col) {
    const char *nl = strchr(table, '\n');
    const char *p = strstr(table, col);
    assert_non_null(p);
    assert_true(nl == NULL || p < nl);
    return p - table;
}

/* Every data line has a value starting exactly under each heading (the
 * line after the table that says how many matched is not a row). */
static void assert_aligned(const char *table, const char *const *cols, size_t ncols) {
    const char *line = strchr(table, '\n');
    assert_non_null(line);
    line++;
    int rows = 0;
    while (*line) {
        const char *end = strchr(line, '\n');
        long len = end ? end - line : (long)strlen(line);
        size_t digits = strspn(line, "0123456789");
        if (digits > 0 && strncmp(line + digits, " shown of ", 10) == 0) break;
        for (size_t c = 1; c < ncols; c++) {
            long at = heading_at(table, cols[c]);
            assert_true(at < len);
            assert_true(line[at - 1] == ' ' && line[at - 2] == ' ');
            assert_true(line[at] != ' ');
        }
        rows++;
        line = end ? end + 1 : line + len;
    }
    assert_true(rows > 0);
}

/* gates: one aligned table, long names cut with "...", control characters
 * escaped (\x1b, \t); --json gives the same gates to scripts. */
static void test_gates_table(void **state) {
    (void)state;
    char origin[256], longorigin[256], dlq[300], evil_dlq[300];
    snprintf(origin, sizeof origin, "%s.orders", W.prefix);
    snprintf(longorigin, sizeof longorigin,
             "%s.a-very-long-queue-name-that-goes-on-and-on-well-past-any-column-width", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    snprintf(evil_dlq, sizeof evil_dlq, "%s.\x1b[31mred\tx.dlq", W.prefix);
    int64_t g1 = park(origin, dlq, "one");
    int64_t g2 = park(longorigin, dlq, "two");
    int64_t g3 = park(origin, evil_dlq, "three");
    char *out, *err;
    assert_int_equal(ctl(&out, &err, NULL, "gates", "--project", "bus", NULL, NULL, NULL), 0);
    fprintf(stderr, "%s", out);
    static const char *const cols[] = {"GATE",   "KIND",   "PROJECT", "VHOST",   "QUEUE",
                                       "ORIGIN", "REASON", "AGE",     "CHOICES", "STATE"};
    assert_aligned(out, cols, 10);
    assert_null(strchr(out, '\x1b'));
    assert_null(strchr(out, '\t'));
    assert_non_null(strstr(out, "\\x1b[31mred\\tx.dlq"));
    assert_non_null(strstr(out, "...")); /* the long origin, cut */
    assert_non_null(strstr(out, "replay|dismiss"));
    assert_non_null(strstr(out, "\"rejected\""));
    char id[32];
    snprintf(id, sizeof id, "%" PRId64 " ", g3);
    assert_non_null(strstr(out, id));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, NULL, "gates", "--project", "bus", "--json", NULL, NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    json_t *gates = json_object_get(j, "gates");
    /* This test's three gates, newest first (the daemon's first pass may
     * have parked other dead letters it found on the broker). */
    int64_t ids[3];
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(gates); i++) {
        int64_t gid = json_integer_value(json_object_get(json_array_get(gates, i), "id"));
        if ((gid == g1 || gid == g2 || gid == g3) && n < 3) ids[n++] = gid;
    }
    assert_int_equal(n, 3);
    assert_true(ids[0] == g3 && ids[1] == g2 && ids[2] == g1);
    json_decref(j);
    free(out);
    free(err);
}

/* The line of the table that shows gate g (it starts with its id). */
static char *gate_line(const char *table, int64_t g) {
    char id[32];
    int n = snprintf(id, sizeof id, "%" PRId64 " ", g);
    for (const char *line = table; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (strncmp(line, id, (size_t)n) == 0) return strndup(line, len);
        line = end ? end + 1 : NULL;
    }
    fail_msg("gate %" PRId64 " is not in the table:\n%s", g, table);
    return NULL;
}

/* The gate record of id g in a gates result (NULL when absent). */
static json_t *gate_of(json_t *result, int64_t g) {
    json_t *gates = json_object_get(result, "gates");
    for (size_t i = 0; i < json_array_size(gates); i++) {
        json_t *e = json_array_get(gates, i);
        if (json_integer_value(json_object_get(e, "id")) == g) return e;
    }
    return NULL;
}

/* A replay's claim planted in PostgreSQL (as a replica would hold it) is in
 * the gates reply (replaying: by, since, stale; absent when unclaimed) and
 * in reaperctl's STATE column, escaped: live, then stale once older than
 * control.replay_claim_seconds (60 s by default). */
static void test_gates_replaying(void **state) {
    (void)state;
    char origin[256], dlq[300];
    snprintf(origin, sizeof origin, "%s.claimed", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    int64_t free_gate = park(origin, dlq, "free");
    int64_t live = park(origin, dlq, "live");
    int64_t stale = park(origin, dlq, "stale");
    pgfx_exec(W.f, "UPDATE gate SET claimed_by = 'ghost-host:4242:1', claimed_at = now() "
                   "WHERE id = %" PRId64, live);
    pgfx_exec(W.f, "UPDATE gate SET claimed_by = E'evil\\x1b[31m:7:1', "
                   "claimed_at = now() - interval '10 minutes' WHERE id = %" PRId64, stale);

    char *out, *err;
    assert_int_equal(ctl(&out, &err, NULL, "gates", "--project", "bus", NULL, NULL, NULL), 0);
    fprintf(stderr, "%s", out);
    assert_null(strchr(out, '\x1b'));
    char *l_free = gate_line(out, free_gate), *l_live = gate_line(out, live),
         *l_stale = gate_line(out, stale);
    assert_non_null(strstr(l_free, "  open"));
    assert_null(strstr(l_free, "replaying"));
    assert_non_null(strstr(l_live, "replaying (ghost-host:4242:1 for "));
    assert_null(strstr(l_live, "stale"));
    assert_non_null(strstr(l_stale, "replaying, stale (evil\\x1b[31m:7:1 for 10m)"));
    free(l_free);
    free(l_live);
    free(l_stale);
    free(out);
    free(err);

    assert_int_equal(ctl(&out, &err, NULL, "gates", "--project", "bus", "--json", NULL, NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    json_t *g_free = gate_of(j, free_gate), *g_live = gate_of(j, live), *g_stale = gate_of(j, stale);
    assert_non_null(g_free);
    assert_non_null(g_live);
    assert_non_null(g_stale);
    /* Unclaimed: no key at all, the record as before claims. */
    assert_null(json_object_get(g_free, "replaying"));
    assert_string_equal(json_string_value(json_object_get(g_free, "state")), "open");
    json_t *c = json_object_get(g_live, "replaying");
    assert_true(json_is_object(c));
    assert_string_equal(json_string_value(json_object_get(c, "by")), "ghost-host:4242:1");
    assert_true(json_is_false(json_object_get(c, "stale")));
    rp_time_ms since = 0, now_db = 0;
    assert_true(rp_proto_parse_time(json_string_value(json_object_get(c, "since")), &since));
    now_db = pgfx_i64(W.f, "SELECT floor(extract(epoch FROM now()) * 1000)::int8");
    assert_true(since > now_db - 60000 && since <= now_db);
    c = json_object_get(g_stale, "replaying");
    assert_true(json_is_object(c));
    assert_string_equal(json_string_value(json_object_get(c, "by")), "evil\x1b[31m:7:1");
    assert_true(json_is_true(json_object_get(c, "stale")));
    assert_true(rp_proto_parse_time(json_string_value(json_object_get(c, "since")), &since));
    assert_true(since < now_db - 9 * 60000);
    /* The claim is shown, not changed: both gates still open and claimed. */
    assert_string_equal(json_string_value(json_object_get(g_stale, "state")), "open");
    json_decref(j);
    free(out);
    free(err);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE claimed_by IS NOT NULL "
                                   "AND answer IS NULL AND id IN (%" PRId64 ", %" PRId64 ")",
                              live, stale),
                     2);
    pgfx_exec(W.f, "UPDATE gate SET claimed_by = NULL, claimed_at = NULL WHERE id IN (%" PRId64
                   ", %" PRId64 ")", live, stale);
}

/* answer --choice replay through reaperctl: exit 0 and the message back on
 * its queue; again: already_answered (exit 0, nothing sent); a foreign
 * origin: refused, exit 1 with the reason; --json shows the error reply. */
static void test_answer_replay(void **state) {
    (void)state;
    char origin[256], dlq[300];
    snprintf(origin, sizeof origin, "%s.replayme", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(origin), 0, 0, 0, 1, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
    int64_t gate = park(origin, dlq, "payload");
    char gid[32];
    snprintf(gid, sizeof gid, "%" PRId64, gate);
    char *out, *err;
    assert_int_equal(ctl(&out, &err, NULL, "answer", gid, "--choice", "replay", NULL, NULL), 0);
    assert_non_null(strstr(out, "replayed"));
    free(out);
    free(err);
    amqp_queue_declare_ok_t *ok =
        amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(origin), 1, 0, 0, 0, amqp_empty_table);
    assert_non_null(ok);
    assert_int_equal(ok->message_count, 1);
    assert_int_equal(ctl(&out, &err, NULL, "answer", gid, "--choice", "replay", "--json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "outcome")), "already_answered");
    json_decref(j);
    free(out);
    free(err);
    ok = amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(origin), 1, 0, 0, 0, amqp_empty_table);
    assert_int_equal(ok->message_count, 1);

    char foreign[128], fdlq[160];
    snprintf(foreign, sizeof foreign, "celery.itest.ctl%d", (int)getpid());
    snprintf(fdlq, sizeof fdlq, "%s.dlq", foreign);
    int64_t fg = park(foreign, fdlq, "x");
    snprintf(gid, sizeof gid, "%" PRId64, fg);
    assert_int_equal(ctl(&out, &err, NULL, "answer", gid, "--choice", "replay", NULL, NULL), 1);
    assert_non_null(strstr(err, "conflict"));
    assert_non_null(strstr(err, "not owned"));
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, NULL, "answer", gid, "--choice", "replay", "--json", NULL), 1);
    j = json_loads(out, 0, NULL);
    assert_non_null(j);
    assert_false(json_is_true(json_object_get(j, "ok")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "conflict");
    json_decref(j);
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, NULL, "answer", gid, "--choice", "dismiss", NULL, NULL), 0);
    assert_non_null(strstr(out, "dismissed"));
    free(out);
    free(err);
    amqp_queue_delete(W.amqp, 1, amqp_cstring_bytes(origin), 0, 0);
    amqp_get_rpc_reply(W.amqp);
}

/* status for people; exit codes 1 and 2 with a clear message. */
static void test_status_and_exit_codes(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(ctl(&out, &err, NULL, "status", NULL, NULL, NULL, NULL, NULL), 0);
    assert_non_null(strstr(out, "broker          up"));
    assert_non_null(strstr(out, "store           up"));
    free(out);
    free(err);
    /* The broker unreachable: exit 1, said so. */
    assert_int_equal(ctl(&out, &err, "REAPER_BROKER_URL=amqp://reaper@127.0.0.1:1/%2f", "status",
                         NULL, NULL, NULL, NULL, NULL),
                     1);
    assert_non_null(strstr(err, "cannot connect to the broker"));
    free(out);
    free(err);
    /* Nobody answering: a time-out, exit 1. */
    assert_int_equal(ctl(&out, &err, "REAPER_BROKER_CONTROL_QUEUE=vibey.reap.control.nobody",
                         "--timeout", "1", "gates", NULL, NULL, NULL),
                     1);
    assert_non_null(strstr(err, "no reply from reaperd within 1 s"));
    free(out);
    free(err);
    /* Usage and configuration: exit 2 before anything is sent. */
    const char *bad[][4] = {
        {"answer", "x1", "--choice", "replay"},
        {"answer", "5", "--choice", "explode"},
        {"gates", "--state", "closed", NULL},
        {"--timeout", "0", "status", NULL},
        {"status", "--project", "p", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ctl(&out, &err, NULL, bad[i][0], bad[i][1], bad[i][2], bad[i][3], NULL,
                             NULL),
                         2);
        assert_non_null(strstr(err, "reaperctl: "));
        free(out);
        free(err);
    }
    assert_int_equal(ctl(&out, &err, "REAPER_REAP_DEAD_LETTER_PEEK_LIMIT=0", "status", NULL, NULL,
                         NULL, NULL, NULL),
                     2);
    assert_non_null(strstr(err, "dead_letter_peek_limit"));
    free(out);
    free(err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gates_table),
        cmocka_unit_test(test_gates_replaying),
        cmocka_unit_test(test_answer_replay),
        cmocka_unit_test(test_status_and_exit_codes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
