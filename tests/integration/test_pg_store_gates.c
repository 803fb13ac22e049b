/*
 * The PostgreSQL store's dead-letter park and gates against the real
 * database: park idempotent by identity (through core's rp_park_dead_letter,
 * as the pass and the tap park), what a parked dead letter stores, the gate
 * listing, and answers settled once (retry, dismiss, replay, already
 * answered, not found, conflict, two at once). Each test works in a schema
 * of its own, dropped after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"
#include "pg_fixture.h"
#include "rp_gate_look.h"
#include "rp_park.h"
#include "rp_pg_store_internal.h" /* the batch park: internal to the adapter */
#include "rp_untrusted.h"

static int setup(void **state) {
    *state = pgfx_new("gates");
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

#define STR(s) ((rp_opt_str){true, {(const uint8_t *)(s), sizeof(s) - 1}})

/* A dead letter found on vibey.orders.dlq: message_id (or none), first
 * death queue and reason, one x-death entry. */
typedef struct letter {
    rp_xdeath death;
    rp_pg_dl_handle handle;
    rp_dl_message msg;
} letter;

static void make_letter(letter *l, const char *message_id, const uint8_t *body, size_t len) {
    memset(l, 0, sizeof *l);
    l->death.queue = STR("vibey.orders");
    l->death.reason = STR("rejected");
    l->death.time = (rp_opt_i64){true, 1700000000};
    l->death.count = (rp_opt_i64){true, 1};
    if (message_id)
        l->msg.headers.message_id =
            (rp_opt_str){true, {(const uint8_t *)message_id, strlen(message_id)}};
    l->msg.headers.first_death_queue = STR("vibey.orders");
    l->msg.headers.first_death_reason = STR("rejected");
    l->msg.headers.x_death = &l->death;
    l->msg.headers.n_x_death = 1;
    l->msg.body = (rp_bytes){body, len};
    l->handle.headers_json = "{\"x-first-death-queue\":\"vibey.orders\",\"x-death\":[{\"count\":1}]}";
    l->handle.properties_json = "{\"content_type\":\"application/json\",\"delivery_mode\":2}";
    l->msg.handle = &l->handle;
}

/* The port's is_parked for l, examined as the park examines it. */
static bool is_parked(pgfx *f, const letter *l) {
    rp_dead_letter d;
    assert_int_equal(rp_dead_letter_examine(&l->msg.headers, "/", "vibey.orders.dlq", f->dlq,
                                            l->msg.body, &d), RP_OK);
    bool parked = false;
    assert_int_equal(f->ports.dead_letters.is_parked(f->ports.dead_letters.self, &d, &parked),
                     RP_OK);
    rp_dead_letter_cleanup(&d);
    return parked;
}

static rp_park_outcome park(pgfx *f, const letter *l, bool dry_run, rp_status want) {
    rp_park_site site = {"/", "vibey.orders.dlq", f->dlq};
    rp_report r;
    rp_report_init(&r, dry_run);
    rp_park_outcome out = RP_PARKED_ALREADY;
    assert_int_equal(rp_park_dead_letter(&f->ports, &site, &l->msg, dry_run, &r, &out), want);
    rp_report_cleanup(&r);
    return out;
}

/* One park stores the dead letter, its job, its gate and its event; a
 * second park of the same identity adds nothing; a dry run writes nothing. */
static void test_park_is_idempotent_by_identity(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = {'{', 0x00, 0xff, 'x', '}'};
    letter l;
    make_letter(&l, "m-1", body, sizeof body);
    assert_false(is_parked(f, &l));
    /* A dry run only asks. */
    char *before = pgfx_dump(f);
    assert_int_equal(park(f, &l, true, RP_OK), RP_PARKED_WOULD);
    char *after = pgfx_dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(f->published, 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter WHERE identity = 'id:%%2F/vibey.orders/m-1'"
                                 " AND queue = 'vibey.orders.dlq'"
                                 " AND origin_queue = '\"vibey.orders\"'"
                                 " AND reason = '\"rejected\"'"
                                 " AND first_death_at = to_timestamp(1700000000)"
                                 " AND headers = '{\"x-death\": [{\"count\": 1}],"
                                 " \"x-first-death-queue\": \"vibey.orders\"}'::jsonb"
                                 " AND properties->>'content_type' = 'application/json'"
                                 " AND encode(body, 'hex') = '7b00ff787d'"
                                 " AND NOT body_truncated AND parked_at > now() - interval '1 minute'"),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter d JOIN job j ON j.id = d.job_id"
                                 " JOIN gate g ON g.id = d.gate_id AND g.job_id = j.id"
                                 " WHERE j.kind = 'bus.dead_letter' AND j.project_id = 'bus'"
                                 " AND j.state = 'awaiting_human' AND j.payload->>'vhost' = '/'"
                                 " AND j.payload->>'identity' = 'id:%%2F/vibey.orders/m-1'"
                                 " AND g.kind = 'bus_dead_lettered'"
                                 " AND g.choices = ARRAY['replay', 'dismiss'] AND g.answer IS NULL"
                                 " AND g.question LIKE '%%\"vibey.orders\"%%'"),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE project_id = 'bus'"
                                 " AND payload->>'condition' = 'DEAD_LETTER'"
                                 " AND payload->>'action' = 'PARKED'"
                                 " AND payload->>'object' = 'dead_letter:id:%%2F/vibey.orders/m-1'"
                                 " AND NOT (payload->>'trusted')::bool"),
                     1);
    assert_true(is_parked(f, &l));

    /* Again: nothing new, not even an orphan job or gate. */
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_ALREADY);
    assert_int_equal(pgfx_i64(f, "SELECT (SELECT count(*) FROM dead_letter) * 1000"
                                 " + (SELECT count(*) FROM job) * 100"
                                 " + (SELECT count(*) FROM gate) * 10"
                                 " + (SELECT count(*) FROM ledger)"),
                     1111);
    assert_int_equal(f->published, 1);
    /* The port directly: parked = false and nothing set. */
    rp_dead_letter d;
    assert_int_equal(rp_dead_letter_examine(&l.msg.headers, "/", "vibey.orders.dlq", f->dlq,
                                            l.msg.body, &d), RP_OK);
    rp_verdict v;
    assert_int_equal(rp_judge_dead_letter(&d, "/", "vibey.orders.dlq", &v), RP_OK);
    rp_park_result res;
    assert_int_equal(f->ports.dead_letters.park(f->ports.dead_letters.self, "/",
                                                "vibey.orders.dlq", &l.msg, &d, &v, &res),
                     RP_OK);
    assert_false(res.parked);
    assert_int_equal(res.job_id, 0);
    rp_verdict_cleanup(&v);
    rp_dead_letter_cleanup(&d);
}

/* Digest identities, truncated and oversized bodies, a first death no
 * timestamp holds, headers that are not JSON. */
static void test_park_edge_cases(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = "hello";
    letter l;
    make_letter(&l, NULL, body, 5);
    l.msg.body_truncated = true;
    l.msg.handle = NULL; /* headers and properties "{}" */
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter WHERE identity LIKE 'sha256:%%%%2F/%%'"
                                 " AND body_truncated AND headers = '{}' AND properties = '{}'"
                                 " AND body = 'hello'::bytea"),
                     1);

    /* Longer than the adapter stores: cut and marked. */
    size_t big = RP_PG_DL_BODY_MAX + 10;
    uint8_t *huge = malloc(big);
    memset(huge, 'z', big);
    make_letter(&l, "m-big", huge, big);
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    free(huge);
    assert_int_equal(pgfx_i64(f, "SELECT length(body) FROM dead_letter WHERE identity = 'id:%%2F/vibey.orders/m-big'"
                                 " AND body_truncated"),
                     RP_PG_DL_BODY_MAX);

    /* A publisher's absurd x-death time: stored as unknown, parked anyway. */
    make_letter(&l, "m-time", body, 5);
    l.death.time.value = INT64_MAX / 2;
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter WHERE identity = 'id:%%2F/vibey.orders/m-time'"
                                 " AND first_death_at IS NULL"),
                     1);

    /* Headers that jsonb refuses: the park fails whole, leaving nothing. */
    make_letter(&l, "m-bad", body, 5);
    l.handle.headers_json = "{not json";
    int64_t jobs = pgfx_i64(f, "SELECT count(*) FROM job");
    assert_int_equal(park(f, &l, false, RP_ERR_INTERNAL), RP_PARKED_ALREADY);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job"), jobs);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter WHERE identity = 'id:%%2F/vibey.orders/m-bad'"),
                     0);
}

/* n letters examined and judged for the batch park (rp_pg_park_send/recv):
 * message ids PREFIX-0.. (one with the headers jsonb refuses when bad >= 0). */
typedef struct batch {
    letter l[4];
    char ids[4][32];
    rp_dead_letter facts[4];
    rp_verdict v[4];
    rp_pg_park_item items[4];
    size_t n;
} batch;

static void make_batch(pgfx *f, batch *b, const char *prefix, size_t n, int bad) {
    static const uint8_t body[] = "hello";
    memset(b, 0, sizeof *b);
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(b->ids[i], sizeof b->ids[i], "%s-%zu", prefix, i);
        make_letter(&b->l[i], b->ids[i], body, 5);
        if ((int)i == bad) b->l[i].handle.headers_json = "{not json";
        assert_int_equal(rp_dead_letter_examine(&b->l[i].msg.headers, "/", "vibey.orders.dlq",
                                                f->dlq,
                                                b->l[i].msg.body, &b->facts[i]),
                         RP_OK);
        assert_int_equal(rp_judge_dead_letter(&b->facts[i], "/", "vibey.orders.dlq", &b->v[i]),
                         RP_OK);
        b->items[i] = (rp_pg_park_item){"/", "vibey.orders.dlq", &b->l[i].msg, &b->facts[i],
                                        &b->v[i], {0}};
    }
}

static void batch_cleanup(batch *b) {
    for (size_t i = 0; i < b->n; i++) {
        rp_verdict_cleanup(&b->v[i]);
        rp_dead_letter_cleanup(&b->facts[i]);
    }
}

static int64_t parked_like(pgfx *f, const char *prefix) {
    return pgfx_i64(f, "SELECT (SELECT count(*) FROM dead_letter WHERE identity LIKE 'id:%%/%s-%%')"
                       " * 100 + (SELECT count(*) FROM job WHERE payload->>'identity' "
                       "LIKE 'id:%%/%s-%%')",
                    prefix, prefix);
}

/* The tap's pipelined batch park: a batch sent before the last one's
 * results are read commits or fails alone (one bad dead letter fails its
 * whole batch and nothing of it stays; the next batch, already on its way,
 * is parked), the session stays usable, a batch park while batches are
 * unread is refused, and a session lost under two outstanding batches
 * reports both unavailable and is replaced by the next call. */
static void test_park_batches_pipelined(void **state) {
    pgfx *f = *state;
    batch a, b;
    make_batch(f, &a, "pa", 3, 1);
    make_batch(f, &b, "pb", 4, -1);
    assert_int_equal(rp_pg_park_send(f->store, a.items, a.n), RP_OK);
    assert_int_equal(rp_pg_park_send(f->store, b.items, b.n), RP_OK);
    assert_int_equal(rp_pg_park_batch(f->store, b.items, b.n), RP_ERR_INVALID);
    assert_int_equal(rp_pg_park_recv(f->store, a.items, a.n), RP_ERR_INTERNAL);
    assert_int_equal(rp_pg_park_recv(f->store, b.items, b.n), RP_OK);
    for (size_t i = 0; i < b.n; i++) {
        assert_true(b.items[i].result.parked);
        assert_true(b.items[i].result.job_id > 0);
        assert_true(b.items[i].result.event.seq > 0);
    }
    assert_int_equal(parked_like(f, "pa"), 0);
    assert_int_equal(parked_like(f, "pb"), 404);
    /* Parked again: nothing new; the good ones of a on their own. */
    a.l[1].handle.headers_json = "{}";
    assert_int_equal(rp_pg_park_send(f->store, b.items, b.n), RP_OK);
    assert_int_equal(rp_pg_park_send(f->store, a.items, a.n), RP_OK);
    assert_int_equal(rp_pg_park_recv(f->store, b.items, b.n), RP_OK);
    assert_int_equal(rp_pg_park_recv(f->store, a.items, a.n), RP_OK);
    for (size_t i = 0; i < b.n; i++) assert_false(b.items[i].result.parked);
    for (size_t i = 0; i < a.n; i++) assert_true(a.items[i].result.parked);
    assert_int_equal(parked_like(f, "pa"), 303);
    assert_int_equal(parked_like(f, "pb"), 404);
    /* A session lost under two outstanding batches: both unavailable; the
     * next call connects afresh, and the one parked before is found. */
    batch c;
    make_batch(f, &c, "pc", 2, -1);
    assert_int_equal(rp_pg_park_send(f->store, c.items, c.n), RP_OK);
    assert_int_equal(rp_pg_park_send(f->store, b.items, b.n), RP_OK);
    rp_pg_conn_close(f->conn);
    assert_int_equal(rp_pg_park_recv(f->store, c.items, c.n), RP_ERR_UNAVAILABLE);
    assert_int_equal(rp_pg_park_recv(f->store, b.items, b.n), RP_ERR_UNAVAILABLE);
    assert_int_equal(rp_pg_park_batch(f->store, c.items, c.n), RP_OK);
    assert_int_equal(parked_like(f, "pc"), 202);
    batch_cleanup(&a);
    batch_cleanup(&b);
    batch_cleanup(&c);
}

/* Issue 14 item 3, "a new death is a new decision", at the store: */

/* The rows of identity id:%2F/<origin>/<id>, as "occurrence:death:answer;"
 * in occurrence order. */
static char *rows_of(pgfx *f, const char *origin, const char *id) {
    return pgfx_text(f, "SELECT string_agg(dl.occurrence || ':' || dl.death || ':' "
                        "|| coalesce(g.answer, 'open'), ';' ORDER BY dl.occurrence, dl.gate_id) "
                        "FROM dead_letter dl JOIN gate g ON g.id = dl.gate_id "
                        "WHERE dl.identity = 'id:%%2F/%s/%s'",
                     origin, id);
}

static void answer_latest(pgfx *f, const char *id, rp_choice choice) {
    int64_t gate = pgfx_i64(f, "SELECT gate_id FROM dead_letter WHERE identity LIKE 'id:%%/%s' "
                               "ORDER BY occurrence DESC, gate_id DESC LIMIT 1", id);
    rp_answer_result a;
    assert_int_equal(f->ports.gates.answer(f->ports.gates.self, gate, choice, "ops", NULL, &a), RP_OK);
}

static void assert_rows(pgfx *f, const char *id, const char *want) {
    char *got = rows_of(f, "vibey.orders", id);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* A death parked, its gate answered: the same death again (the copy on the
 * dead-letter queue, a redelivery) stays one gate; a new death (replayed and
 * dead again: a new x-death) opens occurrence 2 with its own job, gate and
 * event, and the first stays answered. Deaths of one lineage (dead again
 * with its headers: count + 1) are covered while that gate is open and open
 * the next occurrence once it is answered. */
static void test_park_new_death_is_new_occurrence(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = "hello";
    letter l;
    make_letter(&l, "m-1", body, 5);
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_ALREADY);
    assert_rows(f, "m-1", "1:1700000000/1:open");
    answer_latest(f, "m-1", RP_CHOICE_REPLAY);
    /* The copy of the same death, after the answer: nothing. */
    assert_true(is_parked(f, &l));
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_ALREADY);
    assert_rows(f, "m-1", "1:1700000000/1:replay");

    /* Replayed (no dead-letter headers) and rejected again 7 s later. */
    l.death.time.value = 1700000007;
    assert_false(is_parked(f, &l));
    assert_int_equal(park(f, &l, true, RP_OK), RP_PARKED_WOULD);
    int64_t published = (int64_t)f->published;
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal((int64_t)f->published, published + 1);
    assert_rows(f, "m-1", "1:1700000000/1:replay;2:1700000007/1:open");
    assert_int_equal(pgfx_i64(f, "SELECT count(DISTINCT job_id) * 10 + count(DISTINCT gate_id) "
                                 "FROM dead_letter"),
                     22);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE payload->>'object' = "
                                 "'dead_letter:id:%%2F/vibey.orders/m-1'"),
                     2);
    /* Both deaths redelivered: nothing. */
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_ALREADY);
    l.death.time.value = 1700000000;
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_ALREADY);

    /* Dead again with its headers (count 2) while occurrence 2 is open:
     * covered by that gate; once it is answered, the next occurrence. */
    l.death.time.value = 1700000007;
    l.death.count.value = 2;
    assert_true(is_parked(f, &l));
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_ALREADY);
    answer_latest(f, "m-1", RP_CHOICE_DISMISS);
    l.death.count.value = 3;
    assert_false(is_parked(f, &l));
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_rows(f, "m-1", "1:1700000000/1:replay;2:1700000007/1:dismiss;3:1700000007/3:open");

    /* A new lineage opens an occurrence even while the latest gate is open
     * (a replayed message can die again before its answer commits). */
    l.death.time.value = 1700000100;
    l.death.count.value = 1;
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter"), 4);
}

/* One batch holding one identity several times is parked as one at a time
 * would park it (rp_pg_park.c's runs): the same death twice is one row;
 * a death of the same lineage (count 2) is covered by the first's open
 * gate; a new lineage opens occurrence 2. Each item's result names its own
 * row, and the ledger numbers follow the items' order. Items:
 *   0 q-0 death 1700000000/1   new, occurrence 1
 *   1 q-1 death 1700000000/1   new
 *   2 q-0 the same death       nothing
 *   3 q-0 death 1700000000/2   covered by occurrence 1: nothing
 *   4 q-0 death 1700000050/1   new lineage: occurrence 2
 *   5 q-2 death 1700000000/1   new */
static void test_park_batch_one_identity_many_times(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = "hello";
    static const struct {
        const char *id;
        int64_t time, count;
        bool parked;
    } rows[] = {{"q-0", 1700000000, 1, true},  {"q-1", 1700000000, 1, true},
                {"q-0", 1700000000, 1, false}, {"q-0", 1700000000, 2, false},
                {"q-0", 1700000050, 1, true},  {"q-2", 1700000000, 1, true}};
    enum { N = sizeof rows / sizeof rows[0] };
    letter l[N];
    rp_dead_letter facts[N];
    rp_verdict v[N];
    rp_pg_park_item items[N];
    for (size_t i = 0; i < N; i++) {
        make_letter(&l[i], rows[i].id, body, 5);
        l[i].death.time.value = rows[i].time;
        l[i].death.count.value = rows[i].count;
        assert_int_equal(rp_dead_letter_examine(&l[i].msg.headers, "/", "vibey.orders.dlq",
                                                f->dlq, l[i].msg.body, &facts[i]),
                         RP_OK);
        assert_int_equal(rp_judge_dead_letter(&facts[i], "/", "vibey.orders.dlq", &v[i]), RP_OK);
        items[i] = (rp_pg_park_item){"/", "vibey.orders.dlq", &l[i].msg, &facts[i], &v[i], {0}};
    }
    assert_int_equal(rp_pg_park_batch(f->store, items, N), RP_OK);
    int64_t last_seq = 0;
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(items[i].result.parked, rows[i].parked);
        if (!rows[i].parked) continue;
        /* The row this item's result names is this item's death. */
        assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter dl JOIN ledger e "
                                     "ON e.seq = %lld WHERE dl.job_id = %lld AND dl.gate_id = %lld "
                                     "AND dl.identity = 'id:%%2F/vibey.orders/%s' "
                                     "AND dl.death = '%lld/%lld'",
                                  (long long)items[i].result.event.seq,
                                  (long long)items[i].result.job_id,
                                  (long long)items[i].result.gate_id, rows[i].id,
                                  (long long)rows[i].time, (long long)rows[i].count),
                         1);
        assert_true(items[i].result.event.seq > last_seq);
        last_seq = items[i].result.event.seq;
    }
    assert_rows(f, "q-0", "1:1700000000/1:open;2:1700000050/1:open");
    assert_rows(f, "q-1", "1:1700000000/1:open");
    /* Every death parked, again in one batch: nothing new. (Item 3 is left
     * out: its lineage is no longer the latest of q-0, so the rule would
     * now open it.) */
    rp_pg_park_item again[] = {items[0], items[1], items[2], items[4], items[5]};
    assert_int_equal(rp_pg_park_batch(f->store, again, 5), RP_OK);
    for (size_t i = 0; i < 5; i++) assert_false(again[i].result.parked);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter"), 4);
    for (size_t i = 0; i < N; i++) {
        rp_verdict_cleanup(&v[i]);
        rp_dead_letter_cleanup(&facts[i]);
    }
}

/* The texts of a batch's items (rendered origin and reason, the gate's
 * question, the job's and the ledger's payloads) are each item's own when
 * neighbours share some of their inputs and not others: the batch park
 * makes a text once for a run of items with the same origin, reason and
 * queue (rp_pg_park.c), and each row must still read as if parked alone. */
static char *render(const char *s) {
    char *out = NULL;
    assert_int_equal(rp_untrusted_render((rp_bytes){(const uint8_t *)s, strlen(s)}, &out), RP_OK);
    return out;
}

static void test_park_batch_texts_per_item(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = "hello";
    static const struct {
        const char *id, *origin, *reason;
    } rows[] = {{"s-0", "vibey.orders", "rejected"}, {"s-1", "vibey.orders", "rejected"},
                {"s-2", "vibey.orders", "rejected"}, {"s-3", "vibey.other", "rejected"},
                {"s-4", "vibey.orders", "rejected"}, {"s-5", "vibey.orders", "expired"},
                {"s-6", "vibey.orders", "expired"},  {"s-7", "vibey.other", "expired"}};
    enum { N = sizeof rows / sizeof rows[0] };
    letter l[N];
    rp_dead_letter facts[N];
    rp_verdict v[N];
    rp_pg_park_item items[N];
    for (size_t i = 0; i < N; i++) {
        make_letter(&l[i], rows[i].id, body, 5);
        rp_opt_str origin = {true, {(const uint8_t *)rows[i].origin, strlen(rows[i].origin)}};
        rp_opt_str reason = {true, {(const uint8_t *)rows[i].reason, strlen(rows[i].reason)}};
        l[i].death.queue = l[i].msg.headers.first_death_queue = origin;
        l[i].death.reason = l[i].msg.headers.first_death_reason = reason;
        assert_int_equal(rp_dead_letter_examine(&l[i].msg.headers, "/", "vibey.orders.dlq",
                                                f->dlq, l[i].msg.body, &facts[i]),
                         RP_OK);
        assert_int_equal(rp_judge_dead_letter(&facts[i], "/", "vibey.orders.dlq", &v[i]), RP_OK);
        items[i] = (rp_pg_park_item){"/", "vibey.orders.dlq", &l[i].msg, &facts[i], &v[i], {0}};
    }
    assert_int_equal(rp_pg_park_batch(f->store, items, N), RP_OK);
    char *queue = render("vibey.orders.dlq");
    for (size_t i = 0; i < N; i++) {
        assert_true(items[i].result.parked);
        char *origin = render(rows[i].origin), *reason = render(rows[i].reason);
        char want[1024];
        snprintf(want, sizeof want,
                 "%s|%s|A message that died on %s (reason %s) was found on dead-letter queue %s "
                 "and parked: replay it to the queue it died on, or dismiss it?|%s|%s|%s|%s",
                 origin, reason, origin, reason, queue, origin, reason, facts[i].identity,
                 v[i].object);
        char *got = pgfx_text(f, "SELECT dl.origin_queue || '|' || dl.reason || '|' || g.question "
                                 "|| '|' || (j.payload->>'origin_queue') || '|' || "
                                 "(j.payload->>'reason') || '|' || (j.payload->>'identity') || "
                                 "'|' || (e.payload->>'object') "
                                 "FROM dead_letter dl JOIN gate g ON g.id = dl.gate_id "
                                 "JOIN job j ON j.id = dl.job_id JOIN ledger e ON e.seq = %lld "
                                 "WHERE dl.job_id = %lld",
                              (long long)items[i].result.event.seq,
                              (long long)items[i].result.job_id);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
        free(origin);
        free(reason);
        rp_verdict_cleanup(&v[i]);
        rp_dead_letter_cleanup(&facts[i]);
    }
    free(queue);
}

/* One message_id reused by two messages of two origin queues: two dead
 * letters, two gates. */
static void test_park_same_message_id_two_origins(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = "hello";
    letter a, b;
    make_letter(&a, "shared", body, 5);
    make_letter(&b, "shared", body, 5);
    b.death.queue = STR("vibey.invoices");
    b.msg.headers.first_death_queue = STR("vibey.invoices");
    assert_int_equal(park(f, &a, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(park(f, &b, false, RP_OK), RP_PARKED_NEW);
    assert_int_equal(park(f, &b, false, RP_OK), RP_PARKED_ALREADY);
    char *ra = rows_of(f, "vibey.orders", "shared");
    char *rb = rows_of(f, "vibey.invoices", "shared");
    assert_string_equal(ra, "1:1700000000/1:open");
    assert_string_equal(rb, "1:1700000000/1:open");
    free(ra);
    free(rb);
    assert_int_equal(pgfx_i64(f, "SELECT count(DISTINCT gate_id) FROM dead_letter"), 2);
}

/* The same death parked by two sessions at once (two tap sessions, two
 * replicas): one row, job, gate and event; two different deaths of one
 * identity at once: both parked. The children wait behind a table lock
 * the test holds, so that both parks run together when it is released. */
static void race(pgfx *f, const letter *one, const letter *two, int want_codes_sum) {
    pgfx_exec(f, "BEGIN");
    pgfx_exec(f, "LOCK TABLE dead_letter IN SHARE MODE");
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            pgfx *c = pgfx_attach(f->schema);
            const letter *l = i ? two : one;
            rp_dead_letter d;
            rp_verdict v;
            rp_park_result res = {0};
            rp_status st = rp_dead_letter_examine(&l->msg.headers, "/", "vibey.orders.dlq",
                                                  c->dlq, l->msg.body, &d);
            if (st == RP_OK) st = rp_judge_dead_letter(&d, "/", "vibey.orders.dlq", &v);
            rp_pg_park_item it = {"/", "vibey.orders.dlq", &l->msg, &d, &v, {0}};
            if (st == RP_OK) st = rp_pg_park_batch(c->store, &it, 1);
            res = it.result;
            pgfx_free(c);
            _exit(st != RP_OK ? 250 : res.parked ? 1 : 0);
        }
    }
    /* Until both children wait behind the lock. */
    (void)itest_pg_wait_lock_waiters(2, 10000);
    pgfx_exec(f, "COMMIT");
    int sum = 0;
    for (int i = 0; i < 2; i++) {
        int status = 0;
        waitpid(kids[i], &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_not_equal(WEXITSTATUS(status), 250);
        sum += WEXITSTATUS(status);
    }
    assert_int_equal(sum, want_codes_sum);
}

static void test_park_race_two_sessions(void **state) {
    pgfx *f = *state;
    static const uint8_t body[] = "hello";
    letter l, m;
    make_letter(&l, "m-race", body, 5);
    race(f, &l, &l, 1);
    assert_int_equal(pgfx_i64(f, "SELECT (SELECT count(*) FROM dead_letter) * 1000"
                                 " + (SELECT count(*) FROM job) * 100"
                                 " + (SELECT count(*) FROM gate) * 10"
                                 " + (SELECT count(*) FROM ledger)"),
                     1111);
    /* Answered; the same death again from both, and then two new deaths. */
    answer_latest(f, "m-race", RP_CHOICE_DISMISS);
    race(f, &l, &l, 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter"), 1);
    make_letter(&m, "m-race", body, 5);
    l.death.time.value = 1700000010;
    m.death.time.value = 1700000020;
    race(f, &l, &m, 2);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter"), 3);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE answer IS NULL"), 2);
}

/* Gates: a delivery_exhausted gate for each of two poison jobs (alpha,
 * beta) and a bus_dead_lettered one. Returns their ids. */
static void make_gates(pgfx *f, int64_t *alpha, int64_t *beta, int64_t *bus) {
    pgfx_expired(f, 1, "alpha", 7, 7, "1 minute");
    pgfx_expired(f, 1, "beta", 7, 7, "1 minute");
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    rp_report_cleanup(&r);
    static const uint8_t body[] = "x";
    letter l;
    make_letter(&l, "m-gate", body, 1);
    assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    *alpha = pgfx_i64(f, "SELECT g.id FROM gate g JOIN job j ON j.id = g.job_id"
                         " WHERE j.project_id = 'alpha'");
    *beta = pgfx_i64(f, "SELECT g.id FROM gate g JOIN job j ON j.id = g.job_id"
                        " WHERE j.project_id = 'beta'");
    *bus = pgfx_i64(f, "SELECT gate_id FROM dead_letter");
}

/* The dead letters' queue, origin and reason onto their gates, as the park
 * copies them (migration 0013): for rows a test wrote or changed by hand. */
static void copy_filters_to_gates(pgfx *f) {
    pgfx_exec(f, "UPDATE gate g SET queue = dl.queue, origin_queue = dl.origin_queue, "
                 "reason = dl.reason FROM dead_letter dl WHERE dl.gate_id = g.id");
}

static void free_gates(rp_gate *g, size_t n) {
    for (size_t i = 0; i < n; i++) rp_gate_cleanup(&g[i]);
    free(g);
}

/* Issue 19 item 1: a dead letter and its gate say their vhost. A park of
 * one (core's park, as the pass does) and the tap's set-based batch both
 * write it on the dead_letter row and the gate; the gate listing and the
 * look inside a gate give it; a gate without a dead letter has none. The
 * vhost here needs escaping in the identity ("/" and "%"). */
static void test_park_writes_vhost(void **state) {
    pgfx *f = *state;
    static const char *const vh = "tenant/b%x";
    pgfx_expired(f, 1, "alpha", 7, 7, "1 minute");
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    rp_report_cleanup(&r);
    static const uint8_t body[] = "x";
    letter l;
    make_letter(&l, "m-vh", body, 1);
    rp_park_site site = {vh, "vibey.orders.dlq", f->dlq};
    rp_report_init(&r, false);
    rp_park_outcome out = RP_PARKED_ALREADY;
    assert_int_equal(rp_park_dead_letter(&f->ports, &site, &l.msg, false, &r, &out), RP_OK);
    rp_report_cleanup(&r);
    assert_int_equal(out, RP_PARKED_NEW);
    int64_t one = pgfx_i64(f, "SELECT gate_id FROM dead_letter WHERE identity = "
                              "'id:tenant%%2Fb%%25x/vibey.orders/m-vh'");
    /* The batch: two of vh, one of "/" (items of two vhosts in one set). */
    batch b;
    make_batch(f, &b, "vb", 3, -1);
    for (size_t i = 0; i < 2; i++) b.items[i].vhost = vh;
    assert_int_equal(rp_pg_park_batch(f->store, b.items, b.n), RP_OK);
    for (size_t i = 0; i < b.n; i++) assert_true(b.items[i].result.parked);
    char *v = pgfx_text(f, "SELECT string_agg(dl.vhost || '|' || g.vhost, ' ' ORDER BY g.id) "
                           "FROM dead_letter dl JOIN gate g ON g.id = dl.gate_id");
    assert_string_equal(v, "tenant/b%x|tenant/b%x tenant/b%x|tenant/b%x tenant/b%x|tenant/b%x /|/");
    free(v);
    const rp_gate_port *gp = &f->ports.gates;
    rp_gate *g;
    size_t n;
    rp_gate_query q = {.state = RP_GATE_STATE_OPEN, .limit = 10};
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 5);
    assert_string_equal(g[0].vhost, "/");
    assert_string_equal(g[1].vhost, vh);
    assert_int_equal(g[3].id, one);
    assert_string_equal(g[3].vhost, vh);
    assert_int_equal(g[4].kind, RP_GATE_DELIVERY_EXHAUSTED);
    assert_null(g[4].vhost);
    int64_t exhausted = g[4].id;
    free_gates(g, n);
    rp_gate_look_port lp;
    rp_pg_gate_look_port(f->store, &lp);
    rp_gate_look look;
    assert_int_equal(lp.look(lp.self, one, 0, 16, &look), RP_OK);
    assert_string_equal(look.gate.vhost, vh);
    assert_string_equal(look.vhost, vh);
    rp_gate_look_cleanup(&look);
    assert_int_equal(lp.look(lp.self, exhausted, 0, 16, &look), RP_OK);
    assert_null(look.gate.vhost);
    rp_gate_look_cleanup(&look);
    /* The GateAnswered event says the gate's vhost (ledger payload and
     * the answer's result, for the feed); a gate without one, none. */
    rp_answer_result a;
    assert_int_equal(gp->answer(gp->self, one, RP_CHOICE_DISMISS, "ops", NULL, &a), RP_OK);
    assert_true(a.committed);
    assert_string_equal(a.vhost, vh);
    v = pgfx_text(f, "SELECT payload->>'vhost' FROM ledger WHERE seq = %" PRId64, a.event.seq);
    assert_string_equal(v, vh);
    free(v);
    assert_int_equal(gp->answer(gp->self, exhausted, RP_CHOICE_DISMISS, "ops", NULL, &a), RP_OK);
    assert_true(a.committed);
    assert_string_equal(a.vhost, "");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE seq = %" PRId64
                                 " AND NOT payload ? 'vhost'", a.event.seq),
                     1);
    batch_cleanup(&b);
}

static void test_gate_list(void **state) {
    pgfx *f = *state;
    int64_t alpha, beta, bus;
    make_gates(f, &alpha, &beta, &bus);
    const rp_gate_port *gp = &f->ports.gates;
    rp_gate *g;
    size_t n;
    rp_gate_query q = {.state = RP_GATE_STATE_OPEN, .limit = 10};
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 3);
    /* Newest first. */
    assert_int_equal(g[0].id, bus);
    assert_int_equal(g[1].id, beta);
    assert_int_equal(g[2].id, alpha);
    assert_int_equal(g[0].kind, RP_GATE_BUS_DEAD_LETTERED);
    assert_string_equal(g[0].project, "bus");
    assert_string_equal(g[0].queue, "vibey.orders.dlq");
    assert_string_equal(g[0].origin_queue, "\"vibey.orders\"");
    assert_string_equal(g[0].reason, "\"rejected\"");
    /* The park copied them onto the gate row (migration 0013). */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate g JOIN dead_letter dl ON dl.gate_id = "
                                 "g.id WHERE g.queue = dl.queue AND g.origin_queue = "
                                 "dl.origin_queue AND g.reason = dl.reason"),
                     1);
    assert_false(g[0].answered);
    assert_int_equal(g[0].answered_at, 0);
    assert_null(g[0].answered_by);
    assert_int_equal(g[2].kind, RP_GATE_DELIVERY_EXHAUSTED);
    assert_string_equal(g[2].project, "alpha");
    assert_null(g[2].queue);
    assert_null(g[2].origin_queue);
    assert_non_null(strstr(g[2].question, "times"));
    rp_time_ms now = f->ports.clock.now_ms(f->ports.clock.self);
    assert_true(g[2].created_at <= now && g[2].created_at > now - 60000);
    assert_int_equal(g[2].job_id, pgfx_i64(f, "SELECT job_id FROM gate WHERE id = %" PRId64, alpha));
    free_gates(g, n);
    /* Limit, project, state. */
    q.limit = 2;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 2);
    free_gates(g, n);
    q.limit = 10;
    q.project = "beta";
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(g[0].id, beta);
    free_gates(g, n);
    q.project = "nobody";
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 0);
    assert_null(g);
    q.project = NULL;
    q.state = RP_GATE_STATE_ANSWERED;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 0);
    rp_answer_result a;
    assert_int_equal(gp->answer(gp->self, beta, RP_CHOICE_DISMISS, "ops", NULL, &a), RP_OK);
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 1);
    assert_true(g[0].answered);
    assert_int_equal(g[0].answer, RP_CHOICE_DISMISS);
    assert_string_equal(g[0].answered_by, "ops");
    assert_true(g[0].answered_at >= g[0].created_at);
    free_gates(g, n);
    q.state = RP_GATE_STATE_ALL;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_OK);
    assert_int_equal(n, 3);
    free_gates(g, n);
    q.limit = 0;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, NULL), RP_ERR_INVALID);
}

/* Lists every page of q (limit as set) and checks that each page follows
 * the last one (ids descending), that each reports total, and that the
 * pages hold exactly total gates. Returns the ids seen, in order. */
static size_t list_all_pages(pgfx *f, rp_gate_query q, int64_t total, int64_t *ids, size_t cap) {
    const rp_gate_port *gp = &f->ports.gates;
    size_t seen = 0;
    q.after = 0;
    for (int pages = 0; pages < 100; pages++) {
        rp_gate *g;
        size_t n;
        rp_gate_page page = {-1, -1, true};
        assert_int_equal(gp->list(gp->self, &q, &g, &n, &page), RP_OK);
        assert_int_equal(page.total, total);
        assert_false(page.total_capped); /* exact below RP_GATE_TOTAL_CAP */
        for (size_t i = 0; i < n; i++) {
            assert_true(seen < cap);
            if (seen > 0) assert_true(g[i].id < ids[seen - 1]);
            ids[seen++] = g[i].id;
        }
        free_gates(g, n);
        if (page.next_after == 0) break;
        assert_int_equal((size_t)n, q.limit); /* only a full page has a next one */
        assert_int_equal(page.next_after, ids[seen - 1]);
        q.after = page.next_after;
    }
    assert_int_equal((int64_t)seen, total);
    return seen;
}

static void test_gate_list_filters_and_pages(void **state) {
    pgfx *f = *state;
    int64_t alpha, beta, bus;
    make_gates(f, &alpha, &beta, &bus);
    static const uint8_t body[] = "y";
    char id[16];
    for (int i = 1; i <= 6; i++) {
        letter l;
        snprintf(id, sizeof id, "m-%d", i);
        make_letter(&l, id, body, 1);
        assert_int_equal(park(f, &l, false, RP_OK), RP_PARKED_NEW);
    }
    /* Seven dead-letter gates: three expired, four rejected; two of the
     * rejected ones found on another dead-letter queue, from another queue;
     * the two oldest gates opened two hours ago. Origin and reason are
     * stored rendered (quoted), and filtered by the value as published. */
    pgfx_exec(f, "UPDATE dead_letter SET reason = CASE WHEN gate_id IN (SELECT gate_id"
                 " FROM dead_letter ORDER BY gate_id LIMIT 3) THEN '\"expired\"' ELSE '\"rejected\"' END, origin_queue = '\"vibey.orders\"'");
    pgfx_exec(f, "UPDATE dead_letter SET queue = 'vibey.mail.dlq', origin_queue = '\"vibey.mail\"'"
                 " WHERE gate_id IN (SELECT gate_id FROM dead_letter ORDER BY gate_id DESC LIMIT 2)");
    copy_filters_to_gates(f);
    pgfx_exec(f, "UPDATE gate SET created_at = now() - interval '2 hours'"
                 " WHERE id IN (%" PRId64 ", %" PRId64 ")", alpha, beta);

    int64_t ids[16];
    rp_gate_query q = {.state = RP_GATE_STATE_OPEN, .limit = 3};
    /* Every open gate, three to a page: 3 + 3 + 3. */
    assert_int_equal(list_all_pages(f, q, 9, ids, 16), 9);
    assert_int_equal(ids[0], pgfx_i64(f, "SELECT max(id) FROM gate"));
    assert_int_equal(ids[8], alpha);
    /* By kind, reason, queues, age; pages of two. */
    q.limit = 2;
    q.has_kind = true;
    q.kind = RP_GATE_BUS_DEAD_LETTERED;
    assert_int_equal(list_all_pages(f, q, 7, ids, 16), 7);
    q.kind = RP_GATE_DELIVERY_EXHAUSTED;
    assert_int_equal(list_all_pages(f, q, 2, ids, 16), 2);
    assert_int_equal(ids[0], beta);
    q.has_kind = false;
    q.reason = "expired";
    assert_int_equal(list_all_pages(f, q, 3, ids, 16), 3);
    q.reason = "rejected";
    q.queue = "vibey.orders.dlq";
    assert_int_equal(list_all_pages(f, q, 2, ids, 16), 2);
    q.queue = NULL;
    q.origin = "vibey.mail";
    assert_int_equal(list_all_pages(f, q, 2, ids, 16), 2);
    q.reason = NULL;
    q.origin = "nowhere";
    assert_int_equal(list_all_pages(f, q, 0, ids, 16), 0);
    q.origin = NULL;
    q.older_than_ms = 3600 * 1000;
    assert_int_equal(list_all_pages(f, q, 2, ids, 16), 2);
    q.older_than_ms = 3 * 3600 * 1000;
    assert_int_equal(list_all_pages(f, q, 0, ids, 16), 0);
    q.older_than_ms = 0;

    /* A page past the last gate is empty and still says how many match. */
    const rp_gate_port *gp = &f->ports.gates;
    rp_gate *g;
    size_t n;
    rp_gate_page page;
    q.after = alpha;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, &page), RP_OK);
    assert_int_equal(n, 0);
    assert_null(g);
    assert_int_equal(page.total, 9);
    assert_int_equal(page.next_after, 0);
    /* A page of exactly what is left has no next one. */
    q.after = pgfx_i64(f, "SELECT min(id) FROM gate WHERE id > %" PRId64, beta);
    assert_int_equal(gp->list(gp->self, &q, &g, &n, &page), RP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(page.next_after, 0);
    free_gates(g, n);
    q.after = -1;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, &page), RP_ERR_INVALID);
    q.after = 0;
    q.older_than_ms = -1;
    assert_int_equal(gp->list(gp->self, &q, &g, &n, &page), RP_ERR_INVALID);
}

/* One page of q: its gate count, total, capped flag and next_after. */
static size_t list_page(pgfx *f, const rp_gate_query *q, rp_gate_page *page, int64_t *first,
                        int64_t *last) {
    const rp_gate_port *gp = &f->ports.gates;
    rp_gate *g;
    size_t n;
    *page = (rp_gate_page){-1, -1, false};
    assert_int_equal(gp->list(gp->self, q, &g, &n, page), RP_OK);
    for (size_t i = 1; i < n; i++) assert_true(g[i].id < g[i - 1].id);
    if (first != NULL) *first = n > 0 ? g[0].id : 0;
    if (last != NULL) *last = n > 0 ? g[n - 1].id : 0;
    free_gates(g, n);
    return n;
}

static void assert_total(pgfx *f, rp_gate_query q, int64_t total, bool capped) {
    rp_gate_page page;
    list_page(f, &q, &page, NULL, NULL);
    assert_int_equal(page.total, total);
    assert_int_equal(page.total_capped, capped);
}

/* Issue #20: the count of a listing stops at RP_GATE_TOTAL_CAP (past it:
 * total RP_GATE_TOTAL_CAP, total_capped), exact at or below it, whichever
 * statement counts (gates alone, or with their dead letters for a queue,
 * origin or reason filter); the pages stay exact: every match once, newest
 * first, the last page without a next one. */
static void test_gate_list_total_capped(void **state) {
    pgfx *f = *state;
    enum { N = RP_GATE_TOTAL_CAP + 1 };
    /* N dead-letter gates of project cap, all from one origin queue; the
     * oldest died expired, the other N - 1 (= the cap) rejected. Origin and
     * reason stored rendered, as the park stores them. */
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, payload) SELECT 'cap', "
                 "'bus.dead_letter', 'awaiting_human', '{}'::jsonb FROM generate_series(1, %d)", N);
    pgfx_exec(f, "INSERT INTO gate (job_id, kind, question, choices) SELECT id, "
                 "'bus_dead_lettered', 'dead letter ' || id, ARRAY['replay', 'dismiss'] "
                 "FROM job WHERE project_id = 'cap' ORDER BY id");
    pgfx_exec(f, "INSERT INTO dead_letter (identity, death, occurrence, job_id, gate_id, queue, "
                 "origin_queue, reason, headers, properties, body, vhost) SELECT 'cap-' || g.id, "
                 "'cap.origin|x', 1, g.job_id, g.id, 'cap.dlq', '\"cap.origin\"', CASE WHEN g.id = "
                 "(SELECT min(id) FROM gate) THEN '\"expired\"' ELSE '\"rejected\"' END, "
                 "'{}'::jsonb, '{}'::jsonb, '\\x7b7d'::bytea, '/' FROM gate g");
    copy_filters_to_gates(f);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE answer IS NULL"), N);
    int64_t newest = pgfx_i64(f, "SELECT max(id) FROM gate");
    int64_t oldest = pgfx_i64(f, "SELECT min(id) FROM gate");

    rp_gate_query q = {.state = RP_GATE_STATE_OPEN, .limit = 1000};
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.has_kind = true;
    q.kind = RP_GATE_BUS_DEAD_LETTERED;
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.kind = RP_GATE_DELIVERY_EXHAUSTED;
    assert_total(f, q, 0, false);
    q.has_kind = false;
    q.project = "cap";
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.project = "nope";
    assert_total(f, q, 0, false);
    q.project = NULL;
    /* Counted with the dead letters: past the cap, at it (exact), below. */
    q.origin = "cap.origin";
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.queue = "cap.dlq";
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.origin = NULL;
    q.queue = NULL;
    q.reason = "rejected";
    assert_total(f, q, RP_GATE_TOTAL_CAP, false);
    q.reason = "expired";
    assert_total(f, q, 1, false);
    q.reason = NULL;
    /* The total ignores after: a deep page says the same. */
    q.after = oldest + 5;
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.after = 0;

    /* Every page of 1,000: all N gates once, newest first; each page says
     * capped; only the last (one gate) has no next page. */
    size_t seen = 0, pages = 0;
    int64_t prev = INT64_MAX;
    for (;;) {
        rp_gate_page page;
        int64_t first, last;
        size_t n = list_page(f, &q, &page, &first, &last);
        pages++;
        assert_true(n > 0);
        assert_true(first < prev);
        if (seen == 0) assert_int_equal(first, newest);
        prev = last;
        seen += n;
        assert_int_equal(page.total, RP_GATE_TOTAL_CAP);
        assert_true(page.total_capped);
        if (page.next_after == 0) break;
        assert_int_equal(n, 1000);
        assert_int_equal(page.next_after, last);
        q.after = page.next_after;
        assert_true(pages < 20);
    }
    assert_int_equal(seen, N);
    assert_int_equal(pages, 11);
    assert_int_equal(prev, oldest);

    /* One answered: N - 1 open (= the cap: exact), N in all (capped). */
    pgfx_exec(f, "UPDATE gate SET answer = 'dismiss', answered_by = 'ops', answered_at = now() "
                 "WHERE id = %" PRId64, oldest);
    q.after = 0;
    assert_total(f, q, RP_GATE_TOTAL_CAP, false);
    q.state = RP_GATE_STATE_ALL;
    assert_total(f, q, RP_GATE_TOTAL_CAP, true);
    q.state = RP_GATE_STATE_ANSWERED;
    assert_total(f, q, 1, false);
}

static void test_gate_answers(void **state) {
    pgfx *f = *state;
    int64_t alpha, beta, bus;
    make_gates(f, &alpha, &beta, &bus);
    const rp_gate_port *gp = &f->ports.gates;
    rp_answer_result a;
    int64_t events = pgfx_i64(f, "SELECT count(*) FROM ledger");

    /* Not found; a choice the kind does not take (the gate stays open). */
    assert_int_equal(gp->answer(gp->self, 999999, RP_CHOICE_RETRY, "ops", NULL, &a), RP_ERR_NOT_FOUND);
    assert_int_equal(gp->answer(gp->self, alpha, RP_CHOICE_REPLAY, "ops", NULL, &a), RP_ERR_CONFLICT);
    assert_int_equal(gp->answer(gp->self, bus, RP_CHOICE_RETRY, "ops", NULL, &a), RP_ERR_CONFLICT);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE answer IS NULL"), 3);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), events);

    /* retry: back to ready now, lease cleared, the refunded attempt kept. */
    assert_int_equal(gp->answer(gp->self, alpha, RP_CHOICE_RETRY, "ops", NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_RETRIED);
    assert_int_equal(a.choice, RP_CHOICE_RETRY);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job j JOIN gate g ON g.job_id = j.id"
                                 " WHERE g.id = %" PRId64 " AND j.state = 'ready' AND j.attempts = 6"
                                 " AND j.run_after BETWEEN now() - interval '1 minute' AND now()"
                                 " AND j.lease_owner IS NULL AND j.lease_expires_at IS NULL"
                                 " AND j.finished_at IS NULL AND g.answer = 'retry'"
                                 " AND g.answered_by = 'ops' AND g.answered_at IS NOT NULL",
                                 alpha),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'"
                                 " AND project_id = 'alpha' AND (payload->>'gate')::int8 = %" PRId64
                                 " AND payload->>'choice' = 'retry'"
                                 " AND payload->>'outcome' = 'retried' AND payload->>'by' = 'ops'",
                                 alpha),
                     1);
    /* Answered once: a second answer changes nothing and reports the first. */
    char *before = pgfx_dump(f);
    assert_int_equal(gp->answer(gp->self, alpha, RP_CHOICE_DISMISS, "other", NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_ALREADY_ANSWERED);
    assert_int_equal(a.choice, RP_CHOICE_RETRY);
    char *after = pgfx_dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* dismiss: the job fails. by may be NULL. */
    assert_int_equal(gp->answer(gp->self, beta, RP_CHOICE_DISMISS, NULL, NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_DISMISSED);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job j JOIN gate g ON g.job_id = j.id"
                                 " WHERE g.id = %" PRId64 " AND j.state = 'failed'"
                                 " AND j.finished_at > now() - interval '1 minute'"
                                 " AND g.answered_by IS NULL",
                                 beta),
                     1);
    /* replay: the dead letter's job succeeds. The requester's own note
     * goes to the ledger payload only; answered_by stays the user. */
    assert_int_equal(gp->answer(gp->self, bus, RP_CHOICE_REPLAY, "ops", "on call: Bob", &a),
                     RP_OK);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger l JOIN gate g"
                                 " ON (l.payload->>'gate')::int8 = g.id WHERE g.id = %" PRId64
                                 " AND l.payload->>'by' = 'ops' AND g.answered_by = 'ops'"
                                 " AND l.payload->>'note' = 'on call: Bob'",
                                 bus),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'"
                                 " AND payload ? 'note'"),
                     1);
    assert_int_equal(a.outcome, RP_OUTCOME_REPLAYED);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job j JOIN gate g ON g.job_id = j.id"
                                 " WHERE g.id = %" PRId64 " AND j.state = 'succeeded'"
                                 " AND j.finished_at IS NOT NULL AND g.answer = 'replay'",
                                 bus),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), events + 3);
}

/* Two answers at once on one gate: one settles it, the other reports it. */
static void test_gate_answered_once_under_a_race(void **state) {
    pgfx *f = *state;
    int64_t alpha, beta, bus;
    make_gates(f, &alpha, &beta, &bus);
    /* Hold the gate's row so that both children queue behind the lock. */
    pgfx_exec(f, "BEGIN");
    pgfx_exec(f, "SELECT 1 FROM gate WHERE id = %" PRId64 " FOR UPDATE", alpha);
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            pgfx *c = pgfx_attach(f->schema);
            rp_answer_result a;
            rp_status st = c->ports.gates.answer(c->ports.gates.self, alpha,
                                                 i ? RP_CHOICE_DISMISS : RP_CHOICE_RETRY,
                                                 i ? "b" : "a", NULL, &a);
            pgfx_free(c);
            if (st != RP_OK) _exit(250);
            _exit(a.outcome == RP_OUTCOME_ALREADY_ANSWERED ? 10 + (int)a.choice : (int)a.outcome);
        }
    }
    /* Until both children wait behind the lock. */
    (void)itest_pg_wait_lock_waiters(2, 10000);
    pgfx_exec(f, "COMMIT");
    int codes[2];
    for (int i = 0; i < 2; i++) {
        int status = 0;
        waitpid(kids[i], &status, 0);
        assert_true(WIFEXITED(status));
        codes[i] = WEXITSTATUS(status);
    }
    char *answer = pgfx_text(f, "SELECT answer FROM gate WHERE id = %" PRId64, alpha);
    rp_choice won;
    assert_true(rp_choice_parse(answer, &won));
    free(answer);
    int winner = won == RP_CHOICE_RETRY ? 0 : 1;
    assert_int_equal(codes[winner], won == RP_CHOICE_RETRY ? RP_OUTCOME_RETRIED
                                                           : RP_OUTCOME_DISMISSED);
    assert_int_equal(codes[1 - winner], 10 + (int)won);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'"), 1);
}

/* ---- a synchronous standby's wait (issue #19 item 4) ----------------------- */

/* Whether a commit that wrote WAL waits for a synchronous standby now: a
 * probe session's commit either returns (no) or is seen waiting (SyncRep)
 * within 2 s, and is then cancelled (yes). */
static bool commits_wait(PGconn *a) {
    PGconn *p = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
    assert_int_equal(PQstatus(p), CONNECTION_OK);
    assert_int_equal(PQsendQuery(p, "SELECT pg_logical_emit_message(true, 'reaper.probe', '')"), 1);
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE pid = %d AND "
             "wait_event = 'SyncRep'",
             PQbackendPID(p));
    bool waited = false;
    for (long long until = itest_mono_ms() + 2000; !waited && itest_mono_ms() < until;) {
        assert_int_equal(PQconsumeInput(p), 1);
        if (!PQisBusy(p)) break; /* committed without waiting */
        PGresult *r = PQexec(a, sql);
        waited = PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0)) == 1;
        PQclear(r);
        if (!waited) usleep(20000);
    }
    for (PGresult *r; (r = PQgetResult(p)) != NULL;) PQclear(r);
    PQfinish(p);
    return waited;
}

/* synchronous_standby_names naming a standby that never connects: from the
 * reload on (until every commit is seen to wait, or not to wait), every
 * commit that waits for the standby waits until cancelled (on = true) or
 * nothing waits any more (on = false). The file keeps no trace (a crash of
 * the test leaves the server as it was at its next reload). */
static void sync_standby(bool on) {
    PGconn *a = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
    assert_int_equal(PQstatus(a), CONNECTION_OK);
    PQclear(PQexec(a, on ? "ALTER SYSTEM SET synchronous_standby_names = 'reaper_nobody'"
                         : "ALTER SYSTEM RESET synchronous_standby_names"));
    PQclear(PQexec(a, "SELECT pg_reload_conf()"));
    /* The postmaster reads the file when the reload's signal reaches it:
     * the file is reset only once the setting is seen in force. */
    bool now = !on;
    for (long long until = itest_mono_ms() + 10000; now != on && itest_mono_ms() < until;)
        if ((now = commits_wait(a)) != on) usleep(100000);
    PQclear(PQexec(a, "ALTER SYSTEM RESET synchronous_standby_names"));
    PQfinish(a);
    assert_true(now == on);
}

static int teardown_sync(void **state) {
    sync_standby(false);
    return teardown(state);
}

/* A park of l in a child on a session of its own (in_batch: the batch park,
 * else the port's one-by-one park), while the parent cancels (as reaperd
 * at a stop's end, or an operator, would) every commit of it that waits
 * for the standby. The child's code: 100 the park failed unavailable (not
 * acked), 1 parked, 0 already parked (both acked), 250 another failure.
 * *cancelled: the waits the parent cancelled. */
static int park_cancelling_the_wait(pgfx *f, const letter *l, bool in_batch, int *cancelled) {
    pid_t kid = fork();
    if (kid == 0) {
        pgfx *c = pgfx_attach(f->schema);
        rp_dead_letter d;
        rp_verdict v;
        rp_status st = rp_dead_letter_examine(&l->msg.headers, "/", "vibey.orders.dlq", c->dlq,
                                              l->msg.body, &d);
        if (st == RP_OK) st = rp_judge_dead_letter(&d, "/", "vibey.orders.dlq", &v);
        rp_pg_park_item it = {"/", "vibey.orders.dlq", &l->msg, &d, &v, {0}};
        if (st == RP_OK && in_batch) st = rp_pg_park_batch(c->store, &it, 1);
        if (st == RP_OK && !in_batch)
            st = c->ports.dead_letters.park(c->ports.dead_letters.self, "/", "vibey.orders.dlq",
                                            &l->msg, &d, &v, &it.result);
        pgfx_free(c);
        _exit(st == RP_ERR_UNAVAILABLE ? 100 : st != RP_OK ? 250 : it.result.parked ? 1 : 0);
    }
    PGconn *a = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
    assert_int_equal(PQstatus(a), CONNECTION_OK);
    *cancelled = 0;
    int status = 0;
    for (long long until = itest_mono_ms() + 10000; itest_mono_ms() < until; usleep(20000)) {
        if (waitpid(kid, &status, WNOHANG) == kid) break;
        PGresult *r = PQexec(a, "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
                                "WHERE wait_event = 'SyncRep'");
        if (PQresultStatus(r) == PGRES_TUPLES_OK) *cancelled += atoi(PQgetvalue(r, 0, 0));
        PQclear(r);
        status = -1;
    }
    PQfinish(a);
    if (status == -1) waitpid(kid, &status, 0);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* With a synchronous standby, a dead letter is acked only once the standby
 * has its row. A park of a dead letter already on the primary (committed
 * there by a park whose wait was cancelled, delivered again) inserts
 * nothing: it too waits for the standby (its lead writes WAL), so that its
 * cancelled wait fails it instead of acking a row the standby may lack;
 * and a park whose cancelled wait came back as a success with a WARNING
 * fails on both paths, the batch and the one-by-one park. */
static void test_park_waits_for_the_sync_standby(void **state) {
    pgfx *f = *state;
    letter old, fresh, fresh2;
    static const uint8_t body[] = "{}";
    make_letter(&old, "m-sync-old", body, 2);
    make_letter(&fresh, "m-sync-fresh", body, 2);
    make_letter(&fresh2, "m-sync-fresh2", body, 2);
    assert_int_equal(park(f, &old, false, RP_OK), RP_PARKED_NEW);

    sync_standby(true);
    int cancelled = 0;
    /* Already parked: the park's commit waits, and its cancel fails it. */
    assert_int_equal(park_cancelling_the_wait(f, &old, false, &cancelled), 100);
    assert_int_equal(cancelled, 1);
    assert_int_equal(park_cancelling_the_wait(f, &old, true, &cancelled), 100);
    assert_int_equal(cancelled, 1);
    /* New: committed on the primary alone (the WARNING): not acked, on
     * either path. */
    assert_int_equal(park_cancelling_the_wait(f, &fresh, false, &cancelled), 100);
    assert_int_equal(cancelled, 1);
    assert_int_equal(park_cancelling_the_wait(f, &fresh2, true, &cancelled), 100);
    assert_int_equal(cancelled, 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter"), 3);
    sync_standby(false);

    /* Without the standby's wait, the same parks are parks again. */
    assert_int_equal(park_cancelling_the_wait(f, &old, false, &cancelled), 0);
    assert_int_equal(park_cancelling_the_wait(f, &fresh, true, &cancelled), 0);
    assert_int_equal(cancelled, 0);
}

/* A WARNING that is not a cut-short wait for a synchronous standby (here
 * an operator's audit trigger that raises one for every dead letter)
 * fails no park: both paths park and ack, on the session they had. */
static void test_park_survives_other_warnings(void **state) {
    pgfx *f = *state;
    pgfx_exec(f, "CREATE FUNCTION audit_park() RETURNS trigger LANGUAGE plpgsql AS "
                 "$$BEGIN RAISE WARNING 'audit: dead letter %% parked', NEW.identity; "
                 "RETURN NEW; END$$");
    pgfx_exec(f, "CREATE TRIGGER audit_park AFTER INSERT ON dead_letter FOR EACH ROW "
                 "EXECUTE FUNCTION audit_park()");
    letter one, batched;
    static const uint8_t body[] = "{}";
    make_letter(&one, "m-audit-one", body, 2);
    make_letter(&batched, "m-audit-batched", body, 2);
    int cancelled = 0;
    assert_int_equal(park_cancelling_the_wait(f, &one, false, &cancelled), 1);
    assert_int_equal(park_cancelling_the_wait(f, &batched, true, &cancelled), 1);
    assert_int_equal(cancelled, 0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM dead_letter"), 2);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_park_is_idempotent_by_identity),
        T(test_park_edge_cases),
        T(test_park_batches_pipelined),
        T(test_park_new_death_is_new_occurrence),
        T(test_park_batch_one_identity_many_times),
        T(test_park_batch_texts_per_item),
        T(test_park_same_message_id_two_origins),
        T(test_park_race_two_sessions),
        T(test_park_writes_vhost),
        T(test_gate_list),
        T(test_gate_list_filters_and_pages),
        T(test_gate_list_total_capped),
        T(test_gate_answers),
        T(test_gate_answered_once_under_a_race),
        cmocka_unit_test_setup_teardown(test_park_waits_for_the_sync_standby, setup,
                                        teardown_sync),
        T(test_park_survives_other_warnings),
    };
    return cmocka_run_group_tests_name("pg_store_gates", tests, NULL, NULL);
}
