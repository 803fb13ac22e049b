/* Requests: the one validation of a parsed tree, decode, and encode. */
#include <stdlib.h>
#include <string.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

void rp_request_init(rp_request *req) { memset(req, 0, sizeof *req); }

void rp_request_cleanup(rp_request *req) {
    free(req->reap.project);
    free(req->answer.by);
    free(req->gates.project);
    free(req->gates.queue);
    free(req->gates.origin);
    free(req->gates.reason);
    free(req->jobs.project);
    free(req->jobs.kind);
    free(req->cancel.reason);
    free(req->answer_many.ids);
    free(req->answer_many.project);
    free(req->answer_many.queue);
    free(req->answer_many.origin);
    free(req->answer_many.reason);
    free(req->answer_many.by);
    memset(req, 0, sizeof *req);
}

/* The fields each op takes, "v" and "op" included. */
static const char *const rp_fields_reap[] = {"v", "op", "project", "dry_run", NULL};
static const char *const rp_fields_answer[] = {"v", "op", "gate", "choice", "by", NULL};
static const char *const rp_fields_gates[] = {"v",      "op",     "state",  "limit",
                                               "project", "kind", "queue", "origin",
                                               "reason", "older_than_seconds", "after", NULL};
static const char *const rp_fields_status[] = {"v", "op", NULL};
static const char *const rp_fields_jobs[] = {"v",    "op",    "state", "project",
                                             "kind", "limit", "after", NULL};
static const char *const rp_fields_job[] = {"v", "op", "job", NULL};
static const char *const rp_fields_cancel[] = {"v", "op", "job", "reason", NULL};
static const char *const rp_fields_gate[] = {"v", "op", "gate", "body_offset", "body_limit", NULL};
static const char *const rp_fields_doctor[] = {"v", "op", NULL};
static const char *const rp_fields_stats[] = {"v", "op", NULL};
static const char *const rp_fields_answer_many[] = {
    "v",     "op",    "choice", "rate",   "dry_run", "ids", "project", "kind",
    "queue", "origin", "reason", "older_than_seconds", "by", NULL};
static const char *const rp_fields_answer_set[] = {"v", "op", "job", "cancel", NULL};

static const char *const *rp_fields_of(rp_op op) {
    switch (op) {
    case RP_OP_REAP: return rp_fields_reap;
    case RP_OP_ANSWER: return rp_fields_answer;
    case RP_OP_GATES: return rp_fields_gates;
    case RP_OP_STATUS: return rp_fields_status;
    case RP_OP_JOBS: return rp_fields_jobs;
    case RP_OP_JOB: return rp_fields_job;
    case RP_OP_CANCEL: return rp_fields_cancel;
    case RP_OP_GATE: return rp_fields_gate;
    case RP_OP_DOCTOR: return rp_fields_doctor;
    case RP_OP_STATS: return rp_fields_stats;
    case RP_OP_ANSWER_MANY: return rp_fields_answer_many;
    case RP_OP_ANSWER_SET: return rp_fields_answer_set;
    default: return NULL;
    }
}

static bool rp_field_known(const char *const *fields, const char *key, size_t klen) {
    for (; *fields != NULL; fields++)
        if (strlen(*fields) == klen && memcmp(*fields, key, klen) == 0) return true;
    return false;
}

/* A field's value, NULL when absent or null (null means absent). */
static const json_t *rp_field(const json_t *root, const char *name) {
    const json_t *v = json_object_get(root, name);
    return (v == NULL || json_is_null(v)) ? NULL : v;
}

static rp_status rp_missing(rp_proto_error *err, const char *name, const char *what) {
    return rp__err_set(err, RP_ERR_BAD_REQUEST, "missing field \"%s\" (%s)", name, what);
}

static rp_status rp_wrong_type(rp_proto_error *err, const char *name, const char *want,
                               const json_t *v) {
    return rp__err_set(err, RP_ERR_BAD_REQUEST, "field \"%s\" must be %s, got %s", name, want,
                       rp__type_name(v));
}

/* An optional name-like string: NULL when absent, else 1..RP_PROTO_NAME_MAX
 * bytes, copied into *out. */
static rp_status rp_get_name(const json_t *root, const char *name, char **out,
                             rp_proto_error *err) {
    const json_t *v = rp_field(root, name);
    *out = NULL;
    if (v == NULL) return RP_OK;
    if (!json_is_string(v)) return rp_wrong_type(err, name, "a string", v);
    size_t len = json_string_length(v);
    if (len == 0) return rp__err_set(err, RP_ERR_BAD_REQUEST, "field \"%s\" must not be empty", name);
    if (len > RP_PROTO_NAME_MAX)
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "field \"%s\" must be at most %u bytes, got %zu",
                           name, RP_PROTO_NAME_MAX, len);
    *out = strndup(json_string_value(v), len);
    if (*out == NULL) return rp__err_set(err, RP_ERR_NOMEM, "out of memory");
    return RP_OK;
}

/* An integer in min..max; when absent: *out = dflt if !required. */
static rp_status rp_get_int(const json_t *root, const char *name, bool required, int64_t min,
                            int64_t max, int64_t dflt, const char *what, int64_t *out,
                            rp_proto_error *err) {
    const json_t *v = rp_field(root, name);
    if (v == NULL) {
        if (required) return rp_missing(err, name, what);
        *out = dflt;
        return RP_OK;
    }
    if (!json_is_integer(v)) return rp_wrong_type(err, name, "an integer", v);
    int64_t i = (int64_t)json_integer_value(v);
    if (i < min || i > max)
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "field \"%s\" must be in %lld..%lld, got %lld",
                           name, (long long)min, (long long)max, (long long)i);
    *out = i;
    return RP_OK;
}

static rp_status rp_get_bool(const json_t *root, const char *name, bool dflt, bool *out,
                             rp_proto_error *err) {
    const json_t *v = rp_field(root, name);
    if (v == NULL) {
        *out = dflt;
        return RP_OK;
    }
    if (!json_is_boolean(v)) return rp_wrong_type(err, name, "a bool (true or false)", v);
    *out = json_is_true(v);
    return RP_OK;
}

/* A string naming one value of a small enum, checked by parse. */
static rp_status rp_get_word(const json_t *root, const char *name, bool required,
                             const char *one_of, const json_t **out, rp_proto_error *err) {
    const json_t *v = rp_field(root, name);
    *out = NULL;
    if (v == NULL) return required ? rp_missing(err, name, one_of) : RP_OK;
    if (!json_is_string(v)) return rp_wrong_type(err, name, "a string", v);
    *out = v;
    return RP_OK;
}

static rp_status rp_bad_word(const json_t *v, const char *name, const char *one_of,
                             rp_proto_error *err) {
    char q[RP_PROTO_QUOTE_MAX * 4 + 8];
    rp__quote(q, sizeof q, json_string_value(v), json_string_length(v));
    return rp__err_set(err, RP_ERR_BAD_REQUEST, "field \"%s\" must be %s, got %s", name, one_of, q);
}

static rp_status rp_validate_answer(const json_t *root, rp_request *out, rp_proto_error *err) {
    static const char one_of[] = "one of replay, dismiss, retry";
    const json_t *w;
    rp_status st = rp_get_int(root, "gate", true, 1, INT64_MAX, 0, "the gate id, a positive integer",
                              &out->answer.gate, err);
    if (st != RP_OK) return st;
    if ((st = rp_get_word(root, "choice", true, one_of, &w, err)) != RP_OK) return st;
    if (!rp_choice_parse(json_string_value(w), &out->answer.choice) ||
        strlen(json_string_value(w)) != json_string_length(w))
        return rp_bad_word(w, "choice", one_of, err);
    return rp_get_name(root, "by", &out->answer.by, err);
}

static rp_status rp_validate_gates(const json_t *root, rp_request *out, rp_proto_error *err) {
    static const char one_of[] = "one of open, answered, all";
    const json_t *w;
    int64_t limit;
    rp_status st = rp_get_word(root, "state", false, one_of, &w, err);
    if (st != RP_OK) return st;
    out->gates.state = RP_GATE_STATE_OPEN;
    if (w != NULL && !rp_gate_state_parse(json_string_value(w), &out->gates.state))
        return rp_bad_word(w, "state", one_of, err);
    if ((st = rp_get_int(root, "limit", false, RP_PROTO_LIMIT_MIN, RP_PROTO_LIMIT_MAX,
                         RP_PROTO_LIMIT_DEFAULT, "", &limit, err)) != RP_OK)
        return st;
    out->gates.limit = (int)limit;
    if ((st = rp_get_name(root, "project", &out->gates.project, err)) != RP_OK) return st;
    static const char kinds[] = "one of delivery_exhausted, bus_dead_lettered";
    if ((st = rp_get_word(root, "kind", false, kinds, &w, err)) != RP_OK) return st;
    if (w != NULL) {
        if (!rp_gate_kind_parse(json_string_value(w), &out->gates.kind) ||
            strlen(json_string_value(w)) != json_string_length(w))
            return rp_bad_word(w, "kind", kinds, err);
        out->gates.has_kind = true;
    }
    if ((st = rp_get_name(root, "queue", &out->gates.queue, err)) != RP_OK ||
        (st = rp_get_name(root, "origin", &out->gates.origin, err)) != RP_OK ||
        (st = rp_get_name(root, "reason", &out->gates.reason, err)) != RP_OK)
        return st;
    if ((st = rp_get_int(root, "older_than_seconds", false, 1, RP_PROTO_OLDER_THAN_MAX, 0, "",
                         &out->gates.older_than_seconds, err)) != RP_OK)
        return st;
    return rp_get_int(root, "after", false, 1, INT64_MAX, 0, "a gate id, a positive integer",
                      &out->gates.after, err);
}

static rp_status rp_validate_jobs(const json_t *root, rp_request *out, rp_proto_error *err) {
    static const char one_of[] = "one of ready, leased, succeeded, failed, awaiting_human, all";
    const json_t *w;
    int64_t limit;
    rp_status st = rp_get_word(root, "state", false, one_of, &w, err);
    if (st != RP_OK) return st;
    out->jobs.any_state = true;
    if (w != NULL) {
        const char *s = json_string_value(w);
        if (strlen(s) != json_string_length(w)) return rp_bad_word(w, "state", one_of, err);
        if (strcmp(s, "all") != 0) {
            if (!rp_job_state_parse(s, &out->jobs.state)) return rp_bad_word(w, "state", one_of, err);
            out->jobs.any_state = false;
        }
    }
    if ((st = rp_get_name(root, "project", &out->jobs.project, err)) != RP_OK) return st;
    if ((st = rp_get_name(root, "kind", &out->jobs.kind, err)) != RP_OK) return st;
    if ((st = rp_get_int(root, "limit", false, RP_PROTO_LIMIT_MIN, RP_PROTO_LIMIT_MAX,
                         RP_PROTO_LIMIT_DEFAULT, "", &limit, err)) != RP_OK)
        return st;
    out->jobs.limit = (int)limit;
    return rp_get_int(root, "after", false, 0, INT64_MAX, 0, "", &out->jobs.after, err);
}

static rp_status rp_validate_cancel(const json_t *root, rp_request *out, rp_proto_error *err) {
    rp_status st = rp_get_int(root, "job", true, 1, INT64_MAX, 0, "the job id, a positive integer",
                              &out->cancel.job, err);
    if (st != RP_OK) return st;
    const json_t *v = rp_field(root, "reason");
    if (v == NULL) return rp_missing(err, "reason", "why the job is cancelled, kept in the ledger");
    if (!json_is_string(v)) return rp_wrong_type(err, "reason", "a string", v);
    size_t len = json_string_length(v);
    if (len == 0) return rp__err_set(err, RP_ERR_BAD_REQUEST, "field \"reason\" must not be empty");
    if (len > RP_PROTO_REASON_MAX)
        return rp__err_set(err, RP_ERR_BAD_REQUEST,
                           "field \"reason\" must be at most %u bytes, got %zu", RP_PROTO_REASON_MAX,
                           len);
    out->cancel.reason = strndup(json_string_value(v), len);
    if (out->cancel.reason == NULL) return rp__err_set(err, RP_ERR_NOMEM, "out of memory");
    return RP_OK;
}

static rp_status rp_validate_answer_many(const json_t *root, rp_request *out,
                                         rp_proto_error *err) {
    static const char one_of[] = "one of replay, dismiss";
    const json_t *w;
    int64_t rate;
    rp_status st = rp_get_word(root, "choice", true, one_of, &w, err);
    if (st != RP_OK) return st;
    if (!rp_choice_parse(json_string_value(w), &out->answer_many.choice) ||
        strlen(json_string_value(w)) != json_string_length(w) ||
        !rp_answer_set_choice_ok(out->answer_many.choice))
        return rp_bad_word(w, "choice", one_of, err);
    if ((st = rp_get_int(root, "rate", false, 1, RP_ANSWER_SET_RATE_MAX,
                         RP_ANSWER_SET_RATE_DEFAULT, "", &rate, err)) != RP_OK)
        return st;
    out->answer_many.rate = (int)rate;
    if ((st = rp_get_bool(root, "dry_run", false, &out->answer_many.dry_run, err)) != RP_OK)
        return st;
    const json_t *ids = rp_field(root, "ids");
    if (ids != NULL) {
        if (!json_is_array(ids)) return rp_wrong_type(err, "ids", "an array of gate ids", ids);
        size_t n = json_array_size(ids);
        if (n < 1 || n > RP_ANSWER_SET_IDS_MAX)
            return rp__err_set(err, RP_ERR_BAD_REQUEST,
                               "field \"ids\" must hold 1..%d gate ids, got %zu",
                               RP_ANSWER_SET_IDS_MAX, n);
        out->answer_many.ids = calloc(n, sizeof *out->answer_many.ids);
        if (out->answer_many.ids == NULL) return rp__err_set(err, RP_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(ids, i);
            if (!json_is_integer(e) || json_integer_value(e) < 1)
                return rp__err_set(err, RP_ERR_BAD_REQUEST,
                                   "field \"ids\" must hold gate ids, positive integers; "
                                   "entry %zu is not one", i);
            out->answer_many.ids[i] = (int64_t)json_integer_value(e);
        }
        out->answer_many.n_ids = n;
    }
    if ((st = rp_get_name(root, "project", &out->answer_many.project, err)) != RP_OK) return st;
    static const char kinds[] = "one of delivery_exhausted, bus_dead_lettered";
    if ((st = rp_get_word(root, "kind", false, kinds, &w, err)) != RP_OK) return st;
    if (w != NULL) {
        if (!rp_gate_kind_parse(json_string_value(w), &out->answer_many.kind) ||
            strlen(json_string_value(w)) != json_string_length(w))
            return rp_bad_word(w, "kind", kinds, err);
        out->answer_many.has_kind = true;
    }
    if ((st = rp_get_name(root, "queue", &out->answer_many.queue, err)) != RP_OK ||
        (st = rp_get_name(root, "origin", &out->answer_many.origin, err)) != RP_OK ||
        (st = rp_get_name(root, "reason", &out->answer_many.reason, err)) != RP_OK ||
        (st = rp_get_name(root, "by", &out->answer_many.by, err)) != RP_OK)
        return st;
    return rp_get_int(root, "older_than_seconds", false, 1, RP_PROTO_OLDER_THAN_MAX, 0, "",
                      &out->answer_many.older_than_seconds, err);
}

static rp_status rp_validate(const json_t *root, rp_request *out, rp_proto_error *err) {
    static const char ops[] = "one of reap, answer, gates, status, jobs, job, cancel, gate, doctor, "
                              "stats, answer_many, answer_set";
    char q[RP_PROTO_QUOTE_MAX * 4 + 8];
    rp_status st;
    rp_op op;

    if (!json_is_object(root))
        return rp__err_set(err, RP_ERR_BAD_REQUEST, "the request must be a map, got %s",
                           rp__type_name(root));

    /* The op is noted first, whatever else is wrong, for the error reply
     * to echo it. */
    const json_t *opv = rp_field(root, "op");
    if (opv != NULL && json_is_string(opv) && err != NULL) {
        size_t n = rp__utf8_cut(json_string_value(opv), json_string_length(opv), RP_PROTO_OP_MAX);
        memcpy(err->op, json_string_value(opv), n);
        err->op[n] = '\0';
        err->has_op = true;
    }

    int64_t v;
    if ((st = rp_get_int(root, "v", true, INT64_MIN, INT64_MAX, 0, "the protocol version, 1", &v,
                         err)) != RP_OK)
        return st;
    if (v != RP_PROTO_VERSION)
        return rp__err_set(err, RP_ERR_BAD_REQUEST,
                           "unsupported protocol version %lld in field \"v\" (this server speaks %d)",
                           (long long)v, RP_PROTO_VERSION);

    if (opv == NULL) return rp_missing(err, "op", ops);
    if (!json_is_string(opv)) return rp_wrong_type(err, "op", "a string", opv);
    if (!rp_op_parse(json_string_value(opv), &op)) {
        rp__quote(q, sizeof q, json_string_value(opv), json_string_length(opv));
        return rp__err_set(err, RP_ERR_UNKNOWN_OP, "unknown op %s (expected %s)", q, ops);
    }

    const char *const *fields = rp_fields_of(op);
    const char *key;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach((json_t *)root, key, klen, val) {
        if (!rp_field_known(fields, key, klen)) {
            rp__quote(q, sizeof q, key, klen);
            return rp__err_set(err, RP_ERR_BAD_REQUEST, "unknown field %s for op %s", q,
                               rp_op_string(op));
        }
    }

    out->op = op;
    switch (op) {
    case RP_OP_REAP:
        if ((st = rp_get_name(root, "project", &out->reap.project, err)) != RP_OK) return st;
        return rp_get_bool(root, "dry_run", false, &out->reap.dry_run, err);
    case RP_OP_ANSWER: return rp_validate_answer(root, out, err);
    case RP_OP_GATES: return rp_validate_gates(root, out, err);
    case RP_OP_STATUS: return RP_OK;
    case RP_OP_JOBS: return rp_validate_jobs(root, out, err);
    case RP_OP_JOB:
        return rp_get_int(root, "job", true, 1, INT64_MAX, 0, "the job id, a positive integer",
                          &out->job.job, err);
    case RP_OP_CANCEL: return rp_validate_cancel(root, out, err);
    case RP_OP_GATE:
        if ((st = rp_get_int(root, "gate", true, 1, INT64_MAX, 0, "the gate id, a positive integer",
                             &out->gate.gate, err)) != RP_OK ||
            (st = rp_get_int(root, "body_offset", false, 0, INT64_MAX, 0, "",
                             &out->gate.body_offset, err)) != RP_OK)
            return st;
        return rp_get_int(root, "body_limit", false, 1, RP_GATE_LOOK_WINDOW_MAX,
                          RP_GATE_LOOK_WINDOW_DEFAULT, "", &out->gate.body_limit, err);
    case RP_OP_DOCTOR: return RP_OK;
    case RP_OP_STATS: return RP_OK;
    case RP_OP_ANSWER_MANY: return rp_validate_answer_many(root, out, err);
    case RP_OP_ANSWER_SET:
        if ((st = rp_get_int(root, "job", true, 1, INT64_MAX, 0,
                             "the answer set's id, a positive integer", &out->answer_set.job,
                             err)) != RP_OK)
            return st;
        return rp_get_bool(root, "cancel", false, &out->answer_set.cancel, err);
    default: return rp__err_set(err, RP_ERR_INTERNAL, "unhandled op");
    }
}

rp_status rp_request_from_json(const json_t *root, rp_request *out, rp_proto_error *err) {
    rp_request req;
    if (err != NULL) rp_proto_error_init(err);
    if (root == NULL || out == NULL) return rp__err_set(err, RP_ERR_INVALID, "no request");
    /* A tree from rp__parse has passed this already; one built elsewhere
     * has not. */
    rp_status st = rp__tree_check(root, &rp_proto_request_limits, err);
    if (st != RP_OK) return st;
    rp_request_init(&req);
    st = rp_validate(root, &req, err);
    if (st != RP_OK) {
        rp_request_cleanup(&req);
        return st;
    }
    *out = req;
    return RP_OK;
}

rp_status rp_request_decode(rp_bytes body, rp_bytes content_type, rp_request *out,
                            rp_proto_error *err) {
    rp_encoding enc;
    rp_proto_error local;
    /* The parser reports its status through err: keep one even when the
     * caller does not want it. */
    if (err == NULL) err = &local;
    rp_proto_error_init(err);
    if (out == NULL) return rp__err_set(err, RP_ERR_INVALID, "no request");
    rp_status st = rp__encoding_for(content_type, &enc, err);
    if (st != RP_OK) return st;
    json_t *root = rp__parse(body, enc, &rp_proto_request_limits, err);
    if (root == NULL) return err->code != RP_OK ? err->code : RP_ERR_INTERNAL;
    st = rp_request_from_json(root, out, err);
    json_decref(root);
    return st;
}

static json_t *rp_request_tree(const rp_request *req) {
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "v", json_integer(RP_PROTO_VERSION)) &&
              rp__set(t, "op", json_string(rp_op_string(req->op)));
    switch (req->op) {
    case RP_OP_REAP:
        if (ok && req->reap.project != NULL)
            ok = rp__set(t, "project", rp__json_string(req->reap.project));
        ok = ok && rp__set(t, "dry_run", json_boolean(req->reap.dry_run));
        break;
    case RP_OP_ANSWER:
        ok = ok && rp__set(t, "gate", json_integer(req->answer.gate)) &&
             rp__set(t, "choice", json_string(rp_choice_string(req->answer.choice)));
        if (ok && req->answer.by != NULL) ok = rp__set(t, "by", rp__json_string(req->answer.by));
        break;
    case RP_OP_GATES:
        ok = ok && rp__set(t, "state", json_string(rp_gate_state_string(req->gates.state))) &&
             rp__set(t, "limit", json_integer(req->gates.limit));
        if (ok && req->gates.project != NULL)
            ok = rp__set(t, "project", rp__json_string(req->gates.project));
        if (ok && req->gates.has_kind)
            ok = rp__set(t, "kind", json_string(rp_gate_kind_string(req->gates.kind)));
        if (ok && req->gates.queue != NULL)
            ok = rp__set(t, "queue", rp__json_string(req->gates.queue));
        if (ok && req->gates.origin != NULL)
            ok = rp__set(t, "origin", rp__json_string(req->gates.origin));
        if (ok && req->gates.reason != NULL)
            ok = rp__set(t, "reason", rp__json_string(req->gates.reason));
        if (ok && req->gates.older_than_seconds != 0)
            ok = rp__set(t, "older_than_seconds", json_integer(req->gates.older_than_seconds));
        if (ok && req->gates.after != 0) ok = rp__set(t, "after", json_integer(req->gates.after));
        break;
    case RP_OP_JOBS:
        if (ok && !req->jobs.any_state)
            ok = rp__set(t, "state", json_string(rp_job_state_string(req->jobs.state)));
        if (ok && req->jobs.project != NULL)
            ok = rp__set(t, "project", rp__json_string(req->jobs.project));
        if (ok && req->jobs.kind != NULL) ok = rp__set(t, "kind", rp__json_string(req->jobs.kind));
        ok = ok && rp__set(t, "limit", json_integer(req->jobs.limit));
        if (ok && req->jobs.after != 0) ok = rp__set(t, "after", json_integer(req->jobs.after));
        break;
    case RP_OP_JOB: ok = ok && rp__set(t, "job", json_integer(req->job.job)); break;
    case RP_OP_GATE:
        ok = ok && rp__set(t, "gate", json_integer(req->gate.gate)) &&
             rp__set(t, "body_offset", json_integer(req->gate.body_offset)) &&
             rp__set(t, "body_limit", json_integer(req->gate.body_limit));
        break;
    case RP_OP_CANCEL:
        ok = ok && rp__set(t, "job", json_integer(req->cancel.job)) &&
             rp__set(t, "reason", rp__json_string(req->cancel.reason));
        break;
    case RP_OP_ANSWER_MANY: {
        ok = ok && rp__set(t, "choice", json_string(rp_choice_string(req->answer_many.choice))) &&
             rp__set(t, "rate", json_integer(req->answer_many.rate)) &&
             rp__set(t, "dry_run", json_boolean(req->answer_many.dry_run));
        if (ok && req->answer_many.n_ids > 0) {
            json_t *a = json_array();
            ok = a != NULL;
            for (size_t i = 0; ok && i < req->answer_many.n_ids; i++)
                ok = json_array_append_new(a, json_integer(req->answer_many.ids[i])) == 0;
            ok = ok && rp__set(t, "ids", a);
        }
        if (ok && req->answer_many.project != NULL) ok = rp__set(t, "project", rp__json_string(req->answer_many.project));
        if (ok && req->answer_many.has_kind) ok = rp__set(t, "kind", json_string(rp_gate_kind_string(req->answer_many.kind)));
        if (ok && req->answer_many.queue != NULL) ok = rp__set(t, "queue", rp__json_string(req->answer_many.queue));
        if (ok && req->answer_many.origin != NULL) ok = rp__set(t, "origin", rp__json_string(req->answer_many.origin));
        if (ok && req->answer_many.reason != NULL) ok = rp__set(t, "reason", rp__json_string(req->answer_many.reason));
        if (ok && req->answer_many.older_than_seconds != 0)
            ok = rp__set(t, "older_than_seconds", json_integer(req->answer_many.older_than_seconds));
        if (ok && req->answer_many.by != NULL) ok = rp__set(t, "by", rp__json_string(req->answer_many.by));
        break;
    }
    case RP_OP_ANSWER_SET:
        ok = ok && rp__set(t, "job", json_integer(req->answer_set.job)) &&
             rp__set(t, "cancel", json_boolean(req->answer_set.cancel));
        break;
    default:
        break;
    }
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

rp_status rp_request_encode(const rp_request *req, rp_encoding enc, rp_proto_buf *out,
                            rp_proto_error *err) {
    rp_request check;
    if (err != NULL) rp_proto_error_init(err);
    if (req == NULL || out == NULL) return rp__err_set(err, RP_ERR_INVALID, "no request");
    if (req->op <= RP_OP_NONE || req->op >= RP_OP_COUNT_)
        return rp__err_set(err, RP_ERR_INVALID, "the request has no op");
    json_t *t = rp_request_tree(req);
    if (t == NULL) return rp__err_set(err, RP_ERR_NOMEM, "out of memory");
    /* The same checks the daemon makes, so a client learns of a bad field
     * before sending it. */
    rp_request_init(&check);
    rp_status st = rp_request_from_json(t, &check, err);
    rp_request_cleanup(&check);
    if (st != RP_OK) {
        json_decref(t);
        return st;
    }
    return rp__finish(t, enc, out);
}
