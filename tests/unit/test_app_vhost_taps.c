/*
 * The taps of broker.vhosts (app/rp_vhost_taps.h) on a real event_base,
 * each tap part (app/rp_tap.h) over the memory park batch and a fake
 * consumer, behind a fake rp_vhost_taps_port that records its calls:
 *   - one tap per listed vhost other than broker.url's, made with its own
 *     backends and its own vhost;
 *   - which vhosts are watched (broker.url's and the listed ones);
 *   - connect starts each tap, then its replays' session, in order, and
 *     stops at the first failure (no replays for a tap that did not start);
 *   - free hands every tap's backends back to the port.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "rp_config.h"
#include "rp_memory.h"
#include "rp_memory_park_batch.h"
#include "rp_metrics.h"
#include "rp_tap.h"
#include "rp_vhost_taps.h"

/* ---- a consumer that never delivers ------------------------------------------- */

static rp_status c_start(void *self, const rp_tap_consumer_hooks *hooks) {
    (void)hooks;
    (*(int *)self)++;
    return RP_OK;
}

static bool c_true(void *self, uint64_t tag, bool multiple) {
    (void)self;
    (void)tag;
    (void)multiple;
    return true;
}

static bool c_tag(void *self, const char *tag) {
    (void)self;
    (void)tag;
    return true;
}

/* ---- the port: what it was asked, in order ------------------------------------ */

struct rp_vhost_backends {
    char vhost[32];
    int started; /* the consumer's starts */
};

typedef struct fake_port {
    rp_memory_park_batch *pb;
    rp_vhost_backends *made[8];
    size_t n_made, n_freed;
    char calls[512]; /* "tap:b replays:b ..." */
    const char *fail_tap; /* connect_tap of this vhost fails */
} fake_port;

static bool p_url_vhost_is(void *self, const char *url, const char *vhost) {
    (void)self;
    const char *v = strrchr(url, '/');
    return v != NULL && strcmp(vhost, strcmp(v + 1, "%2f") == 0 ? "/" : v + 1) == 0;
}

static rp_vhost_backends *p_new(void *self, struct event_base *base, rp_tap_deps *deps) {
    (void)base;
    fake_port *p = self;
    rp_vhost_backends *b = calloc(1, sizeof *b);
    assert_non_null(b);
    snprintf(b->vhost, sizeof b->vhost, "%s", *deps->vhost);
    deps->consumer = (rp_tap_consumer_port){
        .self = &b->started, .start = c_start, .ack = c_true, .cancel = c_tag, .consume = c_tag};
    rp_memory_park_batch_port(p->pb, &deps->store.batch);
    rp_memory_park_batch_ports(p->pb, &deps->store.ports);
    deps->bind = NULL;
    p->made[p->n_made++] = b;
    return b;
}

static void p_call(fake_port *p, const char *what, const char *vhost) {
    size_t n = strlen(p->calls);
    snprintf(p->calls + n, sizeof p->calls - n, "%s%s:%s", n ? " " : "", what, vhost);
}

static rp_status p_connect_tap(void *self, rp_vhost_backends *b, rp_tap *t, const char *vhost) {
    fake_port *p = self;
    assert_string_equal(b->vhost, vhost);
    p_call(p, "tap", vhost);
    if (p->fail_tap != NULL && strcmp(vhost, p->fail_tap) == 0) return RP_ERR_INTERNAL;
    return rp_tap_connect(t);
}

static rp_status p_connect_replays(void *self, rp_vhost_backends *b, const char *vhost,
                                   const char **err) {
    (void)err;
    assert_string_equal(b->vhost, vhost);
    p_call(self, "replays", vhost);
    return RP_OK;
}

static void p_free(void *self, rp_vhost_backends *b) {
    fake_port *p = self;
    if (b == NULL) return;
    p->n_freed++;
    free(b);
}

/* ---- the fixture ------------------------------------------------------------------ */

typedef struct fixture {
    struct event_base *base;
    rp_config cfg;
    const rp_config *cfgp;
    bool stopping;
    const char *vhost;
    unsigned generation;
    bool broker_up;
    rp_metrics metrics;
    rp_memory *m;
    fake_port port;
    rp_vhost_taps_port vtp;
    rp_tap_deps tmpl;
} fixture;

static int setup(void **state) {
    static bool threads;
    if (!threads) {
        assert_int_equal(evthread_use_pthreads(), 0);
        threads = true;
    }
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_non_null(f->base = event_base_new());
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    /* broker.url's vhost is "/" (the default URL's %2f). */
    const char *vhosts[] = {"/", "b", "c"};
    size_t lens[] = {1, 1, 1};
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_set_list(&f->cfg, RP_CFG_BROKER_VHOSTS, vhosts, lens, 3,
                                        (rp_config_origin){.source = RP_CONFIG_ENV}, &p),
                     RP_OK);
    rp_config_problems_cleanup(&p);
    f->cfgp = &f->cfg;
    f->vhost = "/";
    f->generation = 1;
    f->broker_up = true;
    rp_metrics_init(&f->metrics, "test", "test");
    f->m = rp_memory_new();
    assert_non_null(f->port.pb = rp_memory_park_batch_new(f->m, 2));
    f->vtp = (rp_vhost_taps_port){.self = &f->port,
                                  .url_vhost_is = p_url_vhost_is,
                                  .backends_new = p_new,
                                  .connect_tap = p_connect_tap,
                                  .connect_replays = p_connect_replays,
                                  .backends_free = p_free};
    f->tmpl = (rp_tap_deps){.cfg = &f->cfgp,
                            .stopping = &f->stopping,
                            .vhost = &f->vhost,
                            .broker_generation = &f->generation,
                            .broker_up = &f->broker_up,
                            .metrics = &f->metrics};
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_memory_park_batch_free(f->port.pb);
    rp_memory_free(f->m);
    rp_config_cleanup(&f->cfg);
    event_base_free(f->base);
    free(f);
    return 0;
}

static void test_a_tap_per_other_vhost(void **state) {
    fixture *f = *state;
    rp_vhost_taps *v = NULL;
    assert_true(rp_vhost_taps_watched(&v, "anything")); /* not made yet: every vhost */
    v = rp_vhost_taps_new(f->base, &f->cfgp, &f->vtp, &f->tmpl, NULL);
    assert_non_null(v);
    assert_int_equal(rp_vhost_taps_count(v), 2);
    assert_int_equal(f->port.n_made, 2);
    assert_string_equal(f->port.made[0]->vhost, "b");
    assert_string_equal(f->port.made[1]->vhost, "c");
    assert_true(rp_vhost_taps_watched(&v, "/"));
    assert_true(rp_vhost_taps_watched(&v, "b"));
    assert_true(rp_vhost_taps_watched(&v, "c"));
    assert_false(rp_vhost_taps_watched(&v, "z"));
    assert_false(rp_vhost_taps_watched(&v, "z")); /* the last one asked, again */
    assert_true(rp_vhost_taps_watched(&v, "b"));

    assert_int_equal(rp_vhost_taps_connect(v), RP_OK);
    assert_string_equal(f->port.calls, "tap:b replays:b tap:c replays:c");
    assert_int_equal(f->port.made[0]->started, 1);
    assert_int_equal(f->port.made[1]->started, 1);
    assert_false(rp_vhost_taps_busy(v));
    rp_vhost_taps_stop(v);
    rp_vhost_taps_free(v);
    assert_int_equal(f->port.n_freed, 2);
}

static void test_connect_stops_at_a_failed_tap(void **state) {
    fixture *f = *state;
    f->port.fail_tap = "b";
    rp_vhost_taps *v = rp_vhost_taps_new(f->base, &f->cfgp, &f->vtp, &f->tmpl, NULL);
    assert_non_null(v);
    assert_int_equal(rp_vhost_taps_connect(v), RP_ERR_INTERNAL);
    assert_string_equal(f->port.calls, "tap:b");
    rp_vhost_taps_stop(v);
    rp_vhost_taps_free(v);
    assert_int_equal(f->port.n_freed, 2);
}

static void test_no_other_vhost(void **state) {
    fixture *f = *state;
    const char *vhosts[] = {"/"};
    size_t lens[] = {1};
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_set_list(&f->cfg, RP_CFG_BROKER_VHOSTS, vhosts, lens, 1,
                                        (rp_config_origin){.source = RP_CONFIG_ENV}, &p),
                     RP_OK);
    rp_config_problems_cleanup(&p);
    rp_vhost_taps *v = rp_vhost_taps_new(f->base, &f->cfgp, &f->vtp, &f->tmpl, NULL);
    assert_non_null(v);
    assert_int_equal(rp_vhost_taps_count(v), 0);
    assert_true(rp_vhost_taps_watched(&v, "/"));
    assert_false(rp_vhost_taps_watched(&v, "b"));
    assert_int_equal(rp_vhost_taps_connect(v), RP_OK);
    assert_string_equal(f->port.calls, "");
    rp_vhost_taps_stop(v);
    rp_vhost_taps_free(v);
    assert_int_equal(f->port.n_made + f->port.n_freed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_tap_per_other_vhost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_stops_at_a_failed_tap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_other_vhost, setup, teardown),
    };
    return cmocka_run_group_tests_name("app_vhost_taps", tests, NULL, NULL);
}
