/* The daemon's AMQP session (rp_amqp_session.h) without a broker: a
 * delivery goes to the handler registered for exactly its consumer tag and
 * to no other; nothing is handed out while the daemon is not accepting; an
 * unknown tag reaches no handler; the handler table refuses an empty, a
 * repeated tag and one past its size; an ack of an older connection's
 * generation is dropped (stale), never sent on the current connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <string.h>

#include "rp_amqp_session.h"

typedef struct counts {
    int control, events, other;
    uint64_t last_tag;
} counts;

static bool accepting = true;

static bool is_accepting(void *arg) {
    (void)arg;
    return accepting;
}

static void on_control(void *arg, const rp_amqp_message *m) {
    counts *c = arg;
    c->control++;
    c->last_tag = m->delivery_tag;
}

static void on_events(void *arg, const rp_amqp_message *m) {
    counts *c = arg;
    c->events++;
    c->last_tag = m->delivery_tag;
}

static void on_other(void *arg, const rp_amqp_message *m) {
    (void)m;
    ((counts *)arg)->other++;
}

typedef struct fx {
    struct event_base *base;
    rp_amqp_session *s;
    counts c;
} fx;

static int setup(void **state) {
    static fx f;
    memset(&f, 0, sizeof f);
    accepting = true;
    f.base = event_base_new();
    assert_non_null(f.base);
    rp_amqp_params ap = {.url = "amqp://reaper@127.0.0.1:1/", .password = "x",
                         .heartbeat_seconds = 10, .connect_timeout_ms = 100};
    rp_amqp_session_params sp = {.amqp = &ap, .events_exchange = "reaper.events",
                                 .control_queue = "reaper.control", .control_prefetch = 16,
                                 .replay_channel = 4, .body_limit = 65536};
    rp_amqp_session_hooks sh = {.accepting = is_accepting};
    const char *err = NULL;
    f.s = rp_amqp_session_new(f.base, &sp, &sh, &err);
    assert_non_null(f.s);
    assert_int_equal(rp_amqp_session_on(f.s, RP_AMQP_SESSION_CONTROL_TAG, on_control, &f.c), RP_OK);
    assert_int_equal(rp_amqp_session_on(f.s, RP_AMQP_SESSION_EVENTS_TAG, on_events, &f.c), RP_OK);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    rp_amqp_session_free(f->s);
    event_base_free(f->base);
    return 0;
}

static rp_amqp_message delivery(const char *tag, uint64_t dtag) {
    rp_amqp_message m;
    memset(&m, 0, sizeof m);
    m.channel = 1;
    m.delivery_tag = dtag;
    m.consumer_tag = amqp_cstring_bytes(tag);
    return m;
}

static void test_dispatch_by_tag(void **state) {
    fx *f = *state;
    rp_amqp_message m = delivery("reaper.control", 7);
    assert_true(rp_amqp_session_dispatch(f->s, &m));
    assert_int_equal(f->c.control, 1);
    assert_int_equal(f->c.events, 0);
    assert_int_equal(f->c.last_tag, 7);
    m = delivery("reaper.events", 8);
    assert_true(rp_amqp_session_dispatch(f->s, &m));
    assert_int_equal(f->c.control, 1);
    assert_int_equal(f->c.events, 1);
    assert_int_equal(f->c.last_tag, 8);
}

static void test_tag_must_match_whole(void **state) {
    fx *f = *state;
    /* A prefix, a longer tag and the tap's tag reach no handler. */
    const char *near[] = {"reaper.contro", "reaper.control.1", "reaper.eventsX", "reaper.tap", ""};
    for (size_t i = 0; i < sizeof near / sizeof *near; i++) {
        rp_amqp_message m = delivery(near[i], 9);
        assert_false(rp_amqp_session_dispatch(f->s, &m));
    }
    assert_int_equal(f->c.control, 0);
    assert_int_equal(f->c.events, 0);
}

static void test_not_accepting_hands_out_nothing(void **state) {
    fx *f = *state;
    accepting = false;
    rp_amqp_message m = delivery("reaper.control", 1);
    assert_false(rp_amqp_session_dispatch(f->s, &m));
    m = delivery("reaper.events", 2);
    assert_false(rp_amqp_session_dispatch(f->s, &m));
    assert_int_equal(f->c.control + f->c.events, 0);
    accepting = true;
    m = delivery("reaper.control", 3);
    assert_true(rp_amqp_session_dispatch(f->s, &m));
    assert_int_equal(f->c.control, 1);
}

static void test_handler_table_rules(void **state) {
    fx *f = *state;
    assert_int_equal(rp_amqp_session_on(f->s, RP_AMQP_SESSION_CONTROL_TAG, on_other, &f->c),
                     RP_ERR_INVALID);
    assert_int_equal(rp_amqp_session_on(f->s, "", on_other, &f->c), RP_ERR_INVALID);
    assert_int_equal(rp_amqp_session_on(f->s, "a", NULL, &f->c), RP_ERR_INVALID);
    assert_int_equal(rp_amqp_session_on(f->s, "a", on_other, &f->c), RP_OK);
    assert_int_equal(rp_amqp_session_on(f->s, "b", on_other, &f->c), RP_OK);
    assert_int_equal(RP_AMQP_SESSION_MAX_HANDLERS, 4);
    assert_int_equal(rp_amqp_session_on(f->s, "c", on_other, &f->c), RP_ERR_INVALID);
    /* The repeated registration did not replace the control handler. */
    rp_amqp_message m = delivery("reaper.control", 4);
    assert_true(rp_amqp_session_dispatch(f->s, &m));
    assert_int_equal(f->c.control, 1);
    assert_int_equal(f->c.other, 0);
    m = delivery("b", 5);
    assert_true(rp_amqp_session_dispatch(f->s, &m));
    assert_int_equal(f->c.other, 1);
}

static void test_ack_checks_the_generation(void **state) {
    fx *f = *state;
    /* Not connected yet: generation 0, down. */
    assert_false(rp_amqp_session_up(f->s));
    unsigned gen = rp_amqp_session_generation(f->s);
    assert_int_equal(gen, 0);
    /* A tag of another generation is stale, whatever the connection. */
    assert_int_equal(rp_amqp_session_ack(f->s, gen + 1, 10), RP_AMQP_ACK_STALE);
    assert_int_equal(rp_amqp_session_ack(f->s, gen - 1, 10), RP_AMQP_ACK_STALE);
    /* The current generation goes to the connection, which is not there. */
    assert_int_equal(rp_amqp_session_ack(f->s, gen, 10), RP_AMQP_ACK_NO_CONNECTION);
}

static void test_ack_result_strings(void **state) {
    (void)state;
    for (int r = 0; r < RP_AMQP_ACK_COUNT_; r++)
        assert_string_not_equal(rp_amqp_ack_result_string((rp_amqp_ack_result)r), "unknown");
    assert_string_equal(rp_amqp_ack_result_string(RP_AMQP_ACK_COUNT_), "unknown");
}

static void test_bad_url_refused(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    rp_amqp_params ap = {.url = "http://nope", .password = ""};
    rp_amqp_session_params sp = {.amqp = &ap, .events_exchange = "e", .control_queue = "q",
                                 .replay_channel = 4, .body_limit = 1024};
    const char *err = NULL;
    assert_null(rp_amqp_session_new(base, &sp, NULL, &err));
    assert_non_null(err);
    event_base_free(base);
}

int main(void) {
    evthread_use_pthreads();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dispatch_by_tag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tag_must_match_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_accepting_hands_out_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_table_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ack_checks_the_generation, setup, teardown),
        cmocka_unit_test(test_ack_result_strings),
        cmocka_unit_test(test_bad_url_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
