/* The doctor's probes run in order (app/rp_doctor_probe.c) over a fake probe
 * port: the configuration's facts, broker.url's identity, AMQP, the
 * management API (with why it was not tried) and the store, each with the
 * doctor's own bound; a broker.url that does not parse tries neither AMQP
 * nor the management API, and the store still. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_doctor_probe.h"

typedef struct fake {
    bool url_ok;
    bool has_client;
    const char *no_client_why; /* NULL: the port gives none */
    int identity, amqp, mgmt, store;
    int timeouts_seen[3];
} fake;

static bool f_identity(void *self, const rp_config *cfg, const char **user, const char **vhost) {
    fake *f = self;
    (void)cfg;
    f->identity++;
    if (!f->url_ok) return false;
    *user = "reaper";
    *vhost = "/v";
    return true;
}

static rp_doctor_reach f_amqp(void *self, const rp_config *cfg, int timeout_ms, char *why,
                              size_t n) {
    fake *f = self;
    (void)cfg;
    f->amqp++;
    f->timeouts_seen[0] = timeout_ms;
    snprintf(why, n, "connection refused");
    return RP_REACH_REFUSED;
}

static bool f_mgmt(void *self, const rp_config *cfg, int timeout_ms, rp_doctor_facts *facts,
                   const char **why) {
    fake *f = self;
    (void)cfg;
    f->mgmt++;
    f->timeouts_seen[1] = timeout_ms;
    assert_string_equal(facts->vhost, "/v"); /* the identity is set before */
    if (!f->has_client) {
        *why = f->no_client_why;
        return false;
    }
    facts->mgmt = RP_REACH_OK;
    return true;
}

static void f_store(void *self, const rp_config *cfg, int timeout_ms, rp_doctor_facts *facts) {
    fake *f = self;
    (void)cfg;
    f->store++;
    f->timeouts_seen[2] = timeout_ms;
    facts->store = RP_REACH_OK;
}

static rp_doctor_probe_port port_of(fake *f) {
    return (rp_doctor_probe_port){.self = f,
                                  .identity = f_identity,
                                  .amqp = f_amqp,
                                  .mgmt = f_mgmt,
                                  .store = f_store};
}

static void every_probe_in_order(void **state) {
    (void)state;
    rp_config cfg;
    assert_int_equal(rp_config_init(&cfg), RP_OK);
    fake f = {.url_ok = true, .has_client = true};
    rp_doctor_probe_port port = port_of(&f);
    rp_doctor_probed out;
    rp_doctor_probe_run(&port, &cfg, &out);
    assert_int_equal(f.identity + f.amqp + f.mgmt + f.store, 4);
    assert_ptr_equal(out.facts.broker_url, cfg.broker.url);
    assert_ptr_equal(out.facts.dsn, cfg.store.dsn);
    assert_ptr_equal(out.facts.tap_queue, cfg.broker.tap_queue);
    assert_int_equal(out.facts.consumer_timeout_seconds, cfg.reap.consumer_timeout_seconds);
    assert_string_equal(out.facts.user, "reaper");
    assert_int_equal(out.facts.amqp, RP_REACH_REFUSED);
    assert_string_equal(out.facts.amqp_why, "connection refused");
    assert_int_equal(out.facts.mgmt, RP_REACH_OK);
    assert_null(out.facts.mgmt_why);
    assert_int_equal(out.facts.store, RP_REACH_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(f.timeouts_seen[i], RP_DOCTOR_TIMEOUT_MS);
    rp_config_cleanup(&cfg);
}

static void no_client_says_why(void **state) {
    (void)state;
    rp_config cfg;
    assert_int_equal(rp_config_init(&cfg), RP_OK);
    fake f = {.url_ok = true, .no_client_why = "the daemon has no management API client"};
    rp_doctor_probe_port port = port_of(&f);
    rp_doctor_probed out;
    rp_doctor_probe_run(&port, &cfg, &out);
    assert_int_equal(out.facts.mgmt, RP_REACH_NOT_TRIED);
    assert_string_equal(out.facts.mgmt_why, "the daemon has no management API client");
    f.no_client_why = NULL;
    rp_doctor_probe_run(&port, &cfg, &out);
    assert_string_equal(out.facts.mgmt_why, "no client");
    rp_config_cleanup(&cfg);
}

static void unparsable_url_tries_the_store_only(void **state) {
    (void)state;
    rp_config cfg;
    assert_int_equal(rp_config_init(&cfg), RP_OK);
    fake f = {.url_ok = false, .has_client = true};
    rp_doctor_probe_port port = port_of(&f);
    rp_doctor_probed out;
    rp_doctor_probe_run(&port, &cfg, &out);
    assert_int_equal(f.amqp, 0);
    assert_int_equal(f.mgmt, 0);
    assert_int_equal(f.store, 1);
    assert_null(out.facts.user);
    assert_int_equal(out.facts.amqp, RP_REACH_NOT_TRIED);
    assert_int_equal(out.facts.mgmt, RP_REACH_NOT_TRIED);
    assert_string_equal(out.facts.mgmt_why, "broker.url does not parse");
    rp_config_cleanup(&cfg);
}

/* reaperd --doctor's output: the judged facts as one JSON object and a
 * newline (or text), and the exit code of the judgement. */
static void doctor_output(void **state) {
    (void)state;
    rp_config cfg;
    assert_int_equal(rp_config_init(&cfg), RP_OK);
    fake f = {.url_ok = true, .has_client = true};
    rp_doctor_probe_port port = port_of(&f);
    rp_doctor_probed out;
    rp_doctor_probe_run(&port, &cfg, &out);
    rp_doctor_report rep;
    assert_int_equal(rp_doctor_judge(&out.facts, &rep), RP_OK);
    int want_rc = rp_doctor_exit_code(&rep);
    char *want = NULL;
    assert_int_equal(rp_doctor_json(&rep, &want), RP_OK);
    rp_doctor_report_cleanup(&rep);
    assert_int_equal(want_rc, 1); /* AMQP refused: a failed check */

    FILE *fp = tmpfile();
    assert_non_null(fp);
    assert_int_equal(rp_doctor_output(fp, &out.facts, true), want_rc);
    rewind(fp);
    char got[65536];
    size_t n = fread(got, 1, sizeof got - 1, fp);
    got[n] = 0;
    fclose(fp);
    assert_int_equal(n, strlen(want) + 1);
    assert_memory_equal(got, want, strlen(want));
    assert_int_equal(got[n - 1], '\n');
    free(want);

    fp = tmpfile();
    assert_non_null(fp);
    assert_int_equal(rp_doctor_output(fp, &out.facts, false), want_rc);
    assert_true(ftell(fp) > 0);
    fclose(fp);
    rp_config_cleanup(&cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_probe_in_order),
        cmocka_unit_test(no_client_says_why),
        cmocka_unit_test(unparsable_url_tries_the_store_only),
        cmocka_unit_test(doctor_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
