/* One whole pass (core/rp_pass.h) against the in-memory ports
 * (adapters/memory): moves, boundaries, dry runs, sightings, unreadable
 * sources, dead-letter backfill. */
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
#define MIN_MS 60000

#include "pass_fixture.h"

/* ---- Helpers ---- */

static int64_t add_leased(fixture *f, const char *project, int32_t attempts, int32_t max,
                          rp_time_ms lease_expires_at) {
    rp_mem_job j = {
        .project = (char *)project,
        .kind = "send_mail",
        .state = RP_JOB_LEASED,
        .attempts = attempts,
        .max_attempts = max,
        .lease_owner = "worker-1",
        .lease_known = true,
        .lease_expires_at = lease_expires_at,
        .run_after = NOW - 10 * MIN_MS,
    };
    int64_t id;
    assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
    return id;
}

static int64_t add_ready(fixture *f, const char *project, rp_time_ms run_after,
                         int64_t depends_on) {
    rp_mem_job j = {
        .project = (char *)project,
        .kind = "render",
        .state = RP_JOB_READY,
        .max_attempts = 7,
        .run_after = run_after,
        .depends_on = depends_on,
    };
    int64_t id;
    assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
    return id;
}

static void put_queue(fixture *f, const char *name, rp_queue_type type, int64_t ready,
                      int64_t unacked, int64_t consumers) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = name,
        .type = type,
        .ready = ready,
        .unacked = unacked,
        .counts_known = true,
        .consumers_known = consumers >= 0,
        .consumers = consumers < 0 ? 0 : consumers,
    };
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

static void put_stale_queue(fixture *f, const char *name, int64_t age_s) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = name,
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = true,
        .ready = 4,
        .consumers_known = true,
        .head_timestamp_known = true,
        .head_timestamp = NOW / 1000 - age_s,
    };
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

/* A message that died on origin at time (x-death count as given). */
static void add_death(fixture *f, const char *queue, const char *message_id, const char *body,
                      const char *origin, int64_t time, int64_t deaths) {
    rp_xdeath e = {
        .queue = {true, {(const uint8_t *)origin, strlen(origin)}},
        .reason = {true, {(const uint8_t *)"rejected", 8}},
        .time = {true, time},
        .count = {true, deaths},
    };
    rp_dl_headers h = {.x_death = &e, .n_x_death = 1};
    if (message_id)
        h.message_id = (rp_opt_str){true, {(const uint8_t *)message_id, strlen(message_id)}};
    assert_int_equal(rp_memory_add_dead_letter(f->m, "/", queue, &h,
                                               (rp_bytes){(const uint8_t *)body, strlen(body)}),
                     RP_OK);
}

static void add_dead_letter(fixture *f, const char *queue, const char *message_id,
                            const char *body) {
    add_death(f, queue, message_id, body, "vibey.x", 1699990000, 1);
}

/* n dead letters on queue: message_id "<prefix>-<i>", body "<i>", i = 1..n. */
static void add_numbered(fixture *f, const char *queue, const char *prefix, int n) {
    for (int i = 1; i <= n; i++) {
        char id[32], body[16];
        snprintf(id, sizeof id, "%s-%d", prefix, i);
        snprintf(body, sizeof body, "%d", i);
        add_dead_letter(f, queue, id, body);
    }
}

static void run(fixture *f, bool dry_run, rp_report *r) {
    f->opt.dry_run = dry_run;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, r), RP_OK);
    assert_int_equal(r->dry_run, dry_run);
}

static size_t count(const rp_report *r, rp_condition c, rp_action a) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].condition == c && r->verdicts[i].action == a) n++;
    return n;
}

static const rp_verdict *find(const rp_report *r, const char *object) {
    for (size_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].object && strcmp(r->verdicts[i].object, object) == 0)
            return &r->verdicts[i];
    return NULL;
}

static bool has_note(const rp_report *r, const char *part) {
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], part)) return true;
    return false;
}

static bool unreadable(const rp_report *r, const char *what) {
    for (size_t i = 0; i < r->n_unreadable; i++)
        if (strcmp(r->unreadable[i], what) == 0) return true;
    return false;
}

/* A real pass into r that went through (r->ok). */
static void run_ok(fixture *f, rp_report *r) {
    run(f, false, r);
    assert_true(r->ok);
}

/* A real pass into r that could not read what (r->ok false, what named). */
static void run_unreadable(fixture *f, rp_report *r, const char *what) {
    run(f, false, r);
    assert_false(r->ok);
    assert_true(unreadable(r, what));
}

/* A real pass that reports nothing. */
static void quiet_pass(fixture *f) {
    rp_report r;
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    rp_report_cleanup(&r);
}

static char *dump(fixture *f) {
    char *s;
    assert_int_equal(rp_memory_dump(f->m, &s), RP_OK);
    return s;
}

/* ---- Lease reap ---- */

static void test_requeue_vs_park(void **state) {
    fixture *f = *state;
    int64_t a = add_leased(f, "alpha", 3, 7, NOW - MIN_MS);
    int64_t b = add_leased(f, "alpha", 7, 7, NOW - MIN_MS);
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(r.n_verdicts, 2);

    const rp_mem_job *ja = rp_memory_job(f->m, a);
    assert_int_equal(ja->state, RP_JOB_READY);
    assert_null(ja->lease_owner);
    assert_false(ja->lease_known);
    assert_int_equal(ja->attempts, 3); /* a requeue refunds nothing */
    assert_false(ja->locked);
    const rp_verdict *va = find(&r, "job:1");
    assert_non_null(va);
    assert_int_equal(va->condition, RP_COND_LEASE_EXPIRED);
    assert_int_equal(va->action, RP_ACTION_REQUEUED);

    const rp_mem_job *jb = rp_memory_job(f->m, b);
    assert_int_equal(jb->state, RP_JOB_AWAITING_HUMAN);
    assert_int_equal(jb->attempts, 6); /* one attempt refunded */
    assert_false(jb->locked);
    const rp_verdict *vb = find(&r, "job:2");
    assert_non_null(vb);
    assert_int_equal(vb->condition, RP_COND_POISON);
    assert_int_equal(vb->action, RP_ACTION_PARKED);
    assert_int_equal(rp_memory_n_gates(f->m), 1);
    assert_int_equal(rp_memory_gate(f->m, 0)->kind, RP_GATE_DELIVERY_EXHAUSTED);
    assert_int_equal(rp_memory_gate(f->m, 0)->job_id, b);

    /* Each move has its ledger event, and each event was published. */
    assert_int_equal(rp_memory_n_ledger(f->m), 2);
    assert_int_equal(rp_memory_n_published(f->m), 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(rp_memory_published(f->m, i)->seq, rp_memory_ledger(f->m, i)->seq);
        assert_string_equal(rp_memory_ledger(f->m, i)->kind, "QueueReaped");
    }
    assert_int_equal(rp_memory_ledger(f->m, 0)->verdict.action, RP_ACTION_REQUEUED);
    assert_int_equal(rp_memory_ledger(f->m, 1)->verdict.action, RP_ACTION_PARKED);
    rp_report_cleanup(&r);

    /* Nothing is left to move. */
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_ledger(f->m), 2);
    rp_report_cleanup(&r);
}

/* A leased job of project alpha (max_attempts 7) with attempts and
 * lease_expires_at, and the state a pass must leave it in. */
typedef struct lease_case {
    int32_t attempts;
    rp_time_ms expires;
    rp_job_state want;
} lease_case;

/* Adds a job for each of the n cases (ids[i] is case i's), runs one real
 * pass into r, and checks the state each job is left in. */
static void lease_cases_run(fixture *f, const lease_case *k, size_t n, int64_t *ids,
                            rp_report *r) {
    for (size_t i = 0; i < n; i++) ids[i] = add_leased(f, "alpha", k[i].attempts, 7, k[i].expires);
    run(f, false, r);
    for (size_t i = 0; i < n; i++) assert_int_equal(rp_memory_job(f->m, ids[i])->state, k[i].want);
}

#define LEASE_CASES_RUN(f, cases, ids, r) \
    lease_cases_run((f), (cases), RP_ARRAY_LEN(cases), (ids), (r))

static void test_attempts_boundaries(void **state) {
    fixture *f = *state;
    static const lease_case cases[] = {
        {6, NOW - 1, RP_JOB_READY},          /* under */
        {7, NOW - 1, RP_JOB_AWAITING_HUMAN}, /* at */
        {8, NOW - 1, RP_JOB_AWAITING_HUMAN}, /* over */
    };
    int64_t ids[RP_ARRAY_LEN(cases)];
    rp_report r;
    LEASE_CASES_RUN(f, cases, ids, &r);
    assert_int_equal(count(&r, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED), 1);
    assert_int_equal(count(&r, RP_COND_POISON, RP_ACTION_PARKED), 2);
    assert_int_equal(rp_memory_n_gates(f->m), 2);
    rp_report_cleanup(&r);
}

static void test_grace_boundary_in_a_pass(void **state) {
    fixture *f = *state;
    f->opt.thresholds.lease_grace_seconds = 10;
    static const lease_case cases[] = {
        {1, NOW - 10000, RP_JOB_LEASED}, /* exactly at the grace */
        {1, NOW - 10001, RP_JOB_READY},  /* 1 ms past it */
        {1, NOW - 9999, RP_JOB_LEASED},  /* 1 ms short of it */
        {1, NOW + 60000, RP_JOB_LEASED}, /* not due at all */
    };
    int64_t ids[RP_ARRAY_LEN(cases)];
    rp_report r;
    LEASE_CASES_RUN(f, cases, ids, &r);
    /* What the judge left alone was released, not left locked. */
    assert_false(rp_memory_job(f->m, ids[0])->locked);
    assert_false(rp_memory_job(f->m, ids[2])->locked);
    /* One batch: the two rows left alone stay as they were when it commits. */
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_COMMIT_LEASES), 1);
    assert_int_equal(r.n_verdicts, 1);
    assert_string_equal(r.verdicts[0].object, "job:2");
    rp_report_cleanup(&r);
}

static void test_lease_locked_elsewhere_and_conflicts(void **state) {
    fixture *f = *state;
    int64_t theirs = add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    int64_t mine = add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    int64_t last = add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    assert_int_equal(rp_memory_lock_job(f->m, theirs, true), RP_OK);
    /* The first move the pass tries conflicts (the row changed under it). */
    rp_memory_fail(f->m, RP_MEM_MOVE_LEASE, RP_ERR_CONFLICT, 0);
    rp_report r;
    run(f, false, &r);
    assert_true(r.ok); /* a conflict is not an unreadable source */
    assert_true(has_note(&r, "changed while it was being moved"));
    assert_int_equal(rp_memory_job(f->m, theirs)->state, RP_JOB_LEASED); /* skipped */
    assert_int_equal(rp_memory_job(f->m, mine)->state, RP_JOB_LEASED);   /* conflicted */
    assert_false(rp_memory_job(f->m, mine)->locked);
    assert_int_equal(rp_memory_job(f->m, last)->state, RP_JOB_LEASED);   /* conflicted too */
    rp_report_cleanup(&r);
    rp_memory_fail(f->m, RP_MEM_MOVE_LEASE, RP_ERR_CONFLICT, 1); /* only the second */
    run(f, false, &r);
    assert_int_equal(rp_memory_job(f->m, mine)->state, RP_JOB_READY);
    assert_int_equal(rp_memory_job(f->m, last)->state, RP_JOB_LEASED);
    assert_int_equal(r.n_verdicts, 1);
    rp_report_cleanup(&r);
}

/* ---- Dry run ---- */

/* A state where a real pass would do one of everything. */
static void seed_everything(fixture *f) {
    add_leased(f, "alpha", 2, 7, NOW - MIN_MS);
    add_leased(f, "alpha", 7, 7, NOW - MIN_MS);
    add_ready(f, "alpha", NOW - 3600 * 1000, 0);
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    put_stale_queue(f, "vibey.stale", 1000);
    put_queue(f, "celery.dlq", RP_QUEUE_TYPE_CLASSIC, 2, 0, 0);
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_QUORUM, 2, 0, 0);
    add_dead_letter(f, "vibey.x.dlq", "m-1", "one");
    add_dead_letter(f, "vibey.x.dlq", NULL, "two");
    /* An open sighting that the pass no longer sees: it would clear. */
    assert_int_equal(rp_memory_add_sighting(f->m, "broker|HOLDER_GONE|queue:/:vibey.gone",
                                            RP_COND_HOLDER_GONE),
                     RP_OK);
}

/* "OBJECT CONDITION ACTION" lines of a report, sorted, for comparison. */
static char *summary(const rp_report *r) {
    char **lines = calloc(r->n_verdicts + 1, sizeof *lines);
    size_t total = 1;
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        size_t n = strlen(v->object) + 64;
        lines[i] = malloc(n);
        snprintf(lines[i], n, "%s %s %s\n", v->object, rp_condition_string(v->condition),
                 rp_action_string(v->action));
        total += strlen(lines[i]);
    }
    for (size_t i = 0; i + 1 < r->n_verdicts; i++)
        for (size_t j = i + 1; j < r->n_verdicts; j++)
            if (strcmp(lines[i], lines[j]) > 0) {
                char *t = lines[i];
                lines[i] = lines[j];
                lines[j] = t;
            }
    char *s = calloc(total, 1);
    for (size_t i = 0; i < r->n_verdicts; i++) {
        strcat(s, lines[i]);
        free(lines[i]);
    }
    free(lines);
    return s;
}

static void test_dry_run_changes_nothing(void **state) {
    fixture *f = *state;
    seed_everything(f);
    char *before = dump(f);
    rp_report dry;
    run(f, true, &dry);
    char *after = dump(f);
    assert_string_equal(before, after); /* the whole memory state */
    assert_int_equal(rp_memory_write_calls(f->m), 0);
    assert_true(dry.ok);
    assert_int_equal(count(&dry, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED), 1);
    assert_int_equal(count(&dry, RP_COND_POISON, RP_ACTION_PARKED), 1);
    assert_int_equal(count(&dry, RP_COND_STALE_READY, RP_ACTION_SURFACED), 2);
    assert_int_equal(count(&dry, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_int_equal(count(&dry, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED), 1);
    assert_int_equal(count(&dry, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 2);
    assert_int_equal(count(&dry, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);

    /* A dry run twice says the same, and the real pass then does exactly
     * what the dry run said. */
    rp_report dry2, real;
    run(f, true, &dry2);
    run(f, false, &real);
    char *s_dry = summary(&dry), *s_dry2 = summary(&dry2), *s_real = summary(&real);
    assert_string_equal(s_dry, s_dry2);
    assert_string_equal(s_dry, s_real);
    char *changed = dump(f);
    assert_string_not_equal(before, changed);
    free(s_dry);
    free(s_dry2);
    free(s_real);
    free(changed);
    free(before);
    free(after);
    rp_report_cleanup(&dry);
    rp_report_cleanup(&dry2);
    rp_report_cleanup(&real);
}

/* ---- Sightings ---- */

static void test_sighting_opened_once_and_cleared(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    const char *key = "broker|HOLDER_GONE|queue:/:vibey.held";
    rp_report r;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_non_null(rp_memory_sighting(f->m, key));
    assert_int_equal(rp_memory_n_ledger(f->m), 1);
    assert_int_equal(rp_memory_n_published(f->m), 1);
    assert_int_equal(rp_memory_sighting(f->m, key)->opened_seq, rp_memory_ledger(f->m, 0)->seq);
    rp_report_cleanup(&r);

    /* Still there: recorded once per sighting, not once per pass. */
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_ledger(f->m), 1);
    assert_int_equal(rp_memory_n_sightings(f->m), 1);
    rp_report_cleanup(&r);

    /* A consumer came back: cleared, once. */
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 1);
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_int_equal(r.verdicts[0].condition, RP_COND_HOLDER_GONE);
    assert_int_equal(r.verdicts[0].action, RP_ACTION_CLEARED);
    assert_string_equal(r.verdicts[0].object, "queue:/:vibey.held");
    assert_null(rp_memory_sighting(f->m, key));
    assert_int_equal(rp_memory_n_ledger(f->m), 2);
    assert_int_equal(rp_memory_ledger(f->m, 1)->verdict.action, RP_ACTION_CLEARED);
    assert_int_equal(rp_memory_n_published(f->m), 2);
    rp_report_cleanup(&r);
    quiet_pass(f);

    /* It comes back: a new sighting. */
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_int_equal(rp_memory_n_ledger(f->m), 3);
    rp_report_cleanup(&r);

    /* The queue is deleted: a whole listing without it clears it. */
    assert_int_equal(rp_memory_remove_queue(f->m, "/", "vibey.held"), RP_OK);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);
    rp_report_cleanup(&r);
}

static void test_condition_change_on_one_queue(void **state) {
    fixture *f = *state;
    rp_queue_facts q = {
        .vhost = "/", .name = "vibey.q", .type = RP_QUEUE_TYPE_CLASSIC, .ready = 5, .unacked = 2,
        .counts_known = true, .consumers_known = true, .head_timestamp_known = true, .head_timestamp = NOW / 1000 - 5000,
    };
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
    rp_report r;
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 1); /* holder gone only, not stale too */
    assert_int_equal(r.verdicts[0].condition, RP_COND_HOLDER_GONE);
    rp_report_cleanup(&r);
    q.unacked = 0; /* the unacked came back to ready: now it is stale */
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 1);
    assert_int_equal(count(&r, RP_COND_STALE_READY, RP_ACTION_SURFACED), 1);
    assert_non_null(rp_memory_sighting(f->m, "broker|STALE_READY|queue:/:vibey.q"));
    rp_report_cleanup(&r);
}

static void test_queue_listed_twice_is_one_sighting(void **state) {
    fixture *f = *state;
    rp_memory_set_page_size(f->m, 1);
    rp_queue_facts q = {.vhost = "/", .name = "vibey.held", .type = RP_QUEUE_TYPE_CLASSIC,
                        .unacked = 3, .counts_known = true, .consumers_known = true};
    assert_int_equal(rp_memory_append_queue(f->m, &q), RP_OK);
    assert_int_equal(rp_memory_append_queue(f->m, &q), RP_OK);
    rp_report r;
    run(f, true, &r);
    assert_int_equal(r.n_verdicts, 1);
    rp_report_cleanup(&r);
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_OPEN_SIGHTING), 1);
    rp_report_cleanup(&r);
}

static void test_sighting_opened_by_another_reaper(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    assert_int_equal(rp_memory_add_sighting(f->m, "broker|HOLDER_GONE|queue:/:vibey.held",
                                            RP_COND_HOLDER_GONE),
                     RP_OK);
    rp_report r;
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_ledger(f->m), 0);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_OPEN_SIGHTING), 0);
    rp_report_cleanup(&r);
}

static void test_sightings_the_pass_does_not_judge_are_left_alone(void **state) {
    fixture *f = *state;
    assert_int_equal(rp_memory_add_sighting(f->m, "broker|HUNG_HANDLER|queue:/:vibey.x",
                                            RP_COND_HUNG_HANDLER),
                     RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, "future|FORMAT|x", RP_COND_NONE), RP_OK);
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
    rp_report_cleanup(&r);
}

/* ---- Unreadable sources ---- */

static void test_unreadable_broker_clears_nothing(void **state) {
    fixture *f = *state;
    rp_memory_set_page_size(f->m, 1);
    put_queue(f, "vibey.a", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    put_queue(f, "vibey.b", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
    rp_report_cleanup(&r);

    /* Both conditions end, but the broker cannot be listed. */
    put_queue(f, "vibey.a", RP_QUEUE_TYPE_CLASSIC, 0, 3, 1);
    put_queue(f, "vibey.b", RP_QUEUE_TYPE_CLASSIC, 0, 3, 1);
    rp_memory_fail(f->m, RP_MEM_LIST_QUEUES, RP_ERR_UNAVAILABLE, 0);
    run_unreadable(f, &r, "broker");
    assert_true(has_note(&r, "broker: listing queues: unavailable"));
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
    rp_report_cleanup(&r);

    /* Page 1 reads, page 2 does not: a partial listing clears nothing,
     * not even what page 1 showed to have ended. */
    rp_memory_fail(f->m, RP_MEM_LIST_QUEUES, RP_ERR_UNAVAILABLE, 1);
    run(f, false, &r);
    assert_false(r.ok);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
    rp_report_cleanup(&r);

    /* Readable again: both clear. */
    rp_memory_fail(f->m, RP_MEM_LIST_QUEUES, RP_OK, 0);
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED), 2);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    rp_report_cleanup(&r);
}

static void test_unreadable_store(void **state) {
    fixture *f = *state;
    int64_t old = add_ready(f, "alpha", NOW - 3600 * 1000, 0);
    rp_report r;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_STALE_READY, RP_ACTION_SURFACED), 1);
    rp_report_cleanup(&r);

    /* The stale job is taken; then the store cannot list claimable jobs. */
    rp_mem_job *j = (rp_mem_job *)rp_memory_job(f->m, old);
    j->state = RP_JOB_SUCCEEDED;
    /* One row per store call that fails: the pass is not ok and clears
     * nothing; the call answers again before the next row. */
    static const struct {
        rp_memory_op op;
        const char *unreadable; /* named unreadable; NULL: not checked */
        bool no_verdict;        /* no verdict at all */
        int64_t n_unreadable;   /* -1: not checked */
        bool sighting_kept;     /* the stale-ready sighting still open */
    } fails[] = {
        /* Claimable jobs cannot be listed. */
        {RP_MEM_LIST_CLAIMABLE, "job_queue", true, -1, true},
        /* Leases cannot be taken: unreadable too (named once), nothing cleared. */
        {RP_MEM_TAKE_LEASE, NULL, false, 1, true},
        /* The sightings cannot be listed: nothing can be cleared. */
        {RP_MEM_LIST_SIGHTINGS, NULL, false, -1, false},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(fails); i++) {
        rp_memory_fail(f->m, fails[i].op, RP_ERR_UNAVAILABLE, 0);
        run(f, false, &r);
        assert_false(r.ok);
        if (fails[i].unreadable) assert_true(unreadable(&r, fails[i].unreadable));
        if (fails[i].no_verdict) assert_int_equal(r.n_verdicts, 0);
        if (fails[i].n_unreadable >= 0) assert_int_equal(r.n_unreadable, fails[i].n_unreadable);
        if (fails[i].sighting_kept)
            assert_non_null(rp_memory_sighting(f->m, "job_queue|STALE_READY|project:alpha"));
        assert_int_equal(rp_memory_calls(f->m, RP_MEM_CLOSE_SIGHTING), 0);
        rp_report_cleanup(&r);
        rp_memory_fail(f->m, fails[i].op, RP_OK, 0);
    }
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_STALE_READY, RP_ACTION_CLEARED), 1);
    rp_report_cleanup(&r);
}

static void test_failed_move_stops_the_lease_reap(void **state) {
    fixture *f = *state;
    static const lease_case cases[] = {{1, NOW - MIN_MS, RP_JOB_LEASED},
                                       {1, NOW - MIN_MS, RP_JOB_LEASED}};
    int64_t ids[2];
    rp_memory_fail(f->m, RP_MEM_MOVE_LEASE, RP_ERR_UNAVAILABLE, 0);
    rp_report r;
    LEASE_CASES_RUN(f, cases, ids, &r);
    assert_false(r.ok);
    assert_true(unreadable(&r, "job_queue"));
    assert_false(rp_memory_job(f->m, ids[0])->locked);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_MOVE_LEASE), 1);
    assert_int_equal(rp_memory_n_ledger(f->m), 0);
    rp_report_cleanup(&r);
}

/* One row failing on its own (a trigger, a constraint) is rolled back alone:
 * the others still move, and the report says which row was left. */
static void test_failed_row_does_not_block_the_others(void **state) {
    fixture *f = *state;
    static const lease_case cases[] = {{1, NOW - MIN_MS, RP_JOB_READY},
                                       {1, NOW - MIN_MS, RP_JOB_LEASED}, /* its move fails */
                                       {1, NOW - MIN_MS, RP_JOB_READY}};
    int64_t ids[3];
    rp_memory_fail_once(f->m, RP_MEM_MOVE_LEASE, RP_ERR_INTERNAL, 1); /* the second move */
    rp_report r;
    LEASE_CASES_RUN(f, cases, ids, &r);
    /* Named unreadable, and the pass is not ok (issue 18 item 5). */
    assert_false(r.ok);
    char object[64];
    snprintf(object, sizeof object, "job:%lld", (long long)ids[1]);
    assert_true(unreadable(&r, object));
    assert_int_equal(r.n_unreadable, 1);
    assert_false(rp_memory_job(f->m, ids[1])->locked);
    assert_int_equal(rp_memory_n_ledger(f->m), 2);
    assert_int_equal(count(&r, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED), 2);
    bool noted = false;
    char want[64];
    snprintf(want, sizeof want, "job %lld could not be moved", (long long)ids[1]);
    for (size_t i = 0; i < r.n_notes; i++)
        if (strstr(r.notes[i], want)) noted = true;
    assert_true(noted);
    rp_report_cleanup(&r);
}

/* Batches: 250 expired leases in batches of 100 are three takes and three
 * commits (and a last take that finds nothing); each row is judged on its
 * own (poison parked with its gate, the others requeued), one ledger event
 * and one published event per job, in ledger order. */
static void test_lease_batches_judge_each_row(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 250; i++) add_leased(f, "alpha", i % 10 == 0 ? 7 : 2, 7, NOW - MIN_MS);
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_TAKE_LEASE), 4);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_COMMIT_LEASES), 3);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_MOVE_LEASE), 250);
    assert_int_equal(count(&r, RP_COND_POISON, RP_ACTION_PARKED), 25);
    assert_int_equal(count(&r, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED), 225);
    assert_int_equal(rp_memory_n_gates(f->m), 25);
    assert_int_equal(rp_memory_n_ledger(f->m), 250);
    assert_int_equal(rp_memory_n_published(f->m), 250);
    for (int64_t id = 1; id <= 250; id++) {
        const rp_mem_job *j = rp_memory_job(f->m, id);
        assert_int_equal(j->state, id % 10 == 1 ? RP_JOB_AWAITING_HUMAN : RP_JOB_READY);
        assert_false(j->locked);
        if (id % 10 == 1) assert_int_equal(j->attempts, 6); /* one attempt refunded */
    }
    for (size_t i = 0; i < 250; i++) {
        const rp_mem_event *e = rp_memory_published(f->m, i);
        assert_int_equal(e->seq, rp_memory_ledger(f->m, i)->seq);
        char want[32];
        snprintf(want, sizeof want, "job:%zu", i + 1);
        assert_string_equal(e->verdict.object, want);
    }
    rp_report_cleanup(&r);
}

/* One row of a batch fails on its own (its savepoint rolls back): the rest
 * of the batch commits, and only the committed rows' events are published
 * and their verdicts reported; the failed row is named in a note. */
static void test_batch_row_failure_publishes_only_committed_rows(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 5; i++) add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    rp_memory_fail_once(f->m, RP_MEM_MOVE_LEASE, RP_ERR_INTERNAL, 2); /* the third row */
    rp_report r;
    run_unreadable(f, &r, "job:3");
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_COMMIT_LEASES), 1);
    assert_int_equal(rp_memory_job(f->m, 3)->state, RP_JOB_LEASED);
    assert_false(rp_memory_job(f->m, 3)->locked);
    assert_int_equal(rp_memory_n_ledger(f->m), 4);
    assert_int_equal(rp_memory_n_published(f->m), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_not_equal(rp_memory_published(f->m, i)->verdict.object, "job:3");
    assert_int_equal(count(&r, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED), 4);
    assert_true(has_note(&r, "job 3 could not be moved"));
    rp_report_cleanup(&r);
}

/* The batch's commit fails (a crash, a lost session at COMMIT): nothing of
 * it is moved, no event is published, no verdict reported, and the store
 * is reported unreadable; the next pass moves every row once. */
static void test_failed_batch_commit_publishes_nothing(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 5; i++) add_leased(f, "alpha", i == 0 ? 7 : 1, 7, NOW - MIN_MS);
    rp_memory_fail(f->m, RP_MEM_COMMIT_LEASES, RP_ERR_UNAVAILABLE, 0);
    rp_report r;
    run_unreadable(f, &r, "job_queue");
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_ledger(f->m), 0);
    assert_int_equal(rp_memory_n_published(f->m), 0);
    assert_int_equal(rp_memory_n_gates(f->m), 0);
    for (int64_t id = 1; id <= 5; id++) {
        assert_int_equal(rp_memory_job(f->m, id)->state, RP_JOB_LEASED);
        assert_false(rp_memory_job(f->m, id)->locked);
    }
    rp_report_cleanup(&r);
    rp_memory_fail(f->m, RP_MEM_COMMIT_LEASES, RP_OK, 0);
    run_ok(f, &r);
    assert_int_equal(rp_memory_n_ledger(f->m), 5);
    assert_int_equal(rp_memory_n_published(f->m), 5);
    assert_int_equal(count(&r, RP_COND_POISON, RP_ACTION_PARKED), 1);
    rp_report_cleanup(&r);
}

/* The batch size is range-checked: outside 1..RP_PASS_LEASE_BATCH_MAX the
 * pass refuses to start and touches nothing. */
static void test_lease_batch_size_range(void **state) {
    fixture *f = *state;
    add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    rp_report r;
    static const size_t refused[] = {0, RP_PASS_LEASE_BATCH_MAX + 1};
    for (size_t i = 0; i < RP_ARRAY_LEN(refused); i++) {
        f->opt.lease_batch_size = refused[i];
        assert_int_equal(rp_pass_run(&f->ports, &f->opt, &r), RP_ERR_INVALID);
        rp_report_cleanup(&r);
    }
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_TAKE_LEASE), 0);
    f->opt.lease_batch_size = RP_PASS_LEASE_BATCH_MAX;
    run(f, false, &r);
    assert_int_equal(rp_memory_job(f->m, 1)->state, RP_JOB_READY);
    rp_report_cleanup(&r);
}

static size_t progress_calls, progress_last, verdicts_seen;
static void on_verdict(void *arg, const rp_verdict *v, bool dry_run) {
    (void)arg;
    assert_false(dry_run);
    assert_int_equal(v->action, RP_ACTION_REQUEUED);
    verdicts_seen++;
}
static void on_progress(void *arg, const char *phase, size_t done) {
    (void)arg;
    assert_string_equal(phase, "lease reap");
    progress_calls++;
    progress_last = done;
}

/* The leases-only scope (the crash-recovery reap that runs even with the
 * sweep off) moves leases and nothing else: no stale ready, no broker, no
 * sighting opened or cleared. Progress is reported on long reaps. */
static void test_leases_scope_moves_leases_only(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 25000; i++) add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    add_ready(f, "beta", NOW - 1000 * 1000, 0); /* stale, but not this scope's */
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    f->opt.scope = RP_PASS_LEASES;
    f->opt.progress = on_progress;
    f->opt.on_verdict = on_verdict;
    progress_calls = progress_last = verdicts_seen = 0;
    rp_report r;
    run_ok(f, &r);
    /* The report is bounded: it lists the first 1000, counts them all. */
    assert_int_equal(r.counts[RP_ACTION_REQUEUED], 25000);
    assert_int_equal(r.n_verdicts, RP_PASS_REPORT_VERDICTS);
    assert_int_equal(r.n_omitted, 25000 - RP_PASS_REPORT_VERDICTS);
    assert_int_equal(rp_memory_n_ledger(f->m), 25000);
    bool noted = false;
    for (size_t i = 0; i < r.n_notes; i++)
        if (strstr(r.notes[i], "24000 more verdicts are not listed")) noted = true;
    assert_true(noted);
    assert_null(rp_memory_sighting(f->m, "job_queue|STALE_READY|project:beta"));
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_LIST_QUEUES), 0);
    assert_int_equal(verdicts_seen, 25000); /* the hook sees every one */
    assert_int_equal(progress_calls, 2);
    assert_int_equal(progress_last, 20000);
    rp_report_cleanup(&r);
}

static int stop_after_calls;
static bool stop_soon(void *arg) {
    (void)arg;
    return --stop_after_calls < 0;
}

/* A stop request (SIGTERM) ends the lease reap between batches (here of one
 * row each): what moved is committed, the rest stays leased for the next
 * pass, nothing is half done, and no sighting is cleared from a half-read
 * source. */
static void test_stop_request_ends_the_pass_between_rows(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 10; i++) add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    f->opt.lease_batch_size = 1;
    f->opt.should_stop = stop_soon;
    stop_after_calls = 4;
    rp_report r;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED), 4);
    assert_int_equal(rp_memory_n_ledger(f->m), 4);
    size_t leased = 0;
    for (int64_t id = 1; id <= 10; id++)
        if (rp_memory_job(f->m, id)->state == RP_JOB_LEASED) {
            leased++;
            assert_false(rp_memory_job(f->m, id)->locked);
        }
    assert_int_equal(leased, 6);
    bool noted = false;
    for (size_t i = 0; i < r.n_notes; i++)
        if (strstr(r.notes[i], "stopped early")) noted = true;
    assert_true(noted);
    rp_report_cleanup(&r);
}

static void test_unrecorded_surface_is_still_reported(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    rp_memory_fail(f->m, RP_MEM_OPEN_SIGHTING, RP_ERR_UNAVAILABLE, 0);
    rp_report r;
    run_unreadable(f, &r, "job_queue");
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 1);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    rp_report_cleanup(&r);
    /* Two conditions, one store failure: named and noted once. */
    put_queue(f, "vibey.held2", RP_QUEUE_TYPE_CLASSIC, 0, 1, 0);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 2);
    assert_int_equal(r.n_unreadable, 1);
    assert_int_equal(r.n_notes, 1);
    assert_string_equal(r.notes[0], "job_queue: opening a sighting: unavailable");
    rp_report_cleanup(&r);
    /* Recorded by the next pass that can. */
    rp_memory_fail(f->m, RP_MEM_OPEN_SIGHTING, RP_OK, 0);
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED), 2);
    assert_int_equal(rp_memory_n_sightings(f->m), 2);
    rp_report_cleanup(&r);
}

static void test_publish_failure_is_a_note(void **state) {
    fixture *f = *state;
    int64_t a = add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    rp_memory_fail(f->m, RP_MEM_PUBLISH, RP_ERR_UNAVAILABLE, 0);
    rp_report r;
    run(f, false, &r);
    assert_true(r.ok); /* the ledger is the record */
    assert_true(has_note(&r, "ledger event 1 is committed but was not published"));
    assert_int_equal(rp_memory_job(f->m, a)->state, RP_JOB_READY);
    assert_int_equal(rp_memory_n_ledger(f->m), 1);
    assert_int_equal(rp_memory_n_published(f->m), 0);
    assert_int_equal(r.n_verdicts, 1);
    rp_report_cleanup(&r);
}

/* ---- Stale ready in the job table ---- */

static void test_stale_ready_per_project(void **state) {
    fixture *f = *state;
    int64_t a1 = add_ready(f, "alpha", NOW - 1000 * 1000, 0); /* 1000 s: stale */
    add_ready(f, "alpha", NOW - 950 * 1000, 0);               /* stale too, younger */
    add_ready(f, "beta", NOW - 899999, 0);                    /* 1 ms short */
    add_ready(f, "beta", NOW + 60000, 0);                     /* not due */
    add_leased(f, "gamma", 1, 7, NOW + MIN_MS);               /* no claimable job */
    int64_t blocker = add_leased(f, "delta", 1, 7, NOW + MIN_MS);
    add_ready(f, "delta", NOW - 5000 * 1000, blocker);        /* its dependency runs */
    rp_report r;
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 1);
    const rp_verdict *v = &r.verdicts[0];
    assert_int_equal(v->condition, RP_COND_STALE_READY);
    assert_int_equal(v->source, RP_SOURCE_JOB_QUEUE);
    assert_string_equal(v->project, "alpha");
    assert_string_equal(v->object, "job:1"); /* the oldest */
    assert_non_null(rp_memory_sighting(f->m, "job_queue|STALE_READY|project:alpha"));
    rp_report_cleanup(&r);

    /* The oldest is taken; the next one is stale too: the same sighting. */
    ((rp_mem_job *)rp_memory_job(f->m, a1))->state = RP_JOB_SUCCEEDED;
    quiet_pass(f);

    /* The dependency finished 1000 s ago: delta's job counts from then. */
    rp_mem_job *b = (rp_mem_job *)rp_memory_job(f->m, blocker);
    b->state = RP_JOB_SUCCEEDED;
    b->lease_known = false;
    b->finished_known = true;
    b->finished_at = NOW - 1000 * 1000;
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 1);
    assert_string_equal(r.verdicts[0].project, "delta");
    v = &r.verdicts[0];
    assert_true(v->measured > 999.999 && v->measured < 1000.001);
    rp_report_cleanup(&r);
}

static void test_project_narrows_the_pass(void **state) {
    fixture *f = *state;
    int64_t a = add_leased(f, "alpha", 1, 7, NOW - MIN_MS);
    int64_t b = add_leased(f, "beta", 1, 7, NOW - MIN_MS);
    put_queue(f, "vibey.held", RP_QUEUE_TYPE_CLASSIC, 0, 3, 0);
    assert_int_equal(rp_memory_add_sighting(f->m, "job_queue|STALE_READY|project:beta",
                                            RP_COND_STALE_READY), RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, "job_queue|STALE_READY|project:alpha",
                                            RP_COND_STALE_READY), RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, "broker|HOLDER_GONE|queue:/:vibey.gone",
                                            RP_COND_HOLDER_GONE), RP_OK);
    f->opt.project = "alpha";
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(rp_memory_job(f->m, a)->state, RP_JOB_READY);
    assert_int_equal(rp_memory_job(f->m, b)->state, RP_JOB_LEASED);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_LIST_QUEUES), 0);
    assert_true(has_note(&r, "narrowed to project alpha"));
    /* Only alpha's stale sighting could be judged, so only it clears. */
    assert_null(rp_memory_sighting(f->m, "job_queue|STALE_READY|project:alpha"));
    assert_non_null(rp_memory_sighting(f->m, "job_queue|STALE_READY|project:beta"));
    assert_non_null(rp_memory_sighting(f->m, "broker|HOLDER_GONE|queue:/:vibey.gone"));
    assert_int_equal(r.n_verdicts, 2); /* the requeue and the clearing */
    rp_report_cleanup(&r);
}

/* ---- Broker ---- */

static void test_broker_notes(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.quorum", RP_QUEUE_TYPE_QUORUM, 5, 0, 0);
    put_queue(f, "vibey.untimed", RP_QUEUE_TYPE_CLASSIC, 5, 0, 0);
    put_queue(f, "vibey.fresh", RP_QUEUE_TYPE_CLASSIC, 5, 2, -1); /* consumers unknown */
    put_queue(f, "other.quorum", RP_QUEUE_TYPE_QUORUM, 5, 0, 0);  /* not owned: no note */
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(r.n_notes, 3);
    assert_true(has_note(&r, "queue vibey.quorum on vhost /: stale ready not judged, a quorum"));
    assert_true(has_note(&r, "vibey.untimed on vhost /: stale ready not judged, its head message "
                             "carries no timestamp"));
    assert_true(has_note(&r, "vibey.fresh on vhost /: holder gone and stale ready not judged"));
    rp_report_cleanup(&r);
}

static void test_dead_letter_queues(void **state) {
    fixture *f = *state;
    put_queue(f, "celery.dlq", RP_QUEUE_TYPE_CLASSIC, 2, 0, 0); /* not owned */
    add_dead_letter(f, "celery.dlq", "c-1", "theirs");
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_QUORUM, 3, 0, 0); /* owned */
    add_dead_letter(f, "vibey.x.dlq", "m-1", "one");
    add_dead_letter(f, "vibey.x.dlq", NULL, "two");
    add_dead_letter(f, "vibey.x.dlq", "m-1", "one again"); /* the same identity */
    rp_report r;
    run_ok(f, &r);
    const rp_verdict *s = find(&r, "queue:/:celery.dlq");
    assert_non_null(s);
    assert_int_equal(s->condition, RP_COND_DEAD_LETTER);
    assert_int_equal(s->action, RP_ACTION_SURFACED);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 2);
    const rp_verdict *p = find(&r, "dead_letter:id:%2F/vibey.x/m-1");
    assert_non_null(p);
    assert_false(p->trusted);
    assert_string_equal(p->queue, "vibey.x.dlq");
    assert_non_null(strstr(p->detail, "\"vibey.x\""));
    assert_non_null(strstr(p->detail, "\"rejected\""));
    /* Only the owned queue was read; nothing parked from the foreign one. */
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PEEK), 1);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
    for (size_t i = 0; i < 2; i++) {
        const rp_mem_parked *d = rp_memory_parked(f->m, i);
        assert_string_equal(d->queue, "vibey.x.dlq");
        assert_string_equal(d->origin_queue, "\"vibey.x\"");
        const rp_gate *g = rp_memory_gate(f->m, i);
        assert_int_equal(g->kind, RP_GATE_BUS_DEAD_LETTERED);
        assert_int_equal(g->id, d->gate_id);
        assert_int_equal(rp_memory_job(f->m, d->job_id)->state, RP_JOB_AWAITING_HUMAN);
    }
    /* Parks, plus the surfaced foreign queue, each with its event. */
    assert_int_equal(rp_memory_n_ledger(f->m), 3);
    rp_report_cleanup(&r);

    /* The broker keeps its copies; parking again changes nothing. */
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
    assert_int_equal(rp_memory_n_ledger(f->m), 3);
    rp_report_cleanup(&r);
}

/* Issue 14 item 3 through the pass and the memory adapter: a dead letter
 * whose gate was answered and that dies again (replayed: a new x-death)
 * opens occurrence 2 with a gate of its own, the first staying answered;
 * the broker's copy of the first death, read again, opens nothing. */
static void test_dead_letter_new_death_after_answer(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 1, 0, 0);
    add_dead_letter(f, "vibey.x.dlq", "m-1", "one");
    rp_report r;
    run(f, false, &r);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_n_parked(f->m), 1);
    int64_t first = rp_memory_parked(f->m, 0)->gate_id;
    rp_answer_result a;
    assert_int_equal(f->ports.gates.answer(f->ports.gates.self, first, RP_CHOICE_REPLAY, "ops", NULL, &a),
                     RP_OK);
    quiet_pass(f);
    assert_int_equal(rp_memory_n_parked(f->m), 1);

    /* Replayed, rejected again 30 s later: a new death. A dry run says so. */
    add_death(f, "vibey.x.dlq", "m-1", "one", "vibey.x", 1699990030, 1);
    run(f, true, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 1);
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_n_parked(f->m), 1);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 1);
    assert_non_null(find(&r, "dead_letter:id:%2F/vibey.x/m-1"));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
    const rp_mem_parked *p1 = rp_memory_parked(f->m, 0), *p2 = rp_memory_parked(f->m, 1);
    assert_string_equal(p1->identity, p2->identity);
    assert_int_equal(p1->occurrence, 1);
    assert_int_equal(p2->occurrence, 2);
    assert_string_equal(p2->death, "1699990030/1");
    assert_int_not_equal(p1->gate_id, p2->gate_id);
    assert_int_not_equal(p1->job_id, p2->job_id);
    assert_true(rp_memory_gate(f->m, 0)->answered);
    assert_false(rp_memory_gate(f->m, 1)->answered);
    /* Both copies read again: nothing. */
    quiet_pass(f);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
    /* Dead again with its headers (count 2) while occurrence 2 is open:
     * covered by its gate. */
    add_death(f, "vibey.x.dlq", "m-1", "one", "vibey.x", 1699990030, 2);
    quiet_pass(f);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
}

/* One message_id reused on two origin queues: two dead letters. */
static void test_dead_letter_same_id_two_origins(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 1, 0, 0);
    put_queue(f, "vibey.y.dlq", RP_QUEUE_TYPE_CLASSIC, 1, 0, 0);
    add_death(f, "vibey.x.dlq", "shared", "a", "vibey.x", 1699990000, 1);
    add_death(f, "vibey.y.dlq", "shared", "b", "vibey.y", 1699990000, 1);
    rp_report r;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 2);
    assert_non_null(find(&r, "dead_letter:id:%2F/vibey.x/shared"));
    assert_non_null(find(&r, "dead_letter:id:%2F/vibey.y/shared"));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
}

static void test_dead_letter_peek_limit(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 2;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 3, 0, 0);
    add_numbered(f, "vibey.x.dlq", "m", 3);
    rp_report r;
    run(f, false, &r);
    assert_int_equal(rp_memory_n_parked(f->m), 2);
    assert_true(has_note(&r, "the first 2 messages were examined"));
    rp_report_cleanup(&r);
    /* A queue that holds no more than the limit leaves nothing behind. */
    f->opt.dead_letter_peek_limit = 3;
    run(f, false, &r);
    assert_int_equal(rp_memory_n_parked(f->m), 3);
    assert_false(has_note(&r, "were examined"));
    rp_report_cleanup(&r);
}

static void test_dead_letter_queue_owned_by_its_base_name(void **state) {
    fixture *f = *state;
    /* An owned pattern that matches the queue but not its dead-letter queue:
     * the dead-letter queue of an owned queue is still owned. */
    pcre2_code *strict = compile("^vibey\\.[a-z]+$");
    f->opt.owned_queue_pattern = strict;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 1, 0, 0);
    add_dead_letter(f, "vibey.x.dlq", "m-1", "1");
    put_queue(f, "vibey.x.y.dlq", RP_QUEUE_TYPE_CLASSIC, 1, 0, 0); /* base not owned */
    rp_report r;
    run(f, false, &r);
    assert_int_equal(rp_memory_n_parked(f->m), 1);
    const rp_verdict *v = find(&r, "queue:/:vibey.x.y.dlq");
    assert_non_null(v);
    assert_int_equal(v->action, RP_ACTION_SURFACED);
    rp_report_cleanup(&r);
    pcre2_code_free(strict);
    f->opt.owned_queue_pattern = f->owned;
}

static void test_dead_letter_park_failure(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 2, 0, 0);
    add_numbered(f, "vibey.x.dlq", "m", 2);
    rp_memory_fail(f->m, RP_MEM_PARK, RP_ERR_UNAVAILABLE, 0);
    rp_report r;
    run_unreadable(f, &r, "job_queue");
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PARK), 1); /* stopped at the first */
    assert_int_equal(rp_memory_n_parked(f->m), 0);
    assert_int_equal(rp_memory_n_jobs(f->m), 0);
    rp_report_cleanup(&r);
    rp_memory_fail(f->m, RP_MEM_PEEK, RP_ERR_UNAVAILABLE, 0);
    rp_memory_fail(f->m, RP_MEM_PARK, RP_OK, 0);
    run_unreadable(f, &r, "broker");
    rp_report_cleanup(&r);
}

/* A dead-letter port without peek (a pass that cannot read queues): the
 * owned dead-letter queue is noted as not examined; nothing crashes, nothing
 * is parked. */
static void test_dead_letter_without_peek(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 1, 0, 0);
    add_dead_letter(f, "vibey.x.dlq", "m-1", "1");
    f->ports.dead_letters.peek = NULL;
    rp_report r;
    run(f, false, &r);
    assert_true(has_note(&r, "vibey.x.dlq on vhost /: not examined"));
    assert_int_equal(rp_memory_n_parked(f->m), 0);
    rp_report_cleanup(&r);
}

static rp_status peek_with_note(void *self, const char *vhost, const char *queue, size_t limit,
                                rp_dl_batch *out) {
    (void)self;
    (void)vhost;
    (void)queue;
    (void)limit;
    out->messages = NULL;
    out->n = 0;
    out->note = "not read again, for a reason the port gives";
    return RP_OK;
}

/* The port's note on a queue it did not read goes into the pass notes. */
static void test_dead_letter_peek_note(void **state) {
    fixture *f = *state;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_QUORUM, 4, 0, 0);
    f->ports.dead_letters.peek = peek_with_note;
    rp_report r;
    run_ok(f, &r);
    assert_true(has_note(&r, "dead-letter queue vibey.x.dlq on vhost /: not read again, for a "
                             "reason the port gives"));
    assert_int_equal(rp_memory_n_parked(f->m), 0);
    rp_report_cleanup(&r);
}

/* ---- What the backfill could not read (issue #5) ---- */

#define DLQ_KEY "broker|DEAD_LETTER|queue:/:vibey.x.dlq"

/* The one DEAD_LETTER / SURFACED verdict about the queue vibey.x.dlq. */
static const rp_verdict *remainder_verdict(const rp_report *r) {
    const rp_verdict *v = find(r, "queue:/:vibey.x.dlq");
    if (v == NULL || v->condition != RP_COND_DEAD_LETTER || v->action != RP_ACTION_SURFACED)
        return NULL;
    return v;
}

/* Five dead letters and a peek limit of three: the three are parked and
 * the two behind them are surfaced on the queue's sighting, with the
 * broker as source, measured 2 against the limit; the next pass reads past
 * the three parked (issue 14), parks the two and clears the sighting; new
 * ones behind a parked head are reached the same way, and a listing that
 * shows the queue empty clears what is open. Nothing is ever removed by
 * the pass. */
static void test_dead_letter_remainder_surfaced_then_cleared(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 3;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 5, 0, 0);
    const char *ids[] = {"m-1", "m-2", "m-3", "m-4", "m-5"};
    for (size_t i = 0; i < 5; i++) add_dead_letter(f, "vibey.x.dlq", ids[i], ids[i]);
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 3);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED), 1);
    const rp_verdict *v = remainder_verdict(&r);
    assert_non_null(v);
    assert_int_equal(v->source, RP_SOURCE_BROKER);
    assert_string_equal(v->queue, "vibey.x.dlq");
    assert_null(v->project);
    assert_true(v->measured == 2.0);
    assert_int_equal(v->threshold, 3);
    assert_string_equal(v->unit, "messages");
    assert_true(v->trusted);
    assert_non_null(strstr(v->detail, "holds 2 messages behind those this pass read"));
    assert_non_null(strstr(v->detail, "dead_letter_peek_limit"));
    assert_non_null(strstr(v->detail, "nothing is removed"));
    /* The note stays, beside the verdict. */
    assert_true(has_note(&r, "the first 3 messages were examined"));
    const rp_sighting_row *row = rp_memory_sighting(f->m, DLQ_KEY);
    assert_non_null(row);
    assert_int_equal(row->condition, RP_COND_DEAD_LETTER);
    /* Three parks and the sighting, each with its ledger event. */
    assert_int_equal(rp_memory_n_ledger(f->m), 4);
    const rp_mem_event *ev = rp_memory_ledger(f->m, 3);
    assert_int_equal(ev->verdict.action, RP_ACTION_SURFACED);
    assert_int_equal(row->opened_seq, ev->seq);
    assert_int_equal(rp_memory_n_published(f->m), 4);
    rp_report_cleanup(&r);

    /* The next pass reads past the 3 parked (issue 14): it parks the 2
     * behind them, finds nothing unread and clears the sighting. */
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 2);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, DLQ_KEY));
    assert_int_equal(rp_memory_n_parked(f->m), 5);
    assert_int_equal(rp_memory_n_ledger(f->m), 7);
    rp_report_cleanup(&r);
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_parked(f->m), 5);
    rp_report_cleanup(&r);

    /* Five new ones behind the five parked: three parked, the other two
     * a new sighting. Then the listing shows the queue empty: no
     * backfill, and the sighting clears. */
    const char *more[] = {"m-6", "m-7", "m-8", "m-9", "m-10"};
    for (size_t i = 0; i < 5; i++) add_dead_letter(f, "vibey.x.dlq", more[i], more[i]);
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 10, 0, 0);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 3);
    v = remainder_verdict(&r);
    assert_non_null(v);
    assert_true(v->measured == 2.0);
    assert_non_null(strstr(v->detail, "holds 2 messages behind those this pass read"));
    assert_true(has_note(&r, "the first 8 messages were examined (5 parked before"));
    assert_non_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 0, 0, 0);
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);
}

/* Every message read: nothing surfaced, no sighting (at the limit exactly,
 * and under it). */
static void test_dead_letter_all_read_surfaces_nothing(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 3;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 3, 0, 0);
    add_numbered(f, "vibey.x.dlq", "m", 3);
    rp_report r;
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 3);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED), 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    rp_report_cleanup(&r);
    f->opt.dead_letter_peek_limit = 10;
    run(f, false, &r);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    rp_report_cleanup(&r);
}

/* A dry run reports the remainder as a real pass would, and writes
 * nothing: no sighting, no event. */
static void test_dead_letter_remainder_dry_run(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 1;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 2, 0, 0);
    add_numbered(f, "vibey.x.dlq", "m", 2);
    char *before = dump(f);
    rp_report r;
    run(f, true, &r);
    const rp_verdict *v = remainder_verdict(&r);
    assert_non_null(v);
    assert_true(v->measured == 1.0);
    assert_int_equal(v->threshold, 1);
    assert_non_null(strstr(v->detail, "holds 1 message behind those this pass read"));
    assert_int_equal(rp_memory_write_calls(f->m), 0);
    char *after = dump(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    rp_report_cleanup(&r);
}

/* A peek port with its answer set by the test. */
typedef struct scripted_peek {
    rp_status status;
    int64_t unread;      /* -2: leave it as core set it */
    bool at_most;
    rp_dl_unread_reason reason;
    const char *note;
    size_t calls;
} scripted_peek;

static scripted_peek SP;

static rp_status peek_scripted(void *self, const char *vhost, const char *queue, size_t limit,
                               rp_dl_batch *out) {
    (void)self;
    (void)vhost;
    (void)queue;
    (void)limit;
    SP.calls++;
    out->messages = NULL;
    out->n = 0;
    if (SP.status != RP_OK) return SP.status;
    out->note = SP.note;
    if (SP.unread != -2) {
        out->unread = SP.unread;
        out->unread_at_most = SP.at_most;
        out->unread_reason = SP.reason;
    }
    return RP_OK;
}

static void script(rp_status st, int64_t unread, bool at_most, rp_dl_unread_reason why,
                   const char *note) {
    SP = (scripted_peek){st, unread, at_most, why, note, 0};
}

/* Each reason a port gives is said in the detail, with "up to" for a
 * bound, and the threshold is the peek limit only where a read was
 * bounded by it. */
static void test_dead_letter_remainder_reasons(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 3;
    f->ports.dead_letters.peek = peek_scripted;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_QUORUM, 9, 0, 0);
    struct {
        int64_t unread;
        bool at_most;
        rp_dl_unread_reason why;
        int64_t threshold;
        const char *says;
    } cases[] = {
        {2, true, RP_DL_UNREAD_READ_ONCE, 3, "holds up to 2 messages that lay behind what the "
                                             "backfill's one read of it took"},
        {9, false, RP_DL_UNREAD_NOT_READABLE, 0, "holds 9 messages that the backfill cannot "
                                                  "read (a stream queue"},
        {9, false, RP_DL_UNREAD_DRY_RUN, 0, "holds 9 messages that this dry run did not read"},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(cases); i++) {
        script(RP_OK, cases[i].unread, cases[i].at_most, cases[i].why, "a note of the port");
        rp_report r;
        run(f, true, &r);
        const rp_verdict *v = remainder_verdict(&r);
        assert_non_null(v);
        assert_true(v->measured == (double)cases[i].unread);
        assert_int_equal(v->threshold, cases[i].threshold);
        if (strstr(v->detail, cases[i].says) == NULL) fprintf(stderr, "detail: %s\n", v->detail);
        assert_non_null(strstr(v->detail, cases[i].says));
        assert_true(has_note(&r, "vibey.x.dlq on vhost /: a note of the port"));
        rp_report_cleanup(&r);
    }
    /* A count without a reason: said in a note, nothing surfaced. */
    script(RP_OK, 4, false, RP_DL_UNREAD_NONE, NULL);
    rp_report r;
    run(f, false, &r);
    assert_null(remainder_verdict(&r));
    assert_true(has_note(&r, "4 message(s) were not read, for a reason the pass was not told"));
    assert_int_equal(rp_memory_n_sightings(f->m), 0);
    rp_report_cleanup(&r);
}

/* An open remainder sighting is kept, not cleared, by a pass that cannot
 * tell whether the remainder is still there: the port does not know, the
 * peek fails, a park fails, the pass cannot peek, or a stop came first. A
 * port that says 0 clears it. */
static void test_dead_letter_remainder_kept_when_unknown(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 3;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_QUORUM, 5, 0, 0);
    f->ports.dead_letters.peek = peek_scripted;
    script(RP_OK, 2, false, RP_DL_UNREAD_READ_ONCE, NULL);
    rp_report r;
    run(f, false, &r);
    assert_non_null(remainder_verdict(&r));
    assert_non_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);

    /* One row per pass that cannot tell: no verdict, the sighting kept. */
    static const struct {
        bool peek;               /* the scripted peek; false: the pass cannot peek */
        rp_status status;        /* the peek's answer */
        int64_t unread;
        const char *note;
        enum { KEPT_RUN, KEPT_RUN_OK, KEPT_UNREADABLE } run;
        const char *unreadable;  /* KEPT_UNREADABLE: the source named */
        int64_t calls;           /* the peek's calls; -1: not checked */
    } kept[] = {
        {true, RP_OK, -2, "an old record that says no count", KEPT_RUN_OK, NULL, 1},
        {true, RP_ERR_UNAVAILABLE, 0, NULL, KEPT_UNREADABLE, "broker", -1},
        {false, RP_OK, 0, NULL, KEPT_RUN, NULL, -1},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(kept); i++) {
        if (kept[i].peek) script(kept[i].status, kept[i].unread, false, RP_DL_UNREAD_NONE,
                                 kept[i].note);
        else f->ports.dead_letters.peek = NULL;
        if (kept[i].run == KEPT_RUN_OK) run_ok(f, &r);
        else if (kept[i].run == KEPT_UNREADABLE) run_unreadable(f, &r, kept[i].unreadable);
        else run(f, false, &r);
        if (kept[i].calls >= 0) assert_int_equal(SP.calls, kept[i].calls);
        assert_int_equal(r.n_verdicts, 0);
        assert_non_null(rp_memory_sighting(f->m, DLQ_KEY));
        rp_report_cleanup(&r);
    }

    /* A park that fails: the store is not usable, the rest not judged. */
    rp_memory_ports(f->m, &f->ports);
    add_dead_letter(f, "vibey.x.dlq", "m-1", "1");
    rp_memory_fail(f->m, RP_MEM_PARK, RP_ERR_UNAVAILABLE, 0);
    run(f, false, &r);
    assert_false(r.ok);
    assert_non_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);
    rp_memory_fail(f->m, RP_MEM_PARK, RP_OK, 0);

    /* The port says everything was read: cleared. */
    f->ports.dead_letters.peek = peek_scripted;
    script(RP_OK, 0, false, RP_DL_UNREAD_NONE, NULL);
    run_ok(f, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);
}

/* A dead-letter queue reaper does not own and an owned one's remainder
 * share the queue's one sighting: when the queue becomes owned (the owned
 * pattern changed) the open sighting stays open, without a second event,
 * while the backfill leaves messages unread, and clears once it reads them
 * all. */
static void test_dead_letter_sighting_across_ownership(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 2;
    put_queue(f, "other.x.dlq", RP_QUEUE_TYPE_CLASSIC, 3, 0, 0);
    add_numbered(f, "other.x.dlq", "o", 3);
    const char *key = "broker|DEAD_LETTER|queue:/:other.x.dlq";
    rp_report r;
    run(f, false, &r);
    const rp_verdict *v = find(&r, "queue:/:other.x.dlq");
    assert_non_null(v);
    assert_true(v->measured == 3.0); /* not owned: its depth */
    assert_int_equal(rp_memory_n_parked(f->m), 0);
    assert_non_null(rp_memory_sighting(f->m, key));
    size_t events = rp_memory_n_ledger(f->m);
    rp_report_cleanup(&r);

    pcre2_code *wider = compile("^(vibey|other)\\.");
    f->opt.owned_queue_pattern = wider;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 2);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED), 0);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 0);
    assert_non_null(rp_memory_sighting(f->m, key));
    assert_int_equal(rp_memory_n_ledger(f->m), events + 2); /* the parks only */
    rp_report_cleanup(&r);

    f->opt.dead_letter_peek_limit = 3;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 1);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 1);
    assert_null(rp_memory_sighting(f->m, key));
    rp_report_cleanup(&r);
    f->opt.owned_queue_pattern = f->owned;
    pcre2_code_free(wider);
}

typedef struct stop_after_listing_arg {
    rp_memory *m;
    size_t lists_before;
} stop_after_listing_arg;

/* Answers true once the broker has been listed: the first poll after the
 * listing is the one before the first backfill. */
static bool stop_after_listing(void *arg) {
    stop_after_listing_arg *a = arg;
    return rp_memory_calls(a->m, RP_MEM_LIST_QUEUES) > a->lists_before;
}

/* A stop between the listing and the backfill keeps the queue's
 * sighting: it was not read. */
static void test_dead_letter_remainder_kept_by_a_stop(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 1;
    put_queue(f, "vibey.x.dlq", RP_QUEUE_TYPE_CLASSIC, 2, 0, 0);
    add_numbered(f, "vibey.x.dlq", "m", 2);
    rp_report r;
    run(f, false, &r);
    assert_non_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_purge_dead_letters(f->m, "/", "vibey.x.dlq"), 2);
    stop_after_listing_arg stop = {f->m, rp_memory_calls(f->m, RP_MEM_LIST_QUEUES)};
    f->opt.should_stop = stop_after_listing;
    f->opt.stop_arg = &stop;
    size_t peeks = rp_memory_calls(f->m, RP_MEM_PEEK);
    run(f, false, &r);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_PEEK), peeks); /* not read */
    assert_int_equal(r.n_verdicts, 0);
    assert_non_null(rp_memory_sighting(f->m, DLQ_KEY));
    rp_report_cleanup(&r);
    f->opt.should_stop = NULL;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED), 1);
    rp_report_cleanup(&r);
}

/* ---- Dead-letter routes ---- */

/* vibey.y dead-letters through the default exchange into vibey.parked,
 * whose name matches the owned pattern and not the dead-letter one, and
 * which holds 4 messages 5000 s old with no consumer; vibey.other is a
 * plain stale work queue. Listed in the order given, judged by a dry run:
 * "object condition action" lines, sorted. */
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void route_verdicts_to(fixture *f, const char *target, bool target_first, char *out,
                              size_t cap) {
    rp_queue_facts owner = {
        .vhost = "/",
        .name = "vibey.y",
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = true,
        .consumers_known = true,
        .consumers = 1,
        .dead_letter_exchange = true,
        .dlx_name = "",
        .dlx_routing_key = target,
    };
    if (!target_first) assert_int_equal(rp_memory_put_queue(f->m, &owner), RP_OK);
    put_stale_queue(f, target, 5000);
    put_stale_queue(f, "vibey.other", 5000);
    add_dead_letter(f, target, "m-1", "one");
    if (target_first) assert_int_equal(rp_memory_put_queue(f->m, &owner), RP_OK);
    rp_report r;
    run(f, true, &r);
    assert_true(r.ok);
    char *lines[16];
    size_t n = 0;
    for (size_t i = 0; i < r.n_verdicts && n < 16; i++) {
        char line[256];
        snprintf(line, sizeof line, "%s %s %s\n", r.verdicts[i].object,
                 rp_condition_string(r.verdicts[i].condition), rp_action_string(r.verdicts[i].action));
        lines[n++] = strdup(line);
    }
    qsort(lines, n, sizeof *lines, cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(out, lines[i], cap - strlen(out) - 1);
        free(lines[i]);
    }
    rp_report_cleanup(&r);
    assert_int_equal(rp_memory_remove_queue(f->m, "/", "vibey.y"), RP_OK);
    assert_int_equal(rp_memory_remove_queue(f->m, "/", target), RP_OK);
    assert_int_equal(rp_memory_remove_queue(f->m, "/", "vibey.other"), RP_OK);
    assert_int_equal(rp_memory_purge_dead_letters(f->m, "/", target), 1);
}

static void route_verdicts(fixture *f, bool target_first, char *out, size_t cap) {
    route_verdicts_to(f, "vibey.parked", target_first, out, cap);
}

static void test_route_target_is_never_a_work_queue(void **state) {
    fixture *f = *state;
    char owned_first[1024], target_first[1024];
    route_verdicts(f, false, owned_first, sizeof owned_first);
    route_verdicts(f, true, target_first, sizeof target_first);
    assert_string_equal(owned_first, target_first);
    /* The target is a dead-letter queue (backfilled: its dead letter is
     * parked), never STALE_READY; the route is surfaced on its owned
     * queue; the held verdict on the other work queue is still surfaced. */
    assert_string_equal(owned_first, "dead_letter:id:%2F/vibey.x/m-1 DEAD_LETTER PARKED\n"
                                     "queue:/:vibey.other STALE_READY SURFACED\n"
                                     "queue:/:vibey.y DEAD_LETTER SURFACED\n");
}

/* Issue 18 item 5: a foreign work queue is judged (vibey.other's twin
 * celery.stale is surfaced STALE_READY), but a foreign queue an owned
 * queue dead-letters into is a dead-letter queue whatever its name, in
 * whichever order the listing gives them: never a work queue. */
static void test_foreign_route_target_is_never_a_work_queue(void **state) {
    fixture *f = *state;
    put_stale_queue(f, "celery.stale", 5000);
    char owned_first[1024], target_first[1024];
    route_verdicts_to(f, "celery.parked", false, owned_first, sizeof owned_first);
    route_verdicts_to(f, "celery.parked", true, target_first, sizeof target_first);
    assert_string_equal(owned_first, target_first);
    assert_string_equal(owned_first, "dead_letter:id:%2F/vibey.x/m-1 DEAD_LETTER PARKED\n"
                                     "queue:/:celery.stale STALE_READY SURFACED\n"
                                     "queue:/:vibey.other STALE_READY SURFACED\n"
                                     "queue:/:vibey.y DEAD_LETTER SURFACED\n");
    assert_int_equal(rp_memory_remove_queue(f->m, "/", "celery.stale"), RP_OK);
}

/* A targeted check reads no dead letters: what a sweep sighted on a
 * route's target (its unread remainder) stays open when the check reads
 * the target and its owned queue. */
static void test_route_target_sighting_kept_by_a_check(void **state) {
    fixture *f = *state;
    f->opt.dead_letter_peek_limit = 1;
    rp_queue_facts owner = {
        .vhost = "/",
        .name = "vibey.y",
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = true,
        .consumers_known = true,
        .consumers = 1,
        .dead_letter_exchange = true,
        .dlx_name = "",
        .dlx_routing_key = "vibey.parked",
    };
    assert_int_equal(rp_memory_put_queue(f->m, &owner), RP_OK);
    put_queue(f, "vibey.parked", RP_QUEUE_TYPE_CLASSIC, 3, 0, 0);
    add_dead_letter(f, "vibey.parked", "m-1", "one");
    add_dead_letter(f, "vibey.parked", "m-2", "two");
    add_dead_letter(f, "vibey.parked", "m-3", "three");
    rp_report r;
    run(f, false, &r);
    assert_int_equal(count(&r, RP_COND_DEAD_LETTER, RP_ACTION_PARKED), 1);
    rp_report_cleanup(&r);
    const char *key = "broker|DEAD_LETTER|queue:/:vibey.parked";
    assert_non_null(rp_memory_sighting(f->m, key));
    const rp_queue_ref refs[] = {{"/", "vibey.parked"}, {"/", "vibey.y"}};
    assert_int_equal(rp_pass_queues(&f->ports, &f->opt, refs, 2, &r), RP_OK);
    rp_report_cleanup(&r);
    assert_non_null(rp_memory_sighting(f->m, key));
}

static void test_invalid_options(void **state) {
    fixture *f = *state;
    /* No owned pattern; a peek limit under and over its range. */
    static const struct {
        bool no_owned;
        size_t peek_limit;
    } refused[] = {{true, 0}, {false, 0}, {false, 1001}};
    for (size_t i = 0; i < RP_ARRAY_LEN(refused); i++) {
        f->opt.owned_queue_pattern = refused[i].no_owned ? NULL : f->owned;
        if (!refused[i].no_owned) f->opt.dead_letter_peek_limit = refused[i].peek_limit;
        rp_report r;
        assert_int_equal(rp_pass_run(&f->ports, &f->opt, &r), RP_ERR_INVALID);
        rp_report_cleanup(&r);
    }
    for (int op = 0; op < RP_MEM_OP_COUNT_; op++)
        assert_int_equal(rp_memory_calls(f->m, (rp_memory_op)op), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_requeue_vs_park),
        T(test_attempts_boundaries),
        T(test_grace_boundary_in_a_pass),
        T(test_lease_locked_elsewhere_and_conflicts),
        T(test_dry_run_changes_nothing),
        T(test_sighting_opened_once_and_cleared),
        T(test_condition_change_on_one_queue),
        T(test_queue_listed_twice_is_one_sighting),
        T(test_sighting_opened_by_another_reaper),
        T(test_sightings_the_pass_does_not_judge_are_left_alone),
        T(test_unreadable_broker_clears_nothing),
        T(test_unreadable_store),
        T(test_failed_move_stops_the_lease_reap),
        T(test_failed_row_does_not_block_the_others),
        T(test_lease_batches_judge_each_row),
        T(test_batch_row_failure_publishes_only_committed_rows),
        T(test_failed_batch_commit_publishes_nothing),
        T(test_lease_batch_size_range),
        T(test_leases_scope_moves_leases_only),
        T(test_stop_request_ends_the_pass_between_rows),
        T(test_unrecorded_surface_is_still_reported),
        T(test_publish_failure_is_a_note),
        T(test_stale_ready_per_project),
        T(test_project_narrows_the_pass),
        T(test_broker_notes),
        T(test_dead_letter_queues),
        T(test_dead_letter_new_death_after_answer),
        T(test_dead_letter_same_id_two_origins),
        T(test_dead_letter_peek_limit),
        T(test_dead_letter_without_peek),
        T(test_dead_letter_peek_note),
        T(test_dead_letter_queue_owned_by_its_base_name),
        T(test_dead_letter_park_failure),
        T(test_dead_letter_remainder_surfaced_then_cleared),
        T(test_dead_letter_all_read_surfaces_nothing),
        T(test_dead_letter_remainder_dry_run),
        T(test_dead_letter_remainder_reasons),
        T(test_dead_letter_remainder_kept_when_unknown),
        T(test_dead_letter_remainder_kept_by_a_stop),
        T(test_dead_letter_sighting_across_ownership),
        T(test_route_target_is_never_a_work_queue),
        T(test_foreign_route_target_is_never_a_work_queue),
        T(test_route_target_sighting_kept_by_a_check),
        T(test_invalid_options),
    };
    return cmocka_run_group_tests_name("pass", tests, NULL, NULL);
}
