/*
 * bench_pg_reap - the lease reap's throughput on one connection: one pass of
 * core over the PostgreSQL store across N expired leases (default 10,000;
 * argv[1] to change), in a schema of its own, dropped after. Prints rows/s.
 * With argv[2] "cold", the session first settles its plans on an empty,
 * analyzed table and the rows arrive under it (POSTGRES.md's trap); with
 * "fresh", the table has never been analyzed.
 *
 * The ceiling to compare with is pgbench doing the same by hand, one row per
 * transaction (bench_pg_reap.pgbench, see its header): run both in the same
 * session, since machines differ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_fixture.h"

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rows = 10000;
static bool cold, fresh;

/* Runs a few passes over an empty, analyzed table, so that the session's
 * prepared statements have settled on plans made for an empty table (the
 * trap of POSTGRES.md), before the table fills up under the same session. */
static void settle_on_empty(pgfx *f) {
    pgfx_exec(f, "ANALYZE job, ledger, gate, sighting, dead_letter");
    for (int i = 0; i < 8; i++) {
        pgfx_expired(f, 1, "warm", 1, 7, "1 minute");
        rp_report r;
        assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
        rp_report_cleanup(&r);
    }
    pgfx_exec(f, "DELETE FROM gate");
    pgfx_exec(f, "DELETE FROM job WHERE project_id = 'warm'");
}

static void bench(void **state) {
    (void)state;
    pgfx *f = pgfx_new("bench");
    if (cold) settle_on_empty(f);
    /* A table that already holds history, as a real one does. */
    pgfx_exec(f, "INSERT INTO job (project_id, kind, state, finished_at)"
                 " SELECT 'p' || (g %% 20), 'k', 'succeeded', now()"
                 " FROM generate_series(1, 50000) g");
    pgfx_expired(f, rows, "alpha", 1, 7, "10 minutes");
    if (!cold && !fresh) pgfx_exec(f, "ANALYZE job, ledger, gate, sighting, dead_letter");
    /* Warm the session (connect, prepare) outside the timing. */
    (void)f->ports.clock.now_ms(f->ports.clock.self);
    double t0 = mono_s();
    rp_report r;
    assert_int_equal(pgfx_pass(f, false, &r), RP_OK);
    double dt = mono_s() - t0;
    assert_true(r.ok);
    assert_int_equal(r.n_verdicts, (size_t)rows);
    rp_report_cleanup(&r);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE project_id = 'alpha'"), rows);
    printf("lease reap: %d rows in %.3f s = %.0f rows/s (one connection, one pass%s)\n", rows,
           dt, rows / dt,
           cold ? ", plans settled on an empty table" : fresh ? ", no statistics" : "");
    pgfx_free(f);
}

int main(int argc, char **argv) {
    if (argc > 1) rows = atoi(argv[1]);
    cold = argc > 2 && strcmp(argv[2], "cold") == 0;
    fresh = argc > 2 && strcmp(argv[2], "fresh") == 0;
    if (rows < 1) rows = 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(bench)};
    return cmocka_run_group_tests_name("bench_pg_reap", tests, NULL, NULL);
}
