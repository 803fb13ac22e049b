/* The control part (app/rp_controller.h) on the memory adapter: a request
 * goes in as the transport read it (rp_control_envelope), the reply comes
 * out through a fake transport port, which the test settles (confirmed or
 * lost) by hand; store jobs run at once on the test's thread; the store
 * port's reap is a pass over the memory adapter's ports. Cases: a malformed
 * request gets a bad_request reply and is acked only when that reply is
 * confirmed (lost: left unacked, so the broker hands it over again: nothing
 * lost); a user not allowed gets no reply and is acked; status answers the
 * daemon's values; reap runs a pass and answers its verdicts; gates lists a
 * gate and answer settles it; stats answers the rows of the memory store
 * and broker, or the store's failure; answer_many and answer_set go through
 * the store port's answer-set port (a fake that records what it is given). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_controller.h"
#include "rp_memory.h"
#include "rp_memory_stats.h"
#include "rp_pass_setup.h"
#include "rp_proto.h"

#define NOW ((rp_time_ms)1700000000000LL)
#define MIN_MS 60000

/* ---- the fake transport ------------------------------------------------------ */

typedef struct fake_reply {
    char reply_to[256];
    char content_type[64];
    char own_user[64];
    char correlation_id[64];
    char *body;
    size_t body_len;
    rp_control_replied_fn done;
    void *arg;
} fake_reply;

typedef struct fixture {
    rp_config cfg;
    const rp_config *cfg_in_force;
    rp_memory *m;
    rp_ports ports;
    rp_metrics metrics;
    bool broker_up, store_up;
    rp_time_ms last_pass_at;
    int64_t open_sightings;
    rp_controller *k;
    rp_replays *replays; /* never started: no answer here is a replay */
    /* the transport */
    int replies;
    fake_reply last;
    int acks;
    uint64_t acked_tag;
    /* the store */
    int store_jobs, reaps;
    /* the answer-set port (a fake) */
    int aset_creates, aset_gets, aset_cancels;
    char aset_by[64], aset_note[64], aset_cancel_by[64];
    int64_t aset_ids[8];
    size_t aset_n_ids;
    rp_choice aset_choice;
    bool aset_dry_run;
} fixture;

static bool ft_connected(void *self) {
    RP_UNUSED(self);
    return true;
}

static rp_status ft_reply(void *self, const char *reply_to, const char *content_type,
                          const char *own_user, const char *correlation_id, rp_bytes body,
                          rp_control_replied_fn done, void *arg) {
    fixture *f = self;
    f->replies++;
    free(f->last.body);
    memset(&f->last, 0, sizeof f->last);
    snprintf(f->last.reply_to, sizeof f->last.reply_to, "%s", reply_to);
    snprintf(f->last.content_type, sizeof f->last.content_type, "%s", content_type);
    snprintf(f->last.own_user, sizeof f->last.own_user, "%s", own_user ? own_user : "");
    snprintf(f->last.correlation_id, sizeof f->last.correlation_id, "%s",
             correlation_id ? correlation_id : "");
    f->last.body = malloc(body.len + 1);
    assert_non_null(f->last.body);
    memcpy(f->last.body, body.ptr, body.len);
    f->last.body[body.len] = '\0';
    f->last.body_len = body.len;
    f->last.done = done;
    f->last.arg = arg;
    return RP_OK;
}

static void ft_ack(void *self, unsigned generation, uint64_t tag) {
    fixture *f = self;
    assert_int_equal(generation, 3);
    f->acks++;
    f->acked_tag = tag;
}

static bool ft_own_user(void *self, const rp_config *cfg, char *buf, size_t n) {
    RP_UNUSED(self);
    RP_UNUSED(cfg);
    snprintf(buf, n, "reaper");
    return true;
}

/* ---- the store port over the memory adapter ---------------------------------- */

static const rp_config *fs_config(void *self) { return &((fixture *)self)->cfg; }
static rp_status fs_ready(void *self) {
    RP_UNUSED(self);
    return RP_OK;
}

static void fs_reap(void *self, rp_pass_request *req) {
    fixture *f = self;
    f->reaps++;
    rp_pass_options opt;
    rp_pass_options_from_config(&f->cfg, &opt);
    opt.scope = req->scope;
    opt.dry_run = req->dry_run;
    opt.project = req->project;
    req->started_at = NOW;
    req->clock_offset_ms = 5;
    req->status = rp_pass_run(&f->ports, &opt, &req->report);
}

static const rp_gate_port *fs_gates(void *self) { return &((fixture *)self)->ports.gates; }
static void fs_claim_seconds(void *self, int64_t s) {
    RP_UNUSED(self);
    RP_UNUSED(s);
}
static void fs_stats(void *self, rp_control_stats_ports *out) {
    fixture *f = self;
    rp_memory_stats_port(f->m, &out->store);
    out->broker = &f->ports.broker;
    out->clock = f->ports.clock;
}
static const char *fs_claimer(void *self) {
    RP_UNUSED(self);
    return "test";
}

static rp_status fa_create(void *self, const rp_answer_set_spec *spec, rp_answer_set_made *out) {
    fixture *f = self;
    f->aset_creates++;
    snprintf(f->aset_by, sizeof f->aset_by, "%s", spec->by ? spec->by : "(null)");
    snprintf(f->aset_note, sizeof f->aset_note, "%s", spec->note ? spec->note : "(null)");
    f->aset_n_ids = spec->n_ids < 8 ? spec->n_ids : 8;
    for (size_t i = 0; i < f->aset_n_ids; i++) f->aset_ids[i] = spec->ids[i];
    f->aset_choice = spec->choice;
    f->aset_dry_run = spec->dry_run;
    out->id = spec->dry_run ? 0 : 41;
    out->total = (int64_t)spec->n_ids - 1;
    out->skipped = 1;
    out->queues = calloc(1, sizeof *out->queues);
    assert_non_null(out->queues);
    out->queues[0].queue = strdup("orders");
    assert_non_null(out->queues[0].queue);
    out->queues[0].count = out->total;
    out->n_queues = 1;
    return RP_OK;
}

static rp_status fa_get(void *self, int64_t id, rp_answer_set_row *out) {
    fixture *f = self;
    f->aset_gets++;
    RP_UNUSED(out);
    RP_UNUSED(id);
    return RP_ERR_NOT_FOUND;
}

static rp_status fa_cancel(void *self, int64_t id, const char *by, rp_answer_set_row *out) {
    fixture *f = self;
    f->aset_cancels++;
    snprintf(f->aset_cancel_by, sizeof f->aset_cancel_by, "%s", by ? by : "(null)");
    memset(out, 0, sizeof *out);
    out->id = id;
    out->state = RP_ANSWER_SET_DONE;
    return RP_ERR_CONFLICT;
}

static void fs_answer_sets(void *self, rp_answer_set_port *out) {
    *out = (rp_answer_set_port){.self = self, .create = fa_create, .get = fa_get,
                                .cancel = fa_cancel};
}

static rp_status fake_store_job(void *self, rp_work_fn fn, rp_done_fn done, void *job) {
    fixture *f = self;
    f->store_jobs++;
    fn(NULL, job);
    done(job, false);
    return RP_OK;
}

static int64_t fake_mono(void *self) {
    RP_UNUSED(self);
    return 1000;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    assert_int_equal(rp_config_validate(&f->cfg, &problems), RP_OK); /* compiles the patterns */
    rp_config_problems_cleanup(&problems);
    f->cfg_in_force = &f->cfg;
    f->m = rp_memory_new();
    assert_non_null(f->m);
    rp_memory_set_now(f->m, NOW);
    rp_memory_ports(f->m, &f->ports);
    rp_metrics_init(&f->metrics, "test", "test");
    f->broker_up = true;
    f->store_up = false;
    f->last_pass_at = 0;
    f->open_sightings = 4;
    rp_replays_deps rd = {.store_job = fake_store_job, .store_job_self = f};
    f->replays = rp_replays_new(NULL, &rd);
    assert_non_null(f->replays);
    rp_control_deps d = {
        .self = f,
        .store_job = fake_store_job,
        .mono_ms = fake_mono,
        .transport = {.self = f, .connected = ft_connected, .reply = ft_reply, .ack = ft_ack,
                      .own_user = ft_own_user},
        .store = {.self = f, .config = fs_config, .ready = fs_ready, .reap = fs_reap,
                  .gates = fs_gates, .set_claim_seconds = fs_claim_seconds,
                  .stats = fs_stats, .claimer = fs_claimer, .answer_sets = fs_answer_sets},
        .cfg = &f->cfg_in_force,
        .metrics = &f->metrics,
        .broker_up = &f->broker_up,
        .store_up = &f->store_up,
        .last_pass_at = &f->last_pass_at,
        .open_sightings = &f->open_sightings,
        .replays = f->replays,
    };
    f->k = rp_controller_new(&d);
    assert_non_null(f->k);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_controller_free(f->k);
    rp_replays_free(f->replays);
    free(f->last.body);
    rp_memory_free(f->m);
    rp_config_cleanup(&f->cfg);
    free(f);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------- */

#define JSON_CT "application/json"

static void send_req(fixture *f, const char *user, const char *body, uint64_t tag) {
    rp_control_envelope env;
    memset(&env, 0, sizeof env);
    snprintf(env.reply_to, sizeof env.reply_to, "amq.rabbitmq.reply-to.g1h2AA5yZXBseQ");
    snprintf(env.correlation_id, sizeof env.correlation_id, "c-%llu", (unsigned long long)tag);
    env.has_correlation_id = true;
    if (user) {
        snprintf(env.user, sizeof env.user, "%s", user);
        env.has_user = true;
    }
    env.content_type = (rp_bytes){(const uint8_t *)JSON_CT, strlen(JSON_CT)};
    env.body = (rp_bytes){(const uint8_t *)body, strlen(body)};
    env.body_size = strlen(body);
    rp_controller_on_request(f->k, 3, tag, &env);
}

/* The last reply read back: its tree (the caller decrefs) and its view. */
static json_t *last_reply(fixture *f, rp_proto_reply_view *v) {
    assert_string_equal(f->last.content_type, JSON_CT);
    assert_string_equal(f->last.own_user, "reaper");
    rp_proto_error err;
    rp_proto_error_init(&err);
    json_t *t = rp_proto_to_json((rp_bytes){(const uint8_t *)f->last.body, f->last.body_len},
                                 (rp_bytes){(const uint8_t *)JSON_CT, strlen(JSON_CT)}, NULL,
                                 &err);
    assert_non_null(t);
    assert_int_equal(rp_proto_reply_unwrap(t, v, &err), RP_OK);
    return t;
}

static void settle(fixture *f, rp_control_reply_fate fate, const char *word) {
    assert_non_null(f->last.done);
    rp_control_replied_fn done = f->last.done;
    f->last.done = NULL;
    done(f->last.arg, fate, word);
}

/* ---- the cases ------------------------------------------------------------------ */

/* A body that is not a request: bad_request, and the request is acked only
 * once that reply is confirmed. A reply lost with the connection leaves it
 * unacked: the broker delivers it again and it is answered again. */
static void test_malformed_error_reply_nothing_lost(void **state) {
    fixture *f = *state;
    send_req(f, "reaper", "{\"v\":1,\"op\":", 11);
    assert_int_equal(f->replies, 1);
    assert_int_equal(f->store_jobs, 0);
    assert_int_equal(f->acks, 0); /* not before the reply is confirmed */
    assert_string_equal(f->last.correlation_id, "c-11");
    rp_proto_reply_view v;
    json_t *t = last_reply(f, &v);
    assert_false(v.ok);
    assert_string_equal(v.code, "bad_request");
    assert_non_null(v.message);
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_LOST, "lost");
    assert_int_equal(f->acks, 0); /* left for the broker to hand over again */

    send_req(f, "reaper", "{\"v\":1,\"op\":", 12);
    assert_int_equal(f->replies, 2);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 1);
    assert_int_equal(f->acked_tag, 12);
}

/* A user not in control.allowed_users (empty: reaperd's own only): no
 * reply at all, acked, the store never touched. */
static void test_refused_user_no_reply_acked(void **state) {
    fixture *f = *state;
    send_req(f, "mallory", "{\"v\":1,\"op\":\"reap\"}", 21);
    assert_int_equal(f->replies, 0);
    assert_int_equal(f->acks, 1);
    assert_int_equal(f->acked_tag, 21);
    assert_int_equal(f->store_jobs, 0);
    assert_int_equal(f->reaps, 0);
    /* No user_id at all: the same. */
    send_req(f, NULL, "{\"v\":1,\"op\":\"status\"}", 22);
    assert_int_equal(f->replies, 0);
    assert_int_equal(f->acks, 2);
}

static void test_status_reply(void **state) {
    fixture *f = *state;
    send_req(f, "reaper", "{\"v\":1,\"op\":\"status\"}", 31);
    assert_int_equal(f->replies, 1);
    assert_int_equal(f->store_jobs, 0); /* on the loop */
    rp_proto_reply_view v;
    json_t *t = last_reply(f, &v);
    assert_true(v.ok);
    assert_string_equal(v.op, "status");
    assert_string_equal(json_string_value(json_object_get(v.result, "broker")), "up");
    assert_string_equal(json_string_value(json_object_get(v.result, "store")), "down");
    assert_int_equal(json_integer_value(json_object_get(v.result, "open_sightings")), 4);
    json_decref(t);
    assert_int_equal(f->acks, 0);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 1);
    assert_int_equal(f->acked_tag, 31);
}

/* A reap: a pass over the memory store on the store thread; its verdict
 * (a leased job past its lease, failed) in the reply; last_pass_at set. */
static void test_reap_reply(void **state) {
    fixture *f = *state;
    rp_mem_job j = {
        .project = "vibey",
        .kind = "send_mail",
        .state = RP_JOB_LEASED,
        .attempts = 1,
        .max_attempts = 3,
        .lease_owner = "worker-1",
        .lease_known = true,
        .lease_expires_at = NOW - 5 * MIN_MS,
        .run_after = NOW - 10 * MIN_MS,
    };
    int64_t id;
    assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
    send_req(f, "reaper", "{\"v\":1,\"op\":\"reap\"}", 41);
    assert_int_equal(f->reaps, 1);
    assert_int_equal(f->replies, 1);
    rp_proto_reply_view v;
    json_t *t = last_reply(f, &v);
    assert_true(v.ok);
    assert_string_equal(v.op, "reap");
    assert_false(json_is_true(json_object_get(v.result, "dry_run")));
    json_t *verdicts = json_object_get(v.result, "verdicts");
    assert_true(json_is_array(verdicts));
    assert_int_equal(json_array_size(verdicts), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(verdicts, 0), "condition")),
        "LEASE_EXPIRED");
    json_decref(t);
    assert_int_equal(f->last_pass_at, NOW + 5);
    assert_int_not_equal(rp_memory_job(f->m, id)->state, RP_JOB_LEASED);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 1);

    /* The same user again at once: busy (control.reap_rate_seconds), no pass. */
    send_req(f, "reaper", "{\"v\":1,\"op\":\"reap\"}", 42);
    assert_int_equal(f->reaps, 1);
    t = last_reply(f, &v);
    assert_false(v.ok);
    assert_string_equal(v.code, "busy");
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 2);
}

/* A poison job's gate: listed by gates (a store job over the memory gate
 * port), then answered dismiss (answered_by the sender), then again:
 * already_answered. */
static void test_gates_and_answer(void **state) {
    fixture *f = *state;
    rp_mem_job j = {
        .project = "vibey",
        .kind = "send_mail",
        .state = RP_JOB_LEASED,
        .attempts = 3,
        .max_attempts = 3,
        .lease_owner = "worker-1",
        .lease_known = true,
        .lease_expires_at = NOW - 5 * MIN_MS,
        .run_after = NOW - 10 * MIN_MS,
    };
    int64_t id;
    assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
    send_req(f, "reaper", "{\"v\":1,\"op\":\"reap\"}", 51);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(rp_memory_n_gates(f->m), 1);
    int64_t gate = rp_memory_gate(f->m, 0)->id;

    send_req(f, "reaper", "{\"v\":1,\"op\":\"gates\"}", 52);
    rp_proto_reply_view v;
    json_t *t = last_reply(f, &v);
    assert_true(v.ok);
    assert_string_equal(v.op, "gates");
    json_t *gates = json_object_get(v.result, "gates");
    assert_int_equal(json_array_size(gates), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(gates, 0), "id")), gate);
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");

    char body[128];
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%lld,\"choice\":\"dismiss\"}",
             (long long)gate);
    send_req(f, "reaper", body, 53);
    t = last_reply(f, &v);
    assert_true(v.ok);
    assert_string_equal(json_string_value(json_object_get(v.result, "outcome")), "dismissed");
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_true(rp_memory_gate(f->m, 0)->answered);
    assert_string_equal(rp_memory_gate(f->m, 0)->answered_by, "reaper");

    send_req(f, "reaper", body, 54);
    t = last_reply(f, &v);
    assert_true(v.ok);
    assert_string_equal(json_string_value(json_object_get(v.result, "outcome")),
                        "already_answered");
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 4);
}

/* stats: a queue the pattern owns and one it does not, a kind's claimable
 * job flagged by its WAITING_DEPTH sighting; then the store failing: an
 * error reply, acked all the same. */
static void test_stats_reply(void **state) {
    fixture *f = *state;
    rp_queue_facts q = {.vhost = "/", .name = "vibey.pdf", .counts_known = true, .ready = 7,
                        .unacked = 1, .consumers_known = true, .consumers = 2};
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
    q.name = "other";
    assert_int_equal(rp_memory_put_queue(f->m, &q), RP_OK);
    rp_mem_job j = {.project = "vibey", .kind = "send_mail", .state = RP_JOB_READY,
                    .max_attempts = 3, .run_after = NOW - 2 * MIN_MS};
    int64_t id;
    assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
    assert_int_equal(rp_memory_add_sighting(f->m, "job_queue|WAITING_DEPTH|kind:vibey:send_mail",
                                            RP_COND_WAITING_DEPTH),
                     RP_OK);
    send_req(f, "reaper", "{\"v\":1,\"op\":\"stats\"}", 61);
    assert_int_equal(f->store_jobs, 1);
    rp_proto_reply_view v;
    json_t *t = last_reply(f, &v);
    assert_true(v.ok);
    assert_string_equal(v.op, "stats");
    assert_true(json_is_null(json_object_get(v.result, "broker_note")));
    json_t *queues = json_object_get(v.result, "queues");
    assert_int_equal(json_array_size(queues), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(queues, 0), "queue")),
                        "vibey.pdf");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(queues, 0), "ready")), 7);
    json_t *kinds = json_object_get(v.result, "kinds");
    assert_int_equal(json_array_size(kinds), 1);
    json_t *k = json_array_get(kinds, 0);
    assert_string_equal(json_string_value(json_object_get(k, "kind")), "send_mail");
    assert_int_equal(json_integer_value(json_object_get(k, "waiting")), 1);
    assert_int_equal(json_integer_value(json_object_get(k, "oldest_waiting_seconds")), 120);
    assert_string_equal(json_string_value(json_array_get(json_object_get(k, "flags"), 0)),
                        "WAITING_DEPTH");
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");

    rp_memory_fail_once(f->m, RP_MEM_LIST_SIGHTINGS, RP_ERR_UNAVAILABLE, 0);
    send_req(f, "reaper", "{\"v\":1,\"op\":\"stats\"}", 62);
    t = last_reply(f, &v);
    assert_false(v.ok);
    assert_string_equal(v.code, "unavailable");
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 2);
}

/* answer_many reaches the answer-set port with the ids, the broker-validated
 * user as by and the request's own "by" as the note, and answers its
 * breakdown; answer_set answers the port's not_found and, for a cancel of
 * a set that is over, conflict naming the set's state. */
static void test_answer_many_and_answer_set(void **state) {
    fixture *f = *state;
    send_req(f, "reaper",
             "{\"v\":1,\"op\":\"answer_many\",\"choice\":\"dismiss\",\"ids\":[3,5,8],"
             "\"by\":\"night shift\"}",
             61);
    assert_int_equal(f->aset_creates, 1);
    assert_int_equal(f->aset_n_ids, 3);
    assert_int_equal(f->aset_ids[0], 3);
    assert_int_equal(f->aset_ids[2], 8);
    assert_int_equal(f->aset_choice, RP_CHOICE_DISMISS);
    assert_false(f->aset_dry_run);
    assert_string_equal(f->aset_by, "reaper");
    assert_string_equal(f->aset_note, "night shift");
    rp_proto_reply_view v;
    json_t *t = last_reply(f, &v);
    assert_true(v.ok);
    assert_int_equal(json_integer_value(json_object_get(v.result, "job")), 41);
    assert_int_equal(json_integer_value(json_object_get(v.result, "total")), 2);
    assert_int_equal(json_integer_value(json_object_get(v.result, "skipped")), 1);
    json_t *q0 = json_array_get(json_object_get(v.result, "queues"), 0);
    assert_string_equal(json_string_value(json_object_get(q0, "queue")), "orders");
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");

    send_req(f, "reaper", "{\"v\":1,\"op\":\"answer_set\",\"job\":99}", 62);
    assert_int_equal(f->aset_gets, 1);
    t = last_reply(f, &v);
    assert_false(v.ok);
    assert_string_equal(v.code, "not_found");
    assert_non_null(strstr(v.message, "no answer set 99"));
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");

    send_req(f, "reaper", "{\"v\":1,\"op\":\"answer_set\",\"job\":12,\"cancel\":true}", 63);
    assert_int_equal(f->aset_cancels, 1);
    assert_string_equal(f->aset_cancel_by, "reaper");
    t = last_reply(f, &v);
    assert_false(v.ok);
    assert_string_equal(v.code, "conflict");
    assert_non_null(strstr(v.message, "is done already"));
    json_decref(t);
    settle(f, RP_CONTROL_REPLY_CONFIRMED, "confirmed");
    assert_int_equal(f->acks, 3);
    assert_int_equal(f->store_jobs, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_malformed_error_reply_nothing_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_user_no_reply_acked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reap_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gates_and_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answer_many_and_answer_set, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
