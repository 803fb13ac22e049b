/* The backfill's read of dead-letter queues (core/rp_backfill_read.h): whole
 * passes (core/rp_pass.h) over the memory store, with the dead-letter port
 * of the backfill read on the memory peek and record ports
 * (adapters/memory/rp_memory_backfill.h). One test per rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_backfill_read.h"
#include "rp_memory.h"
#include "rp_memory_backfill.h"
#include "rp_pass.h"

#define NOW ((rp_time_ms)1700000000000LL)

#include "pass_fixture.h"

#define DLQ "vibey.x.dlq"

/* The fixture of the pass tests, with the backfill read in the dead-letter
 * port's place and what it had to say counted. */
typedef struct bf {
    fixture *f;
    rp_memory_backfill *mb;
    rp_backfill_read *b;
    size_t news[RP_BACKFILL_NEWS_COUNT_];
    rp_backfill_news last; /* strings not kept */
    int64_t last_behind;
    size_t last_n;
} bf;

static void on_news(void *arg, const rp_backfill_news *n) {
    bf *t = arg;
    assert_true(n->kind < RP_BACKFILL_NEWS_COUNT_);
    assert_string_equal(n->vhost, "/");
    t->news[n->kind]++;
    t->last_n = n->n;
    t->last_behind = n->behind;
}

static int bf_setup(void **state) {
    void *fs = NULL;
    setup(&fs);
    bf *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->f = fs;
    t->mb = rp_memory_backfill_new(t->f->m);
    assert_non_null(t->mb);
    rp_backfill_read_deps d = {.broker = &t->f->ports.broker, .on_news = on_news, .news_arg = t};
    rp_memory_backfill_peek_port(t->mb, &d.peek);
    rp_memory_backfill_record_port(t->mb, &d.record);
    d.store = t->f->ports.dead_letters; /* the memory store's is_parked and park */
    t->b = rp_backfill_read_new(&d);
    assert_non_null(t->b);
    rp_backfill_read_port(t->b, &t->f->ports.dead_letters);
    *state = t;
    return 0;
}

static int bf_teardown(void **state) {
    bf *t = *state;
    rp_backfill_read_free(t->b);
    rp_memory_backfill_free(t->mb);
    void *fs = t->f;
    teardown(&fs);
    free(t);
    return 0;
}

static void put_queue(bf *t, const char *name, rp_queue_type type, int64_t ready) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = name,
        .type = type,
        .ready = ready,
        .counts_known = true,
        .consumers_known = true,
    };
    assert_int_equal(rp_memory_put_queue(t->f->m, &q), RP_OK);
}

/* n dead letters on queue: message_id "m-<i>", body "<i>", i = 1..n. */
static void add_dead_letters(bf *t, const char *queue, int n) {
    for (int i = 1; i <= n; i++) {
        char id[32], body[16];
        snprintf(id, sizeof id, "m-%d", i);
        snprintf(body, sizeof body, "%d", i);
        rp_xdeath e = {
            .queue = {true, {(const uint8_t *)"vibey.x", 7}},
            .reason = {true, {(const uint8_t *)"rejected", 8}},
            .time = {true, 1699990000},
            .count = {true, 1},
        };
        rp_dl_headers h = {.x_death = &e, .n_x_death = 1};
        h.message_id = (rp_opt_str){true, {(const uint8_t *)id, strlen(id)}};
        assert_int_equal(rp_memory_add_dead_letter(t->f->m, "/", queue, &h,
                                                   (rp_bytes){(const uint8_t *)body,
                                                              strlen(body)}),
                         RP_OK);
    }
}

/* One pass as pass_runner runs it: begin, the pass, end. */
static void pass(bf *t, bool dry_run, rp_report *r) {
    t->f->opt.dry_run = dry_run;
    rp_backfill_read_pass_begin(t->b, dry_run);
    assert_int_equal(rp_pass_run(&t->f->ports, &t->f->opt, r), RP_OK);
    rp_backfill_read_pass_end(t->b);
}

static bool has_note(const rp_report *r, const char *part) {
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], part)) return true;
    return false;
}

/* The unread remainder surfaced on the queue (issue #5), or NULL. */
static const rp_verdict *unread_verdict(const rp_report *r, const char *queue) {
    char object[128];
    snprintf(object, sizeof object, "queue:/:%s", queue);
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        if (v->object && strcmp(v->object, object) == 0 && v->condition == RP_COND_DEAD_LETTER &&
            v->action == RP_ACTION_SURFACED)
            return v;
    }
    return NULL;
}

/* The backfill read's peek called as a pass calls it (outside a pass:
 * what it says of the queue, not what the pass makes of it), then the
 * pass's end. */
static void peek_alone(bf *t, bool dry_run, size_t limit, rp_dl_batch *out) {
    memset(out, 0, sizeof *out);
    out->unread = -1;
    rp_backfill_read_pass_begin(t->b, dry_run);
    assert_int_equal(t->f->ports.dead_letters.peek(t->f->ports.dead_letters.self, "/", DLQ,
                                                   limit, out),
                     RP_OK);
    rp_backfill_read_pass_end(t->b);
}

/* ---- the rules ---- */

/* A quorum dead-letter queue is read once, ever: the first pass reads it,
 * parks what it read and records the read (then releases the lock); every
 * later pass reads the record, not the queue, and says so in its notes. */
static void test_quorum_read_once_across_passes(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 3);
    add_dead_letters(t, DLQ, 3);
    rp_report r;
    pass(t, false, &r);
    assert_true(r.ok);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_n_parked(t->f->m), 3);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
    size_t n = 0;
    int64_t unread = -2;
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, &n, &unread), 1);
    assert_int_equal(n, 3);
    assert_int_equal(unread, 0);
    assert_int_equal(t->news[RP_BACKFILL_READ_RECORDED], 1);
    assert_false(rp_memory_backfill_locked(t->mb, "/", DLQ));
    for (int i = 0; i < 4; i++) {
        pass(t, false, &r);
        assert_true(r.ok);
        assert_true(has_note(&r, "dead-letter queue " DLQ " on vhost /: not read again: a quorum "
                                 "dead-letter queue is read by the backfill once (each read "
                                 "spends a delivery), and an earlier pass read it; what reaches "
                                 "it since comes through the tap (it holds 3)"));
        rp_report_cleanup(&r);
    }
    /* One read, each message delivered once by the backfill, one record. */
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
    assert_int_equal(rp_memory_backfill_delivered(t->mb, "/", DLQ), 3);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 1);
    assert_int_equal(t->news[RP_BACKFILL_READ_RECORDED], 1);
    assert_false(rp_memory_backfill_locked(t->mb, "/", DLQ));
}

/* The pending record is written only when no park of the read failed: a
 * park that fails leaves the queue unrecorded (and unlocked), so the next
 * pass reads it again and parks what the failed one could not. */
static void test_failed_park_leaves_it_unrecorded(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 3);
    add_dead_letters(t, DLQ, 3);
    /* The second park fails on its own (the first and third go through). */
    rp_memory_fail_once(t->f->m, RP_MEM_PARK, RP_ERR_INTERNAL, 1);
    rp_report r;
    pass(t, false, &r);
    assert_true(has_note(&r, "could not be examined"));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_n_parked(t->f->m), 2);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 0);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_MARK_READ), 0);
    assert_int_equal(t->news[RP_BACKFILL_PARK_FAILED], 1);
    assert_int_equal(t->last_n, 3);
    assert_int_equal(t->news[RP_BACKFILL_READ_RECORDED], 0);
    assert_false(rp_memory_backfill_locked(t->mb, "/", DLQ));
    /* Read again, every message parked (idempotently), recorded once. */
    pass(t, false, &r);
    assert_true(r.ok);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 2);
    assert_int_equal(rp_memory_n_parked(t->f->m), 3);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 1);
    assert_int_equal(t->news[RP_BACKFILL_READ_RECORDED], 1);
    pass(t, false, &r);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 2);
}

/* A record that cannot be written is said (a later pass reads the queue
 * again), and the lock is released all the same. */
static void test_record_that_fails_is_read_again(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 2);
    add_dead_letters(t, DLQ, 2);
    rp_memory_backfill_fail(t->mb, RP_MBF_MARK_READ, RP_ERR_UNAVAILABLE);
    rp_report r;
    pass(t, false, &r);
    rp_report_cleanup(&r);
    assert_int_equal(t->news[RP_BACKFILL_RECORD_FAILED], 1);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 0);
    assert_false(rp_memory_backfill_locked(t->mb, "/", DLQ));
    rp_memory_backfill_fail(t->mb, RP_MBF_MARK_READ, RP_OK);
    pass(t, false, &r);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 2);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 1);
}

/* A dry run reads no quorum queue (a read spends a delivery), takes no
 * lock, records nothing: it reports the depth as unread with a note; once
 * a real pass has read the queue, a dry run reports what a real pass
 * would (not read again, up to what lay behind). */
static void test_dry_run_reads_no_quorum_queue(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 4);
    add_dead_letters(t, DLQ, 4);
    t->f->opt.dead_letter_peek_limit = 3;
    rp_report r;
    pass(t, true, &r);
    assert_true(has_note(&r, "dead-letter queue " DLQ " on vhost /: not read by a dry run, each "
                             "read of a quorum queue spends a delivery (it holds 4)"));
    const rp_verdict *v = unread_verdict(&r, DLQ);
    assert_non_null(v);
    assert_true(v->measured == 4.0);
    assert_non_null(strstr(v->detail, "this dry run did not read"));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_READ), 0);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_LOCK), 0);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_MARK_READ), 0);
    assert_int_equal(rp_memory_n_parked(t->f->m), 0);
    /* A real pass reads 3, one behind; a dry run then reads nothing again. */
    pass(t, false, &r);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
    pass(t, true, &r);
    assert_true(has_note(&r, "not read again"));
    rp_report_cleanup(&r);
    rp_dl_batch b;
    peek_alone(t, true, 3, &b);
    assert_int_equal(b.n, 0);
    assert_int_equal(b.unread, 1);
    assert_true(b.unread_at_most);
    assert_int_equal(b.unread_reason, RP_DL_UNREAD_READ_ONCE);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_LOCK), 1);
}

/* A quorum queue whose lock another replica holds is skipped this pass,
 * with a note; read once the lock is free. */
static void test_lock_held_by_another_skips_it(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 2);
    add_dead_letters(t, DLQ, 2);
    assert_int_equal(rp_memory_backfill_hold(t->mb, "/", DLQ, true), RP_OK);
    rp_report r;
    pass(t, false, &r);
    assert_true(r.ok);
    assert_true(has_note(&r, "dead-letter queue " DLQ " on vhost /: not read now: another "
                             "reaperd is reading this quorum dead-letter queue (it is read by "
                             "the backfill once) (it holds 2)"));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_READ), 0);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_WAS_READ), 0);
    assert_int_equal(rp_memory_n_parked(t->f->m), 0);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 0);
    assert_int_equal(rp_memory_backfill_hold(t->mb, "/", DLQ, false), RP_OK);
    pass(t, false, &r);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
    assert_int_equal(rp_memory_n_parked(t->f->m), 2);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 1);
}

/* A queue whose type the broker does not report is read as a quorum one:
 * once, ever, under its lock. */
static void test_unknown_type_read_once(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_UNKNOWN, 2);
    add_dead_letters(t, DLQ, 2);
    rp_report r;
    for (int i = 0; i < 3; i++) {
        pass(t, false, &r);
        assert_true(r.ok);
        rp_report_cleanup(&r);
    }
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 1);
    assert_int_equal(rp_memory_n_parked(t->f->m), 2);
}

/* A stream queue is not read: its depth is reported unread, with a note. */
static void test_stream_is_not_read(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_STREAM, 5);
    add_dead_letters(t, DLQ, 5);
    rp_report r;
    pass(t, false, &r);
    assert_true(has_note(&r, "dead-letter queue " DLQ " on vhost /: not read, a stream queue "
                             "cannot be read by the backfill (it holds 5)"));
    const rp_verdict *v = unread_verdict(&r, DLQ);
    assert_non_null(v);
    assert_true(v->measured == 5.0);
    assert_non_null(strstr(v->detail, "cannot read"));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_READ), 0);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_LOCK), 0);
    assert_int_equal(rp_memory_n_parked(t->f->m), 0);
}

/* The unread count: what lay behind a quorum queue's one read is recorded
 * and surfaced then; later passes surface up to min(that, the depth now). */
static void test_unread_count_kept_with_the_record(void **state) {
    bf *t = *state;
    t->f->opt.dead_letter_peek_limit = 3;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 5);
    add_dead_letters(t, DLQ, 5);
    rp_report r;
    pass(t, false, &r);
    const rp_verdict *v = unread_verdict(&r, DLQ);
    assert_non_null(v);
    assert_true(v->measured == 2.0);
    rp_report_cleanup(&r);
    int64_t unread = -2;
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, &unread), 1);
    assert_int_equal(unread, 2);
    assert_int_equal(t->last_behind, 2);
    /* Still 5 deep: up to the 2 behind. */
    rp_dl_batch b;
    peek_alone(t, false, 3, &b);
    assert_int_equal(b.n, 0);
    assert_int_equal(b.unread, 2);
    assert_true(b.unread_at_most);
    assert_int_equal(b.unread_reason, RP_DL_UNREAD_READ_ONCE);
    /* Consumers took from the head: no more than the depth now are left. */
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 1);
    peek_alone(t, false, 3, &b);
    assert_int_equal(b.unread, 1);
    assert_true(b.unread_at_most);
    assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), 1);
}

/* A classic queue is read at every pass, past what is parked, without a
 * lock or a record. */
static void test_classic_read_every_pass(void **state) {
    bf *t = *state;
    t->f->opt.dead_letter_peek_limit = 2;
    put_queue(t, DLQ, RP_QUEUE_TYPE_CLASSIC, 5);
    add_dead_letters(t, DLQ, 5);
    rp_report r;
    for (int i = 1; i <= 3; i++) {
        pass(t, false, &r);
        assert_true(r.ok);
        rp_report_cleanup(&r);
        assert_int_equal(rp_memory_backfill_reads(t->mb, "/", DLQ), i);
        assert_int_equal(rp_memory_n_parked(t->f->m), i < 3 ? 2 * i : 5);
    }
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_LOCK), 0);
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_MARK_READ), 0);
}

/* A read that fails releases the quorum queue's lock, records nothing and
 * is said with the port's reason; the pass marks the broker unreadable. */
static void test_failed_read_releases_the_lock(void **state) {
    bf *t = *state;
    put_queue(t, DLQ, RP_QUEUE_TYPE_QUORUM, 2);
    add_dead_letters(t, DLQ, 2);
    rp_memory_backfill_fail(t->mb, RP_MBF_READ, RP_ERR_UNAVAILABLE);
    rp_report r;
    pass(t, false, &r);
    assert_false(r.ok);
    rp_report_cleanup(&r);
    assert_int_equal(t->news[RP_BACKFILL_READ_FAILED], 1);
    assert_false(rp_memory_backfill_locked(t->mb, "/", DLQ));
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_UNLOCK), 1);
    assert_int_equal(rp_memory_backfill_records(t->mb, "/", DLQ, NULL, NULL), 0);
    /* And the end of every pass closes the peek. */
    assert_int_equal(rp_memory_backfill_calls(t->mb, RP_MBF_CLOSE), 1);
}

static void test_news_names(void **state) {
    (void)state;
    for (int k = 0; k < RP_BACKFILL_NEWS_COUNT_; k++)
        assert_string_not_equal(rp_backfill_news_str((rp_backfill_news_kind)k), "?");
    assert_string_equal(rp_backfill_news_str(RP_BACKFILL_NEWS_COUNT_), "?");
}

#define T(f) cmocka_unit_test_setup_teardown(f, bf_setup, bf_teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_quorum_read_once_across_passes),
        T(test_failed_park_leaves_it_unrecorded),
        T(test_record_that_fails_is_read_again),
        T(test_dry_run_reads_no_quorum_queue),
        T(test_lock_held_by_another_skips_it),
        T(test_unknown_type_read_once),
        T(test_stream_is_not_read),
        T(test_unread_count_kept_with_the_record),
        T(test_classic_read_every_pass),
        T(test_failed_read_releases_the_lock),
        cmocka_unit_test(test_news_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
