/*
 * rp_broker_port over the management API, against the broker the
 * environment names, in a private vhost: listing page by page over more
 * than two pages (RP_ITEST_MGMT_QUEUES raises the count, e.g. to 10000, and
 * the time to make and list them is printed), a queue with unacknowledged
 * messages and no consumer, names that need encoding, a missing queue, the
 * consumer timeout in force as each version reports it, the inventory seed,
 * and refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rp_judge.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_loop.h"
#include "test_mgmt_common.h"

static char vhost[64];
static rp_mgmt_loop *loop;
static rp_mgmt_broker *broker;
static rp_broker_port port;

static int setup(void **state) {
    (void)state;
    snprintf(vhost, sizeof vhost, "rp-mgmt-broker-%d", (int)getpid());
    mt_vhost_create(vhost);
    loop = mt_loop();
    broker = rp_mgmt_broker_new(rp_mgmt_loop_bridge(loop), NULL);
    assert_non_null(broker);
    rp_mgmt_broker_port(broker, &port);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    rp_mgmt_broker_free(broker);
    rp_mgmt_loop_free(loop);
    mt_vhost_delete(vhost);
    return 0;
}

/* Every page of the listing: our vhost's queues all seen once, in order. */
static void test_list_pages(void **state) {
    (void)state;
    const char *env = getenv("RP_ITEST_MGMT_QUEUES");
    size_t want = env ? (size_t)strtoul(env, NULL, 10) : 1250;
    if (want < 1001) want = 1001; /* at least three pages of 500 */
    amqp_connection_state_t c = mt_amqp(vhost);
    long t0 = mt_now_ms();
    char name[64];
    for (size_t i = 0; i < want; i++) {
        snprintf(name, sizeof name, "rpl.%06zu", i);
        mt_declare(c, name, i % 10 == 0 ? "quorum" : "classic");
    }
    long made = mt_now_ms() - t0;
    mt_amqp_close(c);

    t0 = mt_now_ms();
    size_t seen = 0, pages = 0, max_page = 0;
    char last[64] = "";
    bool saw_last = false;
    for (size_t page = 1; !saw_last; page++) {
        rp_queue_page pg;
        rp_status st = port.list_queues(port.self, page, &pg);
        if (st != RP_OK) fail_msg("page %zu: %s", page, rp_mgmt_broker_last_error(broker));
        pages++;
        if (pg.n > max_page) max_page = pg.n;
        assert_true(pg.n <= RP_MGMT_PAGE_SIZE_MAX);
        for (size_t i = 0; i < pg.n; i++) {
            const rp_queue_facts *q = &pg.queues[i];
            assert_false(q->owned);
            assert_false(q->is_dead_letter_queue);
            if (strcmp(q->vhost, vhost) != 0) continue;
            assert_true(strcmp(q->name, last) > 0); /* stable order, nothing twice */
            snprintf(last, sizeof last, "%s", q->name);
            rp_queue_type want_type =
                atoi(q->name + 4) % 10 == 0 ? RP_QUEUE_TYPE_QUORUM : RP_QUEUE_TYPE_CLASSIC;
            assert_int_equal(q->type, want_type);
            seen++;
        }
        saw_last = pg.last;
        assert_true(pages < 1000);
    }
    long listed = mt_now_ms() - t0;
    fprintf(stderr, "%zu queues: declared in %ld ms, listed in %ld ms over %zu pages (largest %zu)\n",
            want, made, listed, pages, max_page);
    assert_int_equal(seen, want);
    assert_true(pages >= 3);
    /* Past the last page: empty, and last. */
    rp_queue_page pg;
    assert_int_equal(port.list_queues(port.self, pages + 1, &pg), RP_OK);
    assert_int_equal(pg.n, 0);
    assert_true(pg.last);
    assert_int_equal(port.list_queues(port.self, 0, &pg), RP_ERR_INVALID);
    /* Clean up now: the other tests list too. */
    mt_vhost_delete(vhost);
    mt_vhost_create(vhost);
}

/* A queue holding unacknowledged messages with nobody consuming: unacked >
 * 0 and consumers 0, once the statistics are in (before that they are
 * unknown, never 0), and the judge calls it HOLDER_GONE. */
static void test_unacked_without_consumer(void **state) {
    (void)state;
    amqp_connection_state_t c = mt_amqp(vhost);
    mt_declare(c, "rpq.held", "classic");
    for (int i = 0; i < 3; i++) mt_publish(c, "rpq.held", "work", 1700000000 + i);
    assert_true(mt_get_unacked(c, "rpq.held"));
    assert_true(mt_get_unacked(c, "rpq.held"));
    rp_queue_facts f;
    long until = mt_now_ms() + 15000;
    for (;;) {
        assert_int_equal(port.get_queue(port.self, vhost, "rpq.held", &f), RP_OK);
        if (!f.consumers_known) assert_int_equal(f.consumers, 0);
        /* The head timestamp can read null for a moment while the
         * counts are already in (seen on 3.10.8): wait for all three. */
        if (f.consumers_known && f.unacked == 2 && f.head_timestamp_known) break;
        assert_true(mt_now_ms() < until);
        mt_sleep_ms(250);
    }
    assert_string_equal(f.vhost, vhost);
    assert_string_equal(f.name, "rpq.held");
    assert_int_equal(f.type, RP_QUEUE_TYPE_CLASSIC);
    assert_int_equal(f.ready, 1);
    assert_int_equal(f.unacked, 2);
    assert_int_equal(f.consumers, 0);
    /* The head is the third message (the first two are out, unacked). */
    assert_true(f.head_timestamp_known);
    assert_true(f.head_timestamp >= 1700000000 && f.head_timestamp <= 1700000002);

    rp_queue_facts judged = f;
    judged.owned = true;
    rp_thresholds t;
    rp_thresholds_default(&t);
    rp_queue_judgement j;
    assert_int_equal(rp_judge_queue(&judged, &t, 1700000000000LL, &j), RP_OK);
    assert_int_equal(j.verdict.condition, RP_COND_HOLDER_GONE);
    assert_int_equal(j.verdict.action, RP_ACTION_SURFACED);
    rp_queue_judgement_cleanup(&j);
    mt_amqp_close(c); /* the two go back to ready */
}

static void test_missing_and_encoded_names(void **state) {
    (void)state;
    rp_queue_facts f;
    assert_int_equal(port.get_queue(port.self, vhost, "rpq.nope", &f), RP_ERR_NOT_FOUND);
    assert_non_null(strstr(rp_mgmt_broker_last_error(broker), "404"));
    assert_int_equal(port.get_queue(port.self, "rp-no-such-vhost", "x", &f), RP_ERR_NOT_FOUND);
    rp_timeout_in_force t;
    assert_int_equal(port.get_timeout_in_force(port.self, vhost, "rpq.nope", &t), RP_ERR_NOT_FOUND);
    assert_int_equal(port.get_queue(port.self, NULL, "x", &f), RP_ERR_INVALID);

    /* Names with a space, slash, hash, percent, question mark and UTF-8. */
    const char *odd = "rpq odd/#%?&+ n\xc3\xa4me";
    amqp_connection_state_t c = mt_amqp(vhost);
    mt_declare(c, odd, "classic");
    mt_amqp_close(c);
    assert_int_equal(port.get_queue(port.self, vhost, odd, &f), RP_OK);
    assert_string_equal(f.name, odd);
    /* And the default vhost "/" is encoded as %2F. */
    assert_int_equal(port.get_queue(port.self, "/", "rpq.surely-not-here", &f), RP_ERR_NOT_FOUND);
}

/* The consumer timeout in force, as this broker's version reports it. */
static void test_timeout_in_force(void **state) {
    (void)state;
    const rp_mgmt_version *v = mt_version();
    amqp_connection_state_t c = mt_amqp(vhost);
    mt_declare(c, "rpt.quorum", "quorum");
    mt_declare(c, "rpt.classic", "classic");
    mt_amqp_close(c);
    rp_timeout_in_force t;
    /* Until the queue's statistics are in, whether a policy applies is not
     * known: the value is not claimed. */
    long until = mt_now_ms() + 15000;
    for (;;) {
        assert_int_equal(port.get_timeout_in_force(port.self, vhost, "rpt.quorum", &t), RP_OK);
        assert_non_null(t.origin);
        if (strstr(t.origin, "not known yet") == NULL) break;
        assert_false(t.value_known);
        assert_true(mt_now_ms() < until);
        mt_sleep_ms(250);
    }
    fprintf(stderr, "RabbitMQ %s, quorum queue without a policy: in force %d, known %d, %" PRId64
                    " ms, origin: %s\n",
            v->text, t.in_force, t.value_known, t.value_ms, t.origin);
    /* The broker-wide value: read where the API exposes it (4.0.5:
     * /api/config/effective, administrators only), unknown where not (3.10:
     * no endpoint has it). */
    char *eff = NULL;
    long code = mt_http("GET", "/api/config/effective", NULL, &eff);
    assert_true(t.in_force);
    assert_non_null(strstr(t.origin, "broker-wide consumer_timeout"));
    if (code == 200) {
        bool found, enabled;
        int64_t ms;
        assert_int_equal(rp_mgmt_parse_effective_timeout(eff, &found, &enabled, &ms), RP_OK);
        assert_true(enabled);
        assert_true(t.value_known);
        assert_int_equal(t.value_ms, ms);
        assert_non_null(strstr(t.origin, "/api/config/effective"));
    } else {
        assert_int_equal(code, 404);
        assert_false(t.value_known);
        assert_non_null(strstr(t.origin, "has no /api/config/effective"));
    }
    /* The same value as the policy reconcile reads it on every pass. */
    rp_wide_timeout_state ws;
    int64_t wms;
    const char *wwhy;
    assert_int_equal(rp_mgmt_broker_wide_timeout(broker, &ws, &wms, &wwhy), RP_OK);
    if (code == 200) {
        assert_int_equal(ws, RP_WIDE_TIMEOUT_VALUE);
        assert_int_equal(wms, t.value_ms);
    } else {
        assert_int_equal(ws, RP_WIDE_TIMEOUT_UNREADABLE);
        assert_non_null(strstr(wwhy, "has no /api/config/effective"));
    }
    free(eff);

    /* Assumed, when the daemon chooses to. */
    rp_mgmt_broker_options o = {.assume_default_consumer_timeout = true};
    rp_mgmt_broker *assumed = rp_mgmt_broker_new(rp_mgmt_loop_bridge(loop), &o);
    rp_broker_port ap;
    rp_mgmt_broker_port(assumed, &ap);
    assert_int_equal(ap.get_timeout_in_force(ap.self, vhost, "rpt.quorum", &t), RP_OK);
    assert_true(t.in_force);
    assert_true(t.value_known);
    if (code != 200) {
        assert_int_equal(t.value_ms, 1800000);
        assert_non_null(strstr(t.origin, "assumed"));
    }
    rp_mgmt_broker_free(assumed);

    if (!rp_mgmt_version_at_least(v, 3, 12)) {
        /* 3.10/3.11: the policy key is refused, the queue argument ignored. */
        char *ev = mt_enc(vhost);
        char path[256], *body = NULL;
        snprintf(path, sizeof path, "/api/policies/%s/rp-timeout", ev);
        code = mt_http("PUT", path,
                            "{\"pattern\":\"^rpt\\\\.\",\"apply-to\":\"queues\",\"definition\":"
                            "{\"consumer-timeout\":60000}}",
                            &body);
        assert_int_equal(code, 400);
        assert_non_null(strstr(body, "consumer-timeout"));
        free(body);
        free(ev);
        return;
    }
    /* 3.12+: a policy key is read from the effective definition. */
    char *ev = mt_enc(vhost);
    char path[256];
    snprintf(path, sizeof path, "/api/policies/%s/rp-timeout", ev);
    code = mt_http("PUT", path,
                        "{\"pattern\":\"^rpt\\\\.\",\"apply-to\":\"queues\",\"definition\":"
                        "{\"consumer-timeout\":60000}}",
                        NULL);
    assert_true(code == 201 || code == 204);
    free(ev);
    assert_true(mt_wait_queue_field(vhost, "rpt.quorum", "policy", "rp-timeout", 0, 15000));
    assert_int_equal(port.get_timeout_in_force(port.self, vhost, "rpt.quorum", &t), RP_OK);
    assert_true(t.in_force);
    assert_true(t.value_known);
    assert_int_equal(t.value_ms, 60000);
    assert_non_null(strstr(t.origin, "policy rp-timeout"));
    assert_int_equal(port.get_timeout_in_force(port.self, vhost, "rpt.classic", &t), RP_OK);
    if (rp_mgmt_version_at_least(v, 4, 3)) {
        assert_false(t.in_force);
        assert_non_null(strstr(t.origin, "quorum queues only"));
    } else if (mt_wait_queue_field(vhost, "rpt.classic", "policy", "rp-timeout", 0, 15000)) {
        assert_int_equal(port.get_timeout_in_force(port.self, vhost, "rpt.classic", &t), RP_OK);
        assert_true(t.value_known);
        assert_int_equal(t.value_ms, 60000);
    }
}

typedef struct seen_owned {
    size_t n, dlq;
    bool saw_foreign;
} seen_owned;

static bool on_owned(void *arg, const char *vh, const char *name, rp_queue_type type, bool is_dlq) {
    seen_owned *s = arg;
    if (strcmp(vh, vhost) != 0) return true; /* other suites' queues */
    (void)type;
    s->n++;
    if (is_dlq) s->dlq++;
    if (strncmp(name, "rpo.", 4) != 0 && strncmp(name, "dlq.rpo.", 8) != 0) s->saw_foreign = true;
    return true;
}

static pcre2_code *compile(const char *p) {
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    assert_non_null(re);
    return re;
}

/* The inventory seed classifies as the pass does: owned by name, or a
 * dead-letter queue whose name less the suffix is owned. */
static void test_each_owned(void **state) {
    (void)state;
    amqp_connection_state_t c = mt_amqp(vhost);
    const char *names[] = {"rpo.a", "rpo.b", "rpo.a.dlq", "rpx.a", "rpx.a.dlq", "x.rpo.a"};
    for (size_t i = 0; i < 6; i++) mt_declare(c, names[i], "classic");
    mt_amqp_close(c);
    pcre2_code *owned = compile("^rpo\\."), *dlq = compile("(\\.dlq|\\.dead)$");
    seen_owned s = {0};
    size_t n = 0;
    assert_int_equal(rp_mgmt_broker_each_owned(broker, owned, dlq, on_owned, &s, &n), RP_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.dlq, 1);
    assert_false(s.saw_foreign);
    assert_true(n >= 3);
    pcre2_code_free(owned);
    pcre2_code_free(dlq);
}

/* A wrong password: refused, and the message carries no credential. */
static void test_refused_login(void **state) {
    (void)state;
    rp_mgmt_loop *l = mt_loop_as(NULL, NULL, "wrong-XYZZY-password");
    rp_mgmt_broker *b = rp_mgmt_broker_new(rp_mgmt_loop_bridge(l), NULL);
    rp_broker_port p;
    rp_mgmt_broker_port(b, &p);
    rp_queue_page pg;
    assert_int_equal(p.list_queues(p.self, 1, &pg), RP_ERR_FORBIDDEN);
    const char *e = rp_mgmt_broker_last_error(b);
    fprintf(stderr, "wrong password: %s\n", e);
    assert_non_null(strstr(e, "401"));
    assert_null(strstr(e, "XYZZY"));
    rp_mgmt_broker_free(b);
    rp_mgmt_loop_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_unacked_without_consumer),
        cmocka_unit_test(test_missing_and_encoded_names),
        cmocka_unit_test(test_timeout_in_force),
        cmocka_unit_test(test_each_owned),
        cmocka_unit_test(test_refused_login),
    };
    return cmocka_run_group_tests_name("mgmt_broker", tests, setup, teardown);
}
