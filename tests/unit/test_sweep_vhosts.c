/* The sweep per watched vhost (core/rp_sweep_vhosts.h): the watched
 * vhosts, one listing of consecutive pages over them, and a pass over some
 * vhosts clearing only their broker sightings (issue #19 item 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_memory.h"
#include "rp_object.h"
#include "rp_pass.h"
#include "rp_sweep_vhosts.h"
#include "rp_verdict_vhost.h"

#define NOW ((rp_time_ms)1700000000000LL)

#include "pass_fixture.h"

static void watched_vhosts(void **state) {
    (void)state;
    rp_config cfg;
    assert_int_equal(rp_config_init(&cfg), RP_OK);
    free(cfg.broker.url);
    cfg.broker.url = strdup("amqp://reaper@h:5672/tenant%2fa");
    char *items[] = {"b", "tenant/a", "c", "b"};
    cfg.broker.vhosts.items = items;
    cfg.broker.vhosts.n = 4;
    rp_sweep_vhosts v;
    assert_int_equal(rp_sweep_vhosts_watched(&cfg, &v), RP_OK);
    assert_int_equal(v.n, 3); /* the URL's first, each once */
    assert_string_equal(v.names[0], "tenant/a");
    assert_string_equal(v.names[1], "b");
    assert_string_equal(v.names[2], "c");
    assert_true(rp_sweep_vhosts_has((const char *const *)v.names, v.n, "c"));
    assert_false(rp_sweep_vhosts_has((const char *const *)v.names, v.n, "/"));
    rp_sweep_vhosts_cleanup(&v);
    assert_int_equal(v.n, 0);
    /* A URL whose vhost cannot be read: none. */
    free(cfg.broker.url);
    cfg.broker.url = strdup("amqp://reaper@h/bad%zz");
    assert_int_equal(rp_sweep_vhosts_watched(&cfg, &v), RP_ERR_INVALID);
    assert_int_equal(v.n, 0);
    cfg.broker.vhosts.items = NULL;
    cfg.broker.vhosts.n = 0;
    rp_config_cleanup(&cfg);
}

/* Three vhosts: A has two pages, B none (an empty page, asked again as
 * C's first), C one. */
static void pager_walks_vhost_after_vhost(void **state) {
    (void)state;
    rp_vhost_pager p;
    rp_vhost_pager_init(&p, 3);
    size_t i = 9, l = 9;
    assert_false(rp_vhost_pager_map(&p, 0, &i, &l));
    assert_true(rp_vhost_pager_map(&p, 1, &i, &l));
    assert_int_equal(i, 0);
    assert_int_equal(l, 1);
    assert_false(rp_vhost_pager_after(&p, 1, false, false));
    assert_true(rp_vhost_pager_map(&p, 2, &i, &l));
    assert_int_equal(i, 0);
    assert_int_equal(l, 2);
    assert_false(rp_vhost_pager_after(&p, 2, true, false));
    assert_true(rp_vhost_pager_map(&p, 3, &i, &l));
    assert_int_equal(i, 1);
    assert_int_equal(l, 1);
    assert_false(rp_vhost_pager_after(&p, 3, true, true)); /* B empty */
    assert_true(rp_vhost_pager_map(&p, 3, &i, &l));
    assert_int_equal(i, 2);
    assert_int_equal(l, 1);
    assert_false(rp_vhost_pager_map(&p, 2, &i, &l)); /* A's, already listed */
    assert_true(rp_vhost_pager_after(&p, 3, true, false)); /* the listing's last */
    assert_false(rp_vhost_pager_map(&p, 4, &i, &l));
    /* Started over. */
    rp_vhost_pager_init(&p, 3);
    assert_true(rp_vhost_pager_map(&p, 1, &i, &l));
    assert_int_equal(i, 0);
    /* No vhost at all. */
    rp_vhost_pager_init(&p, 0);
    assert_false(rp_vhost_pager_map(&p, 1, &i, &l));
}

static void put(fixture *f, const char *vhost, const char *name) {
    rp_queue_facts q = {.vhost = vhost,
                        .name = name,
                        .type = RP_QUEUE_TYPE_CLASSIC,
                        .counts_known = true,
                        .consumers_known = true,
                        .consumers = 1};
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
}

static char *hg_key(const char *vhost, const char *name) {
    char *obj = NULL;
    assert_int_equal(rp_object_queue(vhost, name, &obj), RP_OK);
    char *key = malloc(strlen(obj) + 32);
    assert_non_null(key);
    sprintf(key, "broker|HOLDER_GONE|%s", obj);
    free(obj);
    return key;
}

/* A holder-gone seen in / and in b, both ended since: a pass that listed
 * / only clears /'s and keeps b's (b was not read); a pass over every
 * vhost clears it. */
static void pass_clears_only_its_vhosts(void **state) {
    fixture *f = *state;
    put(f, "/", "vibey.a");
    char *ka = hg_key("/", "vibey.a"), *kb = hg_key("b", "vibey.a");
    assert_int_equal(rp_memory_add_sighting(f->m, ka, RP_COND_HOLDER_GONE), RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, kb, RP_COND_HOLDER_GONE), RP_OK);
    const char *only[] = {"/"};
    f->opt.vhosts = only;
    f->opt.n_vhosts = 1;
    rp_report r;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, &r), RP_OK);
    assert_true(r.ok);
    rp_report_cleanup(&r);
    assert_null(rp_memory_sighting(f->m, ka));
    assert_non_null(rp_memory_sighting(f->m, kb));
    f->opt.vhosts = NULL;
    f->opt.n_vhosts = 0;
    assert_int_equal(rp_pass_run(&f->ports, &f->opt, &r), RP_OK);
    rp_report_cleanup(&r);
    assert_null(rp_memory_sighting(f->m, kb));
    free(ka);
    free(kb);
}

/* Verdict objects name their vhost: a queue's, a dead letter's identity
 * (either form, escaped), none for jobs and kinds. */
static void verdict_names_its_vhost(void **state) {
    (void)state;
    static const struct {
        const char *object, *want;
    } cases[] = {
        {"queue:/:vibey.a", "/"},
        {"queue:tenant%3Aa%25:vibey.a", "tenant:a%"},
        {"dead_letter:id:b/vibey.work/m-1", "b"},
        {"dead_letter:id:%2F/vibey.work/m-1", "/"},
        {"dead_letter:sha256:tenant%20b/0a1b", "tenant b"},
        {"dead_letter:sha256:ab12", ""},
        {"dead_letter:id:bad%zz/q/m", ""},
        {"dead_letter:id:cut%2/q/m", ""},
        {"job:42", ""},
        {"kind:alpha:pdf", ""},
        {"project:alpha", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rp_verdict v;
        rp_verdict_init(&v);
        v.object = (char *)cases[i].object;
        char out[64] = "x";
        assert_int_equal(rp_verdict_vhost(&v, out, sizeof out), cases[i].want[0] != '\0');
        assert_string_equal(out, cases[i].want);
    }
    rp_verdict v;
    rp_verdict_init(&v);
    char out[4] = "x";
    assert_false(rp_verdict_vhost(&v, out, sizeof out)); /* no object */
    v.object = (char *)"queue:longer:q";
    assert_false(rp_verdict_vhost(&v, out, sizeof out)); /* no room */
    assert_string_equal(out, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(watched_vhosts),
        cmocka_unit_test(pager_walks_vhost_after_vhost),
        cmocka_unit_test_setup_teardown(pass_clears_only_its_vhosts, setup, teardown),
        cmocka_unit_test(verdict_names_its_vhost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
