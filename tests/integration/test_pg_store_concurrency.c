/*
 * Two reapers at once on one job table: two processes, each running core's
 * pass over its own connection, split 10,000 expired leases between them
 * in batches of 100 (FOR UPDATE SKIP LOCKED). Every row is moved exactly
 * once, with exactly one ledger event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_fixture.h"

#define ROWS 10000
#define POISON 1000

static int setup(void **state) {
    *state = pgfx_new("conc");
    return 0;
}

static int teardown(void **state) {
    pgfx_free(*state);
    return 0;
}

/* A reaper in a child: connects, writes "r" to out (ready), waits for the
 * go byte, runs one pass, writes "<verdicts> <ok>" to out, exits 0 (250
 * and up on failure). */
static pid_t reaper(const char *schema, int go, int out) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    pgfx *c = pgfx_attach(schema);
    /* Connect and prepare before the start, so both start together. */
    (void)c->ports.clock.now_ms(c->ports.clock.self);
    if (write(out, "r", 1) != 1) _exit(253);
    char b;
    if (read(go, &b, 1) != 1) _exit(250);
    rp_report r;
    if (pgfx_pass(c, false, &r) != RP_OK) _exit(251);
    char line[64];
    int len = snprintf(line, sizeof line, "%zu %d\n", r.n_verdicts + r.n_omitted, r.ok ? 1 : 0);
    rp_report_cleanup(&r);
    pgfx_free(c);
    if (write(out, line, (size_t)len) != len) _exit(252);
    _exit(0);
}

static void test_two_reapers_split_the_work(void **state) {
    pgfx *f = *state;
    pgfx_expired(f, ROWS - POISON, "alpha", 1, 7, "10 minutes");
    pgfx_expired(f, POISON, "beta", 7, 7, "10 minutes");
    pgfx_exec(f, "ANALYZE job");
    int go[2], out[2][2];
    assert_int_equal(pipe(go), 0);
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pipe(out[i]), 0);
        kids[i] = reaper(f->schema, go[0], out[i][1]);
        close(out[i][1]);
    }
    /* Until both are connected and prepared (each says "r"). */
    for (int i = 0; i < 2; i++) {
        struct pollfd p = {out[i][0], POLLIN, 0};
        char r;
        if (poll(&p, 1, 30000) != 1 || read(out[i][0], &r, 1) != 1) break; /* it failed */
    }
    assert_int_equal(write(go[1], "gg", 2), 2);
    size_t total = 0;
    for (int i = 0; i < 2; i++) {
        int status = 0;
        waitpid(kids[i], &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        char line[64] = "";
        ssize_t n = read(out[i][0], line, sizeof line - 1);
        assert_true(n > 0);
        size_t verdicts = 0;
        int ok = 0;
        assert_int_equal(sscanf(line, "%zu %d", &verdicts, &ok), 2);
        assert_int_equal(ok, 1);
        print_message("reaper %d moved %zu rows\n", i, verdicts);
        /* Both took part: SKIP LOCKED split the work rather than one
         * reaper waiting on the other's locks. */
        assert_true(verdicts > 0);
        total += verdicts;
        close(out[i][0]);
    }
    close(go[0]);
    close(go[1]);
    assert_int_equal(total, ROWS);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'ready'"
                                 " AND lease_owner IS NULL AND attempts = 1"),
                     ROWS - POISON);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE state = 'awaiting_human'"
                                 " AND attempts = 6"),
                     POISON);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate"), POISON);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger"), ROWS);
    /* Exactly one event per job, and one per job that moved. */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM (SELECT payload->>'object'"
                                 " FROM ledger GROUP BY 1 HAVING count(*) <> 1) x"),
                     0);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job j WHERE NOT EXISTS (SELECT 1 FROM"
                                 " ledger l WHERE l.payload->>'object' = 'job:' || j.id)"),
                     0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_reapers_split_the_work, setup, teardown),
    };
    return cmocka_run_group_tests_name("pg_store_concurrency", tests, NULL, NULL);
}
