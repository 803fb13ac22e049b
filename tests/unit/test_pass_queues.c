/* The targeted check (core/rp_pass.h, rp_pass_queues) against the in-memory
 * ports: the given queues are judged with the sweep's rules and sightings,
 * and nothing else is touched; absent statistics are never read as 0. */
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

/* consumers < 0: not reported; counts false: message counts not reported. */
static void put(fixture *f, const char *name, bool counts, int64_t ready, int64_t unacked,
                int64_t consumers) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = name,
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = counts,
        .ready = counts ? ready : 0,
        .unacked = counts ? unacked : 0,
        .consumers_known = consumers >= 0,
        .consumers = consumers < 0 ? 0 : consumers,
    };
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

static void check(fixture *f, bool dry_run, const char *const *names, size_t n, rp_report *r) {
    rp_queue_ref refs[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) refs[i] = (rp_queue_ref){"/", names[i]};
    f->opt.dry_run = dry_run;
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, refs, n, r), RP_OK);
    assert_int_equal(r->dry_run, dry_run);
}

static void check1(fixture *f, const char *name, rp_report *r) {
    const char *names[] = {name};
    check(f, false, names, 1, r);
}

static void full(fixture *f, rp_report *r) {
    f->opt.dry_run = false;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, r), RP_OK);
}

static size_t count(const rp_report *r, rp_condition c, rp_action a) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].condition == c && r->verdicts[i].action == a) n++;
    return n;
}

static bool has_note(const rp_report *r, const char *part) {
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], part)) return true;
    return false;
}

#define HG(q) "broker|HOLDER_GONE|queue:/:" q

/* Holder gone at its boundary: one unacked message and consumers known to
 * be 0 opens the sighting once (ledger event, publish, report); 0 unacked
 * does not; a consumer back clears it. */
static void test_holder_gone_boundaries(void **state) {
    fixture *f = *state;
    rp_report r;
    put(f, "vibey.a", true, 0, 0, 0);
    check1(f, "vibey.a", &r);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_ledger(f->m), 0);
    rp_report_cleanup(&r);

    put(f, "vibey.a", true, 5, 1, 0);
    check1(f, "vibey.a", &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_int_equal(r.verdicts[0].condition, RP_COND_HOLDER_GONE);
    assert_int_equal(r.verdicts[0].action, RP_ACTION_SURFACED);
    assert_true(r.verdicts[0].measured == 1.0);
    assert_string_equal(r.verdicts[0].object, "queue:/:vibey.a");
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a")));
    assert_int_equal(rp_memory_n_ledger(f->m), 1);
    assert_int_equal(rp_memory_n_published(f->m), 1);
    rp_report_cleanup(&r);

    /* Again: open already, not recorded twice; nor by the sweep. */
    check1(f, "vibey.a", &r);
    assert_int_equal(r.n_verdicts, 0);
    rp_report_cleanup(&r);
    full(f, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_ledger(f->m), 1);
    rp_report_cleanup(&r);

    put(f, "vibey.a", true, 5, 1, 1);
    check1(f, "vibey.a", &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, HG("vibey.a")));
    assert_int_equal(rp_memory_n_ledger(f->m), 2);
    assert_int_equal(rp_memory_n_published(f->m), 2);
    rp_report_cleanup(&r);
}

/* Only the queues asked about: another queue's condition is neither opened
 * nor, when it has ended, cleared. Job-table and hung-handler sightings
 * are never touched. */
static void test_other_sightings_untouched(void **state) {
    fixture *f = *state;
    rp_report r;
    put(f, "vibey.a", true, 0, 2, 0);
    put(f, "vibey.b", true, 0, 2, 0);
    put(f, "vibey.c", true, 0, 0, 1); /* sighted before, ended since */
    assert_int_equal(rp_memory_add_sighting(f->m, HG("vibey.c"), RP_COND_HOLDER_GONE), RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, "job_queue|STALE_READY|project:alpha",
                                            RP_COND_STALE_READY),
                     RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, "broker|HUNG_HANDLER|queue:/:vibey.a",
                                            RP_COND_HUNG_HANDLER),
                     RP_OK);
    check1(f, "vibey.a", &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a")));
    assert_null(rp_memory_sighting(f->m, HG("vibey.b")));
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.c")));
    assert_non_null(rp_memory_sighting(f->m, "job_queue|STALE_READY|project:alpha"));
    assert_non_null(rp_memory_sighting(f->m, "broker|HUNG_HANDLER|queue:/:vibey.a"));
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_LIST_QUEUES), 0);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_TAKE_LEASE), 0);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_LIST_CLAIMABLE), 0);
    rp_report_cleanup(&r);

    /* A foreign work queue (not owned) is surfaced and left alone (issue 18
     * item 5): a broker verdict moves nothing. */
    put(f, "celery", true, 0, 9, 0);
    check1(f, "celery", &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_non_null(strstr(r.verdicts[0].detail, "not owned"));
    assert_non_null(rp_memory_sighting(f->m, HG("celery")));
    rp_report_cleanup(&r);
}

/* Absent statistics are not zero: an unknown consumer count, or unknown
 * message counts, open nothing and clear nothing. */
static void test_unmeasured_clears_nothing(void **state) {
    fixture *f = *state;
    rp_report r;
    put(f, "vibey.a", true, 0, 2, 0);
    check1(f, "vibey.a", &r);
    assert_int_equal(rp_memory_n_sightings(f->m), 1);
    rp_report_cleanup(&r);

    put(f, "vibey.a", true, 0, 2, -1); /* consumers not reported */
    check1(f, "vibey.a", &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_true(has_note(&r, "does not report its consumer count"));
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a")));
    rp_report_cleanup(&r);
    full(f, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a")));
    rp_report_cleanup(&r);

    put(f, "vibey.a", false, 0, 0, 0); /* counts not reported: not an empty queue */
    check1(f, "vibey.a", &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_true(has_note(&r, "does not report its message counts"));
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a")));
    rp_report_cleanup(&r);
    full(f, &r); /* the sweep keeps it too */
    assert_int_equal(r.n_verdicts, 0);
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a")));
    rp_report_cleanup(&r);

    /* Counts unknown never surface, whatever the other fields hold. */
    put(f, "vibey.b", false, 0, 0, 0);
    check1(f, "vibey.b", &r);
    assert_null(rp_memory_sighting(f->m, HG("vibey.b")));
    rp_report_cleanup(&r);

    put(f, "vibey.a", true, 0, 0, 0); /* measured: empty */
    check1(f, "vibey.a", &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, HG("vibey.a")));
    rp_report_cleanup(&r);
}

/* A queue that is gone holds nothing: cleared. A queue that cannot be read
 * clears nothing, and the others in the same check are still judged. */
static void test_gone_and_unreadable(void **state) {
    fixture *f = *state;
    rp_report r;
    put(f, "vibey.a", true, 0, 2, 0);
    put(f, "vibey.b", true, 0, 2, 0);
    const char *both[] = {"vibey.a", "vibey.b"};
    check(f, false, both, 2, &r);
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
    rp_report_cleanup(&r);

    put(f, "vibey.a", true, 0, 2, 1);
    put(f, "vibey.b", true, 0, 2, 1);
    rp_memory_fail_once(f->m, RP_MEM_GET_QUEUE, RP_ERR_UNAVAILABLE, 0);
    check(f, false, both, 2, &r);
    assert_false(r.ok);
    assert_int_equal(r.n_unreadable, 1);
    assert_string_equal(r.unreadable[0], "broker");
    assert_true(has_note(&r, "broker: reading a queue: unavailable"));
    assert_int_equal(r.n_verdicts, 1);
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.a"))); /* unread: kept */
    assert_null(rp_memory_sighting(f->m, HG("vibey.b")));
    rp_report_cleanup(&r);

    assert_int_equal(rp_memory_remove_queue(f->m, "/", "vibey.a"), RP_OK);
    check1(f, "vibey.a", &r);
    assert_true(r.ok);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    rp_report_cleanup(&r);
}

/* A dry run reports what it would record and writes nothing. */
static void test_dry_run_writes_nothing(void **state) {
    fixture *f = *state;
    rp_report r;
    put(f, "vibey.a", true, 0, 2, 0);
    put(f, "vibey.b", true, 0, 0, 0);
    assert_int_equal(rp_memory_add_sighting(f->m, HG("vibey.b"), RP_COND_HOLDER_GONE), RP_OK);
    size_t writes = rp_memory_write_calls(f->m);
    const char *both[] = {"vibey.a", "vibey.b"};
    check(f, true, both, 2, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);
    assert_int_equal(rp_memory_write_calls(f->m), writes);
    assert_null(rp_memory_sighting(f->m, HG("vibey.a")));
    assert_non_null(rp_memory_sighting(f->m, HG("vibey.b")));
    rp_report_cleanup(&r);
}

/* Duplicates are read once; dead-letter queues are judged like the sweep
 * does, with no backfill (no peek). */
static void test_duplicates_and_dead_letter_queues(void **state) {
    fixture *f = *state;
    rp_report r;
    put(f, "vibey.a", true, 0, 2, 0);
    put(f, "celery.dlq", true, 3, 0, 0);
    put(f, "vibey.a.dlq", true, 3, 0, 0);
    const char *names[] = {"vibey.a", "vibey.a", "celery.dlq", "vibey.a.dlq"};
    check(f, false, names, 4, &r);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_GET_QUEUE), 3);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED), 1);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PEEK), 0);
    rp_report_cleanup(&r);
}

/* An owned dead-letter queue whose backfill left messages unread has an
 * open DEAD_LETTER sighting (issue #5). A targeted check does no backfill,
 * so it cannot tell whether they are still there: it keeps the sighting
 * while the queue holds messages, and clears it only when the queue is
 * empty (or gone), as the sweep would. */
static void test_owned_dead_letter_remainder_kept(void **state) {
    fixture *f = *state;
    rp_report r;
    f->opt.dead_letter_peek_limit = 1;
    put(f, "vibey.a.dlq", true, 2, 0, 0);
    rp_xdeath e = {.queue = {true, {(const uint8_t *)"vibey.a", 7}}};
    rp_dl_headers h = {.x_death = &e, .n_x_death = 1};
    const char *ids[] = {"m-1", "m-2"};
    for (size_t i = 0; i < 2; i++) {
        h.message_id = (rp_opt_str){true, {(const uint8_t *)ids[i], 3}};
        assert_int_equal(rp_memory_add_dead_letter(f->m, "/", "vibey.a.dlq", &h,
                                                   (rp_bytes){(const uint8_t *)"b", 1}),
                         RP_OK);
    }
    full(f, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED), 1);
    rp_report_cleanup(&r);
    const char *key = "broker|DEAD_LETTER|queue:/:vibey.a.dlq";
    assert_non_null(rp_memory_sighting(f->m, key));
    size_t events = rp_memory_n_ledger(f->m);

    check1(f, "vibey.a.dlq", &r);
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, 0);
    assert_non_null(rp_memory_sighting(f->m, key));
    assert_int_equal(rp_memory_n_ledger(f->m), events);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PEEK), 1); /* the sweep's only */
    rp_report_cleanup(&r);

    put(f, "vibey.a.dlq", true, 0, 0, 0);
    check1(f, "vibey.a.dlq", &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, key));
    rp_report_cleanup(&r);
}

/* Bad arguments read and write nothing. */
static void test_invalid(void **state) {
    fixture *f = *state;
    rp_report r;
    rp_queue_ref bad = {"/", NULL};
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, &bad, 1, &r), RP_ERR_INVALID);
    rp_report_cleanup(&r);
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, NULL, 1, &r), RP_ERR_INVALID);
    rp_report_cleanup(&r);
    f->opt.owned_queue_pattern = NULL;
    rp_queue_ref ok = {"/", "vibey.a"};
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, &ok, 1, &r), RP_ERR_INVALID);
    rp_report_cleanup(&r);
    for (int op = 0; op < RP_MEM_OP_COUNT_; op++)
        assert_int_equal(rp_memory_calls(f->m, (rp_memory_op)op), 0);
    /* No queue: nothing at all, ok. */
    f->opt.owned_queue_pattern = f->owned;
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, NULL, 0, &r), RP_OK);
    assert_true(r.ok);
    rp_report_cleanup(&r);
    for (int op = 0; op < RP_MEM_OP_COUNT_; op++)
        assert_int_equal(rp_memory_calls(f->m, (rp_memory_op)op), 0);
}

/* Reaper's own queues, whatever the patterns say: the tap holding dead
 * letters with no consumer (reaperd down), the control queue with no
 * consumer, and an own queue whose name the dead-letter pattern matches
 * are not judged as owned work nor backfilled, by the sweep or the
 * targeted check; an owned queue beside them still is. */
static void test_own_queues_are_not_work(void **state) {
    fixture *f = *state;
    rp_report r;
    f->opt.own_queues[0] = "vibey.reap.control";
    f->opt.own_queues[1] = "vibey.reap.tap.dlq";
    put(f, "vibey.reap.control", true, 4, 3, 0);
    put(f, "vibey.reap.tap.dlq", true, 50, 7, 0);
    put(f, "vibey.a", true, 0, 2, 0);
    full(f, &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_string_equal(r.verdicts[0].object, "queue:/:vibey.a");
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PEEK), 0);
    rp_report_cleanup(&r);
    const char *names[] = {"vibey.reap.control", "vibey.reap.tap.dlq"};
    check(f, false, names, 2, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PEEK), 0);
    rp_report_cleanup(&r);
    /* Without the names, the same queues are judged (the test can fail). */
    f->opt.own_queues[0] = f->opt.own_queues[1] = NULL;
    full(f, &r);
    bool control_judged = false;
    for (size_t i = 0; i < r.n_verdicts; i++)
        if (strcmp(r.verdicts[i].object, "queue:/:vibey.reap.control") == 0) control_judged = true;
    assert_true(control_judged);
    assert_true(rp_memory_calls(f->m, RP_MEM_PEEK) > 0);
    rp_report_cleanup(&r);
}

/* An owned quorum queue on which the broker would drop a message at its
 * delivery limit (no dead-letter exchange) is surfaced as POISON once, with
 * the fix in the detail; giving it a dead-letter exchange clears it. A
 * quorum queue with one is left alone. */
static void test_delivery_limit_without_dlx_is_poison(void **state) {
    fixture *f = *state;
    rp_queue_facts q = {
        .vhost = "/",
        .name = "vibey.q",
        .type = RP_QUEUE_TYPE_QUORUM,
        .counts_known = true,
        .consumers_known = true,
        .consumers = 1,
        .delivery_limit_known = true,
        .delivery_limit = 20,
    };
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
    rp_queue_facts ok = q;
    ok.name = "vibey.q.safe";
    ok.dead_letter_exchange = true;
    assert_int_equal(rp_memory_put_queue(f->m, &ok), RP_OK);
    rp_report r;
    full(f, &r);
    assert_int_equal(count(&r, RP_COND_POISON, RP_ACTION_SURFACED), 1);
    for (size_t i = 0; i < r.n_verdicts; i++)
        if (r.verdicts[i].condition == RP_COND_POISON) {
            assert_string_equal(r.verdicts[i].queue, "vibey.q");
            assert_non_null(strstr(r.verdicts[i].detail, "dead-letter exchange"));
        }
    assert_non_null(rp_memory_sighting(f->m, "broker|POISON|queue:/:vibey.q"));
    rp_report_cleanup(&r);
    full(f, &r); /* open already: not again */
    assert_int_equal(count(&r, RP_COND_POISON, RP_ACTION_SURFACED), 0);
    rp_report_cleanup(&r);
    q.dead_letter_exchange = true;
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
    full(f, &r);
    assert_int_equal(count(&r, RP_COND_POISON, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, "broker|POISON|queue:/:vibey.q"));
    rp_report_cleanup(&r);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_holder_gone_boundaries),
        T(test_own_queues_are_not_work),
        T(test_other_sightings_untouched),
        T(test_unmeasured_clears_nothing),
        T(test_gone_and_unreadable),
        T(test_dry_run_writes_nothing),
        T(test_duplicates_and_dead_letter_queues),
        T(test_owned_dead_letter_remainder_kept),
        T(test_invalid),
        T(test_delivery_limit_without_dlx_is_poison),
    };
    return cmocka_run_group_tests_name("pass_queues", tests, NULL, NULL);
}
