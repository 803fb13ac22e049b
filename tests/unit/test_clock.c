/* The one clock (support/rp_clock.c): the monotonic clock never goes back,
 * the wall clock is Unix time in milliseconds, and the port it fills reads
 * the wall clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "rp_clock.h"

static void test_mono_never_goes_back(void **state) {
    (void)state;
    int64_t prev = rp_clock_mono_ms();
    for (int i = 0; i < 1000; i++) {
        int64_t t = rp_clock_mono_ms();
        assert_true(t >= prev);
        prev = t;
    }
    struct timespec ts = {0, 30 * 1000000L};
    int64_t t0 = rp_clock_mono_ms();
    nanosleep(&ts, NULL);
    int64_t d = rp_clock_mono_ms() - t0;
    assert_in_range(d, 29, 5000);
}

static void test_wall_is_unix_ms(void **state) {
    (void)state;
    time_t before = time(NULL);
    rp_time_ms t = rp_clock_wall_ms();
    time_t after = time(NULL);
    assert_in_range(t, (int64_t)before * 1000, (int64_t)after * 1000 + 999);
}

static void test_port_reads_the_wall_clock(void **state) {
    (void)state;
    rp_clock_port p = {(void *)&p, NULL};
    rp_clock_port_system(&p);
    assert_null(p.self);
    assert_non_null(p.now_ms);
    rp_time_ms a = rp_clock_wall_ms();
    rp_time_ms b = p.now_ms(p.self);
    rp_time_ms c = rp_clock_wall_ms();
    assert_in_range(b, a, c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mono_never_goes_back),
        cmocka_unit_test(test_wall_is_unix_ms),
        cmocka_unit_test(test_port_reads_the_wall_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
