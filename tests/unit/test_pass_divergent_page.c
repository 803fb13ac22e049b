/* Issue 19 item 5: a sweep samples its owned work queues' publish and ack
 * counters (DIVERGENT, issue 18 item 3) with ONE store call per listed page
 * (rp_store_port.sample_queue_counters_many), not one per queue; only the
 * queues the per-queue step would have sampled (owned, not a dead-letter
 * queue, not a stream, counts and statistics known), each judged with its
 * own rates; a failed page call notes each of its queues and keeps their
 * DIVERGENT sightings, as a failed per-queue call did; without the page
 * call, and in a targeted check, the queues are sampled one by one as
 * before. Against the in-memory ports, with the store's two sampling calls
 * faked (the memory store has none). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_memory.h"
#include "rp_pass.h"

#define NOW ((rp_time_ms)1700000000000LL)

#include "pass_fixture.h"

/* The fake: a queue named vibey.div.* has 1000 publishes and 0 acks over
 * the window; every other sampled queue is quiet; nothing is known of a
 * queue named vibey.new.* (its first reading). */
typedef struct fake {
    unsigned single_calls, page_calls, readings;
    size_t largest_page;
    rp_status fail; /* what the page call returns (RP_OK: works) */
    char seen[64][64];
    size_t n_seen;
    bool same_clock; /* every reading had the pass's clock and window */
} fake;

static fake F;

static void rates_of(const rp_queue_counter_reading *r, rp_queue_rates *out) {
    *out = (rp_queue_rates){.known = strncmp(r->name, "vibey.new.", 10) != 0,
                            .ack_known = true,
                            .acked_at = r->read_at};
    if (strncmp(r->name, "vibey.div.", 10) == 0) out->published = 1000;
    if (r->read_at != NOW || r->window_seconds != 86400) F.same_clock = false;
    if (F.n_seen < 64) snprintf(F.seen[F.n_seen++], 64, "%s/%s", r->vhost, r->name);
    F.readings++;
}

static rp_status f_single(void *self, const rp_queue_counter_reading *r, rp_queue_rates *out) {
    (void)self;
    F.single_calls++;
    rates_of(r, out);
    return RP_OK;
}

static rp_status f_page(void *self, const rp_queue_counter_reading *r, size_t n,
                        rp_queue_rates *out) {
    (void)self;
    F.page_calls++;
    if (n > F.largest_page) F.largest_page = n;
    memset(out, 0, n * sizeof *out);
    if (F.fail != RP_OK) return F.fail;
    for (size_t i = 0; i < n; i++) rates_of(&r[i], &out[i]);
    return RP_OK;
}

static void put(fixture *f, const char *name, rp_queue_type type, bool stats) {
    rp_queue_facts q = {.vhost = "/", .name = name, .type = type, .counts_known = true,
                        .consumers_known = true, .consumers = 1, .ready = 100,
                        .stats_known = stats, .published_total = 5000, .acked_total = 10};
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

/* Eight queues over pages of three: five owned work queues sampled (two
 * divergent, one read for the first time), a dead-letter queue, a foreign
 * queue, an owned stream and an owned queue without statistics not. */
static void fleet(fixture *f) {
    put(f, "vibey.a", RP_QUEUE_TYPE_CLASSIC, true);
    put(f, "vibey.div.b", RP_QUEUE_TYPE_QUORUM, true);
    put(f, "vibey.c.dlq", RP_QUEUE_TYPE_CLASSIC, true);
    put(f, "other.d", RP_QUEUE_TYPE_CLASSIC, true);
    put(f, "vibey.div.e", RP_QUEUE_TYPE_CLASSIC, true);
    put(f, "vibey.f", RP_QUEUE_TYPE_STREAM, true);
    put(f, "vibey.g", RP_QUEUE_TYPE_CLASSIC, false);
    put(f, "vibey.new.h", RP_QUEUE_TYPE_CLASSIC, true);
    rp_memory_set_page_size(f->m, 3);
}

static void fake_ports(fixture *f, bool page_call) {
    memset(&F, 0, sizeof F);
    F.same_clock = true;
    f->ports.store.sample_queue_counters = f_single;
    f->ports.store.sample_queue_counters_many = page_call ? f_page : NULL;
}

static size_t count(const rp_report *r, rp_condition c, rp_action a, const char *object) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        n += v->condition == c && v->action == a &&
             (object == NULL || strcmp(v->object, object) == 0);
    }
    return n;
}

static size_t notes_with(const rp_report *r, const char *text) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_notes; i++) n += strstr(r->notes[i], text) != NULL;
    return n;
}

static void sweep(fixture *f, rp_report *r) {
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, r), RP_OK);
}

static void test_one_call_per_page(void **state) {
    fixture *f = *state;
    fleet(f);
    fake_ports(f, true);
    rp_report r;
    sweep(f, &r);
    /* Pages: [vibey.a, vibey.div.b, vibey.c.dlq] [other.d, vibey.div.e,
     * vibey.f] [vibey.g, vibey.new.h]: one call each, none per queue. */
    assert_int_equal(F.page_calls, 3);
    assert_int_equal(F.single_calls, 0);
    assert_int_equal(F.readings, 4);
    assert_int_equal(F.largest_page, 2);
    assert_true(F.same_clock);
    assert_int_equal(F.n_seen, 4);
    assert_string_equal(F.seen[0], "//vibey.a");
    assert_string_equal(F.seen[1], "//vibey.div.b");
    assert_string_equal(F.seen[2], "//vibey.div.e");
    assert_string_equal(F.seen[3], "//vibey.new.h");
    /* Each judged with its own rates. */
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, NULL), 2);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, "queue:/:vibey.div.b"), 1);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, "queue:/:vibey.div.e"), 1);
    assert_int_equal(notes_with(&r, "could not be recorded"), 0);
    rp_report_cleanup(&r);

    /* The same sweep without the page call: one call per queue, the same
     * queues, the same verdicts (already surfaced: nothing new, nothing
     * cleared). */
    fake_ports(f, false);
    sweep(f, &r);
    assert_int_equal(F.page_calls, 0);
    assert_int_equal(F.single_calls, 4);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_CLEARED, NULL), 0);
    rp_report_cleanup(&r);
}

static void test_failed_page_keeps_sightings(void **state) {
    fixture *f = *state;
    fleet(f);
    fake_ports(f, true);
    rp_report r;
    sweep(f, &r);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, NULL), 2);
    rp_report_cleanup(&r);
    /* The store fails the page call: every queue of it is noted as before
     * (one note each), none is sampled one by one behind it, and no
     * DIVERGENT sighting is cleared. */
    fake_ports(f, true);
    F.fail = RP_ERR_UNAVAILABLE;
    sweep(f, &r);
    assert_int_equal(F.page_calls, 3);
    assert_int_equal(F.single_calls, 0);
    assert_int_equal(notes_with(&r, "publish and ack counters could not be recorded "
                                    "(unavailable); DIVERGENT not judged"),
                     4);
    assert_int_equal(notes_with(&r, "queue vibey.div.e on vhost /: its publish"), 1);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_CLEARED, NULL), 0);
    rp_report_cleanup(&r);
    /* Back: still divergent, nothing surfaced twice. */
    fake_ports(f, true);
    sweep(f, &r);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, NULL), 0);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_CLEARED, NULL), 0);
    rp_report_cleanup(&r);
}

static void test_targeted_check_samples_one_by_one(void **state) {
    fixture *f = *state;
    fleet(f);
    fake_ports(f, true);
    rp_queue_ref refs[] = {{"/", "vibey.div.b"}, {"/", "vibey.a"}};
    rp_report r;
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, refs, 2, &r), RP_OK);
    assert_int_equal(F.page_calls, 0);
    assert_int_equal(F.single_calls, 2);
    assert_int_equal(count(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, "queue:/:vibey.div.b"), 1);
    rp_report_cleanup(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_call_per_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_page_keeps_sightings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_targeted_check_samples_one_by_one, setup, teardown),
    };
    return cmocka_run_group_tests_name("pass_divergent_page", tests, NULL, NULL);
}
