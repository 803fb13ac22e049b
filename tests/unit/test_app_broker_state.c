/* What reaperd does when its broker session comes up, is ready or goes
 * down (app/rp_broker_state.c): the daemon's broker_up and generation kept,
 * the connection counted, no delivery taken while stopping; ready and down
 * before the events part is made calls only the ready hook (every tap looks
 * at its bindings again). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rp_broker_state.h"

static void count_ready(void *arg) { ++*(int *)arg; }

static void test_up_ready_down(void **state) {
    (void)state;
    bool up = false, stopping = false;
    unsigned generation = 0;
    rp_metrics m;
    rp_metrics_init(&m, "test", "rev");
    rp_events *events = NULL;
    int readies = 0;
    rp_broker_state b = {&up, &generation, &stopping, &m, &events, count_ready, &readies};

    assert_true(rp_broker_state_accepting(&b));
    rp_broker_state_on_up(&b, 1);
    assert_true(up);
    assert_int_equal(generation, 1);
    assert_int_equal(m.connects[RP_METRICS_BROKER], 1);
    assert_int_equal(m.connects[RP_METRICS_STORE], 0);
    rp_broker_state_on_ready(&b); /* no events part yet: only the ready hook */
    assert_int_equal(readies, 1);
    rp_broker_state_on_down(&b, true, "connection reset");
    assert_false(up);
    assert_int_equal(generation, 1); /* a stale tag stays stale */

    rp_broker_state_on_up(&b, 2);
    assert_true(up);
    assert_int_equal(generation, 2);
    assert_int_equal(m.connects[RP_METRICS_BROKER], 2);
    rp_broker_state_on_down(&b, false, "refused");
    assert_false(up);
    assert_int_equal(readies, 1); /* down calls no ready hook */

    __atomic_store_n(&stopping, true, __ATOMIC_RELEASE);
    assert_false(rp_broker_state_accepting(&b));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_up_ready_down)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
