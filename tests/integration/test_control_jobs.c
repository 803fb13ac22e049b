/*
 * Job triage end to end (issue #18 item 7): the control ops jobs, job and
 * cancel against a running reaperd over AMQP, in msgpack and JSON, on a
 * real job table; keyset paging with the total; cancel of a ready and of a
 * leased job (failed, lease cleared, its JobCancelled ledger event) and the
 * worker's own fenced settle failing afterwards; refusals (not_found,
 * conflict, bad input); control.allowed_users (no reply, nothing done);
 * and reaperctl jobs list|get|cancel with exit codes 0/1/2.
 * One reaperd per group, on a control queue and schema of its own.
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

#include "control_common.h"
#include "itest.h"
#include "rp_proto.h"
#include "test_daemon.h"

/* One reaperd per group: the group's names, connections and calls are
 * control_common's. */
static ctl_group W;

#define sql(...)  (void)itest_sql(W.pg, W.schema, __VA_ARGS__)
#define sqln(...) itest_sqln(W.pg, W.schema, __VA_ARGS__)
#define call_json(text)    ctl_call_json(&W, text)
#define call_msgpack(text) ctl_call_msgpack(&W, text)
#define result             ctl_result
#define err_code           ctl_err_code
#define err_message        ctl_err_message

static void restart_reaperd(const char *users_env) {
    ctl_group_restart(&W, (char *[]){(char *)users_env, NULL});
}

static int group_setup(void **state) {
    (void)state;
    ctl_group_begin(&W, "itest_jobs_", "vibey.reap.control.itest.jobs.", "jobq", "jobs");
    assert_int_equal(itest_migrate(W.schema), 0);
    W.reaperd = ctl_group_start(&W, (char *[]){"REAPER_CONTROL_ALLOWED_USERS=", NULL});
    W.amqp = itest_amqp_connect();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ctl_group_end(&W, NULL, 0);
    return 0;
}

/* Inserts a job and returns its id. */
static long add_job(const char *project, const char *kind, const char *state, const char *owner) {
    char lease[160] = "NULL, NULL";
    if (owner)
        snprintf(lease, sizeof lease, "'%s', now() + interval '1 hour'", owner);
    return atol(itest_sql(W.pg, W.schema,
                          "INSERT INTO job (project_id, kind, state, attempts, lease_owner, "
                          "lease_expires_at, payload, finished_at) VALUES ('%s', '%s', '%s', %d, %s, "
                          "'{\"n\": 1}', %s) RETURNING id",
                          project, kind, state, owner ? 1 : 0, lease,
                          strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0
                              ? "now()"
                              : "NULL"));
}

static long jint(const json_t *o, const char *k) { return (long)json_integer_value(json_object_get(o, k)); }

/* Keyset paging by id: the filters, lowest id first, the total that match
 * whatever the page, next_after until the last page; in both encodings. */
static void test_list_pages_by_id(void **state) {
    (void)state;
    long ids[7];
    const char *states[] = {"ready", "leased", "ready", "succeeded", "failed", "ready", "leased"};
    for (int i = 0; i < 7; i++)
        ids[i] = add_job("tri", i % 2 ? "mail" : "pdf", states[i],
                         strcmp(states[i], "leased") == 0 ? "w-list" : NULL);
    (void)add_job("other", "pdf", "ready", NULL);

    json_t *r = call_json("{\"v\":1,\"op\":\"jobs\",\"project\":\"tri\",\"limit\":3}");
    const json_t *res = result(r);
    const json_t *jobs = json_object_get(res, "jobs");
    assert_int_equal(json_array_size(jobs), 3);
    for (size_t i = 0; i < 3; i++) assert_int_equal(jint(json_array_get(jobs, i), "id"), ids[i]);
    assert_int_equal(jint(res, "total"), 7);
    assert_int_equal(jint(res, "next_after"), ids[2]);
    const json_t *j1 = json_array_get(jobs, 1);
    assert_string_equal(json_string_value(json_object_get(j1, "state")), "leased");
    assert_string_equal(json_string_value(json_object_get(j1, "lease_owner")), "w-list");
    assert_string_equal(json_string_value(json_object_get(j1, "kind")), "mail");
    assert_true(json_is_string(json_object_get(j1, "lease_expires_at")));
    assert_null(json_object_get(j1, "payload")); /* only `job` shows it */
    json_decref(r);

    char req[160];
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"jobs\",\"project\":\"tri\",\"limit\":3,\"after\":%ld}",
             ids[2]);
    r = call_msgpack(req);
    res = result(r);
    jobs = json_object_get(res, "jobs");
    assert_int_equal(json_array_size(jobs), 3);
    assert_int_equal(jint(json_array_get(jobs, 0), "id"), ids[3]);
    assert_int_equal(jint(res, "total"), 7);
    assert_int_equal(jint(res, "next_after"), ids[5]);
    json_decref(r);
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"jobs\",\"project\":\"tri\",\"limit\":3,\"after\":%ld}",
             ids[5]);
    r = call_json(req);
    res = result(r);
    assert_int_equal(json_array_size(json_object_get(res, "jobs")), 1);
    assert_true(json_is_null(json_object_get(res, "next_after")));
    json_decref(r);

    /* Filters: state, kind, together; "all" is every state. */
    r = call_json("{\"v\":1,\"op\":\"jobs\",\"project\":\"tri\",\"state\":\"ready\"}");
    res = result(r);
    assert_int_equal(jint(res, "total"), 3);
    assert_int_equal(json_array_size(json_object_get(res, "jobs")), 3);
    json_decref(r);
    r = call_msgpack("{\"v\":1,\"op\":\"jobs\",\"project\":\"tri\",\"state\":\"leased\",\"kind\":\"mail\"}");
    res = result(r);
    assert_int_equal(jint(res, "total"), 1); /* the other leased one is a pdf */
    assert_int_equal(jint(json_array_get(json_object_get(res, "jobs"), 0), "id"), ids[1]);
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"jobs\",\"project\":\"tri\",\"state\":\"all\",\"kind\":\"pdf\"}");
    assert_int_equal(jint(result(r), "total"), 4);
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"jobs\",\"project\":\"nobody\"}");
    res = result(r);
    assert_int_equal(jint(res, "total"), 0);
    assert_int_equal(json_array_size(json_object_get(res, "jobs")), 0);
    json_decref(r);
}

/* One job with its payload; an unknown id is not_found. */
static void test_get(void **state) {
    (void)state;
    long id = add_job("get", "pdf", "ready", NULL);
    char req[96];
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"job\",\"job\":%ld}", id);
    json_t *r = call_msgpack(req);
    const json_t *res = result(r);
    assert_int_equal(jint(json_object_get(res, "job"), "id"), id);
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "job"), "project")), "get");
    assert_string_equal(json_string_value(json_object_get(res, "payload")), "{\"n\": 1}");
    assert_true(json_is_false(json_object_get(res, "payload_truncated")));
    json_decref(r);
    /* A payload longer than RP_JOB_PAYLOAD_SHOWN characters is cut there
     * (on characters: these are two bytes each) and says so. */
    long big = atol(itest_sql(W.pg, W.schema,
                              "INSERT INTO job (project_id, kind, state, payload) VALUES ('get', "
                              "'pdf', 'ready', jsonb_build_object('s', repeat('\xc3\xa9', 20000))) "
                              "RETURNING id"));
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"job\",\"job\":%ld}", big);
    r = call_json(req);
    res = result(r);
    assert_true(json_is_true(json_object_get(res, "payload_truncated")));
    const char *pl = json_string_value(json_object_get(res, "payload"));
    assert_non_null(pl);
    assert_int_equal(strlen(pl), 7 + 2 * (RP_JOB_PAYLOAD_SHOWN - 7)); /* {"s": " then é... */
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"job\",\"job\":987654321}");
    assert_string_equal(err_code(r), "not_found");
    assert_non_null(strstr(err_message(r), "job 987654321 does not exist"));
    json_decref(r);
}

/* The worker's own settle, as the job table's workers write it: fenced on
 * its lease. Returns the rows it changed. */
static long worker_settle(long id, const char *owner) {
    return sqln("WITH s AS (UPDATE job SET state = 'succeeded', finished_at = now(), "
                "lease_owner = NULL, lease_expires_at = NULL, updated_at = now() "
                "WHERE id = %ld AND state = 'leased' AND lease_owner = '%s' RETURNING 1) "
                "SELECT count(*) FROM s",
                id, owner);
}

static long worker_heartbeat(long id, const char *owner) {
    return sqln("WITH s AS (UPDATE job SET lease_expires_at = now() + interval '5 minutes', "
                "updated_at = now() WHERE id = %ld AND state = 'leased' AND lease_owner = '%s' "
                "RETURNING 1) SELECT count(*) FROM s",
                id, owner);
}

/* A leased job cancelled: failed, lease cleared, finished, one JobCancelled
 * ledger event naming who and why; the worker's heartbeat and settle then
 * fail their fence. The same settle on a job it still holds succeeds (the
 * fence is the one workers use, not one that never matches). */
static void test_cancel_leased_fences_the_worker(void **state) {
    (void)state;
    long held = add_job("cxl", "pdf", "leased", "w-cancel");
    long other = add_job("cxl", "pdf", "leased", "w-cancel");
    long before = sqln("SELECT count(*) FROM ledger WHERE kind = 'JobCancelled'");
    char req[200];
    snprintf(req, sizeof req,
             "{\"v\":1,\"op\":\"cancel\",\"job\":%ld,\"reason\":\"stuck on a bad PDF\"}", held);
    json_t *r = call_json(req);
    const json_t *res = result(r);
    const json_t *job = json_object_get(res, "job");
    assert_int_equal(jint(job, "id"), held);
    assert_string_equal(json_string_value(json_object_get(job, "state")), "failed");
    assert_true(json_is_null(json_object_get(job, "lease_owner")));
    assert_true(json_is_null(json_object_get(job, "lease_expires_at")));
    assert_true(json_is_string(json_object_get(job, "finished_at")));
    assert_string_equal(json_string_value(json_object_get(res, "from")), "leased");
    assert_string_equal(json_string_value(json_object_get(res, "lease_owner")), "w-cancel");
    long seq = jint(res, "seq");
    assert_true(seq > 0);
    json_decref(r);

    assert_int_equal(sqln("SELECT count(*) FROM job WHERE id = %ld AND state = 'failed' AND "
                          "lease_owner IS NULL AND lease_expires_at IS NULL AND finished_at IS NOT NULL",
                          held),
                     1);
    assert_int_equal(sqln("SELECT count(*) FROM ledger WHERE kind = 'JobCancelled'"), before + 1);
    assert_int_equal(sqln("SELECT count(*) FROM ledger WHERE seq = %ld AND kind = 'JobCancelled' "
                          "AND project_id = 'cxl' AND payload->>'job' = '%ld' "
                          "AND payload->>'from' = 'leased' AND payload->>'owner' = 'w-cancel' "
                          "AND payload->>'by' = '%s' AND payload->>'reason' = 'stuck on a bad PDF' "
                          "AND payload->>'kind' = 'pdf'",
                          seq, held, itest_broker_user()),
                     1);
    /* The worker comes back: its heartbeat and its settle match nothing. */
    assert_int_equal(worker_heartbeat(held, "w-cancel"), 0);
    assert_int_equal(worker_settle(held, "w-cancel"), 0);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE id = %ld AND state = 'failed'", held), 1);
    /* The same settle on the job it still holds goes through. */
    assert_int_equal(worker_settle(other, "w-cancel"), 1);
}

/* A ready job cancels; a settled one, an already cancelled one and an
 * awaiting_human one are conflicts that change nothing; an unknown id is
 * not_found. */
static void test_cancel_refusals(void **state) {
    (void)state;
    long ready = add_job("cxr", "pdf", "ready", NULL);
    long done = add_job("cxr", "pdf", "succeeded", NULL);
    long human = add_job("cxr", "pdf", "awaiting_human", NULL);
    char req[200];
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"cancel\",\"job\":%ld,\"reason\":\"not needed\"}", ready);
    json_t *r = call_msgpack(req);
    const json_t *res = result(r);
    assert_string_equal(json_string_value(json_object_get(res, "from")), "ready");
    assert_true(json_is_null(json_object_get(res, "lease_owner")));
    json_decref(r);
    long events = sqln("SELECT count(*) FROM ledger");

    r = call_json(req); /* again: it is failed now */
    assert_string_equal(err_code(r), "conflict");
    assert_non_null(strstr(err_message(r), "is failed; only a ready or leased job can be cancelled"));
    json_decref(r);
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"cancel\",\"job\":%ld,\"reason\":\"oops\"}", done);
    r = call_json(req);
    assert_string_equal(err_code(r), "conflict");
    assert_non_null(strstr(err_message(r), "is succeeded"));
    json_decref(r);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE id = %ld AND state = 'succeeded'", done), 1);
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"cancel\",\"job\":%ld,\"reason\":\"oops\"}", human);
    r = call_json(req);
    assert_string_equal(err_code(r), "conflict");
    assert_non_null(strstr(err_message(r), "answer its gate"));
    json_decref(r);
    r = call_json("{\"v\":1,\"op\":\"cancel\",\"job\":987654321,\"reason\":\"x\"}");
    assert_string_equal(err_code(r), "not_found");
    json_decref(r);
    assert_int_equal(sqln("SELECT count(*) FROM ledger"), events);
}

/* Bad input gets bad_request naming the field, and changes nothing. */
static void test_bad_input(void **state) {
    (void)state;
    long id = add_job("bad", "pdf", "ready", NULL);
    static const struct {
        const char *body, *contains;
    } bad[] = {
        {"{\"v\":1,\"op\":\"jobs\",\"state\":\"stuck\"}", "field \"state\" must be one of ready, leased"},
        {"{\"v\":1,\"op\":\"jobs\",\"limit\":-1}", "field \"limit\" must be in 1..1000, got -1"},
        {"{\"v\":1,\"op\":\"jobs\",\"limit\":1001}", "field \"limit\" must be in 1..1000"},
        {"{\"v\":1,\"op\":\"jobs\",\"after\":-5}", "field \"after\" must be in 0.."},
        {"{\"v\":1,\"op\":\"jobs\",\"kind\":\"\"}", "field \"kind\" must not be empty"},
        {"{\"v\":1,\"op\":\"jobs\",\"owner\":\"w\"}", "unknown field \"owner\" for op jobs"},
        {"{\"v\":1,\"op\":\"job\"}", "missing field \"job\""},
        {"{\"v\":1,\"op\":\"job\",\"job\":0}", "field \"job\" must be in 1.."},
        {"{\"v\":1,\"op\":\"cancel\",\"job\":1}", "missing field \"reason\""},
        {"{\"v\":1,\"op\":\"cancel\",\"job\":1,\"reason\":\"\"}", "field \"reason\" must not be empty"},
        {"{\"v\":1,\"op\":\"cancel\",\"job\":\"1\",\"reason\":\"r\"}", "field \"job\" must be an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *r = call_json(bad[i].body);
        assert_string_equal(err_code(r), "bad_request");
        if (strstr(err_message(r), bad[i].contains) == NULL) {
            fprintf(stderr, "%s: message %s lacks %s\n", bad[i].body, err_message(r), bad[i].contains);
            fail();
        }
        json_decref(r);
    }
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE id = %ld AND state = 'ready'", id), 1);
    assert_false(W.reaperd->exited);
}

/* control.allowed_users applies to job triage as to every op: a sender not
 * listed gets no reply, and its cancel does nothing. */
static void test_sender_not_allowed(void **state) {
    (void)state;
    long id = add_job("deny", "pdf", "leased", "w-deny");
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=someone-else");
    char req[200];
    snprintf(req, sizeof req, "{\"v\":1,\"op\":\"cancel\",\"job\":%ld,\"reason\":\"no\"}", id);
    const char *bodies[] = {req, "{\"v\":1,\"op\":\"jobs\"}", "{\"v\":1,\"op\":\"job\",\"job\":1}"};
    for (size_t i = 0; i < 3; i++) {
        itest_reply r;
        assert_int_equal(itest_request(W.amqp, W.queue, "application/json", bodies[i],
                                       strlen(bodies[i]), NULL, true, "deny", &r, 1500),
                         -1);
    }
    assert_true(rp_child_wait_for(W.reaperd, "sender not allowed by control.allowed_users", 5000));
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE id = %ld AND state = 'leased' AND "
                          "lease_owner = 'w-deny'", id),
                     1);
    assert_int_equal(sqln("SELECT count(*) FROM ledger WHERE kind = 'JobCancelled' AND "
                          "payload->>'job' = '%ld'", id),
                     0);
    /* Listed: answered. */
    char env[160];
    snprintf(env, sizeof env, "REAPER_CONTROL_ALLOWED_USERS=someone-else,%s", itest_broker_user());
    restart_reaperd(env);
    json_t *r = call_json(req);
    assert_string_equal(json_string_value(json_object_get(result(r), "from")), "leased");
    json_decref(r);
    restart_reaperd("REAPER_CONTROL_ALLOWED_USERS=");
}

/* Runs reaperctl against this group's reaperd; returns its exit code. */
static int ctl(char **out, char **err, const char *const *args) {
    char *argv[16] = {(char *)itest_env("REAPERCTL")};
    for (size_t i = 0; args[i] && i < 14; i++) argv[i + 1] = (char *)args[i];
    char *env[] = {W.env_queue, NULL};
    return rp_run_capture(argv, env, out, err);
}

static void ctl_expect(int rc, const char *in_out, const char *in_err, const char *const *args) {
    char *out = NULL, *err = NULL;
    int got = ctl(&out, &err, args);
    if (got != rc || (in_out && strstr(out, in_out) == NULL) || (in_err && strstr(err, in_err) == NULL)) {
        fprintf(stderr, "reaperctl %s: exit %d (want %d)\nout: %s\nerr: %s\n", args[0], got, rc, out, err);
        fail();
    }
    free(out);
    free(err);
}

/* reaperctl jobs list|get|cancel: tables for people, --json for scripts,
 * exit 0 ok, 1 refused, 2 usage (checked before anything is sent). */
static void test_reaperctl_jobs(void **state) {
    (void)state;
    long a = add_job("ctlj", "mail", "leased", "w-ctl");
    long b = add_job("ctlj", "mail", "ready", NULL);
    char ida[24], idb[24];
    snprintf(ida, sizeof ida, "%ld", a);
    snprintf(idb, sizeof idb, "%ld", b);

    ctl_expect(0, "w-ctl", NULL, (const char *[]){"jobs", "list", "--project", "ctlj", NULL});
    ctl_expect(0, "2 shown, 2 match; no more", NULL,
               (const char *[]){"jobs", "list", "--project", "ctlj", NULL});
    ctl_expect(0, "1 shown, 2 match; more: --after", NULL,
               (const char *[]){"jobs", "list", "--project", "ctlj", "--limit", "1", NULL});
    char *out = NULL, *err = NULL;
    assert_int_equal(ctl(&out, &err, (const char *[]){"jobs", "list", "--project", "ctlj", "--kind",
                                                       "mail", "--state", "ready", "--json", NULL}),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    assert_int_equal(jint(j, "total"), 1);
    assert_int_equal(jint(json_array_get(json_object_get(j, "jobs"), 0), "id"), b);
    json_decref(j);
    free(out);
    free(err);
    assert_int_equal(ctl(&out, &err, (const char *[]){"jobs", "list", "--project", "ctlj", "--after",
                                                       ida, "--json", NULL}),
                     0);
    j = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "jobs")), 1);
    assert_int_equal(jint(json_array_get(json_object_get(j, "jobs"), 0), "id"), b);
    json_decref(j);
    free(out);
    free(err);

    ctl_expect(0, "{\"n\": 1}", NULL, (const char *[]){"jobs", "get", ida, NULL});
    ctl_expect(0, "\"payload_truncated\":false", NULL, (const char *[]){"jobs", "get", ida, "--json", NULL});
    ctl_expect(1, NULL, "not_found", (const char *[]){"jobs", "get", "987654321", NULL});

    ctl_expect(0, "cancelled: leased -> failed (lease of w-ctl cleared", NULL,
               (const char *[]){"jobs", "cancel", ida, "--reason", "triage", NULL});
    assert_int_equal(worker_settle(a, "w-ctl"), 0);
    ctl_expect(1, NULL, "conflict", (const char *[]){"jobs", "cancel", ida, "--reason", "again", NULL});
    ctl_expect(0, "\"from\":\"ready\"", NULL,
               (const char *[]){"jobs", "cancel", idb, "--reason", "triage", "--json", NULL});

    /* Usage errors: exit 2, nothing sent. */
    ctl_expect(2, NULL, "--reason", (const char *[]){"jobs", "cancel", idb, NULL});
    ctl_expect(2, NULL, "limit", (const char *[]){"jobs", "list", "--limit", "-3", NULL});
    ctl_expect(2, NULL, "state", (const char *[]){"jobs", "list", "--state", "stuck", NULL});
    ctl_expect(2, NULL, "after", (const char *[]){"jobs", "list", "--after", "-1", NULL});
    ctl_expect(2, NULL, "list, get or cancel", (const char *[]){"jobs", "explode", NULL});
    ctl_expect(2, NULL, "does not go", (const char *[]){"jobs", "get", idb, "--kind", "x", NULL});
    ctl_expect(2, NULL, "does not go", (const char *[]){"status", "--reason", "x", NULL});
    ctl_expect(0, "jobs cancel ID --reason R", NULL, (const char *[]){"--help", NULL});
}

/* A cancel waits for a worker's settle in flight (the row lock) and then
 * sees what it committed: the job succeeded, so the cancel is a conflict
 * that changes nothing, not a cancel of a job already done. */
static void test_cancel_waits_for_a_settle_in_flight(void **state) {
    (void)state;
    long id = add_job("race", "pdf", "leased", "w-race");
    PGconn *worker = itest_pg_connect();
    char q[512];
    snprintf(q, sizeof q, "SET search_path = %s", W.schema);
    PQclear(PQexec(worker, q));
    PQclear(PQexec(worker, "BEGIN"));
    snprintf(q, sizeof q,
             "UPDATE job SET state = 'succeeded', finished_at = now(), lease_owner = NULL, "
             "lease_expires_at = NULL, updated_at = now() WHERE id = %ld AND state = 'leased' "
             "AND lease_owner = 'w-race'",
             id);
    PGresult *r = PQexec(worker, q);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    assert_string_equal(PQcmdTuples(r), "1");
    PQclear(r);
    char ids[24];
    snprintf(ids, sizeof ids, "%ld", id);
    char *argv[] = {(char *)itest_env("REAPERCTL"), "jobs", "cancel", ids, "--reason", "race", NULL};
    char *env[] = {W.env_queue, NULL};
    rp_child *ch = rp_child_start(argv, env);
    /* The cancel waits on the worker's row lock. */
    assert_true(itest_pg_wait_lock_waiters(1, 15000));
    PQclear(PQexec(worker, "COMMIT"));
    PQfinish(worker);
    int rc = rp_child_wait_exit(ch, 20000);
    if (rc != 1 || strstr(ch->log, "is succeeded") == NULL)
        fprintf(stderr, "reaperctl exit %d:\n%s\nreaperd:\n%s\n", rc, ch->log, W.reaperd->log);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(ch->log, "conflict"));
    assert_non_null(strstr(ch->log, "is succeeded"));
    rp_child_free(ch);
    assert_int_equal(sqln("SELECT count(*) FROM job WHERE id = %ld AND state = 'succeeded'", id), 1);
    assert_int_equal(sqln("SELECT count(*) FROM ledger WHERE kind = 'JobCancelled' AND "
                          "payload->>'job' = '%ld'", id),
                     0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_pages_by_id),
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_cancel_leased_fences_the_worker),
        cmocka_unit_test(test_cancel_refusals),
        cmocka_unit_test(test_cancel_waits_for_a_settle_in_flight),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_reaperctl_jobs),
        cmocka_unit_test(test_sender_not_allowed),
    };
    return cmocka_run_group_tests_name("control_jobs", tests, group_setup, group_teardown);
}
