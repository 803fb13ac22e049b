/* The judge (core/rp_judge.h): every condition, every boundary at, 1 ms
 * under and 1 ms over its threshold, and every field of every verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_judge.h"

#define NOW ((rp_time_ms)1700000000000LL) /* 2023-11-14, in ms */

static rp_thresholds defaults(void) {
    rp_thresholds t;
    rp_thresholds_default(&t);
    return t;
}

/* Every verdict names its object, unit and detail and has in-range enums. */
static void assert_complete(const rp_verdict *v) {
    assert_non_null(v->object);
    assert_non_null(v->unit);
    assert_non_null(v->detail);
    assert_true(v->detail[0] != '\0');
    assert_true(v->condition > RP_COND_NONE && v->condition < RP_COND_COUNT_);
    assert_true(v->action > RP_ACTION_NONE && v->action < RP_ACTION_COUNT_);
    assert_true(v->source >= 0 && v->source < RP_SOURCE_COUNT_);
}

/* ---- Held jobs ---------------------------------------------------------- */

static rp_held_job leased(rp_time_ms lease_expires_at) {
    rp_held_job j = {
        .id = 42,
        .project = "alpha",
        .kind = "send_mail",
        .state = RP_JOB_LEASED,
        .attempts = 3,
        .max_attempts = 7,
        .lease_expires_known = true,
        .lease_expires_at = lease_expires_at,
        .lease_owner = "worker-1",
    };
    return j;
}

static rp_condition held_condition(const rp_held_job *j, const rp_thresholds *t, rp_time_ms now) {
    rp_verdict v;
    assert_int_equal(rp_judge_held_job(j, t, now, &v), RP_OK);
    rp_condition c = v.condition;
    if (c == RP_COND_NONE) assert_null(v.object);
    rp_verdict_cleanup(&v);
    return c;
}

static void test_lease_boundary_without_grace(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_held_job j = leased(NOW);
    /* now - lease_expires_at > 0, strictly: exactly at the deadline is left alone. */
    assert_int_equal(held_condition(&j, &t, NOW - 1), RP_COND_NONE);
    assert_int_equal(held_condition(&j, &t, NOW), RP_COND_NONE);
    assert_int_equal(held_condition(&j, &t, NOW + 1), RP_COND_LEASE_EXPIRED);
}

static void test_lease_boundary_with_grace(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    t.lease_grace_seconds = 30;
    rp_held_job j = leased(NOW);
    assert_int_equal(held_condition(&j, &t, NOW + 29999), RP_COND_NONE);
    assert_int_equal(held_condition(&j, &t, NOW + 30000), RP_COND_NONE);
    assert_int_equal(held_condition(&j, &t, NOW + 30001), RP_COND_LEASE_EXPIRED);
    assert_true(rp_judge_lease_expired(NOW + 30001, NOW, 30));
    assert_false(rp_judge_lease_expired(NOW + 30000, NOW, 30));
}

static void test_lease_expired_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    t.lease_grace_seconds = 5;
    rp_held_job j = leased(NOW);
    rp_verdict v;
    assert_int_equal(rp_judge_held_job(&j, &t, NOW + 7250, &v), RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_LEASE_EXPIRED);
    assert_int_equal(v.action, RP_ACTION_REQUEUED);
    assert_int_equal(v.source, RP_SOURCE_JOB_QUEUE);
    assert_string_equal(v.object, "job:42");
    assert_string_equal(v.queue, "send_mail");
    assert_string_equal(v.project, "alpha");
    assert_string_equal(v.unit, "seconds");
    assert_true(v.measured > 7.2499 && v.measured < 7.2501); /* seconds past the deadline */
    assert_int_equal(v.threshold, 5);
    assert_true(v.trusted);
    assert_non_null(strstr(v.detail, "worker-1"));
    assert_non_null(strstr(v.detail, "requeued"));
    rp_verdict_cleanup(&v);
}

static void test_poison_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_held_job j = leased(NOW);
    j.attempts = 6; /* one under max_attempts */
    assert_int_equal(held_condition(&j, &t, NOW + 1), RP_COND_LEASE_EXPIRED);
    j.attempts = 7; /* at: attempts >= max_attempts */
    assert_int_equal(held_condition(&j, &t, NOW + 1), RP_COND_POISON);
    j.attempts = 8; /* over */
    assert_int_equal(held_condition(&j, &t, NOW + 1), RP_COND_POISON);
    /* Poison is judged only at an expired lease. */
    assert_int_equal(held_condition(&j, &t, NOW), RP_COND_NONE);
    /* A row that allows no attempt is poison at its first expiry. */
    j.attempts = 0;
    j.max_attempts = 0;
    assert_int_equal(held_condition(&j, &t, NOW + 1), RP_COND_POISON);
}

static void test_poison_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_held_job j = leased(NOW);
    j.attempts = 7;
    j.lease_owner = NULL;
    rp_verdict v;
    assert_int_equal(rp_judge_held_job(&j, &t, NOW + 1000, &v), RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_POISON);
    assert_int_equal(v.action, RP_ACTION_PARKED);
    assert_string_equal(v.unit, "attempts");
    assert_true(v.measured == 7.0);
    assert_int_equal(v.threshold, 7);
    assert_string_equal(v.object, "job:42");
    assert_string_equal(v.project, "alpha");
    assert_non_null(strstr(v.detail, "unknown holder"));
    assert_non_null(strstr(v.detail, "delivery_exhausted"));
    rp_verdict_cleanup(&v);
}

static void test_lease_not_held_or_unknown(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_held_job j = leased(NOW);
    j.state = RP_JOB_READY;
    assert_int_equal(held_condition(&j, &t, NOW + 100000), RP_COND_NONE);
    j = leased(NOW);
    j.lease_expires_known = false; /* an unmeasurable lease is not late */
    assert_int_equal(held_condition(&j, &t, NOW + 100000), RP_COND_NONE);
}

static void test_lease_arithmetic_saturates(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_held_job j = leased(INT64_MIN);
    assert_int_equal(held_condition(&j, &t, INT64_MAX), RP_COND_LEASE_EXPIRED);
    j = leased(INT64_MAX);
    assert_int_equal(held_condition(&j, &t, INT64_MIN), RP_COND_NONE);
    t.lease_grace_seconds = INT64_MAX; /* a grace no lease outlives */
    j = leased(0);
    assert_int_equal(held_condition(&j, &t, INT64_MAX), RP_COND_NONE);
    rp_verdict v;
    assert_int_equal(rp_judge_held_job(NULL, &t, NOW, &v), RP_ERR_INVALID);
    assert_int_equal(rp_judge_held_job(&j, NULL, NOW, &v), RP_ERR_INVALID);
}

/* ---- Oldest claimable job ----------------------------------------------- */

static rp_claimable_job claimable(rp_time_ms run_after) {
    rp_claimable_job c = {
        .project = "beta",
        .job_id = 9,
        .kind = "render",
        .run_after = run_after,
    };
    return c;
}

static rp_condition claim_condition(const rp_claimable_job *c, const rp_thresholds *t) {
    rp_verdict v;
    assert_int_equal(rp_judge_claimable(c, t, NOW, &v), RP_OK);
    rp_condition cond = v.condition;
    rp_verdict_cleanup(&v);
    return cond;
}

static void test_store_stale_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults(); /* 900 s */
    rp_claimable_job c = claimable(NOW - 899999);
    assert_int_equal(claim_condition(&c, &t), RP_COND_NONE);
    c = claimable(NOW - 900000); /* age >= threshold: at it, it is stale */
    assert_int_equal(claim_condition(&c, &t), RP_COND_STALE_READY);
    c = claimable(NOW - 900001);
    assert_int_equal(claim_condition(&c, &t), RP_COND_STALE_READY);
    c = claimable(NOW + 5000); /* not due yet: a negative age is not old */
    assert_int_equal(claim_condition(&c, &t), RP_COND_NONE);
}

static void test_store_stale_counts_from_dependency(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    /* Due long ago, but its dependency finished only 899.999 s ago. */
    rp_claimable_job c = claimable(NOW - 5000000);
    c.dependency_finished_known = true;
    c.dependency_finished_at = NOW - 899999;
    assert_int_equal(claim_condition(&c, &t), RP_COND_NONE);
    c.dependency_finished_at = NOW - 900000;
    assert_int_equal(claim_condition(&c, &t), RP_COND_STALE_READY);
    /* A dependency that finished before run_after: run_after counts. */
    c = claimable(NOW - 899999);
    c.dependency_finished_known = true;
    c.dependency_finished_at = NOW - 5000000;
    assert_int_equal(claim_condition(&c, &t), RP_COND_NONE);
}

static void test_store_stale_verdict_fields(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_claimable_job c = claimable(NOW - 1000500);
    rp_verdict v;
    assert_int_equal(rp_judge_claimable(&c, &t, NOW, &v), RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_STALE_READY);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_JOB_QUEUE);
    assert_string_equal(v.object, "job:9");
    assert_string_equal(v.queue, "render");
    assert_string_equal(v.project, "beta");
    assert_string_equal(v.unit, "seconds");
    assert_true(v.measured > 1000.4999 && v.measured < 1000.5001);
    assert_int_equal(v.threshold, 900);
    assert_true(v.trusted);
    rp_verdict_cleanup(&v);
}

/* ---- Broker queues ------------------------------------------------------ */

static rp_queue_facts owned_queue(void) {
    rp_queue_facts q = {
        .vhost = "/",
        .name = "vibey.x",
        .type = RP_QUEUE_TYPE_CLASSIC,
        .counts_known = true,
        .consumers_known = true,
        .consumers = 0,
        .owned = true,
    };
    return q;
}

static rp_queue_facts dead_letter_queue(bool owned, int64_t ready, int64_t unacked) {
    rp_queue_facts q = owned_queue();
    q.name = owned ? "vibey.x.dlq" : "celery.dlq";
    q.owned = owned;
    q.is_dead_letter_queue = true;
    q.ready = ready;
    q.unacked = unacked;
    return q;
}

/* Judges q and returns the judgement (the caller cleans it up). */
static rp_queue_judgement judge(const rp_queue_facts *q, const rp_thresholds *t, rp_time_ms now) {
    rp_queue_judgement j;
    assert_int_equal(rp_judge_queue(q, t, now, &j), RP_OK);
    return j;
}

static void test_dead_letter_queue_depth_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    t.dead_letter_min_depth = 5;
    rp_queue_facts q = dead_letter_queue(false, 3, 1); /* 4: one under */
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_false(j.backfill);
    rp_queue_judgement_cleanup(&j);
    q = dead_letter_queue(false, 3, 2); /* 5: at, ready + unacked both count */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_DEAD_LETTER);
    rp_queue_judgement_cleanup(&j);
    q = dead_letter_queue(false, 6, 0); /* 6: over */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_DEAD_LETTER);
    rp_queue_judgement_cleanup(&j);
    t.dead_letter_min_depth = 1;
    q = dead_letter_queue(false, 0, 0); /* empty: never counts */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
}

static void test_dead_letter_queue_not_owned_is_surfaced(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = dead_letter_queue(false, 2, 1);
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_false(j.backfill);
    assert_complete(&j.verdict);
    assert_int_equal(j.verdict.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(j.verdict.action, RP_ACTION_SURFACED);
    assert_int_equal(j.verdict.source, RP_SOURCE_BROKER);
    assert_string_equal(j.verdict.object, "queue:/:celery.dlq");
    assert_string_equal(j.verdict.queue, "celery.dlq");
    assert_null(j.verdict.project);
    assert_string_equal(j.verdict.unit, "messages");
    assert_true(j.verdict.measured == 3.0);
    assert_int_equal(j.verdict.threshold, 1);
    assert_non_null(strstr(j.verdict.detail, "never touched"));
    rp_queue_judgement_cleanup(&j);
}

static void test_dead_letter_queue_owned_wants_backfill(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    t.dead_letter_min_depth = 2;
    rp_queue_facts q = dead_letter_queue(true, 2, 0);
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_true(j.backfill);
    assert_int_equal(j.verdict.condition, RP_COND_NONE); /* parked messages speak for it */
    assert_null(j.verdict.object);
    rp_queue_judgement_cleanup(&j);
    q = dead_letter_queue(true, 1, 0); /* under the depth: no backfill */
    j = judge(&q, &t, NOW);
    assert_false(j.backfill);
    rp_queue_judgement_cleanup(&j);
}

static void test_dead_letter_queue_yields_only_dead_letter(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    /* Everything else holds too: unacked with no consumer, an old head. */
    rp_queue_facts q = dead_letter_queue(false, 5, 3);
    q.head_timestamp_known = true;
    q.head_timestamp = NOW / 1000 - 100000;
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
    q.owned = true;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_true(j.backfill);
    rp_queue_judgement_cleanup(&j);
}

static void test_holder_gone(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.unacked = 1; /* threshold 0 messages: one is over */
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_complete(&j.verdict);
    assert_int_equal(j.verdict.condition, RP_COND_HOLDER_GONE);
    assert_int_equal(j.verdict.action, RP_ACTION_SURFACED);
    assert_int_equal(j.verdict.source, RP_SOURCE_BROKER);
    assert_string_equal(j.verdict.object, "queue:/:vibey.x");
    assert_string_equal(j.verdict.queue, "vibey.x");
    assert_null(j.verdict.project);
    assert_string_equal(j.verdict.unit, "messages");
    assert_true(j.verdict.measured == 1.0);
    assert_int_equal(j.verdict.threshold, 0);
    rp_queue_judgement_cleanup(&j);
    q.unacked = 0; /* at the threshold: nothing held */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
    q.unacked = 4;
    q.consumers = 1; /* somebody holds it */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
}

static void test_unknown_consumer_count_is_not_zero(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.consumers_known = false;
    q.consumers = 0; /* whatever the field holds, it is not known */
    q.unacked = 10;
    q.ready = 10;
    q.head_timestamp_known = true;
    q.head_timestamp = NOW / 1000 - 100000;
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_int_equal(j.note, RP_QUEUE_NOTE_CONSUMERS_UNKNOWN);
    assert_true(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
    /* Unknown consumers on an empty queue: nothing can hold, measured. */
    q.unacked = 0;
    q.ready = 0;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    assert_false(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
}

/* Message counts the broker has not reported are not 0: nothing is judged
 * (not even a dead-letter queue's depth) and the queue is unmeasured. */
static void test_unknown_counts_are_not_zero(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.unacked = 3; /* whatever the fields hold, they are not known */
    q.counts_known = false;
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_int_equal(j.note, RP_QUEUE_NOTE_COUNTS_UNKNOWN);
    assert_true(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
    q.counts_known = true; /* the same reading, known: holder gone */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_HOLDER_GONE);
    assert_false(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
    rp_queue_facts d = dead_letter_queue(false, 5, 0);
    d.counts_known = false;
    j = judge(&d, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_false(j.backfill);
    assert_true(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
    /* A foreign work queue is judged too (issue 18 item 5): unknown counts
     * keep its sightings, without a note; reaper's own queue is not judged. */
    q.owned = false;
    q.counts_known = false;
    j = judge(&q, &t, NOW);
    assert_true(j.unmeasured);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
    q.reapers_own = true;
    j = judge(&q, &t, NOW);
    assert_false(j.unmeasured);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
}

static void test_holder_gone_before_stale(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.unacked = 2;
    q.ready = 7;
    q.head_timestamp_known = true;
    q.head_timestamp = NOW / 1000 - 100000; /* stale too */
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_HOLDER_GONE);
    rp_queue_judgement_cleanup(&j);
    q.unacked = 0; /* holder gone no longer holds: stale shows */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_STALE_READY);
    rp_queue_judgement_cleanup(&j);
}

static void test_broker_stale_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults(); /* 900 s */
    rp_queue_facts q = owned_queue();
    q.ready = 3;
    q.head_timestamp_known = true;
    q.head_timestamp = 1700000000; /* seconds */
    rp_time_ms at = 1700000000LL * 1000 + 900000;
    rp_queue_judgement j = judge(&q, &t, at - 1);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
    j = judge(&q, &t, at);
    assert_int_equal(j.verdict.condition, RP_COND_STALE_READY);
    assert_complete(&j.verdict);
    assert_int_equal(j.verdict.action, RP_ACTION_SURFACED);
    assert_string_equal(j.verdict.unit, "seconds");
    assert_true(j.verdict.measured == 900.0);
    assert_int_equal(j.verdict.threshold, 900);
    assert_string_equal(j.verdict.object, "queue:/:vibey.x");
    rp_queue_judgement_cleanup(&j);
    j = judge(&q, &t, at + 1);
    assert_int_equal(j.verdict.condition, RP_COND_STALE_READY);
    rp_queue_judgement_cleanup(&j);
    /* A head timestamp in the future is not old. */
    q.head_timestamp = 1700000000 + 3600;
    j = judge(&q, &t, at);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
}

static void test_broker_stale_needs_ready_and_no_consumer(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.head_timestamp_known = true;
    q.head_timestamp = NOW / 1000 - 100000;
    q.ready = 0; /* nothing ready: nothing stale ready */
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
    q.ready = 1;
    q.consumers = 2; /* taken care of */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
}

static void test_unmeasurable_age_is_not_old(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.ready = 50;
    q.head_timestamp_known = false;
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NO_HEAD_TIMESTAMP);
    rp_queue_judgement_cleanup(&j);
    q.type = RP_QUEUE_TYPE_QUORUM; /* quorum queues report no head age */
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_int_equal(j.note, RP_QUEUE_NOTE_QUORUM_NO_AGE);
    rp_queue_judgement_cleanup(&j);
}

/* Issue 18 item 5: a foreign work queue (not owned, not a dead-letter
 * queue) gets holder gone and stale ready like an owned one, surfaced and
 * said to be left alone; reaper's own queues and streams yield nothing. */
static void test_foreign_work_queues_surfaced_own_and_streams_not(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.name = "celery";
    q.unacked = 5;
    q.ready = 5;
    q.head_timestamp_known = true;
    q.head_timestamp = NOW / 1000 - 100000;
    q.owned = false;
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_HOLDER_GONE);
    assert_int_equal(j.verdict.action, RP_ACTION_SURFACED);
    assert_string_equal(j.verdict.object, "queue:/:celery");
    assert_non_null(strstr(j.verdict.detail, "not owned: surfaced, never touched"));
    assert_false(j.backfill);
    rp_queue_judgement_cleanup(&j);
    /* Stale ready: at the threshold it holds, one second under it does not. */
    q.unacked = 0;
    q.head_timestamp = NOW / 1000 - t.stale_ready_seconds;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_STALE_READY);
    assert_non_null(strstr(j.verdict.detail, "not owned"));
    rp_queue_judgement_cleanup(&j);
    q.head_timestamp = NOW / 1000 - t.stale_ready_seconds + 1;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
    /* A consumer: nothing. */
    q.head_timestamp = NOW / 1000 - 100000;
    q.consumers = 1;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    rp_queue_judgement_cleanup(&j);
    q.consumers = 0;
    /* What cannot be measured on a foreign queue keeps its sighting, with
     * no note (reaper notes what it cannot measure on its own queues). */
    q.consumers_known = false;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_true(j.unmeasured);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
    q.consumers_known = true;
    q.head_timestamp_known = false;
    q.type = RP_QUEUE_TYPE_QUORUM;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
    q.type = RP_QUEUE_TYPE_CLASSIC;
    q.head_timestamp_known = true;
    q.counts_known = false;
    j = judge(&q, &t, NOW);
    assert_true(j.unmeasured);
    assert_int_equal(j.note, RP_QUEUE_NOTE_NONE);
    rp_queue_judgement_cleanup(&j);
    q.counts_known = true;
    /* Reaper's own queues (control, tap) and streams: nothing, owned or not. */
    q.unacked = 5;
    q.reapers_own = true;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_NONE);
    assert_false(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
    q.counts_known = false;
    j = judge(&q, &t, NOW);
    assert_false(j.unmeasured);
    rp_queue_judgement_cleanup(&j);
    q.counts_known = true;
    q.reapers_own = false;
    q.type = RP_QUEUE_TYPE_STREAM;
    for (int owned = 0; owned < 2; owned++) {
        q.owned = owned;
        j = judge(&q, &t, NOW);
        assert_int_equal(j.verdict.condition, RP_COND_NONE);
        rp_queue_judgement_cleanup(&j);
    }
    /* The same queue, owned and classic, holds, and says nothing of owning. */
    q.type = RP_QUEUE_TYPE_CLASSIC;
    j = judge(&q, &t, NOW);
    assert_int_equal(j.verdict.condition, RP_COND_HOLDER_GONE);
    assert_null(strstr(j.verdict.detail, "not owned"));
    rp_queue_judgement_cleanup(&j);
}

/* An owned quorum queue on which the broker would drop a message at its
 * delivery limit (no dead-letter exchange) is POISON / SURFACED; with a
 * dead-letter exchange, no limit, unknown facts, another type, not owned,
 * or a dead-letter queue: nothing. */
static void test_delivery_limit_drop(void **state) {
    (void)state;
    rp_queue_facts q = owned_queue();
    q.type = RP_QUEUE_TYPE_QUORUM;
    q.delivery_limit_known = true;
    q.delivery_limit = 20;
    rp_verdict v;
    assert_int_equal(rp_judge_delivery_limit_drop(&q, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_POISON);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_true(v.measured == 20);
    assert_int_equal(v.threshold, 20);
    assert_string_equal(v.unit, "deliveries");
    assert_string_equal(v.queue, "vibey.x");
    assert_non_null(strstr(v.detail, "DROPS"));
    assert_non_null(strstr(v.detail, "x-dead-letter-exchange"));
    rp_verdict_cleanup(&v);

    rp_queue_facts cases[6];
    for (int i = 0; i < 6; i++) cases[i] = q;
    cases[0].dead_letter_exchange = true;
    cases[1].delivery_limit = 0;
    cases[2].delivery_limit_known = false;
    cases[3].type = RP_QUEUE_TYPE_CLASSIC;
    cases[4].owned = false;
    cases[5].is_dead_letter_queue = true;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(rp_judge_delivery_limit_drop(&cases[i], &v), RP_OK);
        assert_int_equal(v.condition, RP_COND_NONE);
        rp_verdict_cleanup(&v);
    }
    assert_int_equal(rp_judge_delivery_limit_drop(NULL, &v), RP_ERR_INVALID);
    rp_verdict_cleanup(&v);
}

static void test_queue_object_encodes_vhost(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_queue_facts q = owned_queue();
    q.vhost = "a:b%";
    q.unacked = 1;
    rp_queue_judgement j = judge(&q, &t, NOW);
    assert_string_equal(j.verdict.object, "queue:a%3Ab%25:vibey.x");
    rp_queue_judgement_cleanup(&j);
    assert_int_equal(rp_judge_queue(NULL, &t, NOW, &j), RP_ERR_INVALID);
    rp_queue_judgement_cleanup(&j);
}

static void test_queue_type_names(void **state) {
    (void)state;
    assert_int_equal(rp_queue_type_parse("classic"), RP_QUEUE_TYPE_CLASSIC);
    assert_int_equal(rp_queue_type_parse("quorum"), RP_QUEUE_TYPE_QUORUM);
    assert_int_equal(rp_queue_type_parse("stream"), RP_QUEUE_TYPE_STREAM);
    assert_int_equal(rp_queue_type_parse("unknown"), RP_QUEUE_TYPE_UNKNOWN);
    assert_int_equal(rp_queue_type_parse("lazy"), RP_QUEUE_TYPE_UNKNOWN);
    assert_int_equal(rp_queue_type_parse(NULL), RP_QUEUE_TYPE_UNKNOWN);
    assert_string_equal(rp_queue_type_string(RP_QUEUE_TYPE_QUORUM), "quorum");
    assert_string_equal(rp_queue_type_string(RP_QUEUE_TYPE_COUNT_), "unknown");
}

/* ---- Consumer timeout --------------------------------------------------- */

static rp_verdict timeout_verdict(const rp_timeout_in_force *f, const rp_thresholds *t) {
    rp_verdict v;
    assert_int_equal(rp_judge_consumer_timeout("/", "vibey.x", f, t, &v), RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_HUNG_HANDLER);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.x");
    assert_string_equal(v.unit, "seconds");
    assert_int_equal(v.threshold, t->consumer_timeout_seconds);
    return v;
}

static void test_consumer_timeout_boundary(void **state) {
    (void)state;
    rp_thresholds t = defaults(); /* 21600 s */
    rp_timeout_in_force f = {true, true, 21600000, "policy vibey-reap"};
    rp_verdict v = timeout_verdict(&f, &t); /* equal is verified */
    assert_int_equal(v.action, RP_ACTION_VERIFIED);
    assert_true(v.measured == 21600.0);
    assert_non_null(strstr(v.detail, "policy vibey-reap"));
    rp_verdict_cleanup(&v);
    f.value_ms = 21600000 - 1;
    v = timeout_verdict(&f, &t);
    assert_int_equal(v.action, RP_ACTION_VERIFIED);
    rp_verdict_cleanup(&v);
    f.value_ms = 21600000 + 1; /* longer than configured: not bounded enough */
    v = timeout_verdict(&f, &t);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_non_null(strstr(v.detail, "longer"));
    rp_verdict_cleanup(&v);
}

static void test_consumer_timeout_not_in_force_or_unknown(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_timeout_in_force f = {false, false, 0, NULL};
    rp_verdict v = timeout_verdict(&f, &t);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_true(v.measured == -1.0);
    assert_non_null(strstr(v.detail, "no consumer timeout"));
    rp_verdict_cleanup(&v);
    f.in_force = true; /* in force, value unreadable */
    v = timeout_verdict(&f, &t);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_true(v.measured == -1.0);
    assert_non_null(strstr(v.detail, "could not be read"));
    rp_verdict_cleanup(&v);
}

/* The broker-wide consumer_timeout (before 3.12), against the configured
 * bound and the longest lease (defaults 21600 s and 7200 s). */
static char *wide_note(rp_wide_timeout_state s, int64_t ms, const char *why, int64_t lease) {
    char *note = NULL;
    assert_int_equal(rp_judge_wide_timeout(s, ms, why, 21600, lease, &note), RP_OK);
    assert_non_null(note);
    return note;
}

static void test_broker_wide_timeout(void **state) {
    (void)state;
    char *n = wide_note(RP_WIDE_TIMEOUT_VALUE, 21600000, NULL, 7200); /* equal: in step */
    assert_non_null(strstr(n, "is 21600.000 s: within"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_VALUE, 7200000, NULL, 7200); /* the lease, exactly: in step */
    assert_non_null(strstr(n, ": within"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_VALUE, 21600001, NULL, 7200);
    assert_non_null(strstr(n, "longer than reap.consumer_timeout_seconds (21600 s)"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_VALUE, 7199999, NULL, 7200);
    assert_non_null(strstr(n, "shorter than reap.longest_lease_seconds (7200 s)"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_VALUE, 1800000, NULL, 7200); /* RabbitMQ's default */
    assert_non_null(strstr(n, "is 1800.000 s, shorter"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_OFF, 0, NULL, 7200);
    assert_non_null(strstr(n, "is off"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_UNREADABLE, 0, "RabbitMQ 3.10.8 has no /api/config/effective",
                  7200);
    assert_non_null(strstr(n, "could not be read (RabbitMQ 3.10.8 has no /api/config/effective)"));
    assert_non_null(strstr(n, "default of 1800 s it is shorter than reap.longest_lease_seconds"));
    assert_non_null(strstr(n, "rabbitmqctl eval"));
    free(n);
    n = wide_note(RP_WIDE_TIMEOUT_UNREADABLE, 0, NULL, 600); /* the default would be in step */
    assert_non_null(strstr(n, "could not be read (not exposed)"));
    assert_null(strstr(n, "default of 1800 s"));
    free(n);
    assert_int_equal(rp_judge_wide_timeout(RP_WIDE_TIMEOUT_OFF, 0, NULL, 1, 1, NULL),
                     RP_ERR_INVALID);
}

/* ---- Dead letters ------------------------------------------------------- */

static void test_dead_letter_verdict_is_untrusted_and_quoted(void **state) {
    (void)state;
    static const char origin[] = "vibey.x\n\"evil\"";
    rp_dead_letter d = {
        .identity = "id:m-1",
        .origin_queue = (char *)origin,
        .origin_queue_len = sizeof origin - 1,
        .reason = "rejected",
        .reason_len = 8,
        .first_death_known = true,
        .first_death_at = 1700000000,
    };
    rp_verdict v;
    assert_int_equal(rp_judge_dead_letter(&d, "/", "vibey.x.dlq", &v), RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(v.action, RP_ACTION_PARKED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_false(v.trusted);
    assert_string_equal(v.object, "dead_letter:id:m-1");
    assert_string_equal(v.queue, "vibey.x.dlq");
    assert_null(v.project);
    assert_string_equal(v.unit, "messages");
    assert_true(v.measured == 1.0);
    assert_int_equal(v.threshold, 1);
    /* The untrusted values are quoted and escaped, never raw. */
    assert_non_null(strstr(v.detail, "\"vibey.x\\n\\\"evil\\\"\""));
    assert_null(strchr(v.detail, '\n'));
    assert_non_null(strstr(v.detail, "\"rejected\""));
    assert_non_null(strstr(v.detail, "1700000000"));
    /* The whole sentence, byte for byte (issue 21 joins it, no format). */
    assert_string_equal(v.detail,
                        "a dead letter on queue vibey.x.dlq on vhost /, dead-lettered from "
                        "\"vibey.x\\n\\\"evil\\\"\" (reason \"rejected\", first death at Unix "
                        "second 1700000000), values from untrusted headers: parked for a person "
                        "(gate bus_dead_lettered)");
    rp_verdict_cleanup(&v);
    d.first_death_known = false;
    assert_int_equal(rp_judge_dead_letter(&d, "/", "vibey.x.dlq", &v), RP_OK);
    assert_non_null(strstr(v.detail, "first death unknown"));
    assert_string_equal(v.detail,
                        "a dead letter on queue vibey.x.dlq on vhost /, dead-lettered from "
                        "\"vibey.x\\n\\\"evil\\\"\" (reason \"rejected\", first death unknown), "
                        "values from untrusted headers: parked for a person (gate "
                        "bus_dead_lettered)");
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_dead_letter(&d, "/", NULL, &v), RP_ERR_INVALID);
}

/* What the backfill left unread (issue #5): a surfaced, trusted verdict on
 * the queue's own object (the key its sighting opens and clears by), for
 * every reason; "up to" only for a bound; bad arguments refused. */
/* Dead-letter routes the tap cannot follow (issue 14 item 1). */
static void test_dead_letter_route_verdicts(void **state) {
    (void)state;
    rp_verdict v;
    /* The default exchange with a routing key to a queue holding 7. */
    rp_dl_route r = {.vhost = "/", .queue = "vibey.w", .exchange = "", .routing_key = "vibey.f",
                     .target_known = true, .target_exists = true, .target_depth_known = true,
                     .target_depth = 7};
    assert_int_equal(rp_judge_dead_letter_route(&r, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.w");
    assert_string_equal(v.queue, "vibey.w");
    assert_string_equal(v.unit, "messages");
    assert_true(v.measured == 7.0);
    assert_int_equal(v.threshold, 0);
    assert_true(v.trusted);
    assert_non_null(strstr(v.detail, "default exchange \"\""));
    assert_non_null(strstr(v.detail, "straight to queue vibey.f, which holds 7 messages"));
    assert_non_null(strstr(v.detail, "fix: declare a named dead-letter exchange"));
    char *key = NULL;
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_OK);
    assert_string_equal(key, "broker|DEAD_LETTER|queue:/:vibey.w");
    free(key);
    rp_verdict_cleanup(&v);
    /* Its target missing: the broker drops them. */
    r.target_exists = false;
    assert_int_equal(rp_judge_dead_letter_route(&r, &v), RP_OK);
    assert_true(v.measured == -1.0);
    assert_non_null(strstr(v.detail, "vibey.f, which does not exist"));
    rp_verdict_cleanup(&v);
    /* No routing key: each message's own. */
    r.routing_key = NULL;
    assert_int_equal(rp_judge_dead_letter_route(&r, &v), RP_OK);
    assert_non_null(strstr(v.detail, "no dead-letter routing key"));
    rp_verdict_cleanup(&v);
    /* A named exchange: nothing while it exists or is not known; surfaced
     * when it does not exist. */
    rp_dl_route n = {.vhost = "/", .queue = "vibey.w", .exchange = "w.dlx"};
    assert_int_equal(rp_judge_dead_letter_route(&n, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    n.exchange_known = n.exchange_exists = true;
    assert_int_equal(rp_judge_dead_letter_route(&n, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    n.exchange_exists = false;
    assert_int_equal(rp_judge_dead_letter_route(&n, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_non_null(strstr(v.detail, "dead-letter exchange w.dlx, which does not exist (yet)"));
    assert_non_null(strstr(v.detail, "fix: declare exchange w.dlx"));
    rp_verdict_cleanup(&v);
    /* It exists with nothing bound to it (reaper's own queues aside): the
     * broker drops the dead letters, surfaced; bound, or not known, nothing. */
    n.exchange_exists = true;
    n.bound_known = true;
    n.bound = true;
    assert_int_equal(rp_judge_dead_letter_route(&n, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    n.bound = false;
    assert_int_equal(rp_judge_dead_letter_route(&n, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_string_equal(v.object, "queue:/:vibey.w");
    assert_non_null(strstr(v.detail, "exchange w.dlx, which exists but has nothing bound to it"));
    assert_non_null(strstr(v.detail, "fix: bind the dead-letter queue to exchange w.dlx"));
    rp_verdict_cleanup(&v);
    n.bound_known = false;
    assert_int_equal(rp_judge_dead_letter_route(&n, &v), RP_OK);
    assert_int_equal(v.condition, RP_COND_NONE);
    assert_int_equal(rp_judge_dead_letter_route(NULL, &v), RP_ERR_INVALID);
    assert_int_equal(rp_judge_dead_letter_route(&n, NULL), RP_ERR_INVALID);
}

static void test_dead_letter_unread_verdict(void **state) {
    (void)state;
    rp_verdict v;
    assert_int_equal(rp_judge_dead_letter_unread("a:b", "vibey.x.dlq", 2, false,
                                                 RP_DL_UNREAD_PEEK_LIMIT, 3, &v),
                     RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_DEAD_LETTER);
    assert_int_equal(v.action, RP_ACTION_SURFACED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_true(v.trusted);
    assert_string_equal(v.object, "queue:a%3Ab:vibey.x.dlq");
    assert_string_equal(v.queue, "vibey.x.dlq");
    assert_null(v.project);
    assert_string_equal(v.unit, "messages");
    assert_true(v.measured == 2.0);
    assert_int_equal(v.threshold, 3);
    assert_non_null(strstr(v.detail, "vibey.x.dlq on vhost a:b holds 2 messages behind those "
                                     "this pass read"));
    assert_null(strstr(v.detail, "up to"));
    char *key = NULL;
    assert_int_equal(rp_sighting_key_for(&v, &key), RP_OK);
    assert_string_equal(key, "broker|DEAD_LETTER|queue:a%3Ab:vibey.x.dlq");
    free(key);
    rp_verdict_cleanup(&v);

    assert_int_equal(rp_judge_dead_letter_unread("/", "q.dlq", 1, true, RP_DL_UNREAD_READ_ONCE,
                                                 100, &v),
                     RP_OK);
    assert_non_null(strstr(v.detail, "holds up to 1 message that lay behind"));
    assert_int_equal(v.threshold, 100);
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_dead_letter_unread("/", "q.dlq", 7, false,
                                                 RP_DL_UNREAD_NOT_READABLE, 100, &v),
                     RP_OK);
    assert_non_null(strstr(v.detail, "stream"));
    assert_int_equal(v.threshold, 0);
    rp_verdict_cleanup(&v);
    assert_int_equal(rp_judge_dead_letter_unread("/", "q.dlq", 7, false, RP_DL_UNREAD_DRY_RUN,
                                                 100, &v),
                     RP_OK);
    assert_non_null(strstr(v.detail, "dry run"));
    assert_int_equal(v.threshold, 0);
    rp_verdict_cleanup(&v);

    assert_int_equal(rp_judge_dead_letter_unread("/", "q.dlq", 0, false,
                                                 RP_DL_UNREAD_PEEK_LIMIT, 3, &v),
                     RP_ERR_INVALID);
    assert_int_equal(v.condition, RP_COND_NONE);
    assert_int_equal(rp_judge_dead_letter_unread("/", "q.dlq", 2, false, RP_DL_UNREAD_NONE, 3,
                                                 &v),
                     RP_ERR_INVALID);
    assert_int_equal(rp_judge_dead_letter_unread("/", "q.dlq", 2, false, RP_DL_UNREAD_COUNT_, 3,
                                                 &v),
                     RP_ERR_INVALID);
    assert_int_equal(rp_judge_dead_letter_unread(NULL, "q.dlq", 2, false,
                                                 RP_DL_UNREAD_PEEK_LIMIT, 3, &v),
                     RP_ERR_INVALID);
    assert_int_equal(rp_judge_dead_letter_unread("/", NULL, 2, false, RP_DL_UNREAD_PEEK_LIMIT,
                                                 3, &v),
                     RP_ERR_INVALID);
}

/* ---- Cleared sightings -------------------------------------------------- */

static void test_cleared_verdicts(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    rp_sighting_row s = {"broker|HOLDER_GONE|queue:/:vibey.x", RP_COND_HOLDER_GONE, 17, NOW};
    rp_verdict v;
    assert_int_equal(rp_judge_cleared(&s, &t, &v), RP_OK);
    assert_complete(&v);
    assert_int_equal(v.condition, RP_COND_HOLDER_GONE);
    assert_int_equal(v.action, RP_ACTION_CLEARED);
    assert_int_equal(v.source, RP_SOURCE_BROKER);
    assert_string_equal(v.object, "queue:/:vibey.x");
    assert_string_equal(v.queue, "vibey.x");
    assert_null(v.project);
    assert_string_equal(v.unit, "messages");
    assert_true(v.measured == -1.0);
    assert_int_equal(v.threshold, 0);
    assert_non_null(strstr(v.detail, "17"));
    rp_verdict_cleanup(&v);

    s.key = "job_queue|STALE_READY|project:alpha";
    assert_int_equal(rp_judge_cleared(&s, &t, &v), RP_OK);
    assert_int_equal(v.source, RP_SOURCE_JOB_QUEUE);
    assert_int_equal(v.condition, RP_COND_STALE_READY);
    assert_string_equal(v.object, "project:alpha");
    assert_string_equal(v.project, "alpha");
    assert_null(v.queue);
    assert_string_equal(v.unit, "seconds");
    assert_int_equal(v.threshold, 900);
    rp_verdict_cleanup(&v);

    s.key = "not a key";
    assert_int_equal(rp_judge_cleared(&s, &t, &v), RP_ERR_INVALID);
    assert_null(v.object);
}

static void test_default_thresholds(void **state) {
    (void)state;
    rp_thresholds t = defaults();
    assert_int_equal(t.lease_grace_seconds, 0);
    assert_int_equal(t.stale_ready_seconds, 900);
    assert_int_equal(t.dead_letter_min_depth, 1);
    assert_int_equal(t.consumer_timeout_seconds, 21600);
    assert_int_equal(t.delivery_limit, 20);
    assert_false(rp_judge_age_stale(-1, 0)); /* even a zero threshold ignores the future */
    assert_true(rp_judge_age_stale(0, 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_boundary_without_grace),
        cmocka_unit_test(test_lease_boundary_with_grace),
        cmocka_unit_test(test_lease_expired_verdict_fields),
        cmocka_unit_test(test_poison_boundary),
        cmocka_unit_test(test_poison_verdict_fields),
        cmocka_unit_test(test_lease_not_held_or_unknown),
        cmocka_unit_test(test_lease_arithmetic_saturates),
        cmocka_unit_test(test_store_stale_boundary),
        cmocka_unit_test(test_store_stale_counts_from_dependency),
        cmocka_unit_test(test_store_stale_verdict_fields),
        cmocka_unit_test(test_dead_letter_queue_depth_boundary),
        cmocka_unit_test(test_dead_letter_queue_not_owned_is_surfaced),
        cmocka_unit_test(test_dead_letter_queue_owned_wants_backfill),
        cmocka_unit_test(test_dead_letter_queue_yields_only_dead_letter),
        cmocka_unit_test(test_holder_gone),
        cmocka_unit_test(test_unknown_consumer_count_is_not_zero),
        cmocka_unit_test(test_unknown_counts_are_not_zero),
        cmocka_unit_test(test_holder_gone_before_stale),
        cmocka_unit_test(test_broker_stale_boundary),
        cmocka_unit_test(test_broker_stale_needs_ready_and_no_consumer),
        cmocka_unit_test(test_unmeasurable_age_is_not_old),
        cmocka_unit_test(test_foreign_work_queues_surfaced_own_and_streams_not),
        cmocka_unit_test(test_delivery_limit_drop),
        cmocka_unit_test(test_queue_object_encodes_vhost),
        cmocka_unit_test(test_queue_type_names),
        cmocka_unit_test(test_consumer_timeout_boundary),
        cmocka_unit_test(test_consumer_timeout_not_in_force_or_unknown),
        cmocka_unit_test(test_broker_wide_timeout),
        cmocka_unit_test(test_dead_letter_verdict_is_untrusted_and_quoted),
        cmocka_unit_test(test_dead_letter_unread_verdict),
        cmocka_unit_test(test_dead_letter_route_verdicts),
        cmocka_unit_test(test_cleared_verdicts),
        cmocka_unit_test(test_default_thresholds),
    };
    return cmocka_run_group_tests_name("judge", tests, NULL, NULL);
}
