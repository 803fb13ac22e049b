/*
 * Two reaperd replicas on one broker and one database never double-act on a
 * gate (issue #15, rp_gate.h): a replay claims the gate in PostgreSQL
 * before it publishes, every other answer from either replica is `busy`
 * while the claim is live, and a stale claim (a replica killed between the
 * publish and the settle) is taken over and reported, never published
 * again.
 *
 *   - 50 answers (replay and dismiss mixed) on 10 gates, sent at once from
 *     five connections to the control queue both replicas consume: each
 *     gate settled once (ledger), each replayed message on its origin queue
 *     exactly once, no dismissed gate's message published;
 *   - a claim held by another process: replay and dismiss are `busy` and
 *     name the claimer; once stale, a dismiss takes it over (dismissed,
 *     with a note that the message may have been published) and the ledger
 *     records GateClaimTakenOver;
 *   - a replica killed with SIGKILL between its publish and its settle (the
 *     test hook RP_TEST_PAUSE_AFTER_REPLAY_PUBLISH_MS): the other
 *     replica gets the redelivered request and every later answer; it
 *     reports the claim (busy, then taken over: "may have been published")
 *     and the message stays on its origin queue once.
 *
 * The dead letters are parked straight through the PostgreSQL park port.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"
#include "pg_fixture.h"

#define N_GATES 10
#define N_ANSWERS 50
#define N_SENDERS 5

typedef struct world {
    pgfx *f;
    amqp_connection_state_t amqp;
    char control[96];
    char prefix[64]; /* vibey.itest.rr<pid> */
    char env_owned[128];
    int seq;
    rp_child *kids[4]; /* this test's replicas still running */
} world;

static world W;

/* "<prefix>.<base><i>": this run's queue names. */
static const char *name(const char *base, int i) {
    static char buf[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s.%s%d", W.prefix, base, i);
    return buf[k];
}

static void declare(const char *queue) {
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(queue), 0, 0, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(W.amqp).reply_type, AMQP_RESPONSE_NORMAL);
}

static long depth(const char *queue) { return itest_queue_depth(W.amqp, 1, queue); }

/* A reaperd replica of this test: same schema, control queue and owned
 * queues; extra environment entries (NULL-ended) may be added. */
static rp_child *replica(char *const extra[]) {
    char *env[16] = {W.env_owned};
    int n = 1;
    for (int i = 0; extra && extra[i] && n < 15; i++) env[n++] = extra[i];
    env[n] = NULL;
    rp_child *c = itest_daemon_start(
        &(itest_daemon_opts){.schema = W.f->schema, .control = W.control, .env = env});
    for (int i = 0; i < 4; i++)
        if (W.kids[i] == NULL) {
            W.kids[i] = c;
            break;
        }
    return c;
}

static void forget(rp_child *c) {
    for (int i = 0; i < 4; i++)
        if (W.kids[i] == c) W.kids[i] = NULL;
}

/* A clean stop (exit 0). */
static int stop(rp_child *c) {
    forget(c);
    return itest_daemon_stop(c);
}

/* After each test: a replica a failed test left running would take the
 * next test's requests. */
static int kill_leftovers(void **state) {
    (void)state;
    for (int i = 0; i < 4; i++)
        if (W.kids[i]) {
            rp_child_stop(W.kids[i], SIGKILL, 5000);
            rp_child_free(W.kids[i]);
            W.kids[i] = NULL;
        }
    return 0;
}

static int group_setup(void **state) {
    (void)state;
    W.f = pgfx_new("replicas");
    snprintf(W.prefix, sizeof W.prefix, "vibey.itest.rr%d", (int)getpid());
    snprintf(W.control, sizeof W.control, "vibey.itest.rr%d.control", (int)getpid());
    itest_env_owned(W.env_owned, sizeof W.env_owned, "rr");
    W.amqp = itest_amqp_connect();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    (void)itest_daemon_stop_group(NULL, W.amqp, W.control); /* the replicas are stopped */
    itest_amqp_close(W.amqp);
    pgfx_free(W.f);
    return 0;
}

/* ---- parking ------------------------------------------------------------- */

/* Parks a dead letter that died on origin with body; returns its gate. */
static int64_t park(const char *origin, const char *body) {
    char mid[64];
    snprintf(mid, sizeof mid, "rr-%d-%d", (int)getpid(), ++W.seq);
    return pgfx_park(W.f, NULL, origin, NULL, mid, (rp_bytes){(const uint8_t *)body, strlen(body)},
                     false, NULL);
}

/* ---- requests ------------------------------------------------------------ */

static void publish_answer(amqp_connection_state_t c, int64_t gate, const char *choice,
                           const char *corr) {
    char body[200];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%" PRId64
                                ",\"choice\":\"%s\"}", gate, choice);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_USER_ID_FLAG |
               AMQP_BASIC_CORRELATION_ID_FLAG;
    p.user_id = amqp_cstring_bytes(itest_broker_user());
    p.content_type = amqp_cstring_bytes("application/json");
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    p.correlation_id = amqp_cstring_bytes(corr);
    assert_int_equal(amqp_basic_publish(c, 1, amqp_cstring_bytes(""),
                                        amqp_cstring_bytes(W.control), 0, 0, &p,
                                        amqp_cstring_bytes(body)),
                     AMQP_STATUS_OK);
}

/* The next reply on c (JSON), or NULL after timeout_ms. */
static json_t *next_reply(amqp_connection_state_t c, int timeout_ms) {
    amqp_envelope_t env;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    amqp_maybe_release_buffers(c);
    if (amqp_consume_message(c, &env, &tv, 0).reply_type != AMQP_RESPONSE_NORMAL) return NULL;
    json_error_t je;
    json_t *j = json_loadb(env.message.body.bytes, env.message.body.len, 0, &je);
    amqp_destroy_envelope(&env);
    return j;
}

/* One answer and its reply, on the test's own connection. */
static json_t *answer(int64_t gate, const char *choice) {
    char corr[32];
    snprintf(corr, sizeof corr, "a-%d", ++W.seq);
    publish_answer(W.amqp, gate, choice, corr);
    json_t *j = next_reply(W.amqp, 30000);
    assert_non_null(j);
    return j;
}

/* A reply's fields; "" when absent. */
static const char *field(json_t *j, const char *obj, const char *key) {
    const char *v = json_string_value(json_object_get(json_object_get(j, obj), key));
    return v ? v : "";
}
static const char *outcome_of(json_t *j) { return field(j, "result", "outcome"); }
static const char *code_of(json_t *j) { return field(j, "error", "code"); }
static const char *message_of(json_t *j) { return field(j, "error", "message"); }

static bool gate_open(int64_t gate) {
    return pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE id = %" PRId64 " AND answer IS NULL",
                    gate) == 1;
}

static void dump(const char *what, json_t *j) {
    char *s = json_dumps(j, 0);
    fprintf(stderr, "%s: %s\n", what, s ? s : "(null)");
    free(s);
}

/* ---- 50 answers on 10 gates through two replicas ------------------------- */

typedef struct sender {
    int index;
    const int64_t *gates;
    int replayed, dismissed, already, busy, conflict, other, missing;
} sender;

/* Which choice answer i (0..N_ANSWERS) makes: mixed, every gate gets both. */
static const char *choice_of(int i) { return (i * 7 + i / N_GATES) % 3 == 0 ? "dismiss" : "replay"; }

static void *send_all(void *arg) {
    sender *s = arg;
    amqp_connection_state_t c = itest_amqp_connect();
    int per = N_ANSWERS / N_SENDERS;
    for (int k = 0; k < per; k++) {
        int i = s->index * per + k;
        char corr[32];
        snprintf(corr, sizeof corr, "s%d-%d", s->index, i);
        publish_answer(c, s->gates[i % N_GATES], choice_of(i), corr);
    }
    for (int k = 0; k < per; k++) {
        json_t *j = next_reply(c, 60000);
        if (j == NULL) {
            s->missing++;
            continue;
        }
        const char *o = outcome_of(j), *code = code_of(j);
        if (strcmp(o, "replayed") == 0) s->replayed++;
        else if (strcmp(o, "dismissed") == 0) s->dismissed++;
        else if (strcmp(o, "already_answered") == 0) s->already++;
        else if (strcmp(code, "busy") == 0) s->busy++;
        else if (strcmp(code, "conflict") == 0) s->conflict++;
        else {
            dump("unexpected reply", j);
            s->other++;
        }
        json_decref(j);
    }
    itest_amqp_close(c);
    return NULL;
}

static void test_fifty_answers_two_replicas(void **state) {
    (void)state;
    /* A confirm and a settle that take a little while (200 ms between
     * them: the test hook), as under load: the window in which another
     * replica's answer to the same gate would act twice. */
    char *slow[] = {"RP_TEST_PAUSE_AFTER_REPLAY_PUBLISH_MS=200", NULL};
    rp_child *a = replica(slow), *b = replica(slow);
    int64_t gates[N_GATES];
    for (int g = 0; g < N_GATES; g++) {
        declare(name("origin", g));
        char body[32];
        snprintf(body, sizeof body, "message %d", g);
        gates[g] = park(name("origin", g), body);
    }
    sender s[N_SENDERS];
    pthread_t th[N_SENDERS];
    for (int i = 0; i < N_SENDERS; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].index = i;
        s[i].gates = gates;
        assert_int_equal(pthread_create(&th[i], NULL, send_all, &s[i]), 0);
    }
    sender t = {0};
    for (int i = 0; i < N_SENDERS; i++) {
        pthread_join(th[i], NULL);
        t.replayed += s[i].replayed;
        t.dismissed += s[i].dismissed;
        t.already += s[i].already;
        t.busy += s[i].busy;
        t.conflict += s[i].conflict;
        t.other += s[i].other;
        t.missing += s[i].missing;
    }
    fprintf(stderr, "50 answers: replayed %d, dismissed %d, already_answered %d, busy %d, "
                    "conflict %d, other %d, no reply %d\n",
            t.replayed, t.dismissed, t.already, t.busy, t.conflict, t.other, t.missing);
    assert_int_equal(t.missing, 0);
    assert_int_equal(t.other, 0);
    /* Both replicas answered some. */
    rp_child_drain(a, 200);
    rp_child_drain(b, 200);
    assert_non_null(strstr(a->log, "\"msg\":\"gate answer"));
    assert_non_null(strstr(b->log, "\"msg\":\"gate answer"));
    /* Every gate settled once, and one reply says so for each. */
    int settled = 0;
    for (int g = 0; g < N_GATES; g++) {
        int64_t events = pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered' "
                                        "AND (payload->>'gate')::int8 = %" PRId64, gates[g]);
        char *ans = pgfx_text(W.f, "SELECT answer FROM gate WHERE id = %" PRId64, gates[g]);
        /* Published exactly once when replayed, never when dismissed. */
        long want = ans && strcmp(ans, "replay") == 0 ? 1 : 0;
        long have = -1;
        ITEST_POLL((have = depth(name("origin", g))) == want, 5000);
        if (events != 1 || ans == NULL || have != want)
            fprintf(stderr, "gate %" PRId64 ": %" PRId64 " events, answer %s, %ld on its "
                            "origin queue\n", gates[g], events, ans ? ans : "none", have);
        assert_int_equal(events, 1);
        assert_non_null(ans);
        assert_int_equal(have, want);
        settled++;
        free(ans);
    }
    assert_int_equal(settled, N_GATES);
    assert_int_equal(t.replayed + t.dismissed, N_GATES);
    /* No claim is left behind. */
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE claimed_by IS NOT NULL"), 0);
    /* Nothing more arrives later (deliberate: a window for it to show). */
    usleep(500 * 1000);
    long total = 0;
    for (int g = 0; g < N_GATES; g++) total += depth(name("origin", g));
    assert_int_equal(total, pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE answer = 'replay' "
                                          "AND id IN (SELECT gate_id FROM dead_letter)"));
    for (int g = 0; g < N_GATES; g++) itest_queue_delete(W.amqp, 1, name("origin", g));
    assert_int_equal(stop(a), 0);
    assert_int_equal(stop(b), 0);
}

/* ---- a claim held by another process ------------------------------------- */

static void test_claim_of_another_process(void **state) {
    (void)state;
    rp_child *a = replica((char *[]){"REAPER_CONTROL_REPLAY_CLAIM_SECONDS=30", NULL});
    const char *origin = name("held", 0);
    declare(origin);
    int64_t gate = park(origin, "held");
    /* A live claim by a process that is not this reaperd. */
    pgfx_exec(W.f, "UPDATE gate SET claimed_by = 'ghost-host:4242:1', claimed_at = now() "
                   "WHERE id = %" PRId64, gate);
    const char *choices[2] = {"replay", "dismiss"};
    for (int i = 0; i < 2; i++) {
        json_t *j = answer(gate, choices[i]);
        if (strcmp(code_of(j), "busy") != 0) dump(choices[i], j);
        assert_string_equal(code_of(j), "busy");
        assert_non_null(strstr(message_of(j), "is being replayed by ghost-host:4242:1 since"));
        json_decref(j);
    }
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                   " AND answer IS NULL AND claimed_by = 'ghost-host:4242:1'",
                              gate), 1);
    assert_int_equal(depth(origin), 0);
    /* Stale (older than control.replay_claim_seconds): a dismiss takes it
     * over, says what that means, and the ledger records it. */
    pgfx_exec(W.f, "UPDATE gate SET claimed_at = now() - interval '31 seconds' WHERE id = %" PRId64,
              gate);
    json_t *j = answer(gate, "dismiss");
    if (strcmp(outcome_of(j), "dismissed") != 0) dump("dismiss", j);
    assert_string_equal(outcome_of(j), "dismissed");
    const char *note = json_string_value(json_object_get(json_object_get(j, "result"), "note"));
    assert_non_null(note);
    assert_non_null(strstr(note, "may have been published once already"));
    assert_non_null(strstr(note, "ghost-host:4242:1"));
    json_decref(j);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateClaimTakenOver' "
                                   "AND (payload->>'gate')::int8 = %" PRId64 " AND "
                                   "payload->>'claimed_by' = 'ghost-host:4242:1' AND "
                                   "payload->>'choice' = 'dismiss'", gate), 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                   " AND answer = 'dismiss' AND claimed_by IS NULL", gate), 1);
    assert_int_equal(depth(origin), 0);
    itest_queue_delete(W.amqp, 1, origin);
    assert_int_equal(stop(a), 0);
}

/* ---- a replica killed between its publish and its settle ----------------- */

static void test_replica_killed_after_publish(void **state) {
    (void)state;
    const char *origin = name("killed", 0);
    declare(origin);
    int64_t gate = park(origin, "exactly once");
    /* Replica A alone gets the replay; it publishes, then pauses before
     * settling (the test hook), and is killed there. */
    rp_child *a = replica((char *[]){"RP_TEST_PAUSE_AFTER_REPLAY_PUBLISH_MS=60000",
                                     "REAPER_CONTROL_REPLAY_CLAIM_SECONDS=8", NULL});
    pid_t a_pid = a->pid;
    publish_answer(W.amqp, gate, "replay", "killed-1");
    ITEST_POLL(depth(origin) >= 1, 10000);
    assert_int_equal(depth(origin), 1);
    /* Published, not settled: A is in the window. */
    assert_true(gate_open(gate));
    forget(a);
    assert_int_equal(rp_child_stop(a, SIGKILL, 5000), -2);
    rp_child_free(a);

    /* Replica B: the unacked request comes back to it. Whatever B answers
     * (busy while the claim is live, then a takeover report), it never
     * publishes the message again. */
    rp_child *b = replica((char *[]){"REAPER_CONTROL_REPLAY_CLAIM_SECONDS=8", NULL});
    char a_id[32];
    snprintf(a_id, sizeof a_id, ":%d:", (int)a_pid);
    bool reported = false;
    int busy = 0;
    json_t *j = next_reply(W.amqp, 30000); /* the redelivered request's reply */
    assert_non_null(j);
    for (int round = 0; round < 40; round++) {
        const char *code = code_of(j);
        if (*code == '\0') dump("after the kill", j);
        assert_string_not_equal(outcome_of(j), "replayed"); /* never published again */
        assert_true(*code != '\0');
        if (strcmp(code, "busy") == 0) {
            assert_non_null(strstr(message_of(j), "is being replayed by"));
            assert_non_null(strstr(message_of(j), a_id));
            busy++;
        } else {
            if (strcmp(code, "conflict") != 0) dump("after the kill", j);
            assert_string_equal(code, "conflict");
            assert_non_null(strstr(message_of(j), "may have been published once already"));
            assert_non_null(strstr(message_of(j), a_id));
            reported = true;
        }
        json_decref(j);
        assert_int_equal(depth(origin), 1);
        if (reported) break;
        usleep(500 * 1000);
        j = answer(gate, "replay");
    }
    assert_true(reported);
    fprintf(stderr, "after the kill: %d busy, then reported\n", busy);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateClaimTakenOver' "
                                   "AND (payload->>'gate')::int8 = %" PRId64 " AND "
                                   "payload->>'claimed_by' LIKE '%%%s%%'", gate, a_id), 1);
    /* The person, told, sees the message on its queue and dismisses. */
    j = answer(gate, "dismiss");
    if (strcmp(outcome_of(j), "dismissed") != 0) dump("dismiss", j);
    assert_string_equal(outcome_of(j), "dismissed");
    json_decref(j);
    usleep(300 * 1000); /* Deliberate: a window for a publish that must not happen to show. */
    assert_int_equal(depth(origin), 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered' "
                                   "AND (payload->>'gate')::int8 = %" PRId64, gate), 1);
    itest_queue_delete(W.amqp, 1, origin);
    assert_int_equal(stop(b), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fifty_answers_two_replicas, kill_leftovers),
        cmocka_unit_test_teardown(test_claim_of_another_process, kill_leftovers),
        cmocka_unit_test_teardown(test_replica_killed_after_publish, kill_leftovers),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
