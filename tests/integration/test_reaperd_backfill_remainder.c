/*
 * What the backfill could not read (issue #5, "Dead letters that predate
 * the tap"), by `reaperd --once` against real dead-lettering on the broker:
 *   - an owned CLASSIC dead-letter queue with 5 dead letters and
 *     dead_letter_peek_limit 3: the 3 are parked and the 2 behind them are
 *     a SURFACED DEAD_LETTER verdict on the queue (measured 2, threshold 3)
 *     with an open sighting; a later pass says nothing new and keeps it;
 *     once the test purges the queue (as an operator would) a pass CLEARS
 *     it;
 *   - an owned QUORUM dead-letter queue (read once, ever: each read spends
 *     a delivery) with 5 dead letters and limit 3: the pass that reads it
 *     surfaces the 2 behind, the count is kept with the read's record, and
 *     a later pass that does not read it still knows "up to 2" (bounded by
 *     the depth as consumers take from the head) and clears it when the
 *     queue is empty;
 *   - an owned STREAM dead-letter queue cannot be read at all: what it
 *     holds is surfaced as unread, and cleared when the stream is gone;
 *   - the running daemon: an event check of the dead-letter queue (a
 *     consumer of it went away), which does no backfill, keeps the
 *     sighting the sweep opened instead of clearing it;
 *   - reaper removes nothing from a dead-letter queue in any case.
 * The queues are named outside the default owned pattern and the passes
 * own only this run's (REAPER_REAP_OWNED_QUEUE_PATTERN), so that another
 * test's reaperd on the same broker never reads them: a read of theirs
 * would hold messages while ours counts, and spend quorum deliveries.
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
#include "once_common.h"
#include "pg_fixture.h"
#include "test_daemon.h"

#define LIMIT_ENV "REAPER_REAP_DEAD_LETTER_PEEK_LIMIT=3"

typedef struct world {
    pgfx *f;
    amqp_connection_state_t amqp;
    char prefix[64];
    char env_owned[128];
    itest_made made;    /* queues to delete at the end, whatever happened */
    rp_child *daemon;   /* a running reaperd, stopped whatever happened */
} world;

static world W;

static int group_setup(void **state) {
    (void)state;
    W.f = pgfx_new("remainder");
    snprintf(W.prefix, sizeof W.prefix, "itrem%d", (int)getpid());
    snprintf(W.env_owned, sizeof W.env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^itrem%d\\.",
             (int)getpid());
    W.amqp = itest_amqp_connect_plain();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    itest_made_delete(&W.made, W.amqp);
    itest_amqp_close(W.amqp);
    pgfx_free(W.f);
    return 0;
}

#define ok_rpc(what) itest_ok_rpc(W.amqp, what)

static long depth(const char *queue) { return itest_queue_depth(W.amqp, 1, queue); }

/* n dead letters on dlq from origin (itest_dead_letters); quorum makes dlq
 * a quorum queue with a delivery limit of 5. Both are deleted at the end. */
static void dead_letter(const char *origin, const char *dlq, int n, bool quorum) {
    itest_made_add(&W.made, origin);
    itest_made_add(&W.made, dlq);
    itest_dead_letters(W.amqp, origin, dlq, n, quorum ? 5 : 0);
}

/* Takes k messages off the head of q, acknowledged (a consumer's work). */
static void take(const char *q, int k) {
    for (int i = 0; i < k; i++) {
        amqp_rpc_reply_t r = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(q), 1);
        assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
        assert_int_equal(r.reply.id, AMQP_BASIC_GET_OK_METHOD);
        amqp_message_t m;
        assert_int_equal(amqp_read_message(W.amqp, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_destroy_message(&m);
    }
}

/* reaperd --once --json [--dry-run] with the peek limit given as its
 * environment entry. */
static json_t *once_with(bool dry_run, const char *limit_env) {
    return itest_once_report(W.f->schema, (char *[]){W.env_owned, (char *)limit_env, NULL},
                             dry_run, true);
}

/* reaperd --once --json [--dry-run] with the peek limit of 3. */
static json_t *once(bool dry_run) { return once_with(dry_run, LIMIT_ENV); }

static const char *str(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* The report's DEAD_LETTER verdict with this action on the queue object
 * of q (borrowed from rep), or NULL. */
static const json_t *queue_verdict(const json_t *rep, const char *q, const char *action) {
    char object[200];
    snprintf(object, sizeof object, "queue:/:%s", q);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(rep, "verdicts"), i, v) {
        if (strcmp(str(v, "object"), object) == 0 &&
            strcmp(str(v, "condition"), "DEAD_LETTER") == 0 &&
            strcmp(str(v, "action"), action) == 0)
            return v;
    }
    return NULL;
}

static bool has_note(const json_t *rep, const char *needle) {
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(rep, "notes"), i, n)
        if (json_string_value(n) && strstr(json_string_value(n), needle)) return true;
    return false;
}

/* Passes until one reports the verdict (the management API's statistics
 * lag by a few seconds); returns that pass's report (the caller frees). */
static json_t *once_until(const char *q, const char *action) {
    for (int i = 0; i < 24; i++) {
        json_t *rep = once(false);
        if (queue_verdict(rep, q, action) != NULL) return rep;
        json_decref(rep);
        usleep(500 * 1000);
    }
    fprintf(stderr, "no %s DEAD_LETTER verdict on %s\n", action, q);
    fail();
    return NULL;
}

static int64_t parked_on(const char *dlq) {
    return pgfx_i64(W.f, "SELECT count(*) FROM dead_letter WHERE queue = '%s'", dlq);
}

static int64_t sightings_of(const char *dlq) {
    return pgfx_i64(W.f, "SELECT count(*) FROM sighting WHERE key = 'broker|DEAD_LETTER|queue:/:%s'"
                         " AND condition = 'DEAD_LETTER'",
                    dlq);
}

static int64_t events_of(const char *dlq, const char *action) {
    return pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND "
                         "payload->>'object' = 'queue:/:%s' AND payload->>'action' = '%s' AND "
                         "payload->>'condition' = 'DEAD_LETTER'",
                    dlq, action);
}

static void assert_verdict(const json_t *v, double measured, int64_t threshold,
                           const char *detail_part) {
    assert_non_null(v);
    assert_true(json_number_value(json_object_get(v, "measured")) == measured);
    assert_int_equal(json_integer_value(json_object_get(v, "threshold")), threshold);
    assert_string_equal(str(v, "unit"), "messages");
    assert_string_equal(str(v, "source"), "broker");
    assert_true(json_is_true(json_object_get(v, "trusted")));
    if (strstr(str(v, "detail"), detail_part) == NULL)
        fprintf(stderr, "detail: %s\n", str(v, "detail"));
    assert_non_null(strstr(str(v, "detail"), detail_part));
}

/* Classic: the 2 behind the first 3 are surfaced; the next pass reads
 * past the 3 parked (issue 14), parks the 2 and clears the sighting;
 * nothing is ever removed. */
static void test_classic_remainder_surfaced_then_cleared(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.orders", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 5, false);
    json_t *rep = once_until(dlq, "SURFACED");
    const json_t *v = queue_verdict(rep, dlq, "SURFACED");
    assert_verdict(v, 2.0, 3, "holds 2 messages behind those this pass read");
    assert_string_equal(str(v, "queue"), dlq);
    assert_true(has_note(rep, "the first 3 messages were examined"));
    json_decref(rep);
    assert_int_equal(parked_on(dlq), 3);
    assert_int_equal(sightings_of(dlq), 1);
    assert_int_equal(events_of(dlq, "SURFACED"), 1);
    assert_int_equal(depth(dlq), 5);

    /* The next pass reads past the 3 parked: the 2 are parked, nothing is
     * left unread, and the sighting clears. */
    rep = once(false);
    assert_non_null(queue_verdict(rep, dlq, "CLEARED"));
    json_decref(rep);
    assert_int_equal(parked_on(dlq), 5);
    assert_int_equal(sightings_of(dlq), 0);
    assert_int_equal(events_of(dlq, "CLEARED"), 1);
    assert_int_equal(events_of(dlq, "SURFACED"), 1);
    assert_int_equal(depth(dlq), 5); /* nothing removed by reaper */

    /* Again: nothing new. */
    rep = once(false);
    assert_null(queue_verdict(rep, dlq, "SURFACED"));
    json_decref(rep);
    assert_int_equal(parked_on(dlq), 5);
    assert_int_equal(events_of(dlq, "SURFACED"), 1);
    assert_int_equal(depth(dlq), 5);
}

/* A backlog of 600 dead letters on a classic dead-letter queue that the
 * tap never saw, dead_letter_peek_limit 100 (issue 14): each pass reads
 * past the ones parked before and parks 100 new ones, so 6 passes park all
 * 600, each exactly once; the broker's copies all stay on the queue. */
static void test_classic_backlog_parked_limit_per_pass(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.backlog", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 600, false);
    const char *limit = "REAPER_REAP_DEAD_LETTER_PEEK_LIMIT=100";
    /* Until the management API's statistics show the queue, a pass does
     * not backfill it. */
    for (int i = 0; i < 40 && parked_on(dlq) == 0; i++) {
        json_decref(once_with(false, limit));
        if (parked_on(dlq) == 0) usleep(500 * 1000);
    }
    assert_int_equal(parked_on(dlq), 100);
    assert_int_equal(sightings_of(dlq), 1); /* the 500 behind */
    for (int pass = 2; pass <= 6; pass++) {
        json_t *rep = once_with(false, limit);
        json_decref(rep);
        fprintf(stderr, "# pass %d: %lld parked\n", pass, (long long)parked_on(dlq));
        assert_int_equal(parked_on(dlq), 100 * pass);
        assert_int_equal(depth(dlq), 600);
    }
    assert_int_equal(sightings_of(dlq), 0);
    assert_int_equal(events_of(dlq, "CLEARED"), 1);
    json_decref(once_with(false, limit));
    assert_int_equal(parked_on(dlq), 600);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(DISTINCT identity) FROM dead_letter WHERE "
                                   "queue = '%s'",
                              dlq),
                     600);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND "
                                   "payload->>'queue' = '%s' AND payload->>'action' = 'PARKED'",
                              dlq),
                     600);
    assert_int_equal(depth(dlq), 600);
}

/* Quorum: read once; the pass that reads it surfaces the 2 behind, the
 * record keeps the count, later passes do not read it and still know "up
 * to 2", bounded by the depth, and clear it once the queue is empty. */
static void test_quorum_remainder_after_its_one_read(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.quorum", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 5, true);

    /* A dry run reads no quorum queue: it reports them all as unread (the
     * depth the management API gives, once its statistics caught up). */
    json_t *rep = NULL;
    const json_t *v = NULL;
    for (int i = 0; i < 24; i++) {
        json_decref(rep);
        rep = once(true);
        v = queue_verdict(rep, dlq, "SURFACED");
        if (v && json_number_value(json_object_get(v, "measured")) == 5.0) break;
        usleep(500 * 1000);
    }
    assert_verdict(v, 5.0, 0, "holds 5 messages that this dry run did not read");
    json_decref(rep);
    assert_int_equal(sightings_of(dlq), 0);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = "
                                   "'DeadLetterBackfillRead' AND payload->>'queue' = '%s'",
                              dlq),
                     0);

    rep = once_until(dlq, "SURFACED");
    v = queue_verdict(rep, dlq, "SURFACED");
    assert_verdict(v, 2.0, 3, "holds 2 messages that lay behind what the backfill's one read");
    json_decref(rep);
    assert_int_equal(parked_on(dlq), 3);
    assert_int_equal(sightings_of(dlq), 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT (payload->>'unread')::int8 FROM ledger WHERE kind = "
                                   "'DeadLetterBackfillRead' AND payload->>'queue' = '%s'",
                              dlq),
                     2);

    /* The next pass does not read it, and keeps the sighting open. */
    rep = once(false);
    assert_true(has_note(rep, "not read again"));
    assert_null(queue_verdict(rep, dlq, "CLEARED"));
    json_decref(rep);
    assert_int_equal(sightings_of(dlq), 1);
    assert_int_equal(parked_on(dlq), 3);
    /* What that pass knows without reading: with the sighting row gone
     * (as if it had never been recorded), it is surfaced again, "up to 2",
     * from the read's record. */
    pgfx_exec(W.f, "DELETE FROM sighting WHERE key = 'broker|DEAD_LETTER|queue:/:%s'", dlq);
    rep = once(false);
    v = queue_verdict(rep, dlq, "SURFACED");
    assert_verdict(v, 2.0, 3, "holds up to 2 messages that lay behind");
    json_decref(rep);
    assert_int_equal(sightings_of(dlq), 1);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = "
                                   "'DeadLetterBackfillRead' AND payload->>'queue' = '%s'",
                              dlq),
                     1);
    assert_int_equal(depth(dlq), 5); /* nothing removed by reaper */

    /* A consumer takes 4 from the head: of the 2 behind the read at most
     * the 1 left can still be there. */
    take(dlq, 4);
    double measured = -1;
    for (int i = 0; i < 24 && measured != 1.0; i++) {
        pgfx_exec(W.f, "DELETE FROM sighting WHERE key = 'broker|DEAD_LETTER|queue:/:%s'", dlq);
        rep = once(false);
        v = queue_verdict(rep, dlq, "SURFACED");
        measured = v ? json_number_value(json_object_get(v, "measured")) : -1;
        if (measured == 1.0) assert_verdict(v, 1.0, 3, "holds up to 1 message that lay behind");
        json_decref(rep);
        if (measured != 1.0) usleep(500 * 1000);
    }
    assert_true(measured == 1.0);
    assert_int_equal(sightings_of(dlq), 1);

    /* And the last one: a later pass clears the sighting. */
    take(dlq, 1);
    rep = once_until(dlq, "CLEARED");
    json_decref(rep);
    assert_int_equal(sightings_of(dlq), 0);
    assert_int_equal(parked_on(dlq), 3);
}

/* A stream cannot be read by the backfill (basic.get does not apply):
 * everything an owned dead-letter stream holds is surfaced as unread, and
 * cleared once the stream is gone. */
static void test_stream_dlq_surfaced_as_unread(void **state) {
    (void)state;
    char dlq[160];
    snprintf(dlq, sizeof dlq, "%s.streamed.dlq", W.prefix);
    /* RabbitMQ 3.10 dropped what was dead-lettered into a stream here
     * (rejected or expired: the stream stayed at 0), so the dead letters
     * are put there as a shovel would. */
    itest_made_add(&W.made, dlq);
    amqp_table_entry_t qargs[1] = {{amqp_cstring_bytes("x-queue-type"),
                                    {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("stream")}}}};
    amqp_queue_declare(W.amqp, 1, amqp_cstring_bytes(dlq), 0, 1, 0, 0, (amqp_table_t){1, qargs});
    ok_rpc("stream declare");
    for (int i = 0; i < 2; i++)
        assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(dlq), 0, 0, NULL,
                                            amqp_cstring_bytes("dead")),
                         AMQP_STATUS_OK);
    json_t *rep = NULL;
    const json_t *v = NULL;
    for (int i = 0; i < 24; i++) {
        json_decref(rep);
        rep = once(false);
        v = queue_verdict(rep, dlq, "SURFACED");
        if (v && json_number_value(json_object_get(v, "measured")) == 2.0) break;
        /* Surfaced with a count that lagged: the sighting is open and
         * later passes say nothing, so it is opened afresh until it
         * says 2. */
        pgfx_exec(W.f, "DELETE FROM sighting WHERE key = 'broker|DEAD_LETTER|queue:/:%s'", dlq);
        usleep(500 * 1000);
    }
    if (v == NULL) {
        char *text = json_dumps(rep, JSON_COMPACT);
        fprintf(stderr, "stream: the last report: %s\n", text ? text : "?");
        free(text);
    }
    assert_verdict(v, 2.0, 0, "holds 2 messages that the backfill cannot read (a stream queue");
    assert_true(has_note(rep, "a stream queue cannot be read by the backfill"));
    json_decref(rep);
    assert_int_equal(parked_on(dlq), 0);
    assert_int_equal(sightings_of(dlq), 1);
    amqp_queue_delete(W.amqp, 1, amqp_cstring_bytes(dlq), 0, 0);
    ok_rpc("stream delete");
    rep = once_until(dlq, "CLEARED");
    json_decref(rep);
    assert_int_equal(sightings_of(dlq), 0);
}

/* The first line of the child's log from *from on that holds a and b; a
 * static copy, *from moved past it. Waits up to ms. NULL when none came. */
static const char *wait_line(rp_child *c, size_t *from, const char *a, const char *b, int ms) {
    static char line[4096];
    long long until = itest_mono_ms() + ms;
    for (;;) {
        while (*from < c->log_len) {
            const char *start = c->log + *from;
            const char *nl = strchr(start, '\n');
            if (nl == NULL) break; /* a line not finished yet */
            size_t len = (size_t)(nl - start);
            snprintf(line, sizeof line, "%.*s", (int)len, start);
            *from += len + 1;
            if (strstr(line, a) && strstr(line, b)) return line;
        }
        if (itest_mono_ms() > until) return NULL;
        rp_child_drain(c, 100);
    }
}

/* A daemon of this test (W.daemon) sweeping every 2 s, in text logs, with
 * the dead-letter peek limit limit_env, on a control queue and a tap queue
 * of its own ("<prefix>.control<k>", "<prefix>.tap<k>", deleted at the
 * end); not waited for. */
static rp_child *sweeping_daemon(const char *k, const char *limit_env) {
    char control[128], tap[128], env_tap[200];
    snprintf(control, sizeof control, "%s.control%s", W.prefix, k);
    snprintf(tap, sizeof tap, "%s.tap%s", W.prefix, k);
    snprintf(env_tap, sizeof env_tap, "REAPER_BROKER_TAP_QUEUE=%s", tap);
    itest_made_add(&W.made, control);
    itest_made_add(&W.made, tap);
    char *env[] = {W.env_owned, env_tap, (char *)limit_env, "REAPER_REAP_INTERVAL_SECONDS=2",
                   "REAPER_LOG_FORMAT=text", "REAPER_LOG_LEVEL=info", NULL};
    itest_daemon_opts o = {.schema = W.f->schema, .control = control, .env = env, .no_wait = true};
    return W.daemon = itest_daemon_start(&o);
}

/* Stops W.daemon; its exit code. */
static int stop_sweeping_daemon(void) {
    rp_child *d = W.daemon;
    W.daemon = NULL;
    return itest_daemon_stop(d);
}

/* The daemon: the sweep opens the sighting; a consumer of the dead-letter
 * queue goes away, so the queue is checked from the events (at once and
 * after the statistics), with no backfill: the sighting stays open, never
 * cleared (a wrong clear would be a CLEARED event, and the next sweep
 * would open it again). */
static void test_daemon_event_check_keeps_the_remainder(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.live", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    /* 300 with a peek limit of 3 and a sweep every 2 s: each sweep parks 3
     * more (it reads past the parked ones), so what is unread stays for
     * far longer than this test (and the sighting with it). */
    dead_letter(origin, dlq, 300, false);
    rp_child *d = sweeping_daemon("", LIMIT_ENV);
    assert_non_null(d);
    for (int i = 0; i < 60 && sightings_of(dlq) == 0; i++) rp_child_drain(d, 500);
    if (sightings_of(dlq) != 1) fprintf(stderr, "%s\n", d->log);
    assert_int_equal(sightings_of(dlq), 1);
    assert_int_equal(events_of(dlq, "SURFACED"), 1);

    /* A consumer takes one message (prefetch 1), is cancelled, and its
     * channel closes (the message goes back). */
    size_t from = d->log_len;
    amqp_channel_open(W.amqp, 2);
    ok_rpc("channel open");
    amqp_basic_qos(W.amqp, 2, 0, 1, 0);
    ok_rpc("qos");
    amqp_basic_consume(W.amqp, 2, amqp_cstring_bytes(dlq), amqp_cstring_bytes("rem.victim"), 0,
                       0, 0, amqp_empty_table);
    ok_rpc("consume");
    amqp_envelope_t e;
    struct timeval tv = {5, 0};
    assert_int_equal(amqp_consume_message(W.amqp, &e, &tv, 0).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_destroy_envelope(&e);
    amqp_basic_cancel(W.amqp, 2, amqp_cstring_bytes("rem.victim"));
    ok_rpc("cancel");
    amqp_channel_close(W.amqp, 2, AMQP_REPLY_SUCCESS);

    char qfield[200];
    snprintf(qfield, sizeof qfield, "queue=%s ", dlq);
    const char *l = wait_line(d, &from, qfield, "phase=\"at once\"", 5000);
    if (l == NULL) fprintf(stderr, "%s\n", d->log);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    l = wait_line(d, &from, qfield, "phase=\"after statistics\"", 25000);
    if (l == NULL) fprintf(stderr, "%s\n", d->log);
    assert_non_null(l);
    fprintf(stderr, "# %s\n", l);
    rp_child_drain(d, 500);
    assert_int_equal(events_of(dlq, "CLEARED"), 0);
    assert_int_equal(events_of(dlq, "SURFACED"), 1);
    assert_int_equal(sightings_of(dlq), 1);
    int64_t parked = parked_on(dlq);
    fprintf(stderr, "# parked by the sweeps meanwhile: %lld\n", (long long)parked);
    assert_true(parked >= 3 && parked < 300);
    assert_int_equal(depth(dlq), 300);
    assert_int_equal(stop_sweeping_daemon(), 0);
    /* Its unparked rest would be parked by the next test's sweeps. */
    itest_queue_delete(W.amqp, 1, dlq);
}

/* The daemon (issue 14): 600 dead letters already on a classic
 * dead-letter queue when reaperd starts (its tap never saw them),
 * dead_letter_peek_limit 100 and a sweep every 2 s: the sweeps park 100
 * new ones each, past the ones parked before, until all 600 are parked,
 * each once; the broker's copies all stay on the queue. */
static void test_daemon_backlog_worked_through(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.startup", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 600, false);
    rp_child *d = sweeping_daemon("2", "REAPER_REAP_DEAD_LETTER_PEEK_LIMIT=100");
    size_t from = 0;
    int sweeps = 0, most = 0, total = 0;
    /* Counted from the sweeps' own lines until they add up to the 600 (a
     * sweep's line comes after its commit: stopping when the table holds
     * 600 could miss the last sweep's line). */
    for (int i = 0; i < 120 && (total < 600 || parked_on(dlq) < 600); i++) {
        const char *l = wait_line(d, &from, "\"pass finished\"", "scope=sweep", 1000);
        if (l == NULL) continue;
        const char *pk = strstr(l, " parked=");
        int n = pk ? atoi(pk + 8) : -1;
        if (n > most) most = n;
        if (n > 0) {
            sweeps++;
            total += n;
        }
    }
    if (parked_on(dlq) != 600 || most != 100 || sweeps < 6) fprintf(stderr, "%s\n", d->log);
    assert_int_equal(parked_on(dlq), 600);
    fprintf(stderr, "# 600 parked by %d sweeps, at most %d in one\n", sweeps, most);
    assert_int_equal(most, 100);
    assert_true(sweeps >= 6);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(DISTINCT identity) FROM dead_letter WHERE "
                                   "queue = '%s'",
                              dlq),
                     600);
    assert_int_equal(pgfx_i64(W.f, "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND "
                                   "payload->>'queue' = '%s' AND payload->>'action' = 'PARKED'",
                              dlq),
                     600);
    assert_int_equal(depth(dlq), 600);
    assert_int_equal(stop_sweeping_daemon(), 0);
}

/* After the daemon test: a failed assertion leaves the test at once, so
 * its reaperd (which would go on writing the policies with this run's
 * owned pattern) is stopped here. */
/* n messages "<origin>-<tag>-<i>" to origin, each with a header table of
 * entries strings of 100 bytes, then rejected: dead-lettered to the dlq
 * that itest_dead_letters declared. */
static void dead_letter_with_headers(const char *origin, const char *tag, int n, int entries) {
    amqp_table_entry_t *e = calloc((size_t)entries, sizeof *e);
    char(*keys)[16] = calloc((size_t)entries, sizeof *keys);
    char value[100];
    assert_true(e && keys);
    memset(value, 'v', sizeof value);
    for (int k = 0; k < entries; k++) {
        snprintf(keys[k], sizeof keys[k], "h%04d", k);
        e[k].key = amqp_cstring_bytes(keys[k]);
        e[k].value.kind = AMQP_FIELD_KIND_UTF8;
        e[k].value.value.bytes = (amqp_bytes_t){sizeof value, value};
    }
    for (int i = 0; i < n; i++) {
        char id[200];
        snprintf(id, sizeof id, "%s-%s-%d", origin, tag, i);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
        p.message_id = amqp_cstring_bytes(id);
        p.headers = (amqp_table_t){entries, e};
        assert_int_equal(amqp_basic_publish(W.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(origin), 0, 0, &p,
                                            amqp_cstring_bytes(id)),
                         AMQP_STATUS_OK);
        amqp_rpc_reply_t r;
        for (int tries = 0;; tries++) {
            r = amqp_basic_get(W.amqp, 1, amqp_cstring_bytes(origin), 0);
            assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
            if (r.reply.id == AMQP_BASIC_GET_OK_METHOD) break;
            assert_true(tries < 100);
            usleep(20 * 1000);
        }
        uint64_t dtag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
        amqp_message_t m;
        assert_int_equal(amqp_read_message(W.amqp, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_destroy_message(&m);
        assert_int_equal(amqp_basic_reject(W.amqp, 1, dtag, 0), 0);
    }
    free(keys);
    free(e);
}

/* The backfill keeps a header table as the tap does (issue 14 item 6): over
 * broker.tap_header_cap_bytes (64 KiB decoded) only the death headers are
 * stored and the dead letter is marked not replayable; under it, whole. A
 * message the backfill parks before the tap sees it is stored in the one
 * form either would store. */
static void test_backfill_caps_headers_as_the_tap(void **state) {
    (void)state;
    char origin[128], dlq[160];
    snprintf(origin, sizeof origin, "%s.heavy", W.prefix);
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    dead_letter(origin, dlq, 0, false);
    dead_letter_with_headers(origin, "heavy", 3, 800); /* ~800 x 100 bytes: over 64 KiB */
    dead_letter_with_headers(origin, "light", 2, 100); /* ~10 KiB */
    ITEST_POLL(depth(dlq) == 5, 10000);
    assert_int_equal(depth(dlq), 5);
    const char *limit = "REAPER_REAP_DEAD_LETTER_PEEK_LIMIT=100";
    for (int i = 0; i < 40 && parked_on(dlq) < 5; i++) {
        json_decref(once_with(false, limit));
        if (parked_on(dlq) < 5) usleep(500 * 1000);
    }
    assert_int_equal(parked_on(dlq), 5);
#define KEPT                                                                                       \
    "SELECT count(*) FROM dead_letter WHERE queue = '%s' AND encode(body, 'escape') LIKE "       \
    "'%%-%s-%%' AND %s"
    /* Heavy: no application header kept, the death headers kept, the
     * reason and the size stored. */
    assert_int_equal(pgfx_i64(W.f, KEPT, dlq, "heavy",
                              "properties->'$reaper'->>'not_replayable' LIKE '%%over "
                              "broker.tap_header_cap_bytes%%' AND "
                              "(properties->'$reaper'->>'headers_bytes')::int8 > 65536 AND "
                              "NOT headers ? 'h0000' AND headers ? 'x-death' AND body_truncated"),
                     3);
    /* Light: whole, replayable. */
    assert_int_equal(pgfx_i64(W.f, KEPT, dlq, "light",
                              "NOT properties ? '$reaper' AND headers ? 'h0099' AND "
                              "headers ? 'x-death' AND NOT body_truncated"),
                     2);
    assert_int_equal(depth(dlq), 5);
#undef KEPT
}

static int stop_daemon(void **state) {
    (void)state;
    (void)stop_sweeping_daemon();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classic_remainder_surfaced_then_cleared),
        cmocka_unit_test(test_classic_backlog_parked_limit_per_pass),
        cmocka_unit_test(test_quorum_remainder_after_its_one_read),
        cmocka_unit_test(test_stream_dlq_surfaced_as_unread),
        cmocka_unit_test(test_backfill_caps_headers_as_the_tap),
        cmocka_unit_test_teardown(test_daemon_event_check_keeps_the_remainder, stop_daemon),
        cmocka_unit_test_teardown(test_daemon_backlog_worked_through, stop_daemon),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
