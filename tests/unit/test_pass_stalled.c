/* Issue 18 item 1, broker STALLED in a full pass (core/rp_pass_stalled.c)
 * over the in-memory ports with a fake list_channels: surfaced once on an
 * owned work queue after the ceiling, never on a foreign or dead-letter
 * queue; cleared when the channel acks or goes; kept by a replica that
 * cannot judge the hold yet; kept when the channels cannot be listed
 * (unreadable) or the user cannot see them all (a note). */
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

#include "pass_fixture.h"

/* The fake broker channels. */
static const char *QUEUES[4];
static size_t N_QUEUES;
static rp_channel_sample CH;
static size_t N_CH;
static rp_status LIST_ST;

static rp_status fake_channels(void *self, rp_channel_list *out) {
    (void)self;
    if (LIST_ST != RP_OK) return LIST_ST;
    CH.queues = QUEUES;
    CH.n_queues = N_QUEUES;
    out->channels = N_CH ? &CH : NULL;
    out->n = N_CH;
    return RP_OK;
}

static void holding(const char *queue, int64_t unacked, int64_t acked) {
    QUEUES[0] = queue;
    N_QUEUES = 1;
    CH = (rp_channel_sample){.vhost = "/", .connection = "127.0.0.1:4000 -> 127.0.0.1:5672",
                             .channel = "127.0.0.1:4000 -> 127.0.0.1:5672 (1)",
                             .user = "worker", .unacked = unacked, .acked_total = acked};
    N_CH = 1;
    LIST_ST = RP_OK;
}

/* One full pass at `at` with memory mem; counts the STALLED verdicts. */
static void pass(fixture *f, rp_stall_memory *mem, rp_time_ms at, int *surfaced, int *cleared,
                 rp_report *r) {
    rp_memory_set_now(f->m, at);
    f->ports.broker.list_channels = fake_channels;
    f->opt.stall_memory = mem;
    f->opt.thresholds.held_ceiling_seconds = 60;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, r), RP_OK);
    *surfaced = *cleared = 0;
    for (size_t i = 0; i < r->n_verdicts; i++) {
        const rp_verdict *v = &r->verdicts[i];
        if (v->condition != RP_COND_STALLED || v->source != RP_SOURCE_BROKER) continue;
        if (v->action == RP_ACTION_SURFACED) {
            (*surfaced)++;
            assert_string_equal(v->object, "queue:/:vibey.work");
            assert_non_null(strstr(v->detail, "channel 127.0.0.1:4000 -> 127.0.0.1:5672 (1)"));
        }
        if (v->action == RP_ACTION_CLEARED) (*cleared)++;
    }
}

static bool has_note(const rp_report *r, const char *part) {
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], part)) return true;
    return false;
}

static void test_surfaced_after_ceiling_cleared_on_ack(void **state) {
    fixture *f = *state;
    rp_stall_memory *mem = rp_stall_memory_new();
    int s, c;
    rp_report r;
    holding("vibey.work", 1, 4);
    pass(f, mem, NOW, &s, &c, &r); /* first sight: unsure */
    assert_int_equal(s, 0);
    assert_true(has_note(&r, "already holding when this process first saw them"));
    rp_report_cleanup(&r);
    pass(f, mem, NOW + 59999, &s, &c, &r); /* one millisecond under the ceiling */
    assert_int_equal(s, 0);
    rp_report_cleanup(&r);
    pass(f, mem, NOW + 60000, &s, &c, &r); /* at it */
    assert_int_equal(s, 1);
    assert_true(r.ok);
    rp_report_cleanup(&r);
    pass(f, mem, NOW + 70000, &s, &c, &r); /* open: not again, not cleared */
    assert_int_equal(s + c, 0);
    rp_report_cleanup(&r);

    /* Another replica, whose memory first sees the channel now: it cannot
     * tell, so it keeps what the first surfaced. */
    rp_stall_memory *other = rp_stall_memory_new();
    pass(f, other, NOW + 71000, &s, &c, &r);
    assert_int_equal(s + c, 0);
    rp_report_cleanup(&r);

    /* The user cannot see every channel: a note, nothing cleared. */
    LIST_ST = RP_ERR_FORBIDDEN;
    pass(f, mem, NOW + 72000, &s, &c, &r);
    assert_int_equal(s + c, 0);
    assert_true(has_note(&r, "monitoring or administrator tag"));
    assert_true(r.ok);
    rp_report_cleanup(&r);
    /* The channels cannot be listed: unreadable, nothing cleared. */
    LIST_ST = RP_ERR_UNAVAILABLE;
    pass(f, mem, NOW + 73000, &s, &c, &r);
    assert_int_equal(s + c, 0);
    assert_false(r.ok);
    rp_report_cleanup(&r);

    /* It acks: cleared once. */
    holding("vibey.work", 1, 5);
    pass(f, mem, NOW + 74000, &s, &c, &r);
    assert_int_equal(c, 1);
    assert_int_equal(s, 0);
    rp_report_cleanup(&r);
    pass(f, mem, NOW + 75000, &s, &c, &r);
    assert_int_equal(s + c, 0);
    rp_report_cleanup(&r);
    rp_stall_memory_free(other);
    rp_stall_memory_free(mem);
}

static void test_cleared_when_gone(void **state) {
    fixture *f = *state;
    rp_stall_memory *mem = rp_stall_memory_new();
    int s, c;
    rp_report r;
    holding("vibey.work", 2, 0);
    pass(f, mem, NOW, &s, &c, &r);
    rp_report_cleanup(&r);
    pass(f, mem, NOW + 61000, &s, &c, &r);
    assert_int_equal(s, 1);
    rp_report_cleanup(&r);
    N_CH = 0; /* the connection closed */
    pass(f, mem, NOW + 62000, &s, &c, &r);
    assert_int_equal(c, 1);
    rp_report_cleanup(&r);
    rp_stall_memory_free(mem);
}

static void test_not_owned_work_queues(void **state) {
    fixture *f = *state;
    rp_stall_memory *mem = rp_stall_memory_new();
    int s, c;
    rp_report r;
    const char *names[] = {"other.work", "vibey.work.dlq"};
    for (size_t i = 0; i < 2; i++) {
        holding(names[i], 1, 0);
        pass(f, mem, NOW, &s, &c, &r);
        rp_report_cleanup(&r);
        pass(f, mem, NOW + 600000, &s, &c, &r);
        assert_int_equal(s, 0);
        rp_report_cleanup(&r);
        rp_stall_memory_free(mem);
        mem = rp_stall_memory_new();
    }
    /* Without a memory (a caller that keeps no samples): nothing judged. */
    holding("vibey.work", 1, 0);
    pass(f, NULL, NOW, &s, &c, &r);
    rp_report_cleanup(&r);
    pass(f, NULL, NOW + 600000, &s, &c, &r);
    assert_int_equal(s, 0);
    rp_report_cleanup(&r);
    rp_stall_memory_free(mem);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_surfaced_after_ceiling_cleared_on_ack, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cleared_when_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_owned_work_queues, setup, teardown),
    };
    return cmocka_run_group_tests_name("pass_stalled", tests, NULL, NULL);
}
