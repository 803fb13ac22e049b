/* The fleet's sweep turn (core/rp_sweep_turn.h): the scope a scheduled
 * pass runs, when the holder gives the turn back, the URL's vhost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "rp_sweep_turn.h"

static void scope_follows_the_turn(void **state) {
    (void)state;
    assert_int_equal(rp_sweep_turn_scope(RP_PASS_FULL, RP_SWEEP_TURN_TAKEN), RP_PASS_FULL);
    assert_int_equal(rp_sweep_turn_scope(RP_PASS_FULL, RP_SWEEP_TURN_HELD), RP_PASS_LEASES);
    /* Not asked (store down, no port): sweep, twice rather than never. */
    assert_int_equal(rp_sweep_turn_scope(RP_PASS_FULL, RP_SWEEP_TURN_UNKNOWN), RP_PASS_FULL);
    assert_int_equal(rp_sweep_turn_scope(RP_PASS_LEASES, RP_SWEEP_TURN_HELD), RP_PASS_LEASES);
    assert_int_equal(rp_sweep_turn_scope(RP_PASS_LEASES, RP_SWEEP_TURN_TAKEN), RP_PASS_LEASES);
    assert_string_equal(rp_sweep_turn_string(RP_SWEEP_TURN_TAKEN), "taken");
    assert_string_equal(rp_sweep_turn_string(RP_SWEEP_TURN_HELD), "held");
    assert_string_equal(rp_sweep_turn_string(RP_SWEEP_TURN_UNKNOWN), "unknown");
    assert_string_equal(rp_sweep_turn_string((rp_sweep_turn)9), "?");
}

static void give_back_after_a_partial_sweep(void **state) {
    (void)state;
    assert_false(rp_sweep_turn_give_back(true, true));
    assert_true(rp_sweep_turn_give_back(true, false));
    assert_true(rp_sweep_turn_give_back(false, true));
    assert_true(rp_sweep_turn_give_back(false, false));
}

static void vhost_of_the_url(void **state) {
    (void)state;
    static const struct {
        const char *url, *want;
        bool ok;
    } cases[] = {
        {"amqp://reaper@h:5672/%2f", "/", true},
        {"amqp://reaper@h:5672/%2F", "/", true},
        {"amqp://reaper@h:5672", "/", true},
        {"amqp://reaper@h:5672/", "/", true},
        {"amqp://reaper@h:5672/?heartbeat=5", "/", true},
        {"amqps://r@a:1,b:2,c:3/tenant%2fa", "tenant/a", true},
        {"amqp://r@h/prod?x=1", "prod", true},
        {"amqp://r@h/bad%2", "", false},
        {"amqp://r@h/bad%zz", "", false},
        {NULL, "/", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64] = "x";
        assert_int_equal(rp_sweep_turn_vhost(cases[i].url, out, sizeof out), cases[i].ok);
        assert_string_equal(out, cases[i].want);
    }
    char small[4];
    assert_false(rp_sweep_turn_vhost("amqp://h/tenant", small, sizeof small));
    assert_string_equal(small, "");
    assert_false(rp_sweep_turn_vhost("amqp://h/", small, 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scope_follows_the_turn),
        cmocka_unit_test(give_back_after_a_partial_sweep),
        cmocka_unit_test(vhost_of_the_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
