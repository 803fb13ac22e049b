/*
 * pass_fixture.h - the fixture the core pass tests share (test_pass.c,
 * test_pass_queues.c): in-memory ports at the clock NOW (which the test
 * file defines before including this), and pass options with the default
 * owned and dead-letter patterns. Everything static: one includer each.
 */
#ifndef RP_PASS_FIXTURE_H
#define RP_PASS_FIXTURE_H

typedef struct fixture {
    rp_memory *m;
    rp_ports ports;
    rp_pass_options opt;
    pcre2_code *owned;
    pcre2_code *dlq;
} fixture;

static pcre2_code *compile(const char *pattern) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(re);
    return re;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->m = rp_memory_new();
    assert_non_null(f->m);
    rp_memory_set_now(f->m, NOW);
    rp_memory_ports(f->m, &f->ports);
    f->owned = compile("^vibey\\.");
    f->dlq = compile("(\\.dlq|\\.dead)$");
    rp_pass_options_default(&f->opt);
    f->opt.owned_queue_pattern = f->owned;
    f->opt.dead_letter_queue_pattern = f->dlq;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_memory_free(f->m);
    pcre2_code_free(f->owned);
    pcre2_code_free(f->dlq);
    free(f);
    return 0;
}

#endif
