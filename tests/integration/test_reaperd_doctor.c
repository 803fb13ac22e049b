/*
 * reaperd --doctor (issue #18 item 6) against the real broker and
 * PostgreSQL: a healthy setup, then each check's fail path on a setup that
 * is really broken: a wrong broker password, the AMQP and management ports
 * closed, a vhost without amq.rabbitmq.event, a user without the
 * policymaker tag, the store refused, its login refused, its host unknown,
 * its schema not migrated; open sightings and gates read back. Then the
 * control op: reaperctl doctor [--json] against a running reaperd, healthy
 * and with its management API unreachable. Each test works in a schema of
 * its own, dropped after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "test_daemon.h"

typedef struct fixture {
    PGconn *pg;
    char schema[64];
    char schema_env[96];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->pg = itest_pg_connect();
    static int n;
    snprintf(f->schema, sizeof f->schema, "itest_doc_%d_%d", (int)getpid(), n++);
    snprintf(f->schema_env, sizeof f->schema_env, "REAPER_STORE_SCHEMA=%s", f->schema);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    itest_drop_schema(f->pg, f->schema);
    PQfinish(f->pg);
    free(f);
    return 0;
}

/* Runs reaperd --doctor --json with env; returns its report (json_decref)
 * and the exit code in *rc. Nothing secret may be in what it printed. */
static json_t *doctor(char *const env[], int *rc, const char *secret) {
    char *argv[] = {(char *)itest_env("REAPERD"), "--doctor", "--json", NULL};
    char *out = NULL, *err = NULL;
    /* Only this process's queues are owned: other tests' queues on the
     * shared broker do not count in tap_bindings. */
    char owned[128], *all[16];
    size_t n = 0;
    all[n++] = (char *)itest_env_owned(owned, sizeof owned, "doc");
    for (size_t i = 0; env[i] != NULL && n < 15; i++) all[n++] = env[i];
    all[n] = NULL;
    *rc = rp_run_capture(argv, all, &out, &err);
    if (secret != NULL) {
        assert_null(strstr(out, secret));
        assert_null(strstr(err, secret));
    }
    json_t *rep = json_loads(out, 0, NULL);
    if (rep == NULL) fprintf(stderr, "doctor printed: %s\n%s\n", out, err);
    assert_non_null(rep);
    assert_int_equal(json_array_size(json_object_get(rep, "checks")), 14);
    free(out);
    free(err);
    return rep;
}

static json_t *check(json_t *rep, const char *name) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(rep, "checks"), i, c) {
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0) return c;
    }
    fail_msg("no check %s", name);
    return NULL;
}

static void expect(json_t *rep, const char *name, const char *status, const char *in_detail,
                   const char *in_fix) {
    json_t *c = check(rep, name);
    const char *st = json_string_value(json_object_get(c, "status"));
    const char *detail = json_string_value(json_object_get(c, "detail"));
    const char *fix = json_string_value(json_object_get(c, "fix"));
    if (strcmp(st, status) != 0 || (in_detail && !strstr(detail, in_detail)) ||
        (in_fix && !strstr(fix, in_fix)))
        fail_msg("%s: %s, %s (fix: %s); wanted %s with '%s' (fix '%s')", name, st, detail, fix,
                 status, in_detail ? in_detail : "", in_fix ? in_fix : "");
}

static void test_healthy_setup(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char *env[] = {f->schema_env, NULL};
    int rc;
    json_t *rep = doctor(env, &rc, NULL);
    assert_int_equal(rc, 0);
    assert_true(json_is_true(json_object_get(rep, "ok")));
    expect(rep, "broker_connection", "ok", "logged in", NULL);
    expect(rep, "management_api", "ok", "answers (RabbitMQ", NULL);
    expect(rep, "event_exchange", "ok", "amq.rabbitmq.event exists", NULL);
    expect(rep, "permissions", "ok", NULL, NULL);
    expect(rep, "store_connection", "ok", NULL, NULL);
    expect(rep, "schema_version", "ok", "this reaperd's", NULL);
    expect(rep, "queue_health", "ok", NULL, NULL);
    expect(rep, "dead_letter_backlog", "ok", "no gate is open", NULL);
    expect(rep, "remainders", "ok", NULL, NULL);
    /* No owned queue needs the tap: ok when a daemon declared it on this
     * broker before, a warning ("nothing is missed") when none did. */
    assert_string_not_equal(
        json_string_value(json_object_get(check(rep, "tap_bindings"), "status")), "fail");
    expect(rep, "wedged_queue", "ok", "no WEDGED sighting is open", NULL);
    expect(rep, "divergent_queue", "ok", "no DIVERGENT sighting is open", NULL);
    json_decref(rep);
}

/* Open sightings and an open gate, as the store holds them, are read back. */
static void test_open_findings(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    itest_sql(f->pg, f->schema,
              "INSERT INTO ledger (kind, payload) VALUES ('QueueReaped', '{}'), "
              "('QueueReaped', '{}'), ('QueueReaped', '{}')");
    itest_sql(f->pg, f->schema,
              "INSERT INTO sighting (key, condition, opened_seq, opened_at) "
              "SELECT 'STALLED/job:41', 'STALLED', min(seq), now() - interval '2 hours' FROM ledger");
    itest_sql(f->pg, f->schema,
              "INSERT INTO sighting (key, condition, opened_seq, opened_at) "
              "SELECT 'HOLDER_GONE/queue:/vibey.x', 'HOLDER_GONE', max(seq), now() FROM ledger");
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state) VALUES ('p', 'k', 'awaiting_human')");
    itest_sql(f->pg, f->schema,
              "INSERT INTO gate (job_id, kind, question, choices, created_at) "
              "SELECT max(id), 'delivery_exhausted', 'q', '{replay,dismiss}', "
              "now() - interval '3 days' FROM job");
    char *env[] = {f->schema_env, NULL};
    int rc;
    json_t *rep = doctor(env, &rc, NULL);
    assert_int_equal(rc, 0); /* findings warn, they do not fail the setup */
    expect(rep, "queue_health", "warn", "1 STALLED and 0 WAITING_DEPTH", NULL);
    expect(rep, "queue_health", "warn", "STALLED/job:41 (open 2 h)", NULL);
    expect(rep, "remainders", "warn", "HOLDER_GONE/queue:/vibey.x", NULL);
    expect(rep, "dead_letter_backlog", "warn", "1 gate is open", "reaperctl gates");
    expect(rep, "dead_letter_backlog", "warn", "the oldest 3 d old", NULL);
    json_decref(rep);
}

static void test_wrong_broker_password(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char *env[] = {f->schema_env, "REAPER_BROKER_PASSWORD=doctor-wrong-pw-8121", NULL};
    int rc;
    json_t *rep = doctor(env, &rc, "doctor-wrong-pw-8121");
    assert_int_equal(rc, 1);
    assert_true(json_is_false(json_object_get(rep, "ok")));
    expect(rep, "broker_connection", "fail", "refused the login", "REAPER_BROKER_PASSWORD");
    expect(rep, "management_api", "fail", "refused the login", "REAPER_BROKER_PASSWORD");
    expect(rep, "event_exchange", "warn", "not checked", NULL);
    expect(rep, "store_connection", "ok", NULL, NULL);
    json_decref(rep);
}

static void test_ports_closed(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char amqp[128], mgmt[128];
    snprintf(amqp, sizeof amqp, "REAPER_BROKER_URL=amqp://%s@127.0.0.1:%d/%%2f",
             itest_broker_user(), itest_closed_port());
    snprintf(mgmt, sizeof mgmt, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:%d",
             itest_closed_port());
    char *env[] = {f->schema_env, amqp, mgmt, NULL};
    int rc;
    json_t *rep = doctor(env, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "broker_connection", "fail", "connection refused", "broker.url");
    expect(rep, "management_api", "fail", "does not answer", "broker.management_url");
    expect(rep, "permissions", "warn", "not checked", NULL);
    expect(rep, "tap_bindings", "warn", "not checked", NULL);
    expect(rep, "schema_version", "ok", NULL, NULL);
    json_decref(rep);
    /* The management port alone. */
    char *env2[] = {f->schema_env, mgmt, NULL};
    rep = doctor(env2, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "broker_connection", "ok", NULL, NULL);
    expect(rep, "management_api", "fail", "does not answer", NULL);
    json_decref(rep);
}

/* amq.rabbitmq.event lives in the plugin's vhost ("/"): a reaper on
 * another vhost has none, as on a broker without the plugin. */
static void test_vhost_without_event_exchange(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char vhost[64], args[256], url[256];
    snprintf(vhost, sizeof vhost, "itest_doc_vh_%d", (int)getpid());
    snprintf(args, sizeof args, "add_vhost %s", vhost);
    assert_int_equal(itest_broker_ctl(args), 0);
    snprintf(args, sizeof args, "set_permissions -p %s %s '.*' '.*' '.*'", vhost,
             itest_broker_user());
    assert_int_equal(itest_broker_ctl(args), 0);
    const char *base = itest_env("REAPER_BROKER_URL");
    const char *slash = strrchr(base, '/');
    snprintf(url, sizeof url, "REAPER_BROKER_URL=%.*s/%s", (int)(slash - base), base, vhost);
    char *env[] = {f->schema_env, url, NULL};
    int rc;
    json_t *rep = doctor(env, &rc, NULL);
    snprintf(args, sizeof args, "delete_vhost %s", vhost);
    (void)itest_broker_ctl(args);
    assert_int_equal(rc, 1);
    expect(rep, "broker_connection", "ok", NULL, NULL);
    expect(rep, "event_exchange", "fail", "does not exist in vhost itest_doc_vh_",
           "rabbitmq-plugins enable rabbitmq_event_exchange");
    json_decref(rep);
}

static void test_user_without_policymaker(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char user[64], args[256], url[256];
    snprintf(user, sizeof user, "itest_doc_np_%d", (int)getpid());
    snprintf(args, sizeof args, "add_user %s doctor-np-pw-5512", user);
    assert_int_equal(itest_broker_ctl(args), 0);
    snprintf(args, sizeof args, "set_user_tags %s management", user);
    assert_int_equal(itest_broker_ctl(args), 0);
    snprintf(args, sizeof args, "set_permissions -p / %s '.*' '.*' '.*'", user);
    assert_int_equal(itest_broker_ctl(args), 0);
    const char *base = itest_env("REAPER_BROKER_URL"); /* amqp://reaper@host... */
    const char *at = strchr(base, '@');
    snprintf(url, sizeof url, "REAPER_BROKER_URL=amqp://%s%s", user, at);
    char *env[] = {f->schema_env, url, "REAPER_BROKER_PASSWORD=doctor-np-pw-5512", NULL};
    int rc;
    json_t *rep = doctor(env, &rc, "doctor-np-pw-5512");
    snprintf(args, sizeof args, "delete_user %s", user);
    (void)itest_broker_ctl(args);
    assert_int_equal(rc, 1);
    expect(rep, "broker_connection", "ok", NULL, NULL);
    expect(rep, "management_api", "ok", NULL, NULL);
    expect(rep, "permissions", "fail", "not policymaker", "set_user_tags itest_doc_np_");
    json_decref(rep);
}

static void test_store_layers(void **state) {
    fixture *f = *state;
    char dsn[256];
    int rc;
    /* Refused: nothing listens. */
    snprintf(dsn, sizeof dsn, "REAPER_STORE_DSN=host=127.0.0.1 port=%d dbname=vibey user=reaper",
             itest_closed_port());
    char *e1[] = {f->schema_env, dsn, NULL};
    json_t *rep = doctor(e1, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "store_connection", "fail", "layer: refused", "store.dsn");
    expect(rep, "schema_version", "warn", "not checked", NULL);
    expect(rep, "queue_health", "warn", "not checked", NULL);
    expect(rep, "broker_connection", "ok", NULL, NULL);
    json_decref(rep);
    /* Authentication: no password for the user. */
    char *e2[] = {f->schema_env, "PGPASSFILE=/nonexistent/pgpass", "PGPASSWORD=", NULL};
    rep = doctor(e2, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "store_connection", "fail", "layer: authentication", "PGPASSWORD");
    json_decref(rep);
    /* The network: a host name that does not resolve. */
    char *e3[] = {f->schema_env,
                  "REAPER_STORE_DSN=host=doctor.nonexistent.invalid dbname=vibey user=reaper",
                  NULL};
    rep = doctor(e3, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "store_connection", "fail", "layer: unreachable", "store.dsn");
    json_decref(rep);
    /* The schema: not migrated. */
    char *e4[] = {f->schema_env, NULL};
    rep = doctor(e4, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "store_connection", "fail", "layer: schema", "reaperd --migrate");
    expect(rep, "schema_version", "fail", "at migration 0 of", "reaperd --migrate");
    expect(rep, "dead_letter_backlog", "warn", "not checked", NULL);
    json_decref(rep);
}

/* An owned queue dead-letters through an exchange the tap is not bound to:
 * first with no tap queue at all, then with the tap queue unbound; then
 * bound, beside an owned queue that dead-letters through the default
 * exchange (untappable, named). */
static void test_tap_not_bound(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char origin[96], dlq[112], dlx[112], tap[96], tap_env[128];
    snprintf(origin, sizeof origin, "vibey.itest.doc%d.work", (int)getpid());
    snprintf(dlq, sizeof dlq, "%s.dlq", origin);
    snprintf(dlx, sizeof dlx, "%s.dlx", origin);
    snprintf(tap, sizeof tap, "vibey.itest.doctap%d", (int)getpid());
    snprintf(tap_env, sizeof tap_env, "REAPER_BROKER_TAP_QUEUE=%s", tap);
    amqp_connection_state_t c = itest_amqp_connect_plain();
    itest_dead_letters(c, origin, dlq, 0, 0);
    char *env[] = {f->schema_env, tap_env, NULL};
    int rc;
    json_t *rep = doctor(env, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "tap_bindings", "fail", "does not exist", "start reaperd");
    json_decref(rep);
    amqp_queue_declare(c, 1, amqp_cstring_bytes(tap), 0, 0, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    rep = doctor(env, &rc, NULL);
    assert_int_equal(rc, 1);
    expect(rep, "tap_bindings", "fail", "1 of the 1 bindings", NULL);
    json_decref(rep);
    /* Bound as the tap binds it: ok. */
    amqp_queue_bind(c, 1, amqp_cstring_bytes(tap), amqp_cstring_bytes(dlx), amqp_cstring_bytes(""),
                    amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    rep = doctor(env, &rc, NULL);
    expect(rep, "tap_bindings", "ok", "1 binding on", NULL);
    json_decref(rep);
    /* An owned queue that dead-letters through the default exchange cannot
     * be tapped: a warning that names it (issue #18 item 6), not a failure. */
    char plain[112], want[256];
    snprintf(plain, sizeof plain, "vibey.itest.doc%d.plain", (int)getpid());
    amqp_table_entry_t pargs[2] = {
        itest_te("x-dead-letter-exchange",
                 (amqp_field_value_t){AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("")}}),
        itest_te("x-dead-letter-routing-key",
                 (amqp_field_value_t){AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(dlq)}}),
    };
    amqp_queue_declare(c, 1, amqp_cstring_bytes(plain), 0, 0, 0, 0, (amqp_table_t){2, pargs});
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    rep = doctor(env, &rc, NULL);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof want,
             "1 owned queue dead-letters through the default exchange, which cannot be "
             "tapped: \"%s\"; the other 1 binding of the tap queue",
             plain);
    expect(rep, "tap_bindings", "warn", want, "x-dead-letter-exchange");
    json_decref(rep);
    itest_queue_delete(c, 1, plain);
    itest_queue_delete(c, 1, tap);
    itest_queue_delete(c, 1, origin);
    itest_queue_delete(c, 1, dlq);
    amqp_exchange_delete(c, 1, amqp_cstring_bytes(dlx), 0);
    itest_amqp_close(c);
}

/* The text form: one line per check, exit code as with --json. */
static void test_text_form(void **state) {
    fixture *f = *state;
    char *env[] = {f->schema_env, NULL};
    char *argv[] = {(char *)itest_env("REAPERD"), "--doctor", NULL};
    char *out = NULL, *err = NULL;
    assert_int_equal(rp_run_capture(argv, env, &out, &err), 1); /* not migrated */
    assert_non_null(strstr(out, "FAIL  store_connection"));
    assert_non_null(strstr(out, "(fix: reaperd --migrate)"));
    assert_non_null(strstr(out, "ok    broker_connection"));
    assert_non_null(strstr(out, " fail\n"));
    free(out);
    free(err);
}

/* reaperctl doctor against a reaperd started with env; returns its JSON
 * result (json_decref) and the exit code in *rc, and checks that the text
 * form agrees on the exit code. */
static json_t *ctl_doctor(fixture *f, char *const *daemon_env, int *rc) {
    char queue[96], env_queue[160], owned[128], dlq[160];
    snprintf(queue, sizeof queue, "vibey.reap.control.itest.doctor.%d", (int)getpid());
    snprintf(env_queue, sizeof env_queue, "REAPER_BROKER_CONTROL_QUEUE=%s", queue);
    itest_env_owned(owned, sizeof owned, "doc");
    itest_env_dead_letters(dlq, sizeof dlq, "doc");
    char *env[8] = {owned, dlq};
    size_t n = 2;
    for (size_t i = 0; daemon_env && daemon_env[i] && n < 7; i++) env[n++] = daemon_env[i];
    env[n] = NULL;
    itest_daemon_opts o = {.schema = f->schema, .control = queue, .env = env,
                           .ready = {ITEST_READY_PASS, NULL}};
    rp_child *d = itest_daemon_start(&o);
    char *argv[] = {(char *)itest_env("REAPERCTL"), "doctor", "--json", NULL};
    char *cenv[] = {env_queue, NULL};
    char *out = NULL, *err = NULL;
    *rc = rp_run_capture(argv, cenv, &out, &err);
    json_t *res = json_loads(out, 0, NULL);
    if (res == NULL) fprintf(stderr, "reaperctl doctor: %s\n%s\nreaperd: %s\n", out, err, d->log);
    assert_non_null(res);
    assert_int_equal(json_array_size(json_object_get(res, "checks")), 14);
    free(out);
    free(err);
    char *argv2[] = {(char *)itest_env("REAPERCTL"), "doctor", NULL};
    int rc2 = rp_run_capture(argv2, cenv, &out, &err);
    assert_int_equal(rc2, *rc);
    assert_non_null(strstr(out, "  broker_connection "));
    assert_non_null(strstr(out, " fail\n"));
    free(out);
    free(err);
    /* The daemon said what it did. */
    assert_true(rp_child_wait_for(d, "doctor checks run", 5000));
    amqp_connection_state_t c = itest_amqp_connect();
    assert_int_equal(itest_daemon_stop_group(d, c, queue), 0);
    itest_amqp_close(c);
    return res;
}

static void test_ctl_doctor_healthy(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    int rc;
    json_t *res = ctl_doctor(f, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_true(json_is_true(json_object_get(res, "ok")));
    expect(res, "broker_connection", "ok", "logged in", NULL);
    expect(res, "management_api", "ok", NULL, NULL);
    expect(res, "event_exchange", "ok", NULL, NULL);
    expect(res, "schema_version", "ok", NULL, NULL);
    expect(res, "wedged_queue", "ok", "no WEDGED sighting is open", NULL);
    /* The daemon's pass wrote its policy: in place now. */
    expect(res, "policies", "ok", "in place", NULL);
    json_decref(res);
}

/* A reaperd whose management API does not answer: it runs (passes note the
 * broker unreadable), and its doctor names the failing layer. */
static void test_ctl_doctor_management_down(void **state) {
    fixture *f = *state;
    assert_int_equal(itest_migrate(f->schema), 0);
    char mgmt[128];
    snprintf(mgmt, sizeof mgmt, "REAPER_BROKER_MANAGEMENT_URL=http://127.0.0.1:%d",
             itest_closed_port());
    char *env[] = {mgmt, NULL};
    int rc;
    json_t *res = ctl_doctor(f, env, &rc);
    assert_int_equal(rc, 1);
    assert_true(json_is_false(json_object_get(res, "ok")));
    expect(res, "broker_connection", "ok", NULL, NULL);
    expect(res, "management_api", "fail", "does not answer", "broker.management_url");
    expect(res, "tap_bindings", "warn", "not checked", NULL);
    expect(res, "store_connection", "ok", NULL, NULL);
    json_decref(res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy_setup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_findings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_broker_password, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ports_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vhost_without_event_exchange, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_without_policymaker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_layers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tap_not_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctl_doctor_healthy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctl_doctor_management_down, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
