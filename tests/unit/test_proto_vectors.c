/* Every vector of proto/vectors/ decodes to what its .expect says, in each
 * encoding it has; request vectors survive an encode/decode round trip; and
 * reply vectors with a fixture are byte for byte what the encoders write. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_proto.h"

#ifndef RP_VECTORS_DIR
#define RP_VECTORS_DIR "proto/vectors"
#endif

static int failures;
static int checks;

static void fail_at(const char *name, const char *ext, const char *fmt, ...) RP_PRINTF(3, 4);
static void fail_at(const char *name, const char *ext, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "vector %s.%s: ", name, ext);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    failures++;
}

static const char *vectors_dir(void) {
    static char buf[4096];
    const char *src = getenv("REAPER_SOURCE_DIR");
    if (src == NULL || src[0] == '\0') return RP_VECTORS_DIR;
    snprintf(buf, sizeof buf, "%s/proto/vectors", src);
    return buf;
}

static bool read_file(const char *path, uint8_t **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return false;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    assert_non_null(b);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
            assert_non_null(b);
        }
        size_t r = fread(b + n, 1, cap - n, f);
        if (r == 0) break;
        n += r;
    }
    fclose(f);
    *out = b;
    *len = n;
    return true;
}

/* ---- fixtures: the values behind the reply vectors ---------------------- */

static void verdict(rp_verdict *v, const char *object, const char *queue, const char *project,
                    rp_condition c, double measured, int64_t threshold, const char *unit,
                    rp_action a, rp_source s, const char *detail, bool trusted) {
    rp_verdict_init(v);
    assert_int_equal(rp_verdict_set_object(v, object), RP_OK);
    assert_int_equal(rp_verdict_set_queue(v, queue), RP_OK);
    assert_int_equal(rp_verdict_set_project(v, project), RP_OK);
    assert_int_equal(rp_verdict_set_unit(v, unit), RP_OK);
    assert_int_equal(rp_verdict_set_detail(v, detail), RP_OK);
    v->condition = c;
    v->measured = measured;
    v->threshold = threshold;
    v->action = a;
    v->source = s;
    v->trusted = trusted;
}

static void v_poison(rp_verdict *v) {
    verdict(v, "job:42", "email.send", "alpha", RP_COND_POISON, 7.0, 7, "attempts", RP_ACTION_PARKED,
            RP_SOURCE_JOB_QUEUE, "job 42 used 7 of 7 attempts; parked for a person", true);
}
static void v_holder(rp_verdict *v) {
    verdict(v, "queue:/:vibey.orders", "vibey.orders", NULL, RP_COND_HOLDER_GONE, 3.0, 0, "messages",
            RP_ACTION_SURFACED, RP_SOURCE_BROKER, "3 unacked messages and no consumer", true);
}
static void v_dead(rp_verdict *v) {
    verdict(v, "dead_letter:sha256:ab12", "vibey.orders.dlq", NULL, RP_COND_DEAD_LETTER, 1.0, 1,
            "messages", RP_ACTION_PARKED, RP_SOURCE_BROKER,
            "dead-lettered from \"vibey.orders\" (rejected)", false);
}
static void v_stale(rp_verdict *v) {
    verdict(v, "job:77", "report.build", "beta", RP_COND_STALE_READY, 1200.5, 900, "seconds",
            RP_ACTION_SURFACED, RP_SOURCE_JOB_QUEUE, "oldest claimable job waited 1200.5 s", true);
}
static void v_cleared(rp_verdict *v) {
    verdict(v, "queue:/:vibey.x", NULL, NULL, RP_COND_HOLDER_GONE, NAN, 0, "messages",
            RP_ACTION_CLEARED, RP_SOURCE_BROKER, NULL, false);
}

static void add_verdict(rp_report *r, void (*make)(rp_verdict *)) {
    rp_verdict v;
    make(&v);
    assert_int_equal(rp_report_add_verdict(r, &v), RP_OK);
}

static char *dup(const char *s) { return s == NULL ? NULL : strdup(s); }

static void gates_two(rp_gate g[2]) {
    rp_gate_init(&g[0]);
    g[0].id = 5;
    g[0].job_id = 42;
    g[0].kind = RP_GATE_DELIVERY_EXHAUSTED;
    g[0].project = dup("alpha");
    g[0].question = dup("job 42 (email.send) used all 7 attempts: retry or dismiss?");
    g[0].created_at = 1714564800123;
    rp_gate_init(&g[1]);
    g[1].id = 6;
    g[1].job_id = 43;
    g[1].kind = RP_GATE_BUS_DEAD_LETTERED;
    g[1].project = dup("vibey");
    g[1].question = dup("message from vibey.orders was dead-lettered (rejected): replay or dismiss?");
    g[1].answered = true;
    g[1].answer = RP_CHOICE_REPLAY;
    g[1].answered_by = dup("alice");
    g[1].answered_at = 1714568400000;
    g[1].created_at = 1714564860000;
    g[1].queue = dup("vibey.orders.dlq");
    g[1].origin_queue = dup("vibey.orders");
    g[1].reason = dup("rejected");
    g[1].vhost = dup("/");
}

/* Two open dead-letter gates under a replay claim: a live one, a stale one. */
static void gates_replaying(rp_gate g[2]) {
    const int64_t ids[] = {8, 7}, jobs[] = {45, 44};
    const char *reasons[] = {"rejected", "expired"};
    const char *claimers[] = {"web-1:4242:1714564800000", "web-2:77:1714560000000"};
    const rp_time_ms created[] = {1714564920000, 1714564890000};
    const rp_time_ms since[] = {1714565400250, 1714561200000};
    const rp_gate_claim_state claim[] = {RP_GATE_CLAIM_LIVE, RP_GATE_CLAIM_STALE};
    for (size_t i = 0; i < 2; i++) {
        char question[128];
        snprintf(question, sizeof question,
                 "message from vibey.orders was dead-lettered (%s): replay or dismiss?", reasons[i]);
        rp_gate_init(&g[i]);
        g[i].id = ids[i];
        g[i].job_id = jobs[i];
        g[i].kind = RP_GATE_BUS_DEAD_LETTERED;
        g[i].project = dup("vibey");
        g[i].question = dup(question);
        g[i].created_at = created[i];
        g[i].queue = dup("vibey.orders.dlq");
        g[i].origin_queue = dup("vibey.orders");
        g[i].reason = dup(reasons[i]);
        g[i].vhost = dup("tenant/b");
        g[i].claim = claim[i];
        g[i].claimed_by = dup(claimers[i]);
        g[i].claimed_at = since[i];
    }
}

/* The jobs of the job triage vectors (gen.py J_LEASED, J_READY). */
static void job_leased(rp_job_row *j) {
    rp_job_row_init(j);
    j->id = 42;
    j->project = dup("alpha");
    j->kind = dup("pdf.render");
    j->state = RP_JOB_LEASED;
    j->attempts = 2;
    j->max_attempts = 7;
    j->lease_owner = dup("worker-7");
    j->has_lease_expires = true;
    j->lease_expires_at = 1714565100000;
    j->run_after = 1714561200000;
    j->created_at = 1714561200000;
    j->updated_at = 1714564800123;
}

static void job_ready(rp_job_row *j) {
    rp_job_row_init(j);
    j->id = 43;
    j->project = dup("alpha");
    j->kind = dup("pdf.render");
    j->state = RP_JOB_READY;
    j->max_attempts = 7;
    j->run_after = 1714563000000;
    j->depends_on = 42;
    j->created_at = 1714563000000;
    j->updated_at = 1714563000000;
}

static rp_status jobs_fixture(const char *name, rp_encoding enc, rp_proto_buf *out) {
    rp_job_page page;
    rp_job_page_init(&page);
    rp_status st;
    if (strcmp(name, "jobs_page") == 0 || strcmp(name, "jobs_last") == 0) {
        bool last = strcmp(name, "jobs_last") == 0;
        page.jobs = calloc(2, sizeof *page.jobs);
        assert_non_null(page.jobs);
        if (last) {
            job_ready(&page.jobs[0]);
            page.n = 1;
            page.total = 1;
        } else {
            job_leased(&page.jobs[0]);
            job_ready(&page.jobs[1]);
            page.n = 2;
            page.total = 5;
            page.next_after = 43;
        }
        st = rp_proto_encode_jobs_reply(&page, enc, out);
    } else if (strcmp(name, "jobs_empty") == 0) {
        st = rp_proto_encode_jobs_reply(&page, enc, out);
    } else if (strcmp(name, "job") == 0) {
        rp_job_row j;
        job_leased(&j);
        j.payload = dup("{\"file\": \"a.pdf\"}");
        st = rp_proto_encode_job_reply(&j, enc, out);
        rp_job_row_cleanup(&j);
    } else {
        rp_job_cancel_result r;
        rp_job_cancel_result_init(&r);
        job_leased(&r.job);
        r.job.state = RP_JOB_FAILED;
        free(r.job.lease_owner);
        r.job.lease_owner = NULL;
        r.job.has_lease_expires = false;
        r.job.has_finished = true;
        r.job.finished_at = 1714565400000;
        r.job.updated_at = 1714565400000;
        r.was = RP_JOB_LEASED;
        r.was_owner = dup("worker-7");
        r.seq = 901;
        st = rp_proto_encode_cancel_reply(&r, enc, out);
        rp_job_cancel_result_cleanup(&r);
    }
    rp_job_page_cleanup(&page);
    return st;
}

static const struct {
    const char *name, *op;
    rp_status code;
    const char *message;
} error_fixtures[] = {
    {"err_bad_request", "gates", RP_ERR_BAD_REQUEST, "field \"limit\" must be in 1..1000, got 0"},
    {"err_unknown_op", "frobnicate", RP_ERR_UNKNOWN_OP,
     "unknown op \"frobnicate\" (expected one of reap, answer, gates, status, jobs, job, cancel, "
     "gate, doctor, stats)"},
    {"err_no_op", NULL, RP_ERR_BAD_REQUEST,
     "truncated msgpack: the body ends inside a value (at byte 3)"},
    {"err_forbidden", "reap", RP_ERR_FORBIDDEN, "user \"mallory\" is not in control.allowed_users"},
    {"err_not_found", "answer", RP_ERR_NOT_FOUND, "gate 99 does not exist"},
    {"err_conflict", "answer", RP_ERR_CONFLICT, "replay refused: queue \"celery\" is not owned"},
    {"err_unavailable", "reap", RP_ERR_UNAVAILABLE, "the store is not connected"},
    {"err_internal", "status", RP_ERR_INTERNAL, "internal error"},
};

/* The doctor reply of gen.py DOCTOR_CHECKS: every check ok but a failed
 * store_connection and a warning on wedged_queue. */
static rp_status doctor_fixture(rp_encoding enc, rp_proto_buf *out) {
    rp_doctor_report r;
    memset(&r, 0, sizeof r);
    char details[RP_DOC_COUNT_][64];
    for (int i = 0; i < RP_DOC_COUNT_; i++) {
        r.checks[i].id = (rp_doctor_check_id)i;
        snprintf(details[i], sizeof details[i], "%s is fine.", rp_doctor_check_name(i));
        r.checks[i].detail = details[i];
        r.checks[i].fix = (char *)"";
    }
    r.checks[RP_DOC_STORE_CONNECTION].status = RP_DOCTOR_FAIL;
    r.checks[RP_DOC_STORE_CONNECTION].detail =
        (char *)"the store refused the login (layer: authentication): x.";
    r.checks[RP_DOC_STORE_CONNECTION].fix =
        (char *)"PGPASSWORD or PGPASSFILE for store.dsn's user (pg_hba.conf)";
    r.checks[RP_DOC_WEDGED_QUEUE].status = RP_DOCTOR_WARN;
    r.checks[RP_DOC_WEDGED_QUEUE].detail =
        (char *)"WEDGED is not judged yet by this reaperd: not judged, so not checked.";
    r.checks[RP_DOC_WEDGED_QUEUE].fix = (char *)"upgrade reaperd";
    r.n_fail = 1;
    r.n_warn = 1;
    r.n_ok = RP_DOC_COUNT_ - 2;
    return rp_proto_encode_doctor_reply(&r, enc, out);
}

/* The stats replies of gen.py STATS_QUEUES / STATS_KINDS ("stats"), and
 * one without the broker ("stats_no_broker"). */
static rp_status stats_fixture(const char *name, rp_encoding enc, rp_proto_buf *out) {
    rp_stats_queue qs[2] = {
        {.vhost = (char *)"/", .name = (char *)"vibey.pdf", .counts_known = true, .ready = 3,
         .unacked = 2, .consumers_known = true, .consumers = 1, .rates_known = true,
         .intake = 40, .drained = 25, .age_known = true, .oldest_waiting_ms = 90999,
         .flags = RP_STATS_WAITING_DEPTH},
        {.vhost = (char *)"/", .name = (char *)"vibey.x"},
    };
    rp_stats_kind ks[2] = {
        {.project = (char *)"alpha", .kind = (char *)"pdf", .waiting = 4, .active = 2,
         .intake = 10, .drained = 6, .age_known = true, .oldest_waiting_ms = 61000,
         .flags = RP_STATS_WEDGED | RP_STATS_STALLED},
        {.project = (char *)"alpha", .kind = (char *)"mail", .active = 1, .intake = 1},
    };
    rp_stats s = {.window_seconds = 86400, .broker_read = true, .queues = qs, .n_queues = 2,
                  .kinds = ks, .n_kinds = 2, .kinds_omitted = 7};
    if (strcmp(name, "stats_no_broker") == 0)
        s = (rp_stats){.window_seconds = 3600,
                       .broker_note = (char *)"the broker's queues could not be listed "
                                              "(unavailable); only the job table is shown"};
    return rp_proto_encode_stats_reply(&s, enc, out);
}

/* Encodes the fixture called name. Returns false when there is none. */
static bool fixture_encode(const char *name, rp_encoding enc, rp_proto_buf *out) {
    rp_report r;
    rp_verdict v;
    rp_status st;
    if (strncmp(name, "reap_", 5) == 0) {
        rp_report_init(&r, strcmp(name, "reap_empty") == 0);
        if (strcmp(name, "reap_ok") == 0) {
            add_verdict(&r, v_poison);
            add_verdict(&r, v_holder);
            add_verdict(&r, v_dead);
            assert_int_equal(rp_report_add_note(&r, "quorum queue vibey.orders reports no head age"), RP_OK);
            assert_int_equal(rp_report_add_policy(&r, "vibey-reap", true, "consumer-timeout 21600000 in force"),
                             RP_OK);
            assert_int_equal(rp_report_add_policy_vhost(&r, "/", true), RP_OK);
            assert_int_equal(rp_report_add_policy_vhost(&r, "orders", true), RP_OK);
        } else if (strcmp(name, "reap_unreadable") == 0) {
            assert_int_equal(rp_report_add_unreadable(&r, "store: connection refused"), RP_OK);
        }
        st = rp_proto_encode_reap_reply(&r, enc, out);
        rp_report_cleanup(&r);
    } else if (strcmp(name, "answer_replayed") == 0) {
        st = rp_proto_encode_answer_reply(17, RP_CHOICE_REPLAY, RP_OUTCOME_REPLAYED, enc, out);
    } else if (strcmp(name, "answer_already") == 0) {
        st = rp_proto_encode_answer_reply(18, RP_CHOICE_DISMISS, RP_OUTCOME_ALREADY_ANSWERED, enc, out);
    } else if (strcmp(name, "gates_two") == 0) {
        rp_gate g[2];
        gates_two(g);
        rp_gate_page gp = {.total = 7, .next_after = 5}; /* five more below gate 5 */
        st = rp_proto_encode_gates_reply(g, 2, &gp, enc, out);
        rp_gate_cleanup(&g[0]);
        rp_gate_cleanup(&g[1]);
    } else if (strcmp(name, "gates_replaying") == 0) {
        rp_gate g[2];
        gates_replaying(g);
        rp_gate_page gp = {.total = 2, .next_after = 0};
        st = rp_proto_encode_gates_reply(g, 2, &gp, enc, out);
        rp_gate_cleanup(&g[0]);
        rp_gate_cleanup(&g[1]);
    } else if (strcmp(name, "gates_capped") == 0) {
        rp_gate_page gp = {.total = RP_GATE_TOTAL_CAP, .total_capped = true};
        st = rp_proto_encode_gates_reply(NULL, 0, &gp, enc, out);
    } else if (strcmp(name, "gates_empty") == 0) {
        rp_gate_page gp0 = {0};
        st = rp_proto_encode_gates_reply(NULL, 0, &gp0, enc, out);
    } else if (strncmp(name, "jobs_", 5) == 0 || strcmp(name, "job") == 0 ||
               strcmp(name, "cancel_leased") == 0) {
        st = jobs_fixture(name, enc, out);
    } else if (strcmp(name, "status") == 0) {
        rp_proto_status s = {"0.1.0-7741df0", true, false, 1714564800000, 3};
        st = rp_proto_encode_status_reply(&s, enc, out);
    } else if (strcmp(name, "status_never") == 0) {
        rp_proto_status s = {"0.1.0", true, true, 0, 0};
        st = rp_proto_encode_status_reply(&s, enc, out);
    } else if (strcmp(name, "doctor") == 0) {
        st = doctor_fixture(enc, out);
    } else if (strncmp(name, "stats", 5) == 0) {
        st = stats_fixture(name, enc, out);
    } else if (strncmp(name, "event_", 6) == 0) {
        if (strcmp(name, "event_poison") == 0) v_poison(&v);
        else if (strcmp(name, "event_stale") == 0) v_stale(&v);
        else if (strcmp(name, "event_cleared") == 0) v_cleared(&v);
        else return false;
        st = rp_proto_encode_verdict(&v, enc, out);
        rp_verdict_cleanup(&v);
    } else {
        size_t i;
        for (i = 0; i < RP_ARRAY_LEN(error_fixtures); i++)
            if (strcmp(error_fixtures[i].name, name) == 0) break;
        if (i == RP_ARRAY_LEN(error_fixtures)) return false;
        st = rp_proto_encode_error_reply(error_fixtures[i].op, error_fixtures[i].code,
                                         error_fixtures[i].message, enc, out);
    }
    assert_int_equal(st, RP_OK);
    return true;
}

/* ---- checks ------------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool same_str(const char *a, const char *b) {
    if (a == NULL || b == NULL) return a == b;
    return strcmp(a, b) == 0;
}

/* Whether req is what want (an .expect "request") says. */
static bool request_matches(const rp_request *req, const json_t *want, char *why, size_t size) {
    const char *op = jstr(want, "op");
    if (op == NULL || !same_str(rp_op_string(req->op), op)) {
        snprintf(why, size, "op %s, want %s", rp_op_string(req->op), op ? op : "?");
        return false;
    }
    switch (req->op) {
    case RP_OP_REAP:
        if (!same_str(req->reap.project, jstr(want, "project")) ||
            req->reap.dry_run != json_is_true(json_object_get(want, "dry_run"))) {
            snprintf(why, size, "reap project %s dry_run %d", req->reap.project ? req->reap.project : "(null)",
                     req->reap.dry_run);
            return false;
        }
        return true;
    case RP_OP_ANSWER:
        if (req->answer.gate != json_integer_value(json_object_get(want, "gate")) ||
            !same_str(rp_choice_string(req->answer.choice), jstr(want, "choice")) ||
            !same_str(req->answer.by, jstr(want, "by"))) {
            snprintf(why, size, "answer gate %lld choice %s by %s", (long long)req->answer.gate,
                     rp_choice_string(req->answer.choice), req->answer.by ? req->answer.by : "(null)");
            return false;
        }
        return true;
    case RP_OP_GATES:
        if (!same_str(rp_gate_state_string(req->gates.state), jstr(want, "state")) ||
            req->gates.limit != json_integer_value(json_object_get(want, "limit")) ||
            !same_str(req->gates.project, jstr(want, "project")) ||
            !same_str(req->gates.has_kind ? rp_gate_kind_string(req->gates.kind) : NULL,
                      jstr(want, "kind")) ||
            !same_str(req->gates.queue, jstr(want, "queue")) ||
            !same_str(req->gates.origin, jstr(want, "origin")) ||
            !same_str(req->gates.reason, jstr(want, "reason")) ||
            req->gates.older_than_seconds !=
                json_integer_value(json_object_get(want, "older_than_seconds")) ||
            req->gates.after != json_integer_value(json_object_get(want, "after"))) {
            snprintf(why, size, "gates state %s limit %d project %s", rp_gate_state_string(req->gates.state),
                     req->gates.limit, req->gates.project ? req->gates.project : "(null)");
            return false;
        }
        return true;
    case RP_OP_STATUS: return true;
    case RP_OP_DOCTOR: return true;
    case RP_OP_STATS: return true;
    case RP_OP_JOBS: {
        const char *state = req->jobs.any_state ? "all" : rp_job_state_string(req->jobs.state);
        if (!same_str(state, jstr(want, "state")) ||
            req->jobs.limit != json_integer_value(json_object_get(want, "limit")) ||
            req->jobs.after != json_integer_value(json_object_get(want, "after")) ||
            !same_str(req->jobs.project, jstr(want, "project")) ||
            !same_str(req->jobs.kind, jstr(want, "kind"))) {
            snprintf(why, size, "jobs state %s limit %d after %lld project %s kind %s", state,
                     req->jobs.limit, (long long)req->jobs.after,
                     req->jobs.project ? req->jobs.project : "(null)",
                     req->jobs.kind ? req->jobs.kind : "(null)");
            return false;
        }
        return true;
    }
    case RP_OP_GATE:
        if (req->gate.gate != json_integer_value(json_object_get(want, "gate")) ||
            req->gate.body_offset != json_integer_value(json_object_get(want, "body_offset")) ||
            req->gate.body_limit != json_integer_value(json_object_get(want, "body_limit"))) {
            snprintf(why, size, "gate %lld window %lld+%lld", (long long)req->gate.gate,
                     (long long)req->gate.body_offset, (long long)req->gate.body_limit);
            return false;
        }
        return true;
    case RP_OP_JOB:
        if (req->job.job != json_integer_value(json_object_get(want, "job"))) {
            snprintf(why, size, "job %lld", (long long)req->job.job);
            return false;
        }
        return true;
    case RP_OP_CANCEL:
        if (req->cancel.job != json_integer_value(json_object_get(want, "job")) ||
            !same_str(req->cancel.reason, jstr(want, "reason"))) {
            snprintf(why, size, "cancel job %lld reason %.40s", (long long)req->cancel.job,
                     req->cancel.reason ? req->cancel.reason : "(null)");
            return false;
        }
        return true;
    case RP_OP_ANSWER_MANY: {
        const json_t *ids = json_object_get(want, "ids");
        bool ok = same_str(rp_choice_string(req->answer_many.choice), jstr(want, "choice")) &&
                  req->answer_many.rate == json_integer_value(json_object_get(want, "rate")) &&
                  req->answer_many.dry_run == json_is_true(json_object_get(want, "dry_run")) &&
                  req->answer_many.n_ids == json_array_size(ids) &&
                  same_str(req->answer_many.origin, jstr(want, "origin")) &&
                  same_str(req->answer_many.by, jstr(want, "by"));
        for (size_t i = 0; ok && i < req->answer_many.n_ids; i++)
            ok = req->answer_many.ids[i] == json_integer_value(json_array_get(ids, i));
        if (!ok) {
            snprintf(why, size, "answer_many choice %s rate %d ids %zu",
                     rp_choice_string(req->answer_many.choice), req->answer_many.rate,
                     req->answer_many.n_ids);
            return false;
        }
        return true;
    }
    case RP_OP_ANSWER_SET:
        if (req->answer_set.job != json_integer_value(json_object_get(want, "job")) ||
            req->answer_set.cancel != json_is_true(json_object_get(want, "cancel"))) {
            snprintf(why, size, "answer_set job %lld cancel %d", (long long)req->answer_set.job,
                     req->answer_set.cancel);
            return false;
        }
        return true;
    default: snprintf(why, size, "no op"); return false;
    }
}

static bool error_matches(const rp_proto_error *err, rp_status st, const json_t *want, char *why,
                          size_t size) {
    const char *code = jstr(want, "code"), *contains = jstr(want, "message_contains");
    const json_t *op = json_object_get(want, "op");
    if (st == RP_OK) {
        snprintf(why, size, "decoded, want error %s", code);
        return false;
    }
    if (!same_str(rp_proto_error_code(st), code) || err->code != st) {
        snprintf(why, size, "code %s (%s), want %s", rp_proto_error_code(st), err->message, code);
        return false;
    }
    if (contains == NULL || strstr(err->message, contains) == NULL) {
        snprintf(why, size, "message \"%s\" lacks \"%s\"", err->message, contains ? contains : "?");
        return false;
    }
    if (op != NULL && !json_is_null(op)) {
        if (!err->has_op || strcmp(err->op, json_string_value(op)) != 0) {
            snprintf(why, size, "op echo \"%s\" (has %d), want \"%s\"", err->op, err->has_op,
                     json_string_value(op));
            return false;
        }
    } else if (err->has_op) {
        snprintf(why, size, "op echo \"%s\", want none", err->op);
        return false;
    }
    return true;
}

static void check_request(const char *name, const char *ext, const json_t *expect, rp_bytes body,
                          rp_bytes ct) {
    rp_request req;
    rp_proto_error err;
    char why[512];
    rp_request_init(&req);
    rp_status st = rp_request_decode(body, ct, &req, &err);
    checks++;
    if (json_is_true(json_object_get(expect, "ok"))) {
        if (st != RP_OK) {
            fail_at(name, ext, "decode failed: %s: %s", rp_status_string(st), err.message);
            return;
        }
        if (!request_matches(&req, json_object_get(expect, "request"), why, sizeof why))
            fail_at(name, ext, "decoded %s", why);
        /* Round trip through both encodings. */
        for (int e = 0; e < RP_ENC_COUNT_; e++) {
            rp_proto_buf buf;
            rp_request again;
            rp_proto_buf_init(&buf);
            rp_request_init(&again);
            rp_bytes ct2 = {(const uint8_t *)rp_encoding_content_type((rp_encoding)e),
                            strlen(rp_encoding_content_type((rp_encoding)e))};
            if (rp_request_encode(&req, (rp_encoding)e, &buf, &err) != RP_OK) {
                fail_at(name, ext, "re-encode failed: %s", err.message);
            } else if (rp_request_decode((rp_bytes){buf.ptr, buf.len}, ct2, &again, &err) != RP_OK) {
                fail_at(name, ext, "re-decode failed: %s", err.message);
            } else if (!request_matches(&again, json_object_get(expect, "request"), why, sizeof why)) {
                fail_at(name, ext, "round trip gave %s", why);
            }
            rp_request_cleanup(&again);
            rp_proto_buf_cleanup(&buf);
        }
        rp_request_cleanup(&req);
        return;
    }
    if (!error_matches(&err, st, json_object_get(expect, "error"), why, sizeof why)) {
        fail_at(name, ext, "%s", why);
        rp_request_cleanup(&req);
        return;
    }
    /* The error reply carries the same code, message and op echo. */
    rp_proto_buf buf;
    rp_proto_buf_init(&buf);
    rp_encoding enc = rp_proto_reply_encoding(ct);
    assert_int_equal(rp_proto_encode_decode_error(&err, enc, &buf), RP_OK);
    rp_bytes rct = {(const uint8_t *)rp_encoding_content_type(enc), strlen(rp_encoding_content_type(enc))};
    rp_proto_error err2;
    json_t *reply = rp_proto_to_json((rp_bytes){buf.ptr, buf.len}, rct, NULL, &err2);
    rp_proto_reply_view view;
    if (reply == NULL || rp_proto_reply_unwrap(reply, &view, &err2) != RP_OK || view.ok ||
        !same_str(view.code, rp_proto_error_code(st)) || !same_str(view.message, err.message) ||
        !same_str(view.op, err.has_op ? err.op : NULL))
        fail_at(name, ext, "error reply does not carry the error: %s", err2.message);
    json_decref(reply);
    rp_proto_buf_cleanup(&buf);
}

static void check_tree(const char *name, const char *ext, const json_t *expect, rp_bytes body,
                       rp_bytes ct, rp_encoding enc) {
    rp_proto_error err;
    char why[512];
    checks++;
    json_t *got = rp_proto_to_json(body, ct, NULL, &err);
    if (!json_is_true(json_object_get(expect, "ok"))) {
        if (got != NULL) fail_at(name, ext, "decoded, want an error");
        else if (!error_matches(&err, err.code, json_object_get(expect, "error"), why, sizeof why))
            fail_at(name, ext, "%s", why);
        json_decref(got);
        return;
    }
    if (got == NULL) {
        fail_at(name, ext, "decode failed: %s", err.message);
        return;
    }
    if (!json_equal(got, json_object_get(expect, "value"))) {
        char *s = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        fail_at(name, ext, "decoded %s", s);
        free(s);
    }
    const char *kind = jstr(expect, "kind");
    if (same_str(kind, "reply")) {
        rp_proto_reply_view view;
        if (rp_proto_reply_unwrap(got, &view, &err) != RP_OK)
            fail_at(name, ext, "unwrap failed: %s", err.message);
    }
    json_decref(got);
    const char *fixture = jstr(expect, "fixture");
    if (fixture != NULL) {
        rp_proto_buf buf;
        rp_proto_buf_init(&buf);
        if (!fixture_encode(fixture, enc, &buf)) {
            fail_at(name, ext, "no fixture %s", fixture);
        } else if (buf.len != body.len || memcmp(buf.ptr, body.ptr, body.len) != 0) {
            fail_at(name, ext, "fixture %s encodes to %zu bytes that differ from the vector's %zu", fixture,
                    buf.len, body.len);
            if (enc == RP_ENC_JSON) fprintf(stderr, "  got: %s\n", (const char *)buf.ptr);
        }
        rp_proto_buf_cleanup(&buf);
    }
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_every_vector(void **state) {
    (void)state;
    const char *dir = vectors_dir();
    DIR *d = opendir(dir);
    if (d == NULL) fail_msg("cannot open %s", dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 7 && strcmp(e->d_name + len - 7, ".expect") == 0) {
            names = realloc(names, (n + 1) * sizeof *names);
            assert_non_null(names);
            names[n++] = strndup(e->d_name, len - 7);
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);

    size_t files = 0;
    for (size_t i = 0; i < n; i++) {
        char path[8192]; /* dir and name are each under PATH_MAX */
        json_error_t je;
        snprintf(path, sizeof path, "%s/%s.expect", dir, names[i]);
        json_t *expect = json_load_file(path, 0, &je);
        if (expect == NULL) {
            fail_at(names[i], "expect", "unreadable: %s", je.text);
            free(names[i]);
            continue;
        }
        size_t here = 0;
        for (int enc = 0; enc < RP_ENC_COUNT_; enc++) {
            const char *ext = enc == RP_ENC_MSGPACK ? "msgpack" : "json";
            uint8_t *bytes;
            size_t len;
            snprintf(path, sizeof path, "%s/%s.%s", dir, names[i], ext);
            if (!read_file(path, &bytes, &len)) continue;
            here++;
            const char *ct = rp_encoding_content_type((rp_encoding)enc);
            const json_t *ctv = json_object_get(expect, "content_type");
            if (ctv != NULL) ct = json_is_string(ctv) ? json_string_value(ctv) : NULL;
            rp_bytes ctb = {(const uint8_t *)ct, ct ? strlen(ct) : 0};
            rp_bytes body = {bytes, len};
            if (same_str(jstr(expect, "kind"), "request"))
                check_request(names[i], ext, expect, body, ctb);
            else
                check_tree(names[i], ext, expect, body, ctb, (rp_encoding)enc);
            free(bytes);
        }
        if (here == 0) fail_at(names[i], "*", "no byte file beside the .expect");
        files += here;
        json_decref(expect);
        free(names[i]);
    }
    free(names);
    fprintf(stderr, "%zu vectors, %zu byte files, %d checks, %d failures\n", n, files, checks, failures);
    assert_true(n >= 150);
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_vector),
    };
    return cmocka_run_group_tests_name("proto_vectors", tests, NULL, NULL);
}
