/* stats' use case (core/rp_stats.c) over the memory store and its broker
 * port (adapters/memory/rp_memory_stats.c): the rows and flags a store of
 * known jobs, queues and sightings gives, end to end through the ports a
 * daemon hands the op; and a store that fails fails the whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include "rp_memory.h"
#include "rp_memory_stats.h"
#include "rp_stats.h"

#define NOW 1700000000000LL

static pcre2_code *re(const char *p) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(c);
    return c;
}

static int64_t job(rp_memory *m, const char *project, const char *kind, rp_job_state s,
                   rp_time_ms run_after, int64_t depends_on) {
    rp_mem_job spec = {.project = (char *)project, .kind = (char *)kind, .state = s,
                       .max_attempts = 7, .run_after = run_after, .depends_on = depends_on};
    if (s == RP_JOB_LEASED) {
        spec.lease_owner = (char *)"w";
        spec.lease_known = true;
        spec.lease_expires_at = NOW + 60000;
    }
    if (s == RP_JOB_SUCCEEDED) {
        spec.finished_known = true;
        spec.finished_at = NOW - 600000; /* 10 minutes ago */
    }
    int64_t id = 0;
    assert_int_equal(rp_memory_add_job(m, &spec, &id), RP_OK);
    return id;
}

static void test_over_the_memory_store(void **state) {
    (void)state;
    rp_memory *m = rp_memory_new();
    rp_memory_set_now(m, NOW);
    rp_ports ports;
    rp_memory_ports(m, &ports);
    rp_stats_store_port sp;
    rp_memory_stats_port(m, &sp);

    rp_queue_facts q = {.vhost = "/", .name = "vibey.pdf", .counts_known = true, .ready = 12,
                        .unacked = 3, .consumers_known = true, .consumers = 2,
                        .head_timestamp_known = true, .head_timestamp = NOW / 1000 - 30};
    assert_int_equal(rp_memory_put_queue(m, &q), RP_OK);
    q.name = "vibey.pdf.dlq";
    assert_int_equal(rp_memory_put_queue(m, &q), RP_OK);
    q.name = "other";
    assert_int_equal(rp_memory_put_queue(m, &q), RP_OK);

    for (int i = 0; i < 3; i++) job(m, "alpha", "pdf", RP_JOB_READY, NOW - 120000, 0);
    job(m, "alpha", "pdf", RP_JOB_READY, NOW + 60000, 0); /* not yet */
    int64_t held = job(m, "alpha", "mail", RP_JOB_LEASED, NOW - 1000, 0);
    int64_t done = job(m, "alpha", "parent", RP_JOB_SUCCEEDED, NOW - 3600000, 0);
    job(m, "alpha", "child", RP_JOB_READY, NOW - 3600000, done); /* since its parent finished */
    job(m, "alpha", "child", RP_JOB_READY, NOW - 3600000, held); /* parent leased: not waiting */
    char key[64];
    snprintf(key, sizeof key, "job_queue|STALLED|job:%lld", (long long)held);
    assert_int_equal(rp_memory_add_sighting(m, key, RP_COND_STALLED), RP_OK);
    assert_int_equal(rp_memory_add_sighting(m, "job_queue|WAITING_DEPTH|kind:alpha:pdf",
                                            RP_COND_WAITING_DEPTH),
                     RP_OK);
    assert_int_equal(rp_memory_add_sighting(m, "broker|WEDGED|queue:/:vibey.pdf", RP_COND_WEDGED),
                     RP_OK);
    assert_int_equal(rp_memory_add_sighting(m, "broker|HOLDER_GONE|queue:/:vibey.pdf",
                                            RP_COND_HOLDER_GONE),
                     RP_OK);

    pcre2_code *owned = re("^vibey\\."), *dlq = re("\\.dlq$");
    rp_stats_scope scope = {.owned_queue_pattern = owned, .dead_letter_queue_pattern = dlq,
                            .window_seconds = 86400};
    rp_stats s;
    rp_stats_init(&s);
    assert_int_equal(rp_stats_collect(&sp, &ports.broker, &scope, NOW, &s), RP_OK);

    assert_true(s.broker_read);
    assert_int_equal(s.n_queues, 1);
    assert_string_equal(s.queues[0].name, "vibey.pdf");
    assert_int_equal(s.queues[0].ready, 12);
    assert_int_equal(s.queues[0].unacked, 3);
    assert_int_equal(s.queues[0].consumers, 2);
    assert_false(s.queues[0].rates_known);
    assert_int_equal(s.queues[0].oldest_waiting_ms, 30000);
    assert_int_equal(s.queues[0].flags, RP_STATS_WEDGED);

    assert_int_equal(s.n_kinds, 3); /* child, mail, pdf; parent has nothing waiting or active */
    assert_string_equal(s.kinds[0].kind, "child");
    assert_int_equal(s.kinds[0].waiting, 1);
    assert_int_equal(s.kinds[0].oldest_waiting_ms, 600000);
    assert_string_equal(s.kinds[1].kind, "mail");
    assert_int_equal(s.kinds[1].active, 1);
    assert_false(s.kinds[1].age_known);
    assert_int_equal(s.kinds[1].flags, RP_STATS_STALLED);
    assert_string_equal(s.kinds[2].kind, "pdf");
    assert_int_equal(s.kinds[2].waiting, 3);
    assert_int_equal(s.kinds[2].oldest_waiting_ms, 120000);
    assert_int_equal(s.kinds[2].flags, RP_STATS_WAITING_DEPTH);
    rp_stats_cleanup(&s);

    /* A store that fails: the whole fails, nothing is left. */
    rp_memory_fail(m, RP_MEM_LIST_SIGHTINGS, RP_ERR_UNAVAILABLE, 0);
    assert_int_equal(rp_stats_collect(&sp, &ports.broker, &scope, NOW, &s), RP_ERR_UNAVAILABLE);
    assert_int_equal(s.n_kinds + s.n_queues, 0);
    rp_memory_fail(m, RP_MEM_LIST_SIGHTINGS, RP_OK, 0);
    /* A broker that fails: a note, the kinds. */
    rp_memory_fail(m, RP_MEM_LIST_QUEUES, RP_ERR_UNAVAILABLE, 0);
    assert_int_equal(rp_stats_collect(&sp, &ports.broker, &scope, NOW, &s), RP_OK);
    assert_false(s.broker_read);
    assert_non_null(s.broker_note);
    assert_int_equal(s.n_kinds, 3);
    rp_stats_cleanup(&s);

    pcre2_code_free(owned);
    pcre2_code_free(dlq);
    rp_memory_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_over_the_memory_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
