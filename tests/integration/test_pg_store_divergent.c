/*
 * Issue 18 item 3 against the real database: migration 0009's succeeded_at
 * trigger (set when a row becomes succeeded, cleared when it leaves it,
 * untouched by later updates); DIVERGENT per (project, kind): intake (rows
 * created in the window) above ratio x completions (rows that reached
 * succeeded in it; failed rows are not drain) with more than the minimum
 * waiting, at / one under / one over each boundary, surfaced once per
 * sighting with its ledger event, cleared when drain catches up, a pass
 * narrowed to another project clearing nothing of it. The broker's
 * counters one queue at a time and a page at a time (issue 19 item 5: the
 * same rates, the same rows, replicas waiting for each other).
 * Each test works in a schema of its own, dropped after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "pg_fixture.h"

static int setup(void **state) {
    pgfx *f = pgfx_new("divergent");
    f->opt.thresholds.divergence_window_seconds = 3600;
    f->opt.thresholds.divergence_ratio = 2;
    f->opt.thresholds.divergence_min_waiting = 5;
    f->opt.thresholds.stale_ready_seconds = 86400; /* only DIVERGENT here */
    *state = f;
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

static const rp_verdict *find(const rp_report *r, rp_condition c, rp_action a, const char *object) {
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        if (v->condition == c && v->action == a && strcmp(v->object, object) == 0) return v;
    }
    return NULL;
}

static size_t count_cond(const rp_report *r, rp_condition c) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++) n += r->verdicts[i].condition == c;
    return n;
}

static int64_t ledger(pgfx *f, const char *action, const char *object) {
    return pgfx_i64(f,
                    "SELECT count(*) FROM ledger WHERE kind = 'QueueReaped' AND"
                    " payload->>'condition' = 'DIVERGENT' AND payload->>'action' = '%s' AND"
                    " payload->>'object' = '%s'",
                    action, object);
}

/* n rows of (project, kind) in state, created `ago` before now; succeeded
 * rows succeeded then too. */
static void add(pgfx *f, const char *project, const char *kind, const char *state, int n,
                const char *ago) {
    pgfx_exec(f,
              "INSERT INTO job (project_id, kind, state, created_at, succeeded_at) SELECT '%s',"
              " '%s', '%s', now() - interval '%s', CASE WHEN '%s' = 'succeeded' THEN now() -"
              " interval '%s' END FROM generate_series(1, %d)",
              project, kind, state, ago, state, ago, n);
}

static void test_succeeded_at_trigger(void **state) {
    pgfx *f = *state;
    int64_t id = pgfx_i64(f, "INSERT INTO job (project_id, kind, state) VALUES ('alpha', 'render',"
                             " 'ready') RETURNING id");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at IS NULL", id), 1);
    pgfx_exec(f, "UPDATE job SET state = 'leased', lease_owner = 'w' WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at IS NULL", id), 1);
    /* Becomes succeeded (the worker writes no succeeded_at): set. */
    pgfx_exec(f, "UPDATE job SET state = 'succeeded', lease_owner = NULL, finished_at = now()"
                 " WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at > now() - interval '1 minute'", id), 1);
    /* A later update that keeps it succeeded leaves it. */
    pgfx_exec(f, "UPDATE job SET succeeded_at = '2020-01-01 00:00:00+00' WHERE id = %" PRId64, id);
    pgfx_exec(f, "UPDATE job SET updated_at = now(), payload = '{}' WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at = '2020-01-01 00:00:00+00'", id), 1);
    /* Leaves succeeded (requeued by hand): cleared; succeeds again: anew. */
    pgfx_exec(f, "UPDATE job SET state = 'ready' WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at IS NULL", id), 1);
    pgfx_exec(f, "UPDATE job SET state = 'succeeded' WHERE id = %" PRId64, id);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at > now() - interval '1 minute'", id), 1);
    /* A failed row has none (not drain). */
    int64_t failed = pgfx_i64(f, "INSERT INTO job (project_id, kind, state, finished_at) VALUES"
                                 " ('alpha', 'render', 'failed', now()) RETURNING id");
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64
                                 " AND succeeded_at IS NULL", failed), 1);
}

static void test_divergent_boundaries(void **state) {
    pgfx *f = *state;
    /* alpha/render: 4 succeeded in the window, 9 created in it (4 of them
     * the succeeded ones: 1 over 2 x 4) and 5 ready... plus one more ready
     * = 6 waiting (one over 5): DIVERGENT. */
    add(f, "alpha", "render", "succeeded", 4, "10 minutes");
    add(f, "alpha", "render", "ready", 5, "5 minutes");
    /* At the ratio: beta/render 4 succeeded, 8 created, 6 waiting (the
     * sixth created before the window). */
    add(f, "beta", "render", "succeeded", 4, "10 minutes");
    add(f, "beta", "render", "ready", 4, "5 minutes");
    add(f, "beta", "render", "ready", 2, "2 hours");
    /* At the minimum waiting: gamma/render 0 succeeded, 5 created, 5 waiting. */
    add(f, "gamma", "render", "ready", 5, "5 minutes");
    /* Completions outside the window do not count; failed rows are not
     * drain: delta/render 3 failed + 6 ready created, 2 succeeded 2 hours
     * ago -> 9 intake, 0 completions, 6 waiting: DIVERGENT. */
    add(f, "delta", "render", "succeeded", 2, "2 hours");
    add(f, "delta", "render", "failed", 3, "5 minutes");
    add(f, "delta", "render", "ready", 6, "5 minutes");
    add(f, "alpha", "render", "ready", 1, "1 minute");

    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_true(r.ok);
    assert_int_equal(count_cond(&r, RP_COND_DIVERGENT), 2);
    const rp_verdict *v = find(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, "kind:alpha:render");
    assert_non_null(v);
    assert_true(v->measured == 10.0);
    assert_int_equal(v->threshold, 8);
    assert_string_equal(v->unit, "jobs");
    assert_string_equal(v->project, "alpha");
    assert_string_equal(v->queue, "render");
    assert_non_null(strstr(v->detail, "only 4 succeeded"));
    assert_non_null(strstr(v->detail, "6 are waiting"));
    v = find(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, "kind:delta:render");
    assert_non_null(v);
    assert_true(v->measured == 9.0);
    assert_int_equal(v->threshold, 0);
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "SURFACED", "kind:alpha:render"), 1);
    assert_int_equal(ledger(f, "SURFACED", "kind:delta:render"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM sighting WHERE key ="
                                 " 'job_queue|DIVERGENT|kind:alpha:render'"), 1);

    /* beta one over the ratio: one more created (waiting 7). */
    add(f, "beta", "render", "ready", 1, "1 minute");
    /* Still divergent: nothing new for alpha and delta. */
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(count_cond(&r, RP_COND_DIVERGENT), 1);
    assert_non_null(find(&r, RP_COND_DIVERGENT, RP_ACTION_SURFACED, "kind:beta:render"));
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "SURFACED", "kind:alpha:render"), 1);

    /* Drain catches up on alpha (one more succeeded: 10 <= 2 x 5, waiting
     * 5): cleared once. */
    pgfx_exec(f, "UPDATE job SET state = 'succeeded' WHERE id = (SELECT min(id) FROM job WHERE"
                 " project_id = 'alpha' AND state = 'ready')");
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    v = find(&r, RP_COND_DIVERGENT, RP_ACTION_CLEARED, "kind:alpha:render");
    assert_non_null(v);
    assert_string_equal(v->project, "alpha");
    assert_int_equal(count_cond(&r, RP_COND_DIVERGENT), 1);
    rp_report_cleanup(&r);
    assert_int_equal(ledger(f, "CLEARED", "kind:alpha:render"), 1);

    /* A pass narrowed to another project clears nothing of delta's. */
    pgfx_exec(f, "DELETE FROM job WHERE project_id = 'delta' AND state = 'ready'");
    f->opt.project = "beta";
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_int_equal(count_cond(&r, RP_COND_DIVERGENT), 0);
    rp_report_cleanup(&r);
    f->opt.project = NULL;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    assert_non_null(find(&r, RP_COND_DIVERGENT, RP_ACTION_CLEARED, "kind:delta:render"));
    assert_int_equal(count_cond(&r, RP_COND_DIVERGENT), 1);
    rp_report_cleanup(&r);
}

static rp_queue_rates sample(pgfx *f, const char *queue, int64_t pub, int64_t ack, rp_time_ms at) {
    const rp_store_port *s = &f->ports.store;
    rp_queue_counter_reading r = {.vhost = "/", .name = queue, .published_total = pub,
                                  .acked_total = ack, .read_at = at, .window_seconds = 3600};
    rp_queue_rates out;
    assert_int_equal(s->sample_queue_counters(s->self, &r, &out), RP_OK);
    return out;
}

/* The broker's counters: a baseline, increments, a reading older than the
 * stored one (another replica read later and wrote first) adding nothing,
 * a reset counting from zero, the window, the prune, queues apart. */
static void test_queue_counters(void **state) {
    pgfx *f = *state;
    rp_time_ms t0 = pgfx_i64(f, "SELECT floor(extract(epoch FROM now()) * 1000)::int8");
    rp_queue_rates r = sample(f, "vibey.a", 100, 40, t0);
    assert_false(r.known); /* the baseline */
    r = sample(f, "vibey.a", 130, 45, t0 + 1000);
    assert_true(r.known);
    assert_int_equal(r.published, 30);
    assert_int_equal(r.acked, 5);
    /* Replica B read (t0+3000) and wrote before replica A's older reading
     * (t0+2000): A's adds nothing, nothing is counted twice. */
    r = sample(f, "vibey.a", 150, 50, t0 + 3000);
    assert_int_equal(r.published, 50);
    assert_int_equal(r.acked, 10);
    r = sample(f, "vibey.a", 140, 48, t0 + 2000);
    assert_true(r.known);
    assert_int_equal(r.published, 50);
    assert_int_equal(r.acked, 10);
    r = sample(f, "vibey.a", 150, 50, t0 + 3000); /* the same reading again */
    assert_int_equal(r.published, 50);
    /* The broker restarted: the counters start over from 0. */
    r = sample(f, "vibey.a", 7, 2, t0 + 4000);
    assert_int_equal(r.published, 57);
    assert_int_equal(r.acked, 12);
    /* Another queue is apart. */
    r = sample(f, "vibey.b", 1000, 0, t0 + 4000);
    assert_false(r.known);
    r = sample(f, "vibey.b", 1001, 0, t0 + 5000);
    assert_int_equal(r.published, 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM queue_counter"), 2);
    /* An hour and a bit later: the old increments are out of the window and
     * pruned; only the new one counts. */
    rp_time_ms later = t0 + 3600 * 1000 + 4500;
    r = sample(f, "vibey.a", 17, 3, later);
    assert_int_equal(r.published, 10);
    assert_int_equal(r.acked, 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM queue_increment WHERE queue = 'vibey.a'"),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM queue_increment WHERE queue = 'vibey.b'"),
                     1);
}

typedef struct sampler {
    pgfx *f;
    rp_queue_counter_reading r;
    rp_queue_rates out;
    rp_status st;
} sampler;

static void *sample_thread(void *arg) {
    sampler *s = arg;
    const rp_store_port *p = &s->f->ports.store;
    s->st = p->sample_queue_counters(p->self, &s->r, &s->out);
    return NULL;
}

/* Two replicas at once: replica B holds the queue's stored reading locked
 * (it is about to write its own) when replica A samples; A waits, then
 * counts from B's reading, so B's increment is counted once, and A's
 * window sums include it. */
static void test_queue_counters_two_replicas(void **state) {
    pgfx *f = *state;
    rp_time_ms t0 = pgfx_i64(f, "SELECT floor(extract(epoch FROM now()) * 1000)::int8");
    rp_queue_rates r = sample(f, "vibey.c", 100, 50, t0);
    assert_false(r.known);
    pgfx_exec(f, "BEGIN");
    pgfx_exec(f, "SELECT 1 FROM queue_counter WHERE queue = 'vibey.c' FOR UPDATE");
    sampler a = {.f = f,
                 .r = {.vhost = "/", .name = "vibey.c", .published_total = 160, .acked_total = 60,
                       .read_at = t0 + 3000, .window_seconds = 3600}};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sample_thread, &a), 0);
    assert_true(itest_pg_wait_lock_waiters(1, 10000));
    pgfx_exec(f, "UPDATE queue_counter SET published = 150, acked = 55, read_at = %" PRId64
                 " WHERE queue = 'vibey.c'", t0 + 2000);
    pgfx_exec(f, "INSERT INTO queue_increment (vhost, queue, at, published, acked) VALUES"
                 " ('/', 'vibey.c', to_timestamp(%" PRId64 " / 1000.0), 50, 5)", t0 + 2000);
    pgfx_exec(f, "COMMIT");
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(a.st, RP_OK);
    assert_true(a.out.known);
    assert_int_equal(a.out.published, 60); /* B's 50, then A's 10 */
    assert_int_equal(a.out.acked, 10);
    assert_int_equal(pgfx_i64(f, "SELECT sum(published) FROM queue_increment WHERE queue ="
                                 " 'vibey.c'"), 60);
}

/* ---- Issue 19 item 5: a page of readings in one round trip ---------------- */

/* Samples n queues of vhost "/" at `at` through the page call. */
static void sample_page(pgfx *f, const char *const *queue, const int64_t *pub,
                        const int64_t *ack, size_t n, rp_time_ms at, rp_queue_rates *out) {
    const rp_store_port *s = &f->ports.store;
    rp_queue_counter_reading r[16];
    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++)
        r[i] = (rp_queue_counter_reading){.vhost = "/", .name = queue[i],
                                          .published_total = pub[i], .acked_total = ack[i],
                                          .read_at = at, .window_seconds = 3600};
    assert_non_null(s->sample_queue_counters_many);
    assert_int_equal(s->sample_queue_counters_many(s->self, r, n, out), RP_OK);
}

static void same_rates(const rp_queue_rates *a, const rp_queue_rates *b) {
    assert_int_equal(a->known, b->known);
    assert_int_equal(a->published, b->published);
    assert_int_equal(a->acked, b->acked);
    assert_int_equal(a->ack_known, b->ack_known);
    assert_int_equal(a->acked_at, b->acked_at);
}

/* The page call gives, queue by queue, what the one-queue call gives for
 * the same readings in another schema (baseline, increments, an older
 * reading adding nothing, the same reading again, a reset, the window and
 * the prune), a queue given twice in a page being sampled once; and the
 * tables end up the same. */
static void test_queue_counters_page(void **state) {
    pgfx *f = *state;
    pgfx *g = pgfx_new("divergent_one");
    rp_time_ms t0 = pgfx_i64(f, "SELECT floor(extract(epoch FROM now()) * 1000)::int8");
    const char *q[] = {"vibey.a", "vibey.b", "vibey.c", "vibey.a"};
    struct {
        rp_time_ms at;
        int64_t pub[4], ack[4];
        size_t n;
    } steps[] = {
        {t0, {100, 1000, 5, 100}, {40, 0, 5, 40}, 3},
        {t0 + 1000, {130, 1000, 9, 130}, {45, 0, 6, 45}, 4}, /* vibey.a twice */
        {t0 + 3000, {150, 1001, 9, 150}, {50, 1, 6, 50}, 3},
        {t0 + 2000, {140, 1001, 9, 140}, {48, 1, 6, 48}, 3}, /* older: adds nothing */
        {t0 + 3000, {150, 1001, 9, 150}, {50, 1, 6, 50}, 3}, /* the same again */
        {t0 + 4000, {7, 1002, 2, 7}, {2, 1, 1, 2}, 3},       /* resets: from 0 */
        {t0 + 3600 * 1000 + 4500, {17, 1003, 2, 17}, {3, 1, 1, 3}, 3}, /* an hour on */
    };
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        rp_queue_rates page[4], one;
        sample_page(f, q, steps[k].pub, steps[k].ack, steps[k].n, steps[k].at, page);
        for (size_t i = 0; i < steps[k].n; i++) {
            one = sample(g, q[i], steps[k].pub[i], steps[k].ack[i], steps[k].at);
            same_rates(&page[i], &one);
        }
    }
    /* Spot checks of what both gave. */
    rp_queue_rates page[3];
    const int64_t pub[] = {17, 1003, 2}, ack[] = {3, 1, 1};
    sample_page(f, q, pub, ack, 3, t0 + 3600 * 1000 + 4500, page);
    assert_true(page[0].known);
    assert_int_equal(page[0].published, 10);
    assert_int_equal(page[0].acked, 1);
#define COUNTERS                                                                            \
    "SELECT string_agg(format('%%s %%s %%s %%s %%s %%s', vhost, queue, published, acked, "   \
    "read_at, acked_at), ',' ORDER BY vhost, queue) FROM queue_counter"
#define INCREMENTS                                                                          \
    "SELECT string_agg(format('%%s %%s %%s %%s %%s', vhost, queue, at, published, acked), "  \
    "',' ORDER BY vhost, queue, at) FROM queue_increment"
    char *a = pgfx_text(f, COUNTERS), *b = pgfx_text(g, COUNTERS);
    assert_non_null(a);
    assert_string_equal(a, b);
    free(a);
    free(b);
    a = pgfx_text(f, INCREMENTS);
    b = pgfx_text(g, INCREMENTS);
    assert_non_null(a);
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM queue_increment WHERE queue = 'vibey.a'"),
                     1); /* pruned */
    pgfx_free(g);
}

/* The page's first reading of a queue is its baseline; a page mixing known
 * and new queues; readings the one-queue call refuses are refused, and so
 * are readings of different clocks in one page, with nothing written. */
static void test_queue_counters_page_refusals(void **state) {
    pgfx *f = *state;
    const rp_store_port *s = &f->ports.store;
    rp_time_ms t0 = pgfx_i64(f, "SELECT floor(extract(epoch FROM now()) * 1000)::int8");
    rp_queue_counter_reading r[2] = {
        {.vhost = "/", .name = "vibey.x", .published_total = 1, .acked_total = 1, .read_at = t0,
         .window_seconds = 3600},
        {.vhost = "/", .name = "vibey.y", .published_total = 1, .acked_total = 1,
         .read_at = t0 + 1, .window_seconds = 3600},
    };
    rp_queue_rates out[2] = {{.known = true}, {.known = true}};
    assert_int_equal(s->sample_queue_counters_many(s->self, r, 2, out), RP_ERR_INVALID);
    assert_false(out[0].known);
    r[1].read_at = t0;
    r[1].published_total = -1;
    assert_int_equal(s->sample_queue_counters_many(s->self, r, 2, out), RP_ERR_INVALID);
    r[1].published_total = 1;
    r[1].name = NULL;
    assert_int_equal(s->sample_queue_counters_many(s->self, r, 2, out), RP_ERR_INVALID);
    assert_int_equal(s->sample_queue_counters_many(s->self, r, 0, out), RP_ERR_INVALID);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM queue_counter"), 0);
    r[1].name = "vibey.y";
    (void)sample(f, "vibey.x", 0, 0, t0 - 1000);
    assert_int_equal(s->sample_queue_counters_many(s->self, r, 2, out), RP_OK);
    assert_true(out[0].known); /* counted from its earlier reading */
    assert_int_equal(out[0].published, 1);
    assert_false(out[1].known); /* its baseline */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM queue_counter"), 2);
}

typedef struct page_sampler {
    pgfx *f;
    rp_queue_counter_reading r[8];
    size_t n;
    rp_queue_rates out[8];
    rp_status st;
    int rounds;
} page_sampler;

static void *page_thread(void *arg) {
    page_sampler *s = arg;
    const rp_store_port *p = &s->f->ports.store;
    for (int k = 0; k < s->rounds && s->st == RP_OK; k++) {
        for (size_t i = 0; i < s->n; i++) {
            s->r[i].read_at++;
            s->r[i].published_total++;
        }
        s->st = p->sample_queue_counters_many(p->self, s->r, s->n, s->out);
    }
    return NULL;
}

/* Two replicas, page calls: replica B holds one queue's stored reading
 * locked when replica A samples a page with it; A waits, then counts from
 * B's reading (B's increment once, A's window sums include it). Then both
 * sample the same queues in opposite orders, many times at once: they wait
 * for each other, never deadlock, and every increment is counted once. */
static void test_queue_counters_page_two_replicas(void **state) {
    pgfx *f = *state;
    rp_time_ms t0 = pgfx_i64(f, "SELECT floor(extract(epoch FROM now()) * 1000)::int8");
    const char *q[] = {"vibey.c", "vibey.d"};
    const int64_t pub0[] = {100, 10}, ack0[] = {50, 0};
    rp_queue_rates out[2];
    sample_page(f, q, pub0, ack0, 2, t0, out);
    assert_false(out[0].known);
    pgfx_exec(f, "BEGIN");
    pgfx_exec(f, "SELECT 1 FROM queue_counter WHERE queue = 'vibey.c' FOR UPDATE");
    page_sampler a = {.f = f, .n = 2, .rounds = 1};
    a.r[0] = (rp_queue_counter_reading){.vhost = "/", .name = "vibey.c", .published_total = 159,
                                        .acked_total = 60, .read_at = t0 + 2999,
                                        .window_seconds = 3600};
    a.r[1] = (rp_queue_counter_reading){.vhost = "/", .name = "vibey.d", .published_total = 19,
                                        .acked_total = 0, .read_at = t0 + 2999,
                                        .window_seconds = 3600};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, page_thread, &a), 0);
    assert_true(itest_pg_wait_lock_waiters(1, 10000));
    pgfx_exec(f, "UPDATE queue_counter SET published = 150, acked = 55, read_at = %" PRId64
                 " WHERE queue = 'vibey.c'", t0 + 2000);
    pgfx_exec(f, "INSERT INTO queue_increment (vhost, queue, at, published, acked) VALUES"
                 " ('/', 'vibey.c', to_timestamp(%" PRId64 " / 1000.0), 50, 5)", t0 + 2000);
    pgfx_exec(f, "COMMIT");
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(a.st, RP_OK);
    assert_true(a.out[0].known);
    assert_int_equal(a.out[0].published, 60); /* B's 50, then A's 10 */
    assert_int_equal(a.out[0].acked, 10);
    assert_int_equal(a.out[1].published, 10);
    assert_int_equal(pgfx_i64(f, "SELECT sum(published) FROM queue_increment WHERE queue ="
                                 " 'vibey.c'"), 60);

    /* Opposite orders at once, on two sessions: no deadlock. */
    pgfx *g = pgfx_attach(f->schema);
    page_sampler x = {.f = f, .n = 8, .rounds = 40}, y = {.f = g, .n = 8, .rounds = 40};
    static const char *names[] = {"vibey.p0", "vibey.p1", "vibey.p2", "vibey.p3",
                                  "vibey.p4", "vibey.p5", "vibey.p6", "vibey.p7"};
    for (size_t i = 0; i < 8; i++) {
        x.r[i] = (rp_queue_counter_reading){.vhost = "/", .name = names[i], .read_at = t0 + 10000,
                                            .window_seconds = 3600};
        y.r[i] = x.r[i];
        y.r[i].name = names[7 - i];
        y.r[i].read_at = t0 + 10000;
    }
    pthread_t tx, ty;
    assert_int_equal(pthread_create(&tx, NULL, page_thread, &x), 0);
    assert_int_equal(pthread_create(&ty, NULL, page_thread, &y), 0);
    assert_int_equal(pthread_join(tx, NULL), 0);
    assert_int_equal(pthread_join(ty, NULL), 0);
    assert_int_equal(x.st, RP_OK);
    assert_int_equal(y.st, RP_OK);
    /* Both counters went 1..40 (the same readings at the same times, in
     * turn): each queue's increments add up to its highest reading's, 40,
     * whoever wrote them. */
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(pgfx_i64(f, "SELECT coalesce(sum(published), 0) FROM queue_increment"
                                     " WHERE queue = '%s'", names[i]),
                         39);
    pgfx_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_succeeded_at_trigger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_divergent_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_counters_two_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_counters_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_counters_page_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_counters_page_two_replicas, setup, teardown),
    };
    return cmocka_run_group_tests_name("pg_store_divergent", tests, NULL, NULL);
}
