/* Issue 18 item 4 in core's pass (core/rp_pass_wedged.c): the job table's
 * WEDGED over consecutive checks. The count lives in the store
 * (count_wedge_checks: each subject handed counts one more, every other of
 * the scope is deleted); what core owes it is tested here: a pass hands the
 * store exactly the (project, kind)s wedged on this check, so one healthy
 * check resets the count (3 wedged checks needed again), and surfaces
 * WEDGED at reap.wedged_checks, once per sighting, cleared when healthy;
 * a dry run asks for the counts without writing; a pass over one project
 * counts in that project's scope only; a count that fails is unreadable
 * and clears nothing. Against the in-memory ports, the store's two wedge
 * calls faked (the memory store has none) by the port's contract. */
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
#define WINDOW_MS ((rp_time_ms)900 * 1000)

#include "pass_fixture.h"

/* The fake store's groups and its wedge_check rows. */
typedef struct fake {
    rp_wedge_group groups[4];
    size_t n_groups;
    struct {
        char subject[128];
        int64_t n;
    } rows[16];
    size_t n_rows;
    unsigned count_calls;
    char scope[128];
    bool dry;
    char handed[8][128];
    size_t n_handed;
    rp_status count_fail;
} fake;

static fake F;

static rp_status f_list(void *self, const char *project, rp_time_ms now, int64_t grace,
                        rp_wedge_group_list *out) {
    (void)self;
    (void)now;
    (void)grace;
    static rp_wedge_group lent[4];
    size_t n = 0;
    for (size_t i = 0; i < F.n_groups; i++)
        if (project == NULL || strcmp(project, F.groups[i].project) == 0) lent[n++] = F.groups[i];
    *out = (rp_wedge_group_list){lent, n};
    return RP_OK;
}

static int64_t *f_row(const char *subject) {
    for (size_t i = 0; i < F.n_rows; i++)
        if (strcmp(F.rows[i].subject, subject) == 0) return &F.rows[i].n;
    return NULL;
}

/* count_wedge_checks as rp_ports.h states it. */
static rp_status f_count(void *self, const char *scope, const char *const *wedged, size_t n,
                         bool dry, int64_t *counts) {
    (void)self;
    F.count_calls++;
    snprintf(F.scope, sizeof F.scope, "%s", scope);
    F.dry = dry;
    F.n_handed = n;
    for (size_t i = 0; i < n && i < 8; i++)
        snprintf(F.handed[i], sizeof F.handed[i], "%s", wedged[i]);
    if (F.count_fail != RP_OK) return F.count_fail;
    for (size_t i = 0; i < n; i++) {
        int64_t *row = f_row(wedged[i]);
        counts[i] = row ? *row + 1 : 1;
    }
    if (dry) return RP_OK;
    for (size_t i = 0; i < n; i++) {
        int64_t *row = f_row(wedged[i]);
        if (row) {
            (*row)++;
        } else {
            snprintf(F.rows[F.n_rows].subject, sizeof F.rows[0].subject, "%s", wedged[i]);
            F.rows[F.n_rows++].n = 1;
        }
    }
    size_t keep = 0;
    for (size_t i = 0; i < F.n_rows; i++) {
        bool handed = false;
        for (size_t k = 0; k < n; k++) handed = handed || strcmp(F.rows[i].subject, wedged[k]) == 0;
        if (handed || strncmp(F.rows[i].subject, scope, strlen(scope)) != 0)
            F.rows[keep++] = F.rows[i];
    }
    F.n_rows = keep;
    return RP_OK;
}

/* A (project, kind) with 4 claimable jobs, nothing leased, no completion
 * for twice the window: wedged on every check. */
static rp_wedge_group wedged_group(const char *project, const char *kind) {
    return (rp_wedge_group){.project = project,
                            .kind = kind,
                            .claimable = 4,
                            .active = 0,
                            .claimable_since = NOW - 2 * WINDOW_MS,
                            .completed_known = true,
                            .last_completed_at = NOW - 2 * WINDOW_MS};
}

static void fake_ports(fixture *f) {
    memset(&F, 0, sizeof F);
    F.groups[0] = wedged_group("alpha", "render");
    F.n_groups = 1;
    f->ports.store.list_wedge_groups = f_list;
    f->ports.store.count_wedge_checks = f_count;
}

static size_t count(const rp_report *r, rp_action a) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        n += v->condition == RP_COND_WEDGED && v->action == a &&
             strcmp(v->object, "kind:alpha:render") == 0;
    }
    return n;
}

/* One pass; returns how many WEDGED verdicts of alpha/render it surfaced
 * (*cleared: how many it cleared). */
static size_t pass(fixture *f, size_t *cleared) {
    rp_report r;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, &r), RP_OK);
    size_t s = count(&r, RP_ACTION_SURFACED);
    if (cleared) *cleared = count(&r, RP_ACTION_CLEARED);
    rp_report_cleanup(&r);
    return s;
}

static void test_healthy_check_resets_the_count(void **state) {
    fixture *f = *state;
    fake_ports(f);
    assert_int_equal(f->opt.thresholds.wedged_checks, 3);
    /* Two wedged checks: counted, not yet surfaced. */
    assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(F.n_handed, 1);
    assert_string_equal(F.handed[0], "kind:alpha:render");
    assert_string_equal(F.scope, "kind:");
    assert_false(F.dry);
    assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(*f_row("kind:alpha:render"), 2);
    /* One healthy check (a live lease): nothing handed, so the store
     * deletes the count. */
    F.groups[0].active = 1;
    assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(F.n_handed, 0);
    assert_null(f_row("kind:alpha:render"));
    /* Wedged again: three more checks are needed, the third surfaces. */
    F.groups[0].active = 0;
    assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(pass(f, NULL), 1);
    assert_int_equal(*f_row("kind:alpha:render"), 3);
    /* Once per sighting. */
    size_t cleared = 0;
    assert_int_equal(pass(f, &cleared), 0);
    assert_int_equal(cleared, 0);
    /* A completion within the window (1 ms under it ago): healthy, the
     * sighting cleared and the count gone. */
    F.groups[0].last_completed_at = NOW - WINDOW_MS + 1;
    F.groups[0].claimable_since = NOW - WINDOW_MS + 1;
    assert_int_equal(pass(f, &cleared), 0);
    assert_int_equal(cleared, 1);
    assert_int_equal(F.n_handed, 0);
    assert_null(f_row("kind:alpha:render"));
    /* Exactly the window ago: wedged on this check again (count 1). */
    F.groups[0].last_completed_at = NOW - WINDOW_MS;
    F.groups[0].claimable_since = NOW - WINDOW_MS;
    assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(F.n_handed, 1);
    assert_int_equal(*f_row("kind:alpha:render"), 1);
}

static void test_only_the_wedged_kinds_are_counted(void **state) {
    fixture *f = *state;
    fake_ports(f);
    F.groups[1] = wedged_group("alpha", "mail");
    F.groups[1].active = 2; /* working */
    F.groups[2] = wedged_group("beta", "render");
    F.n_groups = 3;
    for (int i = 0; i < 2; i++) assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(F.n_handed, 2);
    assert_string_equal(F.handed[0], "kind:alpha:render");
    assert_string_equal(F.handed[1], "kind:beta:render");
    assert_null(f_row("kind:alpha:mail"));
    assert_int_equal(pass(f, NULL), 1);
    assert_int_equal(*f_row("kind:beta:render"), 3);
}

static void test_dry_run_writes_no_count(void **state) {
    fixture *f = *state;
    fake_ports(f);
    f->opt.dry_run = true;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pass(f, NULL), 0);
        assert_true(F.dry);
        assert_int_equal(F.n_handed, 1);
    }
    assert_int_equal(F.n_rows, 0);
}

static void test_project_pass_counts_its_scope(void **state) {
    fixture *f = *state;
    fake_ports(f);
    F.groups[1] = wedged_group("beta", "render");
    F.n_groups = 2;
    assert_int_equal(pass(f, NULL), 0); /* both counted once */
    f->opt.project = "alpha";
    assert_int_equal(pass(f, NULL), 0);
    assert_string_equal(F.scope, "kind:alpha:");
    assert_int_equal(F.n_handed, 1);
    assert_string_equal(F.handed[0], "kind:alpha:render");
    /* beta's count is not in the scope: kept. */
    assert_int_equal(*f_row("kind:beta:render"), 1);
    assert_int_equal(*f_row("kind:alpha:render"), 2);
}

static void test_failed_count_is_unreadable_and_clears_nothing(void **state) {
    fixture *f = *state;
    fake_ports(f);
    for (int i = 0; i < 2; i++) assert_int_equal(pass(f, NULL), 0);
    assert_int_equal(pass(f, NULL), 1);
    /* Healthy now, but the count fails: the pass is not ok, and the
     * sighting stays open. */
    F.groups[0].active = 1;
    F.count_fail = RP_ERR_UNAVAILABLE;
    rp_report r;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, &r), RP_OK);
    assert_false(r.ok);
    assert_int_equal(count(&r, RP_ACTION_CLEARED), 0);
    bool named = false;
    for (size_t i = 0; i < r.n_unreadable; i++)
        named = named || strcmp(r.unreadable[i], "job_queue") == 0;
    assert_true(named);
    rp_report_cleanup(&r);
    /* Back: cleared once. */
    F.count_fail = RP_OK;
    size_t cleared = 0;
    assert_int_equal(pass(f, &cleared), 0);
    assert_int_equal(cleared, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy_check_resets_the_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_the_wedged_kinds_are_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_writes_no_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_project_pass_counts_its_scope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_count_is_unreadable_and_clears_nothing,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
