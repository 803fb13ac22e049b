/* The reload helpers of core/rp_config.h: which keys need a restart, key
 * comparison by value (patterns by text, lists by item), and copying a key
 * back (a compiled pattern stays compiled and matches the same names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rp_config.h"
#include "rp_config_load.h"

static void load(rp_config *c, char *const *envp) {
    rp_config_problems p;
    rp_config_problems_init(&p);
    rp_status st = rp_config_load(NULL, envp, c, &p);
    for (size_t i = 0; i < p.n; i++) fprintf(stderr, "%s\n", p.items[i].message);
    assert_int_equal(st, RP_OK);
    rp_config_problems_cleanup(&p);
}

static void test_restart_keys(void **state) {
    (void)state;
    size_t restart = 0;
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const char *name = rp_config_key_name((rp_config_key_id)i);
        bool want = strncmp(name, "broker.", 7) == 0 || strncmp(name, "store.", 6) == 0 ||
                    strcmp(name, "http.listen") == 0;
        assert_int_equal(rp_config_key_needs_restart((rp_config_key_id)i), want);
        restart += want;
    }
    assert_int_equal(restart, 22);
    assert_false(rp_config_key_needs_restart(RP_CFG_REAP_INTERVAL_SECONDS));
    assert_false(rp_config_key_needs_restart(RP_CFG_LOG_LEVEL));
    assert_true(rp_config_key_needs_restart(RP_CFG_BROKER_EVENTS_FORMAT));
    assert_false(rp_config_key_needs_restart(RP_CFG_CONTROL_ALLOWED_USERS));
    assert_false(rp_config_key_needs_restart((rp_config_key_id)RP_CFG_KEY_COUNT_));
}

static void test_equal_and_copy(void **state) {
    (void)state;
    char *env_a[] = {"REAPER_BROKER_CONTROL_QUEUE=a.q", "REAPER_REAP_INTERVAL_SECONDS=60",
                     "REAPER_CONTROL_ALLOWED_USERS=alice,bob", NULL};
    char *env_b[] = {"REAPER_BROKER_CONTROL_QUEUE=b.q", "REAPER_REAP_INTERVAL_SECONDS=5",
                     "REAPER_CONTROL_ALLOWED_USERS=alice,carol", "REAPER_LOG_LEVEL=debug",
                     "REAPER_REAP_OWNED_QUEUE_PATTERN=^other\\.", "REAPER_BROKER_TLS_VERIFY_PEER=false",
                     NULL};
    rp_config a, b;
    load(&a, env_a);
    load(&b, env_b);
    rp_config_key_id differ[] = {RP_CFG_BROKER_CONTROL_QUEUE, RP_CFG_REAP_INTERVAL_SECONDS,
                                 RP_CFG_CONTROL_ALLOWED_USERS, RP_CFG_LOG_LEVEL,
                                 RP_CFG_REAP_OWNED_QUEUE_PATTERN, RP_CFG_BROKER_TLS_VERIFY_PEER};
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        bool want_diff = false;
        for (size_t k = 0; k < sizeof differ / sizeof differ[0]; k++)
            if (differ[k] == (rp_config_key_id)i) want_diff = true;
        assert_int_equal(rp_config_key_equal(&a, &b, (rp_config_key_id)i), !want_diff);
    }
    /* Copy every differing key from a into b: then all are equal. */
    for (size_t k = 0; k < sizeof differ / sizeof differ[0]; k++) {
        assert_int_equal(rp_config_copy_key(&b, &a, differ[k]), RP_OK);
        assert_true(rp_config_key_equal(&a, &b, differ[k]));
        assert_int_equal(b.origin[differ[k]].source, a.origin[differ[k]].source);
    }
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++)
        assert_true(rp_config_key_equal(&a, &b, (rp_config_key_id)i));
    assert_string_equal(b.broker.control_queue, "a.q");
    assert_int_equal(b.reap.interval_seconds, 60);
    assert_int_equal(b.control.allowed_users.n, 2);
    assert_string_equal(b.control.allowed_users.items[1], "bob");
    assert_int_equal(b.log.level, RP_LOG_INFO);
    assert_true(b.broker.tls.verify_peer);
    /* The copied pattern is compiled and matches as the original. */
    assert_non_null(b.reap.owned_queue_pattern.code);
    assert_int_equal(rp_config_pattern_match(&b.reap.owned_queue_pattern, "vibey.x", 7), 1);
    assert_int_equal(rp_config_pattern_match(&b.reap.owned_queue_pattern, "other.x", 7), 0);
    /* Freed independently: a first, then b still works. */
    rp_config_cleanup(&a);
    assert_int_equal(rp_config_pattern_match(&b.reap.owned_queue_pattern, "vibey.y", 7), 1);
    assert_string_equal(b.control.allowed_users.items[0], "alice");
    assert_int_equal(rp_config_copy_key(&b, &b, (rp_config_key_id)RP_CFG_KEY_COUNT_),
                     RP_ERR_INVALID);
    rp_config_cleanup(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_keys),
        cmocka_unit_test(test_equal_and_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
