/* The batch park's bound parameters (rp__pg_park_params, what
 * rp_pg_park_send binds) built again and again, as a storm builds one per
 * transaction, under jemalloc (which reaperd links): no build hands pages
 * back to the kernel. A calloc of a large size served from a freed extent
 * is zeroed by jemalloc with madvise(MADV_DONTNEED), a TLB shootdown on
 * every CPU the process runs on and a page fault per page touched again;
 * the park's arrays of texts and rows for a transaction of RP_TAP_TXN_MAX
 * dead letters are that large. madvise is counted here by defining it in
 * the test (the library's calls to it bind to this one), and jemalloc's
 * time-based purging is turned off (malloc_conf below) so that only the
 * builds' own allocations can call it. No database needed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pcre2.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "rp_deadletter.h"
#include "rp_judge.h"
#include "rp_pg_store_internal.h"
#include "rp_tap_batch.h"

/* jemalloc's options, read at its start: no purging of freed pages by age
 * (dirty or lazily freed), so every madvise counted is an allocation's. */
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";

static volatile int g_watch;
static volatile size_t g_dontneed;

int madvise(void *addr, size_t len, int advice) {
    if (g_watch && advice == MADV_DONTNEED) g_dontneed++;
    return (int)syscall(SYS_madvise, addr, len, advice);
}

#define STR(s) ((rp_opt_str){true, {(const uint8_t *)(s), sizeof(s) - 1}})
#define N RP_TAP_TXN_MAX

typedef struct letter {
    char id[32];
    char body[48];
    rp_xdeath death;
    rp_pg_dl_handle handle;
    rp_dl_message msg;
} letter;

static void make_letter(letter *l, size_t i) {
    memset(l, 0, sizeof *l);
    snprintf(l->id, sizeof l->id, "m-%zu", i);
    snprintf(l->body, sizeof l->body, "%zu 1764700000000000", i);
    l->death.queue = STR("vibey.orders");
    l->death.reason = STR("expired");
    l->death.time = (rp_opt_i64){true, 1700000000};
    l->death.count = (rp_opt_i64){true, 1};
    l->msg.headers.message_id = (rp_opt_str){true, {(const uint8_t *)l->id, strlen(l->id)}};
    l->msg.headers.first_death_queue = STR("vibey.orders");
    l->msg.headers.first_death_reason = STR("expired");
    l->msg.headers.x_death = &l->death;
    l->msg.headers.n_x_death = 1;
    l->msg.body = (rp_bytes){(const uint8_t *)l->body, strlen(l->body)};
    l->handle.headers_json = "{\"x-first-death-queue\":\"vibey.orders\",\"x-death\":[{\"count\":1}]}";
    l->handle.properties_json = "{\"delivery_mode\":2}";
    l->msg.handle = &l->handle;
}

static size_t g_visits;
static void visit(void *arg, const rp__pg_cmd *k, size_t n) {
    (void)arg;
    (void)k;
    if (n > 1) g_visits++;
}

static void test_park_params_do_not_purge(void **state) {
    (void)state;
#ifdef RP_TEST_JEMALLOC
    /* The build links jemalloc, as reaperd does: the check below is its. */
    assert_non_null(dlsym(RTLD_DEFAULT, "mallctl"));
#else
    if (dlsym(RTLD_DEFAULT, "mallctl") == NULL) skip(); /* glibc's calloc never purges */
#endif
    int code;
    PCRE2_SIZE off;
    pcre2_code *dlq = pcre2_compile((PCRE2_SPTR) "\\.dlq$", PCRE2_ZERO_TERMINATED, 0, &code, &off,
                                    NULL);
    assert_non_null(dlq);
    static letter l[N];
    static rp_dead_letter facts[N];
    static rp_verdict v[N];
    static rp_pg_park_item items[N];
    for (size_t i = 0; i < N; i++) {
        make_letter(&l[i], i);
        assert_int_equal(rp_dead_letter_examine(&l[i].msg.headers, "/", "vibey.orders.dlq", dlq,
                                                l[i].msg.body, &facts[i]),
                         RP_OK);
        assert_int_equal(rp_judge_dead_letter(&facts[i], "/", "vibey.orders.dlq", &v[i]), RP_OK);
        items[i] = (rp_pg_park_item){"/", "vibey.orders.dlq", &l[i].msg, &facts[i], &v[i], {0}};
    }
    /* The first builds take fresh pages; later ones reuse what earlier ones
     * freed, as every transaction of a storm does. */
    for (int round = 0; round < 3; round++)
        assert_int_equal(rp__pg_park_params(items, N, visit, NULL), RP_OK);
    g_dontneed = 0;
    g_watch = 1;
    for (int round = 0; round < 20; round++)
        assert_int_equal(rp__pg_park_params(items, N, visit, NULL), RP_OK);
    g_watch = 0;
    assert_int_equal(g_visits, 23);
    if (g_dontneed != 0)
        print_error("%zu madvise(MADV_DONTNEED) in 20 builds of %d parks\n", (size_t)g_dontneed,
                    N);
    assert_int_equal(g_dontneed, 0);
    for (size_t i = 0; i < N; i++) {
        rp_verdict_cleanup(&v[i]);
        rp_dead_letter_cleanup(&facts[i]);
    }
    pcre2_code_free(dlq);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_park_params_do_not_purge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
