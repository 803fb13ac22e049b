/*
 * "A new death is a new decision" (issue 14 item 3; core/rp_deadletter.h,
 * IDENTITY, DEATH and OCCURRENCE), end to end with the running daemon:
 *   - a dead letter parked by the tap, answered `replay` over the control
 *     queue, and rejected again by its consumer opens a second gate (a new
 *     occurrence: job, gate and ledger event), the first staying answered;
 *   - two different messages that reuse one message_id on two owned origin
 *     queues are two dead letters with two gates;
 *   - the same death seen again after its gate was answered (the copy the
 *     backfill reads on the dead-letter queue) opens nothing.
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
#include <time.h>
#include <unistd.h>

#include "tap_common.h"

/* ---- helpers ---------------------------------------------------------------- */

static void publish_one(const char *queue, const char *message_id, const char *body) {
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
    p.delivery_mode = 2;
    p.message_id = amqp_cstring_bytes(message_id);
    assert_int_equal(amqp_basic_publish(T.amqp, 1, amqp_cstring_bytes(""),
                                        amqp_cstring_bytes(queue), 0, 0, &p,
                                        amqp_cstring_bytes(body)),
                     AMQP_STATUS_OK);
}

/* Sends one control request (JSON) and returns its parsed reply, which must
 * be ok (the caller decrefs). */
static json_t *control(const char *body) {
    char queue[128];
    tap_plain(queue, sizeof queue, "control");
    itest_reply r;
    if (itest_request(T.amqp, queue, "application/json", body, strlen(body), NULL, true, "c-1",
                      &r, 30000) != 0)
        fail_msg("no reply; reaperd said:\n%s", T.reaperd->log);
    json_error_t je;
    json_t *j = json_loadb(r.body, r.len, 0, &je);
    itest_reply_free(&r);
    assert_non_null(j);
    if (!json_is_true(json_object_get(j, "ok"))) {
        char *s = json_dumps(j, 0);
        fprintf(stderr, "reply: %s\n%s\n", s, T.reaperd->log);
        free(s);
        fail();
    }
    return j;
}

static void answer(long gate, const char *choice, const char *want_outcome) {
    char body[200];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%ld,\"choice\":\"%s\"}", gate,
             choice);
    json_t *j = control(body);
    const char *outcome =
        json_string_value(json_object_get(json_object_get(j, "result"), "outcome"));
    assert_non_null(outcome);
    assert_string_equal(outcome, want_outcome);
    json_decref(j);
}

/* Waits until query counts want; on failure prints reaperd's log. */
static void wait_count(long want, const char *query) {
    long got = tap_wait_count(want, 30000, query);
    if (got != want) fprintf(stderr, "%s: %ld\n%s\n", query, got, T.reaperd->log);
    assert_int_equal(got, want);
}

/* A fanout dead-letter exchange with a dead-letter queue (not a dead-letter
 * queue by name: the backfill leaves it alone) and an owned work queue. */
static void source(const char *what, char *x, char *work, char *dlq, size_t n) {
    char name[96];
    snprintf(name, sizeof name, "%s.dlx", what);
    tap_plain(x, n, name);
    tap_exchange(x, "fanout");
    snprintf(name, sizeof name, "%s.dead-letters", what);
    tap_plain(dlq, n, name);
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    snprintf(name, sizeof name, "%s.work", what);
    tap_owned(work, n, name);
    tap_queue(work, x, NULL, -1);
}

/* ---- tests -------------------------------------------------------------------- */

static void test_replay_then_dead_again_opens_a_new_gate(void **state) {
    (void)state;
    char x[128], work[128], dlq[128];
    source("again", x, work, dlq, sizeof work);
    tap_start_reaperd();
    publish_one(work, "again-1", "again body");
    tap_reject(work, 1);
    const char *rows = "SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%/again-1'";
    wait_count(1, rows);
    long gate1 = tap_sqln("SELECT gate_id FROM dead_letter WHERE identity LIKE 'id:%%/again-1'");
    long died = tap_sqln("SELECT extract(epoch FROM first_death_at)::int8 FROM dead_letter "
                         "WHERE identity LIKE 'id:%%/again-1'");
    answer(gate1, "replay", "replayed");

    /* x-death times are whole seconds (two deaths of one message in one
     * second are one, rp_deadletter.h): the second death comes in a later
     * second than the first. */
    while ((long)time(NULL) <= died) usleep(50 * 1000);
    tap_reject(work, 1); /* the replayed message, rejected again */
    wait_count(2, rows);
    /* One identity, two occurrences, each with its own job and gate; the
     * first gate stays answered, the second is open. */
    assert_int_equal(tap_sqln("SELECT count(DISTINCT identity) * 100 + count(DISTINCT job_id) * 10 "
                              "+ count(DISTINCT gate_id) FROM dead_letter "
                              "WHERE identity LIKE 'id:%%/again-1'"),
                     122);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter d JOIN gate g ON g.id = d.gate_id "
                              "WHERE d.identity LIKE 'id:%%/again-1' AND ((d.occurrence = 1 AND "
                              "g.id = %ld AND g.answer = 'replay') OR (d.occurrence = 2 AND "
                              "g.answer IS NULL AND d.first_death_at > to_timestamp(%ld)))",
                              gate1, died),
                     2);
    /* Two PARKED events for it in the ledger, one per occurrence. */
    assert_int_equal(tap_sqln("SELECT count(*) FROM ledger WHERE payload->>'action' = 'PARKED' "
                              "AND payload->>'object' LIKE 'dead_letter:id:%%/again-1'"),
                     2);
    /* The broker keeps both copies. */
    assert_int_equal(tap_depth(dlq), 2);
    assert_int_equal(tap_depth(T.tap), 0);
    tap_stop_reaperd(SIGTERM);
}

static void test_same_message_id_on_two_origins(void **state) {
    (void)state;
    char x[128], a[128], b[128], dlq[128];
    source("two", x, a, dlq, sizeof a);
    tap_owned(b, sizeof b, "two.other");
    tap_queue(b, x, NULL, -1);
    tap_start_reaperd();
    publish_one(a, "shared-1", "from a");
    publish_one(b, "shared-1", "from b");
    tap_reject(a, 1);
    tap_reject(b, 1);
    wait_count(2, "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE 'from _'");
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%%/shared-1'"),
                     2);
    /* Each names its own origin; two gates. */
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%%/%s/shared-1' "
                              "AND encode(body, 'escape') = 'from a'",
                              a),
                     1);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%%/%s/shared-1' "
                              "AND encode(body, 'escape') = 'from b'",
                              b),
                     1);
    assert_int_equal(tap_sqln("SELECT count(DISTINCT gate_id) FROM dead_letter "
                              "WHERE identity LIKE 'id:%%/shared-1'"),
                     2);
    tap_stop_reaperd(SIGTERM);
}

static void test_same_death_after_an_answer_opens_nothing(void **state) {
    (void)state;
    char x[128], work[128], dlq[128], probe[128];
    tap_plain(x, sizeof x, "red.dlx");
    tap_exchange(x, "fanout");
    tap_owned(dlq, sizeof dlq, "red.dlq");
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    tap_owned(work, sizeof work, "red.work");
    tap_queue(work, x, NULL, -1);
    /* reaperd whose backfill reads this test's dead-letter queue. */
    char env_dlq[160];
    snprintf(env_dlq, sizeof env_dlq,
             "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=^vibey\\.%s\\.red\\.dlq$", T.tag);
    char *env[] = {env_dlq, "REAPER_CONTROL_REAP_RATE_SECONDS=0", NULL}; /* reaps back to back */
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});
    assert_non_null(T.reaperd);

    publish_one(work, "red-1", "red body");
    tap_reject(work, 1);
    const char *rows = "SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%/red-1'";
    wait_count(1, rows);
    long gate = tap_sqln("SELECT gate_id FROM dead_letter WHERE identity LIKE 'id:%%/red-1'");
    answer(gate, "dismiss", "dismissed");

    /* A message put straight on the dead-letter queue, which only the
     * backfill can find: its row shows that the pass read the queue. */
    snprintf(probe, sizeof probe, "red-probe");
    publish_one(dlq, probe, "probe");
    /* Passes on demand until one has read the queue (the broker reports a
     * new queue's message counts a few seconds late, and a queue whose
     * counts are unknown is not judged). */
    const char *probed = "SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%/red-probe'";
    for (int i = 0; i < 40 && tap_sqln("%s", probed) != 1; i++) {
        json_decref(control("{\"v\":1,\"op\":\"reap\"}"));
        rp_child_drain(T.reaperd, 500);
    }
    wait_count(1, probed);
    /* The copy of red-1 on the same queue, read by that pass: still one
     * row, one gate, answered. */
    assert_int_equal(tap_sqln("%s", "SELECT count(*) FROM dead_letter d JOIN gate g ON "
                                    "g.id = d.gate_id WHERE d.identity LIKE 'id:%/red-1' "
                                    "AND g.answer = 'dismiss'"),
                     1);
    assert_int_equal(tap_sqln("%s", rows), 1);
    assert_int_equal(tap_depth(dlq), 2);
    tap_stop_reaperd(SIGTERM);
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("identity");
}

static int teardown(void **state) {
    (void)state;
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_then_dead_again_opens_a_new_gate),
        cmocka_unit_test(test_same_message_id_on_two_origins),
        cmocka_unit_test(test_same_death_after_an_answer_opens_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
