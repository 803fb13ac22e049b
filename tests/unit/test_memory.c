/* The in-memory ports (adapters/memory) keep the contracts of rp_ports.h
 * that the pass does not exercise: row locks, gates, single-queue reads,
 * plain ledger appends, failure injection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_memory.h"

#define NOW ((rp_time_ms)1700000000000LL)

static rp_memory *new_memory(rp_ports *ports) {
    rp_memory *m = rp_memory_new();
    assert_non_null(m);
    rp_memory_set_now(m, NOW);
    rp_memory_ports(m, ports);
    return m;
}

static int64_t add_expired(rp_memory *m) {
    rp_mem_job j = {.project = "alpha", .kind = "k", .state = RP_JOB_LEASED, .attempts = 7,
                    .max_attempts = 7, .lease_known = true, .lease_expires_at = NOW - 1000};
    int64_t id;
    assert_int_equal(rp_memory_add_job(m, &j, &id), RP_OK);
    return id;
}

static void parked_verdict(rp_verdict *v) {
    rp_verdict_init(v);
    v->condition = RP_COND_POISON;
    v->action = RP_ACTION_PARKED;
    assert_int_equal(rp_verdict_set_object(v, "job:1"), RP_OK);
}

static void test_move_needs_the_lock(void **state) {
    (void)state;
    rp_ports p;
    rp_memory *m = new_memory(&p);
    int64_t id = add_expired(m);
    rp_lease_query q = {.now = NOW, .lock = false};
    rp_lease_batch b;
    assert_int_equal(p.store.take_leases(p.store.self, &q, 10, &b), RP_OK);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.jobs[0].id, id);
    assert_false(rp_memory_job(m, id)->locked);
    rp_verdict v;
    parked_verdict(&v);
    rp_lease_move mv = {.job = &b.jobs[0], .v = &v};
    /* Read without lock: a move is refused and changes nothing. */
    assert_int_equal(p.store.commit_leases(p.store.self, &mv, 1), RP_ERR_CONFLICT);
    assert_int_equal(mv.result, RP_ERR_CONFLICT);
    assert_int_equal(rp_memory_job(m, id)->state, RP_JOB_LEASED);
    assert_int_equal(rp_memory_n_ledger(m), 0);
    q.lock = true;
    assert_int_equal(p.store.take_leases(p.store.self, &q, 10, &b), RP_OK);
    assert_true(rp_memory_job(m, id)->locked);
    mv = (rp_lease_move){.job = &b.jobs[0], .v = &v};
    assert_int_equal(p.store.commit_leases(p.store.self, &mv, 1), RP_OK);
    assert_int_equal(mv.result, RP_OK);
    assert_int_equal(mv.event.seq, 1);
    assert_int_equal(mv.event.at, NOW);
    assert_false(rp_memory_job(m, id)->locked);
    q.after_id = id; /* nothing past it */
    assert_int_equal(p.store.take_leases(p.store.self, &q, 10, &b), RP_ERR_NOT_FOUND);
    rp_verdict_cleanup(&v);
    rp_memory_free(m);
}

/* Three gates opened a second apart, listed two to a page, and by age. */
static void test_gates_filters_and_pages(void **state) {
    (void)state;
    rp_ports p;
    rp_memory *m = new_memory(&p);
    for (int i = 0; i < 3; i++) {
        rp_memory_set_now(m, NOW + i * 1000);
        add_expired(m);
        rp_lease_query q = {.now = NOW + i * 1000, .lock = true};
        rp_lease_batch b;
        assert_int_equal(p.store.take_leases(p.store.self, &q, 1, &b), RP_OK);
        rp_verdict v;
        parked_verdict(&v);
        rp_lease_move mv = {.job = &b.jobs[0], .v = &v};
        assert_int_equal(p.store.commit_leases(p.store.self, &mv, 1), RP_OK);
        rp_verdict_cleanup(&v);
    }
    rp_gate_query gq = {.state = RP_GATE_STATE_OPEN, .limit = 2};
    rp_gate *g;
    size_t n;
    rp_gate_page page;
    assert_int_equal(p.gates.list(p.gates.self, &gq, &g, &n, &page), RP_OK);
    assert_int_equal(n, 2);
    assert_true(g[0].id > g[1].id);
    assert_int_equal(page.total, 3);
    assert_int_equal(page.next_after, g[1].id);
    gq.after = page.next_after;
    for (size_t i = 0; i < n; i++) rp_gate_cleanup(&g[i]);
    free(g);
    assert_int_equal(p.gates.list(p.gates.self, &gq, &g, &n, &page), RP_OK);
    assert_int_equal(n, 1);
    assert_true(g[0].id < gq.after);
    assert_int_equal(page.total, 3);
    assert_int_equal(page.next_after, 0);
    int64_t oldest = g[0].id;
    rp_gate_cleanup(&g[0]);
    free(g);
    /* At NOW + 2000, older than 1.5 s: only the first gate. */
    gq = (rp_gate_query){.state = RP_GATE_STATE_OPEN, .limit = 10, .older_than_ms = 1500};
    assert_int_equal(p.gates.list(p.gates.self, &gq, &g, &n, &page), RP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(g[0].id, oldest);
    assert_int_equal(page.total, 1);
    rp_gate_cleanup(&g[0]);
    free(g);
    /* Kind and reason: poison gates are delivery_exhausted, with no reason. */
    gq = (rp_gate_query){.state = RP_GATE_STATE_ALL, .limit = 10, .has_kind = true,
                         .kind = RP_GATE_BUS_DEAD_LETTERED};
    assert_int_equal(p.gates.list(p.gates.self, &gq, &g, &n, &page), RP_OK);
    assert_int_equal(n, 0);
    assert_int_equal(page.total, 0);
    gq.kind = RP_GATE_DELIVERY_EXHAUSTED;
    gq.reason = "rejected";
    assert_int_equal(p.gates.list(p.gates.self, &gq, &g, &n, &page), RP_OK);
    assert_int_equal(page.total, 0);
    gq.reason = NULL;
    assert_int_equal(p.gates.list(p.gates.self, &gq, &g, &n, &page), RP_OK);
    assert_int_equal(page.total, 3);
    for (size_t i = 0; i < n; i++) rp_gate_cleanup(&g[i]);
    free(g);
    rp_memory_free(m);
}

static void test_gates_list_and_answer(void **state) {
    (void)state;
    rp_ports p;
    rp_memory *m = new_memory(&p);
    int64_t id = add_expired(m);
    rp_lease_query q = {.now = NOW, .lock = true};
    rp_lease_batch b;
    assert_int_equal(p.store.take_leases(p.store.self, &q, 1, &b), RP_OK);
    rp_verdict v;
    parked_verdict(&v);
    rp_lease_move mv = {.job = &b.jobs[0], .v = &v};
    assert_int_equal(p.store.commit_leases(p.store.self, &mv, 1), RP_OK);
    assert_int_equal(mv.result, RP_OK);
    rp_verdict_cleanup(&v);

    rp_gate_query gq = {.state = RP_GATE_STATE_OPEN, .limit = 10};
    rp_gate *gates;
    size_t n;
    assert_int_equal(p.gates.list(p.gates.self, &gq, &gates, &n, NULL), RP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(gates[0].kind, RP_GATE_DELIVERY_EXHAUSTED);
    assert_int_equal(gates[0].job_id, id);
    assert_string_equal(gates[0].project, "alpha");
    int64_t gate = gates[0].id;
    assert_int_equal(gates[0].claim, RP_GATE_CLAIM_NONE);
    assert_null(gates[0].claimed_by);
    rp_gate_cleanup(&gates[0]);
    free(gates);
    /* A replay's claim, planted on the stored gate (the memory adapter does
     * not claim by itself): the listing returns its own copy of it. */
    rp_gate *held = (rp_gate *)rp_memory_gate(m, 0);
    held->claim = RP_GATE_CLAIM_STALE;
    held->claimed_by = strdup("ghost:1:2");
    held->claimed_at = NOW - 1000;
    assert_int_equal(p.gates.list(p.gates.self, &gq, &gates, &n, NULL), RP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(gates[0].claim, RP_GATE_CLAIM_STALE);
    assert_string_equal(gates[0].claimed_by, "ghost:1:2");
    assert_ptr_not_equal(gates[0].claimed_by, held->claimed_by);
    assert_int_equal(gates[0].claimed_at, NOW - 1000);
    rp_gate_cleanup(&gates[0]);
    free(gates);
    free(held->claimed_by);
    held->claimed_by = NULL;
    held->claim = RP_GATE_CLAIM_NONE;
    held->claimed_at = 0;
    gq.project = "beta";
    assert_int_equal(p.gates.list(p.gates.self, &gq, &gates, &n, NULL), RP_OK);
    assert_int_equal(n, 0);
    assert_null(gates);
    gq.limit = 0;
    assert_int_equal(p.gates.list(p.gates.self, &gq, &gates, &n, NULL), RP_ERR_INVALID);

    rp_answer_result a;
    assert_int_equal(p.gates.answer(p.gates.self, gate, RP_CHOICE_REPLAY, "ops", NULL, &a),
                     RP_ERR_CONFLICT);
    assert_int_equal(p.gates.answer(p.gates.self, 999, RP_CHOICE_RETRY, "ops", NULL, &a),
                     RP_ERR_NOT_FOUND);
    rp_memory_set_now(m, NOW + 5000);
    assert_int_equal(p.gates.answer(p.gates.self, gate, RP_CHOICE_RETRY, "ops", NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_RETRIED);
    assert_int_equal(rp_memory_job(m, id)->state, RP_JOB_READY);
    assert_int_equal(rp_memory_job(m, id)->run_after, NOW + 5000);
    assert_int_equal(rp_memory_job(m, id)->attempts, 6); /* the refunded attempt */
    /* A second answer changes nothing and reports the first. */
    assert_int_equal(p.gates.answer(p.gates.self, gate, RP_CHOICE_DISMISS, "other", NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_ALREADY_ANSWERED);
    assert_int_equal(a.choice, RP_CHOICE_RETRY);
    assert_int_equal(rp_memory_job(m, id)->state, RP_JOB_READY);

    gq = (rp_gate_query){.state = RP_GATE_STATE_ANSWERED, .limit = 10};
    assert_int_equal(p.gates.list(p.gates.self, &gq, &gates, &n, NULL), RP_OK);
    assert_int_equal(n, 1);
    assert_true(gates[0].answered);
    assert_string_equal(gates[0].answered_by, "ops");
    rp_gate_cleanup(&gates[0]);
    free(gates);
    rp_memory_free(m);
}

static void test_single_queue_reads_and_timeout(void **state) {
    (void)state;
    rp_ports p;
    rp_memory *m = new_memory(&p);
    rp_queue_facts q = {.vhost = "/", .name = "vibey.x", .type = RP_QUEUE_TYPE_QUORUM,
                        .ready = 2, .owned = true};
    assert_int_equal(rp_memory_put_queue(m, &q), RP_OK);
    rp_queue_facts got;
    assert_int_equal(p.broker.get_queue(p.broker.self, "/", "vibey.x", &got), RP_OK);
    assert_string_equal(got.name, "vibey.x");
    assert_int_equal(got.ready, 2);
    assert_false(got.owned); /* classification is the pass's, never the adapter's */
    assert_int_equal(p.broker.get_queue(p.broker.self, "/", "nope", &got), RP_ERR_NOT_FOUND);

    rp_thresholds t;
    rp_thresholds_default(&t);
    rp_timeout_in_force f;
    assert_int_equal(p.broker.get_timeout_in_force(p.broker.self, "/", "vibey.x", &f), RP_OK);
    assert_false(f.in_force);
    rp_timeout_in_force set = {true, true, 1800000, "policy vibey-reap"};
    assert_int_equal(rp_memory_set_timeout(m, "/", "vibey.x", &set), RP_OK);
    /* Replacing the measurements keeps the timeout. */
    assert_int_equal(rp_memory_put_queue(m, &q), RP_OK);
    assert_int_equal(p.broker.get_timeout_in_force(p.broker.self, "/", "vibey.x", &f), RP_OK);
    assert_true(f.in_force);
    assert_string_equal(f.origin, "policy vibey-reap");
    rp_verdict v;
    assert_int_equal(rp_judge_consumer_timeout("/", "vibey.x", &f, &t, &v), RP_OK);
    assert_int_equal(v.action, RP_ACTION_VERIFIED);
    rp_verdict_cleanup(&v);
    rp_memory_free(m);
}

static void test_append_and_failure_injection(void **state) {
    (void)state;
    rp_ports p;
    rp_memory *m = new_memory(&p);
    rp_verdict v;
    rp_verdict_init(&v);
    v.condition = RP_COND_HUNG_HANDLER;
    v.action = RP_ACTION_VERIFIED;
    rp_event_ref ev;
    rp_memory_fail(m, RP_MEM_APPEND_EVENT, RP_ERR_UNAVAILABLE, 2);
    assert_int_equal(p.store.append_event(p.store.self, &v, &ev), RP_OK);
    assert_int_equal(p.store.append_event(p.store.self, &v, &ev), RP_OK);
    assert_int_equal(ev.seq, 2);
    assert_int_equal(p.store.append_event(p.store.self, &v, &ev), RP_ERR_UNAVAILABLE);
    assert_int_equal(p.store.append_event(p.store.self, &v, &ev), RP_ERR_UNAVAILABLE);
    assert_int_equal(rp_memory_n_ledger(m), 2);
    assert_int_equal(rp_memory_calls(m, RP_MEM_APPEND_EVENT), 4);
    rp_memory_fail(m, RP_MEM_APPEND_EVENT, RP_OK, 0);
    assert_int_equal(p.store.append_event(p.store.self, &v, &ev), RP_OK);
    assert_int_equal(rp_memory_ledger(m, 2)->verdict.action, RP_ACTION_VERIFIED);
    assert_int_equal(p.clock.now_ms(p.clock.self), NOW);
    rp_verdict_cleanup(&v);
    rp_memory_free(m);
}

/* The earliest deadline of a leased row, grace included, whether or not it
 * has passed; rows that are not leased or have no deadline do not count. */
static void test_next_lease_deadline(void **state) {
    (void)state;
    rp_ports p;
    rp_memory *m = new_memory(&p);
    rp_time_ms at = -1;
    bool any = true;
    assert_int_equal(p.store.next_lease_deadline(p.store.self, 30, &at, &any), RP_OK);
    assert_false(any);
    assert_int_equal(at, 0);

    rp_mem_job later = {.project = "alpha", .kind = "k", .state = RP_JOB_LEASED,
                        .max_attempts = 7, .lease_known = true, .lease_expires_at = NOW + 9000};
    rp_mem_job earlier = later;
    earlier.lease_expires_at = NOW - 4000; /* already past: still the next one due */
    rp_mem_job ready = later;
    ready.state = RP_JOB_READY;
    ready.lease_expires_at = NOW - 99000;
    rp_mem_job unknown = later;
    unknown.lease_known = false;
    unknown.lease_expires_at = NOW - 99000;
    int64_t id;
    assert_int_equal(rp_memory_add_job(m, &later, &id), RP_OK);
    assert_int_equal(rp_memory_add_job(m, &ready, &id), RP_OK);
    assert_int_equal(rp_memory_add_job(m, &unknown, &id), RP_OK);
    assert_int_equal(p.store.next_lease_deadline(p.store.self, 30, &at, &any), RP_OK);
    assert_true(any);
    assert_int_equal(at, NOW + 9000 + 30000);
    assert_int_equal(rp_memory_add_job(m, &earlier, &id), RP_OK);
    assert_int_equal(p.store.next_lease_deadline(p.store.self, 0, &at, &any), RP_OK);
    assert_int_equal(at, NOW - 4000);
    /* Saturating: a huge grace gives a bounded time, never overflow. */
    assert_int_equal(p.store.next_lease_deadline(p.store.self, INT64_MAX, &at, &any), RP_OK);
    assert_int_equal(at, INT64_MAX);
    /* Failure injection reaches it like every other operation. */
    rp_memory_fail(m, RP_MEM_NEXT_DEADLINE, RP_ERR_UNAVAILABLE, 0);
    assert_int_equal(p.store.next_lease_deadline(p.store.self, 0, &at, &any),
                     RP_ERR_UNAVAILABLE);
    assert_false(any);
    assert_int_equal(rp_memory_calls(m, RP_MEM_NEXT_DEADLINE), 5);
    rp_memory_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_move_needs_the_lock),
        cmocka_unit_test(test_gates_list_and_answer),
        cmocka_unit_test(test_gates_filters_and_pages),
        cmocka_unit_test(test_single_queue_reads_and_timeout),
        cmocka_unit_test(test_append_and_failure_injection),
        cmocka_unit_test(test_next_lease_deadline),
    };
    return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
