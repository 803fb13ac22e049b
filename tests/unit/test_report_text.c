/* A pass report in words (core/rp_report_text.h) and what a pass run by
 * reaperd starts from and ends with (core/rp_pass_setup.h). The texts are
 * what reaperd --once prints and the daemon logs: kept exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_pass_setup.h"
#include "rp_report_text.h"

static void add(rp_report *r, rp_action a, rp_condition c, rp_source s, const char *object,
                const char *project, double measured, int64_t threshold, const char *unit,
                const char *detail) {
    rp_verdict v;
    rp_verdict_init(&v);
    v.action = a;
    v.condition = c;
    v.source = s;
    v.measured = measured;
    v.threshold = threshold;
    if (object) assert_int_equal(rp_verdict_set_object(&v, object), RP_OK);
    if (project) assert_int_equal(rp_verdict_set_project(&v, project), RP_OK);
    assert_int_equal(rp_verdict_set_unit(&v, unit), RP_OK);
    if (detail) assert_int_equal(rp_verdict_set_detail(&v, detail), RP_OK);
    assert_int_equal(rp_report_add_verdict(r, &v), RP_OK);
    rp_verdict_cleanup(&v);
}

static const char expected_text[] =
    "reaper pass at 2026-01-02T03:04:05Z: NOT OK, 4 verdicts, 42 ms\n"
    "  requeued 1, parked 1, surfaced 1, cleared 1\n"
    "\n"
    "  ACTION    CONDITION     SOURCE    OBJECT                       PROJECT      MEASURED\n"
    "  REQUEUED  LEASE_EXPIRED job_queue job:42                       p1           12.5 s (threshold 10 s)\n"
    "  SURFACED  DEAD_LETTER   broker    queue:/:vibey.x              -            3 messages (threshold 1)\n"
    "            a detail\n"
    "  PARKED    POISON        job_queue -                            -            threshold 5 attempts\n"
    "\n"
    "unreadable:\n"
    "  job_queue\n"
    "  broker\n"
    "\n"
    "notes:\n"
    "  one note\n"
    "\n"
    "policies:\n"
    "  reaper-owned             verified     ok\n"
    "  reaper-dlx               NOT VERIFIED missing\n";

static void test_report_text(void **state) {
    (void)state;
    rp_report r;
    rp_report_init(&r, false);
    r.max_verdicts = 3;
    add(&r, RP_ACTION_REQUEUED, RP_COND_LEASE_EXPIRED, RP_SOURCE_JOB_QUEUE, "job:42", "p1", 12.54,
        10, "seconds", NULL);
    add(&r, RP_ACTION_SURFACED, RP_COND_DEAD_LETTER, RP_SOURCE_BROKER, "queue:/:vibey.x", NULL, 3,
        1, "messages", "a detail");
    add(&r, RP_ACTION_PARKED, RP_COND_POISON, RP_SOURCE_JOB_QUEUE, NULL, NULL, -1, 5, "attempts",
        NULL);
    /* Past max_verdicts: counted, not listed. */
    add(&r, RP_ACTION_CLEARED, RP_COND_STALE_READY, RP_SOURCE_BROKER, "queue:/:q", NULL, 1, 1,
        "seconds", NULL);
    assert_int_equal(rp_report_add_unreadable(&r, "job_queue"), RP_OK);
    assert_int_equal(rp_report_add_unreadable(&r, "broker"), RP_OK);
    assert_int_equal(rp_report_add_note(&r, "one note"), RP_OK);
    assert_int_equal(rp_report_add_policy(&r, "reaper-owned", true, "ok"), RP_OK);
    assert_int_equal(rp_report_add_policy(&r, "reaper-dlx", false, "missing"), RP_OK);
    char *text = NULL;
    size_t len = 0;
    /* 2026-01-02T03:04:05Z */
    assert_int_equal(rp_report_text(&r, 1767323045000, 42, &text, &len), RP_OK);
    assert_string_equal(text, expected_text);
    assert_int_equal(len, strlen(expected_text));
    free(text);

    rp_report_figures f;
    rp_report_figures_of(&r, 42, &f);
    assert_string_equal(f.requeued, "1");
    assert_string_equal(f.parked, "1");
    assert_string_equal(f.surfaced, "1");
    assert_string_equal(f.cleared, "1");
    assert_string_equal(f.duration_ms, "42");
    assert_string_equal(f.unreadable, "job_queue,broker");
    assert_true(f.warns);
    rp_report_cleanup(&r);

    /* An empty dry run: one line of headline and one of counts. */
    rp_report_init(&r, true);
    assert_int_equal(rp_report_text(&r, 0, 7, &text, NULL), RP_OK);
    assert_string_equal(text, "reaper pass at 1970-01-01T00:00:00Z: ok (dry run: nothing was "
                              "written), 0 verdicts, 7 ms\n"
                              "  requeued 0, parked 0, surfaced 0, cleared 0\n");
    free(text);
    rp_report_figures_of(&r, 7, &f);
    assert_string_equal(f.unreadable, "");
    assert_false(f.warns);
    rp_report_cleanup(&r);
}

static void test_verdict_words(void **state) {
    (void)state;
    static const struct {
        rp_action action;
        bool dry_run;
        const char *message;
        bool warns;
    } rows[] = {
        {RP_ACTION_SURFACED, false, "condition surfaced", true},
        {RP_ACTION_SURFACED, true, "condition surfaced", true},
        {RP_ACTION_CLEARED, false, "condition cleared", false},
        {RP_ACTION_REQUEUED, false, "work reaped", false},
        {RP_ACTION_PARKED, false, "work reaped", false},
        {RP_ACTION_REQUEUED, true, "would reap (dry run)", false},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++) {
        rp_verdict v;
        rp_verdict_init(&v);
        v.action = rows[i].action;
        assert_string_equal(rp_verdict_message(&v, rows[i].dry_run), rows[i].message);
        assert_int_equal(rp_verdict_warns(&v), rows[i].warns);
    }
    static const struct {
        double measured;
        int64_t threshold;
        const char *unit, *text;
    } m[] = {
        {12.54, 10, "seconds", "12.5 s (threshold 10 s)"},
        {3, 1, "messages", "3 messages (threshold 1)"},
        {-1, 5, "attempts", "threshold 5 attempts"},
        {-1, 60, "seconds", "threshold 60 seconds"},
        {2.5, 2, NULL, "2  (threshold 2)"},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(m); i++) {
        rp_verdict v;
        rp_verdict_init(&v);
        v.measured = m[i].measured;
        v.threshold = m[i].threshold;
        v.unit = (char *)m[i].unit;
        char buf[96];
        rp_verdict_measure(&v, buf, sizeof buf);
        assert_string_equal(buf, m[i].text);
    }
}

static void test_options_from_config(void **state) {
    (void)state;
    rp_config cfg;
    assert_int_equal(rp_config_init(&cfg), RP_OK);
    cfg.reap.lease_grace_seconds = 11;
    cfg.reap.stale_ready_seconds = 22;
    cfg.reap.dead_letter_min_depth = 33;
    cfg.reap.consumer_timeout_seconds = 44;
    cfg.reap.delivery_limit = 55;
    cfg.reap.dead_letter_peek_limit = 66;
    cfg.store.lease_batch_size = 77;
    rp_pass_options opt;
    memset(&opt, 0xab, sizeof opt);
    rp_pass_options_from_config(&cfg, &opt);
    rp_pass_options def;
    rp_pass_options_default(&def);
    assert_int_equal(opt.thresholds.lease_grace_seconds, 11);
    assert_int_equal(opt.thresholds.stale_ready_seconds, 22);
    assert_int_equal(opt.thresholds.dead_letter_min_depth, 33);
    assert_int_equal(opt.thresholds.consumer_timeout_seconds, 44);
    assert_int_equal(opt.thresholds.delivery_limit, 55);
    assert_int_equal(opt.dead_letter_peek_limit, 66);
    assert_int_equal(opt.lease_batch_size, 77);
    assert_ptr_equal(opt.owned_queue_pattern, cfg.reap.owned_queue_pattern.code);
    assert_ptr_equal(opt.dead_letter_queue_pattern, cfg.reap.dead_letter_queue_pattern.code);
    assert_ptr_equal(opt.own_queues[0], cfg.broker.control_queue);
    assert_ptr_equal(opt.own_queues[1], cfg.broker.tap_queue);
    /* The rest as rp_pass_options_default leaves it. */
    assert_int_equal(opt.scope, def.scope);
    assert_int_equal(opt.dry_run, def.dry_run);
    assert_int_equal(opt.max_report_verdicts, def.max_report_verdicts);
    assert_null(opt.project);
    assert_ptr_equal(opt.on_verdict, def.on_verdict);
    rp_config_cleanup(&cfg);
}

static void test_unreachable(void **state) {
    (void)state;
    rp_report r;
    rp_report_init(&r, false);
    rp_report_cleanup(&r);
    assert_int_equal(rp_pass_report_unreachable(&r, true, "connection refused"), RP_OK);
    assert_false(r.ok);
    assert_true(r.dry_run);
    assert_int_equal(r.n_verdicts, 0);
    assert_int_equal(r.n_unreadable, 1);
    assert_string_equal(r.unreadable[0], "job_queue");
    assert_int_equal(r.n_notes, 1);
    assert_string_equal(r.notes[0], "job_queue: store unreachable: connection refused");
    rp_report_cleanup(&r);
}

static void test_sightings_by_condition(void **state) {
    (void)state;
    rp_sighting_row rows[5];
    memset(rows, 0, sizeof rows);
    rows[0].condition = RP_COND_HUNG_HANDLER;
    rows[1].condition = RP_COND_DEAD_LETTER;
    rows[2].condition = RP_COND_DEAD_LETTER;
    rows[3].condition = (rp_condition)99; /* not counted */
    rows[4].condition = RP_COND_STALE_READY;
    rp_sighting_list list = {rows, 5};
    int64_t by[RP_COND_COUNT_];
    memset(by, 0x7f, sizeof by);
    rp_sightings_by_condition(&list, by);
    int64_t want[RP_COND_COUNT_] = {0};
    want[RP_COND_HUNG_HANDLER] = 1;
    want[RP_COND_DEAD_LETTER] = 2;
    want[RP_COND_STALE_READY] = 1;
    for (int c = 0; c < RP_COND_COUNT_; c++) assert_int_equal(by[c], want[c]);
    rp_sighting_list none = {NULL, 0};
    rp_sightings_by_condition(&none, by);
    for (int c = 0; c < RP_COND_COUNT_; c++) assert_int_equal(by[c], 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_text),
        cmocka_unit_test(test_verdict_words),
        cmocka_unit_test(test_options_from_config),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_sightings_by_condition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
