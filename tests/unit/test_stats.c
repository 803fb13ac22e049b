/* stats' rows (core/rp_stats.c, issue 18 item 7) on fake ports: which
 * queues are owned work queues, the ages from the clock given, the rates
 * known or not, which open sighting flags which row, a broker that cannot
 * be listed, a store that fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include "rp_stats.h"

#define NOW 1700000000000LL

/* ---- a fake broker: two pages ----------------------------------------------- */

typedef struct fake_broker {
    rp_queue_facts page1[4];
    rp_queue_facts page2[2];
    rp_status fail; /* returned for page 2 when not RP_OK */
    int calls;
} fake_broker;

static rp_status fb_list(void *self, size_t page, rp_queue_page *out) {
    fake_broker *b = self;
    b->calls++;
    if (page == 1) {
        *out = (rp_queue_page){b->page1, 4, false, NULL};
        return RP_OK;
    }
    if (b->fail != RP_OK) return b->fail;
    *out = (rp_queue_page){b->page2, 2, true, NULL};
    return RP_OK;
}

static rp_queue_facts q(const char *name, int64_t ready, int64_t unacked, int64_t consumers) {
    return (rp_queue_facts){.vhost = "/", .name = name, .counts_known = true, .ready = ready,
                            .unacked = unacked, .consumers_known = true, .consumers = consumers};
}

static void fb_init(fake_broker *b) {
    memset(b, 0, sizeof *b);
    b->page1[0] = q("work.b", 3, 1, 2);
    b->page1[0].head_timestamp_known = true;
    b->page1[0].head_timestamp = NOW / 1000 - 90; /* 90 s ago */
    b->page1[1] = q("work.b.dlq", 5, 0, 0);       /* a dead-letter queue */
    b->page1[2] = q("foreign", 7, 0, 0);          /* not owned */
    b->page1[3] = q("work.control", 1, 0, 1);     /* reaper's own */
    b->page2[0] = q("work.a", 0, 0, 0);           /* empty: no age */
    b->page2[0].head_timestamp_known = true;
    b->page2[0].head_timestamp = NOW / 1000 - 500;
    b->page2[1] = (rp_queue_facts){.vhost = "/", .name = "work.c"}; /* counts unknown */
}

/* ---- a fake store ----------------------------------------------------------- */

typedef struct fake_store {
    rp_status kinds_st;
    rp_status sightings_st;
    const char *const *keys; /* NULL-ended: key, project, kind triples */
    int rates_calls;
} fake_store;

static char *dup0(const char *s) { return s ? strdup(s) : NULL; }

static rp_status fs_kinds(void *self, rp_time_ms now, int64_t window, rp_stats_kind_count **rows,
                          size_t *n) {
    fake_store *s = self;
    assert_int_equal(now, NOW);
    assert_int_equal(window, 3600);
    if (s->kinds_st != RP_OK) return s->kinds_st;
    rp_stats_kind_count *r = calloc(3, sizeof *r);
    r[0].row = (rp_stats_kind){.project = dup0("alpha"), .kind = dup0("pdf"), .waiting = 4,
                               .active = 2, .intake = 10, .drained = 6};
    r[0].oldest_known = true;
    r[0].oldest_since = NOW - 61000;
    r[1].row = (rp_stats_kind){.project = dup0("alpha"), .kind = dup0("mail"), .active = 1,
                               .intake = 1};
    r[1].oldest_known = true; /* waiting 0: no age whatever the store says */
    r[1].oldest_since = NOW - 5000;
    r[2].row = (rp_stats_kind){.project = dup0("beta"), .kind = dup0("pdf"), .waiting = 1};
    r[2].oldest_known = true;
    r[2].oldest_since = NOW + 3000; /* a clock ahead: 0, never negative */
    *rows = r;
    *n = 3;
    return RP_OK;
}

static rp_status fs_rates(void *self, const char *vhost, const char *name, rp_time_ms now,
                          int64_t window, rp_queue_rates *out) {
    fake_store *s = self;
    s->rates_calls++;
    assert_string_equal(vhost, "/");
    assert_int_equal(now, NOW);
    assert_int_equal(window, 3600);
    if (strcmp(name, "work.b") == 0)
        *out = (rp_queue_rates){.known = true, .published = 40, .acked = 25};
    else if (strcmp(name, "work.a") == 0)
        *out = (rp_queue_rates){.known = false};
    else if (strcmp(name, "work.c") == 0) return RP_ERR_UNAVAILABLE; /* not known, not fatal */
    else fail_msg("rates asked for %s, not an owned work queue", name);
    return RP_OK;
}

static rp_status fs_sightings(void *self, rp_stats_sighting **rows, size_t *n) {
    fake_store *s = self;
    if (s->sightings_st != RP_OK) return s->sightings_st;
    size_t m = 0;
    while (s->keys && s->keys[m * 3]) m++;
    rp_stats_sighting *r = calloc(m ? m : 1, sizeof *r);
    for (size_t i = 0; i < m; i++) {
        r[i].key = dup0(s->keys[i * 3]);
        r[i].project = dup0(s->keys[i * 3 + 1]);
        r[i].kind = dup0(s->keys[i * 3 + 2]);
    }
    *rows = r;
    *n = m;
    return RP_OK;
}

static pcre2_code *re(const char *p) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(c);
    return c;
}

typedef struct world {
    fake_broker b;
    fake_store s;
    rp_broker_port bp;
    rp_stats_store_port sp;
    rp_stats_scope scope;
    pcre2_code *owned, *dlq;
    rp_stats out;
} world;

static void world_init(world *w) {
    memset(w, 0, sizeof *w);
    fb_init(&w->b);
    w->bp = (rp_broker_port){.self = &w->b, .list_queues = fb_list};
    w->sp = (rp_stats_store_port){
        .self = &w->s, .kinds = fs_kinds, .queue_rates = fs_rates, .sightings = fs_sightings};
    w->owned = re("^work\\.");
    w->dlq = re("\\.dlq$");
    w->scope = (rp_stats_scope){.owned_queue_pattern = w->owned,
                                .dead_letter_queue_pattern = w->dlq,
                                .own_queues = {"work.control", NULL},
                                .window_seconds = 3600};
    rp_stats_init(&w->out);
}

static void world_cleanup(world *w) {
    rp_stats_cleanup(&w->out);
    pcre2_code_free(w->owned);
    pcre2_code_free(w->dlq);
}

static const rp_stats_queue *find_q(const rp_stats *s, const char *name) {
    for (size_t i = 0; i < s->n_queues; i++)
        if (strcmp(s->queues[i].name, name) == 0) return &s->queues[i];
    return NULL;
}

static const rp_stats_kind *find_k(const rp_stats *s, const char *p, const char *k) {
    for (size_t i = 0; i < s->n_kinds; i++)
        if (strcmp(s->kinds[i].project, p) == 0 && strcmp(s->kinds[i].kind, k) == 0)
            return &s->kinds[i];
    return NULL;
}

/* Owned work queues only, sorted, with their counts, ages and rates. */
static void test_rows(void **state) {
    (void)state;
    world w;
    world_init(&w);
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_OK);
    assert_true(w.out.broker_read);
    assert_null(w.out.broker_note);
    assert_int_equal(w.out.window_seconds, 3600);
    assert_int_equal(w.out.n_queues, 3);
    assert_string_equal(w.out.queues[0].name, "work.a");
    assert_string_equal(w.out.queues[1].name, "work.b");
    assert_string_equal(w.out.queues[2].name, "work.c");
    assert_int_equal(w.s.rates_calls, 3);

    const rp_stats_queue *b = find_q(&w.out, "work.b");
    assert_true(b->counts_known);
    assert_int_equal(b->ready, 3);
    assert_int_equal(b->unacked, 1);
    assert_int_equal(b->consumers, 2);
    assert_true(b->rates_known);
    assert_int_equal(b->intake, 40);
    assert_int_equal(b->drained, 25);
    assert_true(b->age_known);
    assert_int_equal(b->oldest_waiting_ms, 90000);

    const rp_stats_queue *a = find_q(&w.out, "work.a");
    assert_false(a->age_known); /* nothing ready: no waiting age */
    assert_false(a->rates_known); /* never sampled */
    const rp_stats_queue *c = find_q(&w.out, "work.c");
    assert_false(c->counts_known);
    assert_false(c->consumers_known);
    assert_false(c->rates_known); /* its read failed */

    assert_int_equal(w.out.n_kinds, 3);
    const rp_stats_kind *k = find_k(&w.out, "alpha", "pdf");
    assert_int_equal(k->waiting, 4);
    assert_int_equal(k->active, 2);
    assert_int_equal(k->intake, 10);
    assert_int_equal(k->drained, 6);
    assert_true(k->age_known);
    assert_int_equal(k->oldest_waiting_ms, 61000);
    assert_false(find_k(&w.out, "alpha", "mail")->age_known);
    const rp_stats_kind *beta = find_k(&w.out, "beta", "pdf");
    assert_true(beta->age_known);
    assert_int_equal(beta->oldest_waiting_ms, 0);
    for (size_t i = 0; i < w.out.n_kinds; i++) assert_int_equal(w.out.kinds[i].flags, 0);
    world_cleanup(&w);
}

/* Which sighting flags which row. */
static void test_flags(void **state) {
    (void)state;
    static const char *const keys[] = {
        "broker|WAITING_DEPTH|queue:/:work.b", NULL, NULL,
        "broker|STALLED|queue:/:work.b", NULL, NULL,
        "broker|DIVERGENT|queue:/:work.c", NULL, NULL,
        "broker|HOLDER_GONE|queue:/:work.a", NULL, NULL,    /* flags nothing */
        "broker|WEDGED|queue:other%3Avhost:work.a", NULL, NULL, /* another vhost */
        "job_queue|WEDGED|kind:alpha:pdf", NULL, NULL,
        "job_queue|STALLED|job:42", "beta", "pdf",           /* a job's kind */
        "job_queue|STALLED|job:43", NULL, NULL,              /* its job gone */
        "job_queue|DIVERGENT|kind:alpha:mail", NULL, NULL,
        "job_queue|STALE_READY|project:alpha", NULL, NULL,   /* flags nothing */
        "not a key", NULL, NULL,
        "broker|WAITING_DEPTH|queue:/:work.b.dlq", NULL, NULL, /* no such row */
        NULL};
    world w;
    world_init(&w);
    w.s.keys = keys;
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_OK);
    assert_int_equal(find_q(&w.out, "work.b")->flags, RP_STATS_WAITING_DEPTH | RP_STATS_STALLED);
    assert_int_equal(find_q(&w.out, "work.c")->flags, RP_STATS_DIVERGENT);
    assert_int_equal(find_q(&w.out, "work.a")->flags, 0);
    assert_int_equal(find_k(&w.out, "alpha", "pdf")->flags, RP_STATS_WEDGED);
    assert_int_equal(find_k(&w.out, "alpha", "mail")->flags, RP_STATS_DIVERGENT);
    assert_int_equal(find_k(&w.out, "beta", "pdf")->flags, RP_STATS_STALLED);
    world_cleanup(&w);
}

/* A broker that cannot be listed: no queue rows, a note, the kinds still. */
static void test_broker_unreadable(void **state) {
    (void)state;
    world w;
    world_init(&w);
    w.b.fail = RP_ERR_UNAVAILABLE;
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_OK);
    assert_false(w.out.broker_read);
    assert_int_equal(w.out.n_queues, 0);
    assert_null(w.out.queues);
    assert_non_null(strstr(w.out.broker_note, "could not be listed (unavailable)"));
    assert_int_equal(w.out.n_kinds, 3);
    rp_stats_cleanup(&w.out);

    /* No broker port at all. */
    assert_int_equal(rp_stats_collect(&w.sp, NULL, &w.scope, NOW, &w.out), RP_OK);
    assert_false(w.out.broker_read);
    assert_non_null(strstr(w.out.broker_note, "does not inspect the broker"));
    assert_int_equal(w.out.n_kinds, 3);
    world_cleanup(&w);
}

/* The store failing fails the whole, and leaves nothing. */
static void test_store_fails(void **state) {
    (void)state;
    world w;
    world_init(&w);
    w.s.kinds_st = RP_ERR_UNAVAILABLE;
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_ERR_UNAVAILABLE);
    assert_int_equal(w.out.n_kinds, 0);
    w.s.kinds_st = RP_OK;
    w.s.sightings_st = RP_ERR_INTERNAL;
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_ERR_INTERNAL);
    assert_int_equal(w.out.n_kinds, 0);
    assert_int_equal(w.out.n_queues, 0);
    assert_int_equal(rp_stats_collect(NULL, &w.bp, &w.scope, NOW, &w.out), RP_ERR_INVALID);
    assert_string_equal(rp_stats_refusal(RP_ERR_UNAVAILABLE),
                        "the store cannot be reached; try again");
    world_cleanup(&w);
}

/* Each table keeps its first max_rows rows and counts the rest; the rates
 * are read for the kept queues only. */
static void test_rows_capped(void **state) {
    (void)state;
    world w;
    world_init(&w);
    w.scope.max_rows = 1;
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_OK);
    assert_int_equal(w.out.n_queues, 1);
    assert_string_equal(w.out.queues[0].name, "work.a");
    assert_int_equal(w.out.queues_omitted, 2);
    assert_int_equal(w.s.rates_calls, 1);
    assert_int_equal(w.out.n_kinds, 1);
    assert_string_equal(w.out.kinds[0].kind, "pdf");
    assert_int_equal(w.out.kinds_omitted, 2);
    rp_stats_cleanup(&w.out);
    w.scope.max_rows = 0; /* RP_STATS_ROWS_MAX */
    assert_int_equal(rp_stats_collect(&w.sp, &w.bp, &w.scope, NOW, &w.out), RP_OK);
    assert_int_equal(w.out.queues_omitted + w.out.kinds_omitted, 0);
    world_cleanup(&w);
}

/* The flag table is complete and in wire order. */
static void test_flag_names(void **state) {
    (void)state;
    const char *want[] = {"STALLED", "WEDGED", "DIVERGENT", "WAITING_DEPTH"};
    for (size_t i = 0; i < RP_STATS_FLAG_COUNT; i++) {
        rp_stats_flag f = rp_stats_flag_at(i);
        assert_string_equal(rp_stats_flag_string(f), want[i]);
        rp_condition c;
        assert_true(rp_condition_parse(want[i], &c));
        assert_int_equal(rp_stats_flag_of(c), f);
    }
    assert_string_equal(rp_stats_flag_string((rp_stats_flag)0), "unknown");
    assert_int_equal(rp_stats_flag_of(RP_COND_HOLDER_GONE), 0);
    assert_int_equal(rp_stats_age_ms(NOW, NOW - 1), 1);
    assert_int_equal(rp_stats_age_ms(NOW, NOW + 1), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_broker_unreadable),
        cmocka_unit_test(test_store_fails),
        cmocka_unit_test(test_rows_capped),
        cmocka_unit_test(test_flag_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
