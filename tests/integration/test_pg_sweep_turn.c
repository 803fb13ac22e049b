/*
 * The fleet's sweep turn in PostgreSQL (adapters/postgres/rp_pg_sweep_turn.c,
 * rp_ports.h take_sweep_turn / give_sweep_turn): one session holds the turn
 * of a schema and vhost; another session of the same schema does not get
 * it, one of another schema or vhost does; taking it again does not stack
 * (one give hands it on); a give of a turn not held is nothing; the turn
 * goes with its session.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <unistd.h>

#include "pg_fixture.h"

static bool take(pgfx *f, const char *vhost) {
    bool got = true;
    assert_int_equal(f->ports.store.take_sweep_turn(f->ports.store.self, vhost, &got), RP_OK);
    return got;
}

static void give(pgfx *f, const char *vhost) {
    assert_int_equal(f->ports.store.give_sweep_turn(f->ports.store.self, vhost), RP_OK);
}

static void test_one_session_holds_the_turn(void **state) {
    (void)state;
    pgfx *a = pgfx_new("turn");
    pgfx *b = pgfx_attach(a->schema);
    pgfx *other = pgfx_new("turnx");
    assert_non_null(a->ports.store.take_sweep_turn);
    assert_non_null(a->ports.store.give_sweep_turn);

    assert_true(take(a, "/"));
    assert_true(take(a, "/")); /* held: kept, not stacked */
    assert_true(take(a, "/"));
    assert_false(take(b, "/"));
    assert_true(take(b, "tenant")); /* another vhost */
    assert_true(take(other, "/"));  /* another schema */
    give(b, "/");                   /* not b's: nothing */
    assert_false(take(b, "/"));

    /* One give after three takes hands it on. */
    give(a, "/");
    assert_true(take(b, "/"));
    assert_false(take(a, "/"));

    /* The turn goes with its session: b's connection closed, a takes it. */
    give(b, "tenant");
    pgfx_free(b);
    /* The server ends b's backend, and its locks, a moment after the
     * close: poll (5 s at most). */
    bool got = false;
    for (int i = 0; i < 100 && !(got = take(a, "/")); i++) usleep(50 * 1000);
    assert_true(got);
    give(a, "/");
    give(a, "/"); /* again: nothing, no error */
    pgfx_free(other);
    pgfx_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_one_session_holds_the_turn)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
