/*
 * The dead-letter tap's decisions (core/rp_tap_batch.h), without a broker or
 * a database: the loop's half on items of the test's own, the thread's half
 * on the memory store's park-batch port (adapters/memory).
 *
 * What each test proves is a rule of the tap: ack only after commit, and
 * only what came on the current connection; order kept; at most
 * RP_TAP_BATCH a batch and RP_TAP_IN_FLIGHT out; the consumer stops past
 * RP_TAP_HOLD_BYTES and consumes again at half under a new tag; the store
 * going away holds everything and backs off; a failed transaction isolates
 * its bad row; not-a-dead-letter deliveries are acked and counted, never
 * parked; a delivery given again parks nothing twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_memory.h"
#include "rp_memory_park_batch.h"
#include "rp_tap_batch.h"

/* ---- the test's items ------------------------------------------------------- */

typedef struct test_item {
    rp_tap_item base;
    char msg_id[32];
    bool death; /* carries death headers */
    char body[16];
    bool shed;
} test_item;

typedef struct test_ops {
    size_t dropped, shed;
} test_ops;

static void t_drop(void *ctx, rp_tap_item *it) {
    ((test_ops *)ctx)->dropped++;
    free(it);
}

static size_t t_shed(void *ctx, rp_tap_item *it) {
    ((test_ops *)ctx)->shed++;
    ((test_item *)it)->shed = true;
    return 8;
}

static test_item *item(uint64_t tag, size_t weight) {
    test_item *it = calloc(1, sizeof *it);
    assert_non_null(it);
    it->base.tag = tag;
    it->base.weight = weight;
    it->base.received_us = 1000;
    it->death = true;
    snprintf(it->msg_id, sizeof it->msg_id, "order-%llu", (unsigned long long)tag);
    snprintf(it->body, sizeof it->body, "b%llu", (unsigned long long)tag);
    return it;
}

typedef struct fixture {
    test_ops ops_count;
    rp_tap_state s;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rp_tap_item_ops ops = {.ctx = &f->ops_count, .drop = t_drop, .shed = t_shed};
    rp_tap_state_init(&f->s, &ops);
    rp_tap_state_up(&f->s);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_tap_state_cleanup(&f->s);
    free(f);
    return 0;
}

/* Holds n items with tags first.., each of weight w. */
static void hold_n(rp_tap_state *s, uint64_t first, size_t n, size_t w) {
    for (size_t i = 0; i < n; i++) rp_tap_state_hold(s, &item(first + i, w)->base);
}

static void set_results(rp_tap_batch *b, rp_tap_result r) {
    for (size_t i = 0; i < b->n; i++) {
        b->items[i]->result = r;
        b->items[i]->outcome = RP_PARKED_NEW;
    }
}

/* ---- the loop's half -------------------------------------------------------- */

/* At most RP_TAP_BATCH a batch, at most RP_TAP_IN_FLIGHT out, in order. */
static void test_batches_bounded_and_in_order(void **state) {
    fixture *f = *state;
    size_t total = RP_TAP_IN_FLIGHT * RP_TAP_BATCH + 5;
    hold_n(&f->s, 1, total, 100);
    bool nomem;
    rp_tap_batch *b[RP_TAP_IN_FLIGHT];
    uint64_t next = 1;
    for (size_t k = 0; k < RP_TAP_IN_FLIGHT; k++) {
        b[k] = rp_tap_state_take(&f->s, &nomem);
        assert_non_null(b[k]);
        assert_int_equal(b[k]->n, RP_TAP_BATCH);
        for (size_t i = 0; i < b[k]->n; i++) assert_int_equal(b[k]->items[i]->tag, next++);
    }
    assert_null(rp_tap_state_take(&f->s, &nomem));
    assert_false(nomem);
    assert_int_equal(f->s.waiting.n, 5);
    assert_int_equal(rp_tap_state_messages(&f->s), total);
    /* One back: with the other still out, 5 are less than a transaction
     * and wait for it; both back, they go. */
    set_results(b[0], RP_TAP_DONE);
    rp_tap_state_settle(&f->s, b[0], false, 2000);
    assert_null(rp_tap_state_take(&f->s, &nomem));
    assert_false(nomem);
    set_results(b[1], RP_TAP_DONE);
    rp_tap_state_settle(&f->s, b[1], false, 2000);
    rp_tap_batch *c = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(c);
    assert_int_equal(c->n, 5);
    assert_int_equal(c->items[0]->tag, next);
    set_results(c, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, c, false, 2000);
    assert_int_equal(f->s.held_bytes, 0);
    assert_int_equal(f->ops_count.dropped, total);
}

/* The acks one batch's outcome asks for, case by case. */
typedef struct ack_case {
    const char *name;
    /* results of a batch of tags 11..14 */
    rp_tap_result r[4];
    bool lower_in_flight; /* a batch of tags 1..10 is still on the thread */
    bool reconnected;     /* the connection came up again meanwhile */
    bool down;            /* the connection is down */
    bool multiple;
    size_t n_acks;
    uint64_t acks[4];
    size_t back_waiting, stuck;
    bool store_down;
} ack_case;

static const ack_case ack_cases[] = {
    {"all parked: one multiple ack of the last",
     {RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE}, false, false, false, true, 1, {14},
     0, 0, false},
    {"all parked, an older batch still out: one by one",
     {RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE}, true, false, false, false, 4,
     {11, 12, 13, 14}, 0, 0, false},
    {"store away for two: the rest acked, those two held in order",
     {RP_TAP_DONE, RP_TAP_RETRY, RP_TAP_DONE, RP_TAP_RETRY}, false, false, false, false, 2,
     {11, 13}, 2, 0, true},
    {"one stuck: held, the others one by one",
     {RP_TAP_DONE, RP_TAP_STUCK, RP_TAP_DONE, RP_TAP_DONE}, false, false, false, false, 3,
     {11, 13, 14}, 0, 1, false},
    {"stuck last: a multiple ack below it",
     {RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE, RP_TAP_STUCK}, false, false, false, true, 1, {13},
     0, 1, false},
    {"reconnected meanwhile: nothing acked, the broker gives them again",
     {RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE}, false, true, false, false, 0, {0},
     0, 0, false},
    {"connection down: nothing acked",
     {RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE, RP_TAP_DONE}, false, false, true, false, 0, {0},
     0, 0, false},
    {"nothing settled: nothing acked",
     {RP_TAP_RETRY, RP_TAP_RETRY, RP_TAP_RETRY, RP_TAP_RETRY}, false, false, false, false, 0,
     {0}, 4, 0, true},
};

static void test_ack_rules(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof ack_cases / sizeof ack_cases[0]; c++) {
        const ack_case *k = &ack_cases[c];
        print_message("case: %s\n", k->name);
        fixture *f = NULL;
        setup((void **)&f);
        bool nomem;
        rp_tap_batch *lower = NULL;
        if (k->lower_in_flight) {
            hold_n(&f->s, 1, 10, 100);
            lower = rp_tap_state_take(&f->s, &nomem);
            assert_non_null(lower);
        }
        /* A second batch goes out only with a transaction's worth: with
         * one out, the batch is tags 11..14 and that many more, parked. */
        size_t extra = k->lower_in_flight ? RP_TAP_TXN_MAX - 4 : 0;
        hold_n(&f->s, 11, 4 + extra, 100);
        rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
        assert_non_null(b);
        assert_int_equal(b->n, 4 + extra);
        for (size_t i = 0; i < b->n; i++) {
            rp_tap_result want = i < 4 ? k->r[i] : RP_TAP_DONE;
            b->items[i]->result = want;
            b->items[i]->st = want == RP_TAP_STUCK ? RP_ERR_INTERNAL : RP_OK;
        }
        if (k->reconnected) {
            rp_tap_state_down(&f->s);
            rp_tap_state_up(&f->s);
        }
        if (k->down) rp_tap_state_down(&f->s);
        const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 5000);
        assert_int_equal(r->n_acks, k->n_acks + extra);
        assert_int_equal(r->multiple, k->multiple);
        for (size_t i = 0; i < k->n_acks; i++) assert_int_equal(r->acks[i], k->acks[i]);
        for (size_t i = 0; i < extra; i++) assert_int_equal(r->acks[k->n_acks + i], 15 + i);
        assert_int_equal(r->store_down, k->store_down);
        assert_int_equal(f->s.stuck.n, k->stuck);
        assert_int_equal(r->n_stuck, k->stuck);
        /* What goes back waits at the head, in its order. */
        assert_int_equal(f->s.waiting.n, k->back_waiting);
        uint64_t prev = 0;
        for (rp_tap_item *it = f->s.waiting.head; it; it = it->next) {
            assert_true(it->tag > prev);
            prev = it->tag;
        }
        if (lower) {
            set_results(lower, RP_TAP_DONE);
            rp_tap_state_settle(&f->s, lower, false, 5000);
        }
        teardown((void **)&f);
    }
}

/* A batch that could not be handed over goes back to the head, in order. */
/* In a storm a short batch waits a while for more (rp_tap_state_gather):
 * after a batch of RP_TAP_GATHER_AFTER or more, with none out and fewer
 * than a transaction's worth waiting, up to RP_TAP_GATHER_US from the
 * first ask, then it goes; a transaction's worth goes at once; after a
 * small batch (a light storm) nothing waits. */
static void test_gather_in_a_storm(void **state) {
    fixture *f = *state;
    bool nomem;
    /* A light storm: batches of one go at once. */
    hold_n(&f->s, 1, 1, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 1000), 0);
    rp_tap_batch *a = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(a);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    hold_n(&f->s, 2, 1, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 2000), 0);
    a = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(a->n, 1);
    /* One out: nothing to gather for (take waits for a transaction). */
    hold_n(&f->s, 3, RP_TAP_GATHER_AFTER, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 3000), 0);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    /* The last batch was small: the big one goes at once. */
    assert_int_equal(rp_tap_state_gather(&f->s, 4000), 0);
    a = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(a->n, RP_TAP_GATHER_AFTER);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    /* A storm now: a short batch waits, counted from the first ask. */
    hold_n(&f->s, 3 + RP_TAP_GATHER_AFTER, 5, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 10000), RP_TAP_GATHER_US);
    assert_int_equal(rp_tap_state_gather(&f->s, 11000), RP_TAP_GATHER_US - 1000);
    hold_n(&f->s, 8 + RP_TAP_GATHER_AFTER, 5, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 10000 + RP_TAP_GATHER_US), 0);
    a = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(a->n, 10);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    /* 10 is under RP_TAP_GATHER_AFTER: the next short batch goes at once. */
    hold_n(&f->s, 13 + RP_TAP_GATHER_AFTER, 3, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 20000), 0);
    a = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(a->n, 3);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    /* After a storm's batch, a transaction's worth goes at once. */
    hold_n(&f->s, 100, 2 * RP_TAP_GATHER_AFTER, 10);
    a = rp_tap_state_take(&f->s, &nomem);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    hold_n(&f->s, 1000, RP_TAP_TXN_MAX, 10);
    assert_int_equal(rp_tap_state_gather(&f->s, 30000), 0);
    a = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(a->n, RP_TAP_TXN_MAX);
    set_results(a, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    /* Paused (the store away): nothing to wait for. */
    hold_n(&f->s, 2000, 3, 10);
    f->s.last_taken = RP_TAP_TXN_MAX;
    rp_tap_state_pause(&f->s);
    assert_int_equal(rp_tap_state_gather(&f->s, 40000), 0);
}

static void test_put_back_keeps_order(void **state) {
    fixture *f = *state;
    hold_n(&f->s, 1, 3, 10);
    bool nomem;
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    hold_n(&f->s, 4, 2, 10);
    rp_tap_state_put_back(&f->s, b);
    assert_int_equal(f->s.in_flight, 0);
    uint64_t want = 1;
    for (rp_tap_item *it = f->s.waiting.head; it; it = it->next) assert_int_equal(it->tag, want++);
    assert_int_equal(want, 6);
}

/* Items of an older connection are never handed over: the broker has them. */
static void test_stale_items_dropped(void **state) {
    fixture *f = *state;
    hold_n(&f->s, 1, 3, 10);
    rp_tap_state_down(&f->s);
    bool nomem;
    assert_null(rp_tap_state_take(&f->s, &nomem)); /* down: nothing goes */
    rp_tap_state_up(&f->s);
    hold_n(&f->s, 1, 2, 10); /* the broker delivers them again, new tags */
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(b);
    assert_int_equal(b->n, 2);
    assert_int_equal(f->ops_count.dropped, 3);
    assert_int_equal(f->s.held_bytes, 20);
    set_results(b, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, b, false, 0);
}

/* Past RP_TAP_HOLD_BYTES the consumer stops; at half it consumes again,
 * each time under a tag never used on the connection. */
static void test_pause_at_limit_resume_at_half(void **state) {
    fixture *f = *state;
    size_t w = 1024 * 1024;
    size_t n = RP_TAP_HOLD_BYTES / w; /* exactly at the limit: not over */
    hold_n(&f->s, 1, n, w);
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_NONE);
    hold_n(&f->s, n + 1, 1, w);
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_CANCEL);
    assert_string_equal(f->s.tag, RP_TAP_CONSUMER_TAG);
    assert_false(rp_tap_state_off(&f->s)); /* not until the cancel went out */
    rp_tap_state_hold_sent(&f->s, RP_TAP_HOLD_CANCEL);
    assert_true(rp_tap_state_off(&f->s));
    assert_true(rp_tap_state_paused(&f->s));
    rp_tap_state_returned(&f->s);
    assert_int_equal(f->s.returned, 1);
    /* Parks bring it down, but not yet to half: still off. */
    bool nomem;
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(b->n, n + 1);
    for (size_t i = 0; i < b->n; i++) b->items[i]->result = i < n / 2 ? RP_TAP_DONE : RP_TAP_RETRY;
    rp_tap_state_settle(&f->s, b, false, 0);
    assert_true(f->s.held_bytes > RP_TAP_HOLD_BYTES / 2);
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_NONE);
    /* At half: consume again under a new tag. */
    rp_tap_state_retry(&f->s);
    b = rp_tap_state_take(&f->s, &nomem);
    b->items[0]->result = RP_TAP_DONE;
    for (size_t i = 1; i < b->n; i++) b->items[i]->result = RP_TAP_RETRY;
    rp_tap_state_settle(&f->s, b, false, 0);
    assert_true(f->s.held_bytes <= RP_TAP_HOLD_BYTES / 2);
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_CONSUME);
    assert_string_equal(f->s.tag, RP_TAP_CONSUMER_TAG ".1");
    rp_tap_state_hold_sent(&f->s, RP_TAP_HOLD_CONSUME);
    assert_false(rp_tap_state_off(&f->s));
    /* Over again, then half again: ".2". */
    hold_n(&f->s, 1000, n, w);
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_CANCEL);
    assert_string_equal(f->s.tag, RP_TAP_CONSUMER_TAG ".1");
    rp_tap_state_hold_sent(&f->s, RP_TAP_HOLD_CANCEL);
    assert_int_equal(f->s.returned, 0);
    /* A new connection consumes from its setup: not off, its tag the first. */
    rp_tap_state_down(&f->s);
    rp_tap_state_up(&f->s);
    assert_false(rp_tap_state_off(&f->s));
    rp_tap_state_retry(&f->s);
    assert_null(rp_tap_state_take(&f->s, &nomem)); /* drops the stale ones */
    assert_int_equal(f->s.held_bytes, 0);
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_NONE);
}

/* A stuck item sheds its message: it never keeps the tap from consuming. */
static void test_stuck_sheds_weight(void **state) {
    fixture *f = *state;
    hold_n(&f->s, 1, 2, 4096);
    bool nomem;
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    b->items[0]->result = RP_TAP_STUCK;
    b->items[1]->result = RP_TAP_DONE;
    rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(f->ops_count.shed, 1);
    assert_int_equal(f->s.held_bytes, 8);
    assert_int_equal(f->s.stuck.n, 1);
}

/* The store away: paused with a doubling backoff up to the most, warned
 * once; when it answers, said so and the backoff starts over. */
static void test_backoff(void **state) {
    fixture *f = *state;
    const int want[] = {1000, 2000, 4000, 8000, 8000};
    bool nomem;
    hold_n(&f->s, 1, 1, 10);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
        assert_non_null(b);
        set_results(b, RP_TAP_RETRY);
        const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
        assert_true(r->store_down);
        assert_int_equal(r->warn_down, k == 0);
        assert_int_equal(r->pause_ms, want[k]);
        assert_int_equal(r->n_acks, 0);
        assert_null(rp_tap_state_take(&f->s, &nomem)); /* paused */
        rp_tap_state_retry(&f->s);
    }
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    set_results(b, RP_TAP_DONE);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_true(r->resumed);
    assert_int_equal(f->s.backoff_ms, 0);
    assert_int_equal(r->n_acks, 1);
}

/* Two batches out find the store away: only the first pauses. */
static void test_second_batch_does_not_pause_again(void **state) {
    fixture *f = *state;
    hold_n(&f->s, 1, RP_TAP_BATCH + RP_TAP_TXN_MAX, 10);
    bool nomem;
    rp_tap_batch *a = rp_tap_state_take(&f->s, &nomem);
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(b);
    set_results(a, RP_TAP_RETRY);
    set_results(b, RP_TAP_RETRY);
    assert_int_equal(rp_tap_state_settle(&f->s, a, false, 0)->pause_ms, 1000);
    assert_int_equal(rp_tap_state_settle(&f->s, b, false, 0)->pause_ms, 0);
    assert_int_equal(f->s.backoff_ms, 1000);
    /* Both back, in order. */
    uint64_t want = 1;
    for (rp_tap_item *it = f->s.waiting.head; it; it = it->next) assert_int_equal(it->tag, want++);
}

/* Not dead letters: acked and counted, the first one said. */
static void test_ignored_counted(void **state) {
    fixture *f = *state;
    bool nomem;
    for (int round = 0; round < 2; round++) {
        hold_n(&f->s, 1 + (uint64_t)round * 3, 3, 10);
        rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
        set_results(b, RP_TAP_DONE);
        b->items[0]->skipped = true;
        b->items[2]->skipped = true;
        const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 3000);
        assert_int_equal(r->ignored, 2);
        assert_int_equal(r->first_ignored, round == 0);
        assert_int_equal(r->parked, 1);
        assert_int_equal(r->n_delays, 3);
        assert_int_equal(r->delays_us[0], 2000);
        assert_true(r->multiple);
        assert_int_equal(r->acks[0], 3 + (uint64_t)round * 3);
    }
    assert_int_equal(f->s.ignored, 4);
}

/* A cancelled batch (the thread gone) acks nothing and frees its items. */
static void test_cancelled_batch(void **state) {
    fixture *f = *state;
    hold_n(&f->s, 1, 3, 10);
    bool nomem;
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    set_results(b, RP_TAP_DONE);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, true, 0);
    assert_int_equal(r->n_acks, 0);
    assert_int_equal(f->ops_count.dropped, 3);
    assert_int_equal(f->s.in_flight, 0);
    assert_int_equal(f->s.held_bytes, 0);
}

/* Stopped: nothing more is handed out nor switched. */
static void test_stopped(void **state) {
    fixture *f = *state;
    hold_n(&f->s, 1, 1, RP_TAP_HOLD_BYTES + 1);
    rp_tap_state_stop(&f->s);
    bool nomem;
    assert_null(rp_tap_state_take(&f->s, &nomem));
    assert_int_equal(rp_tap_state_hold_check(&f->s), RP_TAP_HOLD_NONE);
}

static void test_owns_tag(void **state) {
    (void)state;
    static const struct {
        const char *tag;
        bool owned;
    } cases[] = {
        {"reaper.tap", true},   {"reaper.tap.1", true}, {"reaper.tap.12", true},
        {"reaper.tapx", false}, {"reaper.ta", false},   {"reaper.control", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("tag: '%s'\n", cases[i].tag);
        assert_int_equal(rp_tap_owns_tag(cases[i].tag, strlen(cases[i].tag)), cases[i].owned);
    }
}

static void test_result_of(void **state) {
    (void)state;
    static const struct {
        rp_status st;
        rp_tap_result r;
    } cases[] = {
        {RP_OK, RP_TAP_DONE},
        {RP_ERR_UNAVAILABLE, RP_TAP_RETRY},
        {RP_ERR_TIMEOUT, RP_TAP_RETRY},
        {RP_ERR_CLOSED, RP_TAP_RETRY},
        {RP_ERR_NOMEM, RP_TAP_RETRY},
        {RP_ERR_INTERNAL, RP_TAP_STUCK},
        {RP_ERR_CONFLICT, RP_TAP_STUCK},
        {RP_ERR_INVALID, RP_TAP_STUCK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(rp_tap_result_of(cases[i].st), cases[i].r);
    assert_true(rp_tap_is_dead_letter(false, true));
    assert_false(rp_tap_is_dead_letter(true, true));
    assert_false(rp_tap_is_dead_letter(false, false));
    assert_false(rp_tap_is_dead_letter(true, false));
}

/* ---- the thread's half, on the memory store --------------------------------- */

/* The test's examiner: a dead letter of message id msg_id, first dead in
 * vibey.orders. */
typedef struct t_own {
    rp_dl_headers h;
} t_own;

static size_t inspected;

static rp_status t_inspect(void *ctx, rp_tap_item *base, rp_tap_prep *p, bool *death) {
    (void)ctx;
    (void)p;
    inspected++;
    *death = ((test_item *)base)->death;
    return RP_OK;
}

static rp_status t_capture(void *ctx, rp_tap_item *base, rp_tap_prep *p) {
    (void)ctx;
    test_item *it = (test_item *)base;
    t_own *o = calloc(1, sizeof *o);
    if (o == NULL) return RP_ERR_NOMEM;
    o->h.message_id = (rp_opt_str){true, {(const uint8_t *)it->msg_id, strlen(it->msg_id)}};
    o->h.first_death_queue = (rp_opt_str){true, {(const uint8_t *)"vibey.orders", 12}};
    p->own = o;
    p->msg = (rp_dl_message){.headers = o->h,
                             .body = {(const uint8_t *)it->body, strlen(it->body)},
                             .handle = NULL};
    p->bytes = 0;
    return RP_OK;
}

static void t_release(void *ctx, rp_tap_prep *p) {
    (void)ctx;
    free(p->own);
}

static bool stopping_now;
static bool t_stopping(void *ctx) {
    (void)ctx;
    return stopping_now;
}

typedef struct park_fx {
    rp_memory *m;
    rp_memory_park_batch *pb;
    rp_park_batch_port port;
    rp_ports ports;
    rp_tap_examiner ex;
    rp_tap_park_env env;
    test_ops ops_count;
    rp_tap_state s;
} park_fx;

static int park_setup(void **state) {
    park_fx *f = calloc(1, sizeof *f);
    f->m = rp_memory_new();
    f->pb = rp_memory_park_batch_new(f->m, 2);
    assert_non_null(f->pb);
    rp_memory_park_batch_port(f->pb, &f->port);
    rp_memory_park_batch_ports(f->pb, &f->ports);
    f->ex = (rp_tap_examiner){NULL, t_inspect, t_capture, t_release};
    f->env = (rp_tap_park_env){.batch = &f->port,
                               .ports = &f->ports,
                               .site = {"/", "vibey.reap.tap", NULL},
                               .ex = &f->ex,
                               .stopping = t_stopping};
    rp_tap_item_ops ops = {.ctx = &f->ops_count, .drop = t_drop, .shed = t_shed};
    rp_tap_state_init(&f->s, &ops);
    rp_tap_state_up(&f->s);
    stopping_now = false;
    inspected = 0;
    *state = f;
    return 0;
}

static int park_teardown(void **state) {
    park_fx *f = *state;
    rp_tap_state_cleanup(&f->s);
    rp_memory_park_batch_free(f->pb);
    rp_memory_free(f->m);
    free(f);
    return 0;
}

/* Holds n dead letters (tags from first) and takes them as one batch. */
static rp_tap_batch *park_batch(park_fx *f, uint64_t first, size_t n) {
    hold_n(&f->s, first, n, 100);
    bool nomem;
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(b);
    assert_int_equal(b->n, n);
    return b;
}

/* Everything parks, in transactions of RP_TAP_TXN_MAX sent to the sessions
 * in turn, at most RP_TAP_DEPTH outstanding, read in order; every event
 * goes out after its commit; acks follow, one multiple ack. */
static void test_park_all(void **state) {
    park_fx *f = *state;
    size_t n = 3 * RP_TAP_TXN_MAX + 17; /* 4 transactions */
    rp_tap_batch *b = park_batch(f, 1, n);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(b->items[i]->result, RP_TAP_DONE);
        assert_int_equal(b->items[i]->outcome, RP_PARKED_NEW);
    }
    rp_memory_park_batch_stats st = rp_memory_park_batch_stats_of(f->pb);
    assert_int_equal(st.sent, 4);
    assert_int_equal(st.sent_on[0], 2);
    assert_int_equal(st.sent_on[1], 2);
    assert_int_equal(st.committed, 4);
    assert_true(st.max_outstanding <= RP_TAP_DEPTH);
    assert_true(st.max_outstanding >= 2); /* pipelined */
    assert_int_equal(st.order_errors, 0);
    assert_int_equal(st.singles, 0);
    assert_int_equal(rp_memory_n_parked(f->m), n);
    assert_int_equal(rp_memory_n_published(f->m), n);
    /* Parked in the order they came. */
    for (size_t i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof want, "id:%%2F/vibey.orders/order-%zu", i + 1);
        assert_string_equal(rp_memory_parked(f->m, i)->identity, want);
    }
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(r->parked, n);
    assert_true(r->multiple);
    assert_int_equal(r->acks[0], n);
}

/* Nothing is acked before its commit: with the store away, the whole batch
 * is held, nothing parked, nothing acked; when it answers, all of it. */
static void test_ack_only_after_commit(void **state) {
    park_fx *f = *state;
    rp_memory_park_batch_set_down(f->pb, true);
    rp_tap_batch *b = park_batch(f, 1, 300);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < b->n; i++) assert_int_equal(b->items[i]->result, RP_TAP_RETRY);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(r->n_acks, 0);
    assert_true(r->store_down);
    assert_int_equal(rp_memory_n_parked(f->m), 0);
    assert_int_equal(rp_memory_n_published(f->m), 0);
    assert_int_equal(f->s.waiting.n, 300);
    /* The store answers: everything parks, then everything is acked. */
    rp_memory_park_batch_set_down(f->pb, false);
    rp_tap_state_retry(&f->s);
    bool nomem;
    b = rp_tap_state_take(&f->s, &nomem);
    assert_int_equal(b->n, 300);
    rp_tap_park(&f->env, b);
    r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_true(r->resumed);
    assert_true(r->multiple);
    assert_int_equal(r->acks[0], 300);
    assert_int_equal(rp_memory_n_parked(f->m), 300);
}

/* A transaction that fails on its own: its messages park one by one, so
 * only the bad one is held; the later transactions were read first. */
static void test_failed_transaction_isolates_bad_row(void **state) {
    park_fx *f = *state;
    size_t n = 2 * RP_TAP_TXN_MAX + 10;
    rp_memory_park_batch_fail_identity(f->pb, "id:%2F/vibey.orders/order-7");
    rp_tap_batch *b = park_batch(f, 1, n);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < n; i++) {
        rp_tap_result want = b->items[i]->tag == 7 ? RP_TAP_STUCK : RP_TAP_DONE;
        assert_int_equal(b->items[i]->result, want);
    }
    assert_int_equal(b->items[6]->st, RP_ERR_INTERNAL);
    rp_memory_park_batch_stats st = rp_memory_park_batch_stats_of(f->pb);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.singles, RP_TAP_TXN_MAX); /* only the failed one's */
    assert_int_equal(st.order_errors, 0);
    assert_int_equal(rp_memory_n_parked(f->m), n - 1);
    assert_int_equal(rp_memory_n_published(f->m), n - 1);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(r->n_stuck, 1);
    assert_int_equal(r->stuck_st[0], RP_ERR_INTERNAL);
    assert_int_equal(r->n_acks, n - 1);
    for (size_t i = 0; i < r->n_acks; i++) assert_int_not_equal(r->acks[i], 7);
}

/* Not dead letters (no death headers, or through the default exchange):
 * settled and acked, never parked. */
static void test_not_a_dead_letter(void **state) {
    park_fx *f = *state;
    rp_tap_batch *b = park_batch(f, 1, 4);
    ((test_item *)b->items[1])->death = false;
    b->items[2]->via_default = true;
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < 4; i++) assert_int_equal(b->items[i]->result, RP_TAP_DONE);
    assert_false(b->items[0]->skipped);
    assert_true(b->items[1]->skipped);
    assert_true(b->items[2]->skipped);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(r->ignored, 2);
    assert_int_equal(r->parked, 2);
    assert_true(r->multiple);
    assert_int_equal(r->acks[0], 4);
}

/* The same dead letters again (a reconnect gave them back): parked once,
 * no second event, acked again. */
static void test_redelivery_idempotent(void **state) {
    park_fx *f = *state;
    rp_tap_batch *b = park_batch(f, 1, 20);
    rp_tap_park(&f->env, b);
    rp_tap_state_settle(&f->s, b, false, 0);
    rp_tap_state_down(&f->s);
    rp_tap_state_up(&f->s);
    b = park_batch(f, 1, 20);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < 20; i++) {
        assert_int_equal(b->items[i]->result, RP_TAP_DONE);
        assert_int_equal(b->items[i]->outcome, RP_PARKED_ALREADY);
    }
    assert_int_equal(rp_memory_n_parked(f->m), 20);
    assert_int_equal(rp_memory_n_published(f->m), 20);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(r->parked, 0);
    assert_int_equal(r->acks[0], 20);
}

/* Stopping: nothing more is sent; everything is held for next time. */
static void test_stopping_holds(void **state) {
    park_fx *f = *state;
    stopping_now = true;
    rp_tap_batch *b = park_batch(f, 1, 10);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < 10; i++) assert_int_equal(b->items[i]->result, RP_TAP_RETRY);
    assert_int_equal(rp_memory_park_batch_stats_of(f->pb).sent, 0);
    assert_int_equal(inspected, 0);
    rp_tap_state_settle(&f->s, b, false, 0);
}

/* Transactions sized by the store's pace: with nothing out, one delivery
 * goes at once; with one out, the next batch waits until a whole
 * transaction's worth is waiting (or the one out comes back). */
static void test_next_batch_waits_for_a_transaction(void **state) {
    park_fx *f = *state;
    bool nomem;
    hold_n(&f->s, 1, 1, 10);
    rp_tap_batch *a = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(a);
    assert_int_equal(a->n, 1);
    hold_n(&f->s, 2, RP_TAP_TXN_MAX - 1, 10);
    assert_null(rp_tap_state_take(&f->s, &nomem));
    assert_false(nomem);
    /* A whole transaction and 7 more: the transaction goes, the 7 gather. */
    hold_n(&f->s, 1 + RP_TAP_TXN_MAX, 8, 10);
    rp_tap_batch *b = rp_tap_state_take(&f->s, &nomem);
    assert_non_null(b);
    assert_int_equal(b->n, RP_TAP_TXN_MAX);
    assert_int_equal(b->items[0]->tag, 2);
    assert_int_equal(f->s.waiting.n, 7);
    set_results(a, RP_TAP_DONE);
    set_results(b, RP_TAP_DONE);
    rp_tap_state_settle(&f->s, a, false, 0);
    assert_null(rp_tap_state_take(&f->s, &nomem)); /* b is out, 7 wait */
    rp_tap_state_settle(&f->s, b, false, 0);
    rp_tap_batch *c = rp_tap_state_take(&f->s, &nomem); /* nothing out: at once */
    assert_non_null(c);
    assert_int_equal(c->n, 7);
    set_results(c, RP_TAP_DONE);
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, c, false, 0);
    assert_true(r->multiple);
    assert_int_equal(r->acks[0], 8 + RP_TAP_TXN_MAX);
}

/* Working memory lent to every batch (rp_tap_park_mem): a batch after one
 * whose transaction failed and whose chunks were all used parks exactly its
 * own, with nothing left over from the one before. */
static void test_park_mem_reused(void **state) {
    park_fx *f = *state;
    f->env.mem = rp_tap_park_mem_new();
    assert_non_null(f->env.mem);
    size_t n = RP_TAP_DEPTH * RP_TAP_TXN_MAX + 3; /* every chunk, then one more */
    rp_memory_park_batch_fail_identity(f->pb, "id:%2F/vibey.orders/order-7");
    rp_tap_batch *b = park_batch(f, 1, n);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(b->items[i]->result, b->items[i]->tag == 7 ? RP_TAP_STUCK : RP_TAP_DONE);
    rp_tap_state_settle(&f->s, b, false, 0);
    size_t parked = rp_memory_n_parked(f->m);
    assert_int_equal(parked, n - 1);
    /* A small batch on the same memory: its 5 parked, once, in one
     * transaction, published once each. */
    rp_memory_park_batch_stats st0 = rp_memory_park_batch_stats_of(f->pb);
    b = park_batch(f, 5000, 5);
    rp_tap_park(&f->env, b);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(b->items[i]->result, RP_TAP_DONE);
        assert_int_equal(b->items[i]->outcome, RP_PARKED_NEW);
    }
    rp_memory_park_batch_stats st1 = rp_memory_park_batch_stats_of(f->pb);
    assert_int_equal(st1.sent - st0.sent, 1);
    assert_int_equal(st1.singles, st0.singles);
    assert_int_equal(rp_memory_n_parked(f->m), parked + 5);
    assert_int_equal(rp_memory_n_published(f->m), parked + 5);
    for (size_t i = 0; i < 5; i++) {
        char want[64];
        snprintf(want, sizeof want, "id:%%2F/vibey.orders/order-%zu", (size_t)5000 + i);
        assert_string_equal(rp_memory_parked(f->m, parked + i)->identity, want);
    }
    const rp_tap_settled *r = rp_tap_state_settle(&f->s, b, false, 0);
    assert_int_equal(r->parked, 5);
    rp_tap_park_mem_free(f->env.mem);
    f->env.mem = NULL;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batches_bounded_and_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_park_mem_reused, park_setup, park_teardown),
        cmocka_unit_test_setup_teardown(test_next_batch_waits_for_a_transaction, park_setup,
                                        park_teardown),
        cmocka_unit_test(test_ack_rules),
        cmocka_unit_test_setup_teardown(test_gather_in_a_storm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_back_keeps_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_items_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_at_limit_resume_at_half, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stuck_sheds_weight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_batch_does_not_pause_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignored_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped, setup, teardown),
        cmocka_unit_test(test_owns_tag),
        cmocka_unit_test(test_result_of),
        cmocka_unit_test_setup_teardown(test_park_all, park_setup, park_teardown),
        cmocka_unit_test_setup_teardown(test_ack_only_after_commit, park_setup, park_teardown),
        cmocka_unit_test_setup_teardown(test_failed_transaction_isolates_bad_row, park_setup,
                                        park_teardown),
        cmocka_unit_test_setup_teardown(test_not_a_dead_letter, park_setup, park_teardown),
        cmocka_unit_test_setup_teardown(test_redelivery_idempotent, park_setup, park_teardown),
        cmocka_unit_test_setup_teardown(test_stopping_holds, park_setup, park_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
