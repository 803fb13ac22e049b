/*
 * The backfill of dead-letter queues by `reaperd --once` (the sweep's pass),
 * against real dead-lettering on the broker (messages rejected into a
 * dead-letter exchange before reaper ran):
 *   - an owned classic dead-letter queue: every dead letter is parked, and
 *     the queue still holds all of them; a second pass parks nothing new;
 *   - dead_letter_peek_limit: only the first N are read, the pass says so;
 *   - a dead-letter queue reaper does not own: surfaced, untouched;
 *   - an owned QUORUM dead-letter queue with a delivery limit of 2 (each
 *     read returned to a quorum queue spends a delivery, so three reads
 *     would drop the head): read by the first pass only, then never again,
 *     however many passes run; nothing is lost. RabbitMQ 4.0 gives every
 *     quorum queue a limit of 20 by default; 2 makes the test bite on 3.10
 *     too;
 *   - the quorum read under its lock (issue #15): while another session (a
 *     replica reading it) holds the queue's advisory lock, a pass does not
 *     read it and says so; once released, one pass reads it, once;
 *   - a park of a quorum read that fails does not lose the read: it is not
 *     recorded, and a later pass reads the queue again and parks it all.
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
#include "once_common.h"
#include "pg_fixture.h"
#include "test_daemon.h"

typedef struct world {
    pgfx *f;
    amqp_connection_state_t amqp;
    char prefix[64];
    char env_owned[128];
    itest_made made; /* queues to delete at the end, whatever happened */
} world;

static world W;

static int group_setup(void **state) {
    (void)state;
    W.f = pgfx_new("backfill");
    snprintf(W.prefix, sizeof W.prefix, "vibey.itest.bf%d", (int)getpid());
    /* Owned: only this run's queues. With the default '^vibey\.' every
     * reaperd of this test would also read, park and note the dead-letter
     * queues of the other tests sharing the broker (and spend deliveries on
     * their quorum ones), and its notes could be about their queues. */
    itest_env_owned(W.env_owned, sizeof W.env_owned, "bf");
    W.amqp = itest_amqp_connect();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    amqp_channel_close(W.amqp, 1, AMQP_REPLY_SUCCESS);
    amqp_channel_open(W.amqp, 1);
    amqp_get_rpc_reply(W.amqp);
    itest_made_delete(&W.made, W.amqp);
    itest_amqp_close(W.amqp);
    pgfx_free(W.f);
    return 0;
}

#define ok_rpc(what) itest_ok_rpc(W.amqp, what)

static uint32_t depth(const char *queue) { return (uint32_t)itest_queue_depth(W.amqp, 1, queue); }

/* n dead letters on dlq from origin (itest_dead_letters); quorum makes dlq
 * a quorum queue with x-delivery-limit limit. Both are deleted at the end. */
static void dead_letter(const char *origin, const char *dlq, int n, bool quorum, int limit) {
    itest_made_add(&W.made, origin);
    itest_made_add(&W.made, dlq);
    itest_dead_letters(W.amqp, origin, dlq, n, quorum ? limit : 0);
}

/* Runs reaperd --once --json with extra environment (may be NULL) and
 * returns the report. */
static json_t *once_as(const char *extra, bool dry_run) {
    return itest_once_report(W.f->schema, (char *[]){W.env_owned, (char *)extra, NULL}, dry_run,
                             false);
}

static json_t *once(const char *extra) { return once_as(extra, false); }

static int64_t parked_on(const char *dlq) {
    return pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE queue = '%s'", dlq);
}

/* Whether the report has a note about dead-letter queue dlq that says
 * needle. A pass notes every queue it examines: a note that does not name
 * the queue may be about another one. */
static bool has_note(const json_t *rep, const char *dlq, const char *needle) {
    char about[200];
    snprintf(about, sizeof about, "dead-letter queue %s on vhost ", dlq);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(rep, "notes"), i, n) {
        const char *s = json_string_value(n);
        if (s && strncmp(s, about, strlen(about)) == 0 && strstr(s, needle)) return true;
    }
    return false;
}

/* Whether the report has a note that names dlq and says needle. */
static bool has_note_naming(const json_t *rep, const char *dlq, const char *needle) {
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(rep, "notes"), i, n) {
        const char *s = json_string_value(n);
        if (s && strstr(s, dlq) && strstr(s, needle)) return true;
    }
    return false;
}

/* Passes (dry runs when dry_run) until one notes needle about dlq
 * (has_note; naming: any note naming dlq, has_note_naming), for up to 60 s
 * of measured time, half a second apart (the management API's statistics
 * lag a few seconds). true when one did. */
static bool once_until_noted(const char *dlq, const char *needle, bool dry_run, bool naming) {
    bool noted = false;
    for (long long end = itest_mono_ms() + 60000; !noted && itest_mono_ms() < end;) {
        json_t *rep = once_as(NULL, dry_run);
        noted = naming ? has_note_naming(rep, dlq, needle) : has_note(rep, dlq, needle);
        json_decref(rep);
        if (!noted) usleep(500 * 1000);
    }
    return noted;
}

/* Passes until the management API shows the queue's depth and the backfill
 * parks want rows (its statistics lag by a few seconds), for up to 60 s. */
static void once_until_parked(const char *dlq, int64_t want, const char *extra) {
    for (long long end = itest_mono_ms() + 60000; parked_on(dlq) < want && itest_mono_ms() < end;) {
        json_t *rep = once(extra);
        assert_true(json_is_true(json_object_get(rep, "ok")));
        json_decref(rep);
        if (parked_on(dlq) < want) usleep(500 * 1000);
    }
    assert_int_equal(parked_on(dlq), want);
}

static void delete_queue(const char *q) {
    amqp_queue_delete(W.amqp, 1, amqp_cstring_bytes(q), 0, 0);
    ok_rpc("queue delete");
}

/* Dead letters that were on an owned classic dead-letter queue before
 * reaper ran are parked, each once, and the queue still holds them all. */
static void test_classic_backfill(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.orders", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 5, false, 0);
    once_until_parked(dlq, 5, NULL);
    assert_int_equal(depth(dlq), 5);
    char want[200];
    snprintf(want, sizeof want, "\"%s\"", origin);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE queue = '%s' AND "
                                   "origin_queue = '%s' AND reason = '\"rejected\"' AND "
                                   "convert_from(body, 'UTF8') LIKE 'body %%' AND NOT "
                                   "body_truncated AND properties->>'content_type' = 'text/plain' "
                                   "AND headers ? 'x-death'",
                              dlq, want),
                     5);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM dead_letter d JOIN gate g ON "
                                   "g.id = d.gate_id WHERE d.queue = '%s' AND g.answer IS NULL",
                              dlq),
                     5);
    /* Again: nothing new, nothing removed. */
    json_t *rep = once(NULL);
    assert_true(json_is_true(json_object_get(rep, "ok")));
    json_decref(rep);
    assert_int_equal(parked_on(dlq), 5);
    assert_int_equal(depth(dlq), 5);
    delete_queue(origin);
    delete_queue(dlq);
}

/* At most dead_letter_peek_limit per queue per pass, and the pass says what
 * it did not read. Beside it, a dead-letter queue like another test's
 * (vibey.*, but not this run's): not owned by this run, so never read and
 * never noted as examined (it once was, by the default owned pattern, and
 * its note was taken for this queue's). */
static void test_peek_limit(void **state) {
    (void)state;
    char origin[128], dlq[160], other_origin[128], other_dlq[160];
    snprintf(origin, sizeof origin, "%s.limited", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dead", origin);
    snprintf(other_origin, sizeof other_origin, "vibey.itest.bfn%d.limited", (int)getpid());
    snprintf(other_dlq, sizeof other_dlq, "%s.dead", other_origin);
    dead_letter(other_origin, other_dlq, 5, false, 0);
    dead_letter(origin, dlq, 5, false, 0);
    bool noted = false;
    for (int i = 0; i < 20 && !noted; i++) {
        json_t *rep = once("REAPER_REAP_DEAD_LETTER_PEEK_LIMIT=3");
        noted = has_note(rep, dlq, "the first 3 messages were examined");
        assert_false(has_note(rep, other_dlq, "examined"));
        if (noted && parked_on(dlq) != 3) {
            char *text = json_dumps(rep, JSON_COMPACT);
            fprintf(stderr, "peek limit: the pass that noted the limit parked %lld: %s\n",
                    (long long)parked_on(dlq), text ? text : "?");
            free(text);
        }
        json_decref(rep);
        if (!noted) usleep(500 * 1000);
    }
    assert_true(noted);
    assert_int_equal(parked_on(dlq), 3);
    assert_int_equal(depth(dlq), 5);
    assert_int_equal(parked_on(other_dlq), 0);
    assert_int_equal(depth(other_dlq), 5);
    delete_queue(origin);
    delete_queue(dlq);
    delete_queue(other_origin);
    delete_queue(other_dlq);
}

/* A dead-letter queue reaper does not own: surfaced, never read. */
static void test_foreign_dlq_untouched(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "celery.itest.bf%d", (int)getpid());
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 2, false, 0);
    bool surfaced = false;
    for (int i = 0; i < 20 && !surfaced; i++) {
        json_t *rep = once(NULL);
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(rep, "verdicts"), k, v) {
            const char *q = json_string_value(json_object_get(v, "queue"));
            if (q && strcmp(q, dlq) == 0 &&
                strcmp(json_string_value(json_object_get(v, "condition")), "DEAD_LETTER") == 0 &&
                strcmp(json_string_value(json_object_get(v, "action")), "SURFACED") == 0)
                surfaced = true;
        }
        json_decref(rep);
        if (!surfaced) usleep(500 * 1000);
    }
    assert_true(surfaced);
    assert_int_equal(parked_on(dlq), 0);
    assert_int_equal(depth(dlq), 2);
    /* Nothing was read: a message on it was never redelivered. */
    amqp_rpc_reply_t r = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(dlq), 0);
    assert_int_equal(r.reply.id, AMQP_BASIC_GET_OK_METHOD);
    assert_false(((amqp_basic_get_ok_t *)r.reply.decoded)->redelivered);
    amqp_message_t m;
    assert_int_equal(amqp_read_message(W.amqp, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_destroy_message(&m);
    amqp_channel_close(W.amqp, 1, AMQP_REPLY_SUCCESS); /* returns it */
    amqp_channel_open(W.amqp, 1);
    ok_rpc("channel reopen");
    delete_queue(origin);
    delete_queue(dlq);
}

/* The x-delivery-count of the head of a quorum queue, read with a get that
 * is returned (it spends one more delivery). -1 when absent. */
static int64_t head_delivery_count(const char *q) {
    amqp_rpc_reply_t r = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(q), 0);
    assert_int_equal(r.reply.id, AMQP_BASIC_GET_OK_METHOD);
    amqp_message_t m;
    assert_int_equal(amqp_read_message(W.amqp, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
    int64_t n = -1;
    const amqp_basic_properties_t *p = &m.properties;
    for (int i = 0; (p->_flags & AMQP_BASIC_HEADERS_FLAG) && i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (e->key.len == 16 && memcmp(e->key.bytes, "x-delivery-count", 16) == 0)
            n = e->value.kind == AMQP_FIELD_KIND_I64 ? e->value.value.i64
                : e->value.kind == AMQP_FIELD_KIND_I32 ? e->value.value.i32 : -2;
    }
    amqp_destroy_message(&m);
    amqp_channel_close(W.amqp, 1, AMQP_REPLY_SUCCESS);
    amqp_channel_open(W.amqp, 1);
    ok_rpc("channel reopen");
    return n;
}

/* A quorum dead-letter queue with a delivery limit of 2, read by many
 * passes: read once, never again; every dead letter parked; none lost. */
static void test_quorum_dlq_read_once(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.quorum", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 4, true, 2);
    /* Dry runs read nothing (a read would spend a delivery). */
    json_t *rep;
    assert_true(once_until_noted(dlq, "not read by a dry run", true, false));
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = "
                                   "'DeadLetterBackfillRead' AND payload->>'queue' = '%s'",
                              dlq),
                     0);
    once_until_parked(dlq, 4, NULL);
    for (int i = 0; i < 5; i++) {
        rep = once(NULL);
        assert_true(json_is_true(json_object_get(rep, "ok")));
        /* Every later pass says why it leaves the queue alone. */
        assert_true(has_note(rep, dlq, "not read again"));
        json_decref(rep);
    }
    assert_int_equal(depth(dlq), 4);
    assert_int_equal(parked_on(dlq), 4);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = "
                                   "'DeadLetterBackfillRead' AND payload->>'queue' = '%s'",
                              dlq),
                     1);
    /* The head was delivered once by the backfill: this get sees that one
     * return counted (3.10 and 4.0 both count a returned get). */
    int64_t count = head_delivery_count(dlq);
    fprintf(stderr, "quorum dead-letter queue head x-delivery-count after the passes: %lld\n",
            (long long)count);
    assert_int_equal(count, 1);
    /* The return of that get reaches the quorum queue's log a moment later. */
    ITEST_POLL(depth(dlq) == 4, 10000);
    assert_int_equal(depth(dlq), 4);
    delete_queue(origin);
    delete_queue(dlq);
}

/* The running daemon's sweep backfills too, and a backfilled dead letter
 * (headers as the broker wrote them, captured by the peek) replays with its
 * original properties and without the dead-letter headers. */
static void test_daemon_sweep_backfill_and_replay(void **state) {
    (void)state;
    char origin[128], dlq[160], control[128];
    snprintf(origin, sizeof origin, "%s.live", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    snprintf(control, sizeof control, "vibey.reap.control.itest.bf.%d", (int)getpid());
    dead_letter(origin, dlq, 2, false, 0);
    char *env[] = {W.env_owned, "REAPER_REAP_INTERVAL_SECONDS=1", NULL};
    itest_daemon_opts o = {.schema = W.f->schema, .control = control, .env = env,
                           .ready = {ITEST_READY_BROKER}, .ready_ms = 30000};
    rp_child *d = itest_daemon_start(&o);
    for (int i = 0; i < 60 && parked_on(dlq) < 2; i++) rp_child_drain(d, 500);
    assert_int_equal(parked_on(dlq), 2);
    int64_t gate = pgfx_i64(W.f, "SELECT gate_id FROM dead_letter WHERE identity LIKE 'id:%%/%s-m0'",
                            origin);
    assert_true(gate > 0);
    char body[200];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%" PRId64
                                ",\"choice\":\"replay\"}", gate);
    /* A connection of its own: earlier tests reopened channel 1, which
     * ended W.amqp's direct reply-to consumer. */
    amqp_connection_state_t c = itest_amqp_connect();
    itest_reply r;
    assert_int_equal(itest_request(c, control, "application/json", body, strlen(body), NULL,
                                   true, "bf-1", &r, 20000),
                     0);
    if (strstr(r.body, "\"replayed\"") == NULL) fprintf(stderr, "reply: %s\n", r.body);
    assert_non_null(strstr(r.body, "\"replayed\""));
    itest_reply_free(&r);
    amqp_rpc_reply_t g = amqp_basic_get(c, 1, amqp_cstring_bytes(origin), 1);
    assert_int_equal(g.reply.id, AMQP_BASIC_GET_OK_METHOD);
    amqp_message_t m;
    assert_int_equal(amqp_read_message(c, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
    itest_amqp_close(c);
    assert_int_equal(m.body.len, 6);
    assert_memory_equal(m.body.bytes, "body 0", 6);
    const amqp_basic_properties_t *p = &m.properties;
    assert_true(p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG);
    char want[200];
    snprintf(want, sizeof want, "%s-m0", origin);
    assert_int_equal(p->message_id.len, strlen(want));
    assert_memory_equal(p->message_id.bytes, want, strlen(want));
    assert_true(p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG);
    assert_memory_equal(p->content_type.bytes, "text/plain", 10);
    /* The original had no headers: the dead-letter ones are all gone. */
    assert_false(p->_flags & AMQP_BASIC_HEADERS_FLAG);
    amqp_destroy_message(&m);
    assert_int_equal(depth(dlq), 2); /* the broker's copies stay */
    assert_int_equal(itest_daemon_stop(d), 0);
    amqp_queue_delete(W.amqp, 1, amqp_cstring_bytes(control), 0, 0);
    ok_rpc("control queue delete");
}

/* The backfill's advisory lock on a queue, as rp_pg_backfill_lock takes it
 * (adapters/postgres/rp_pg_replay.c), on the test's own session. */
static void backfill_lock(const char *dlq, bool take) {
    pgfx_exec(W.f, "SELECT pg_advisory_%s(hashtextextended('reaper.backfill/' || '%s' || '/' || "
                   "'/' || '/' || '%s', 0))",
              take ? "lock" : "unlock", W.f->schema, dlq);
}

static int64_t read_records(const char *dlq) {
    return pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'DeadLetterBackfillRead' AND "
                         "payload->>'queue' = '%s'", dlq);
}

/* A quorum dead-letter queue another replica is reading (its lock held)
 * is left alone, with a note; once the lock is free it is read once. */
static void test_quorum_read_waits_for_lock(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.locked", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 3, true, 20);
    backfill_lock(dlq, true);
    assert_true(once_until_noted(dlq, "another reaperd is reading", false, false));
    assert_int_equal(parked_on(dlq), 0);
    assert_int_equal(read_records(dlq), 0);
    backfill_lock(dlq, false);
    once_until_parked(dlq, 3, NULL);
    assert_int_equal(read_records(dlq), 1);
    /* Read by one pass only: the head was delivered once (and once more by
     * this get). */
    assert_int_equal(head_delivery_count(dlq), 1);
    delete_queue(origin);
    delete_queue(dlq);
}

/* Parks of a quorum read that fail: the read is not recorded, so the next
 * pass reads the queue again and parks every message. */
static void test_quorum_failed_park_keeps_read(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.parkfail", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 2, true, 20);
    pgfx_exec(W.f, "CREATE FUNCTION itest_fail_park() RETURNS trigger LANGUAGE plpgsql AS "
                   "$$BEGIN RAISE EXCEPTION 'itest: park refused'; END$$");
    pgfx_exec(W.f, "CREATE TRIGGER itest_fail_park BEFORE INSERT ON dead_letter FOR EACH ROW "
                   "WHEN (NEW.queue = '%s') EXECUTE FUNCTION itest_fail_park()", dlq);
    assert_true(once_until_noted(dlq, "could not be examined", false, true));
    assert_int_equal(parked_on(dlq), 0);
    assert_int_equal(read_records(dlq), 0);
    pgfx_exec(W.f, "DROP TRIGGER itest_fail_park ON dead_letter");
    pgfx_exec(W.f, "DROP FUNCTION itest_fail_park()");
    once_until_parked(dlq, 2, NULL);
    assert_int_equal(read_records(dlq), 1);
    delete_queue(origin);
    delete_queue(dlq);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classic_backfill),
        cmocka_unit_test(test_peek_limit),
        cmocka_unit_test(test_foreign_dlq_untouched),
        cmocka_unit_test(test_quorum_dlq_read_once),
        cmocka_unit_test(test_quorum_read_waits_for_lock),
        cmocka_unit_test(test_quorum_failed_park_keeps_read),
        cmocka_unit_test(test_daemon_sweep_backfill_and_replay),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
