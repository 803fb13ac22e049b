/* The answer-set control ops (issue #20 item 3, proto/SCHEMA.md section 4):
 * `answer_many` makes an answer set (or counts it: dry_run) and
 * `answer_set` reads its progress (or cancels it), through the answer-set
 * port (core/rp_answer_set_port.h) on the store thread; on the loop the
 * log line of a made or cancelled set and the reply or the refusal. The set
 * itself is worked through by app/rp_answer_sets.h, in this reaperd or
 * another. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_answer_set_port.h"
#include "rp_ctl_internal.h"
#include "rp_log.h"

typedef struct rp_ctl_aset {
    rp_status st;            /* the port's status */
    rp_answer_set_made made; /* answer_many */
    rp_answer_set_row row;   /* answer_set */
} rp_ctl_aset;

static void rp_ctl_aset_free(void *state) {
    rp_ctl_aset *a = state;
    if (a == NULL) return;
    rp_answer_set_made_cleanup(&a->made);
    free(a);
}

/* Store thread: runs req (op answer_many or answer_set) through port; user
 * is the broker-validated user (the set's requested_by, a cancel's by). */
static void rp_ctl_aset_run(const rp_answer_set_port *p, const rp_request *req, const char *user,
                            rp_ctl_aset *a) {
    if (req->op == RP_OP_ANSWER_MANY) {
        rp_answer_set_spec spec = {
            .choice = req->answer_many.choice,
            .rate = req->answer_many.rate,
            .by = user != NULL ? user : "",
            .note = req->answer_many.by,
            .dry_run = req->answer_many.dry_run,
            .ids = req->answer_many.ids,
            .n_ids = req->answer_many.n_ids,
            .q = {.project = req->answer_many.project,
                  .has_kind = req->answer_many.has_kind,
                  .kind = req->answer_many.kind,
                  .queue = req->answer_many.queue,
                  .origin = req->answer_many.origin,
                  .reason = req->answer_many.reason,
                  .older_than_ms = req->answer_many.older_than_seconds * 1000},
        };
        a->st = p->create(p->self, &spec, &a->made);
    } else if (req->answer_set.cancel) {
        a->st = p->cancel(p->self, req->answer_set.job, user, &a->row);
    } else {
        a->st = p->get(p->self, req->answer_set.job, &a->row);
    }
}

/* Loop: the reply of a run. RP_OK: *buf holds the encoded result (*est its
 * encoder's status); else the error to answer with, its reason in msg. */
static rp_status rp_ctl_aset_reply(const rp_request *req, const rp_ctl_aset *a, const char *user,
                                   rp_encoding enc, rp_proto_buf *buf, rp_status *est, char *msg,
                                   size_t n) {
    if (req->op == RP_OP_ANSWER_MANY) {
        const char *choice = rp_choice_string(req->answer_many.choice);
        if (a->st == RP_ERR_NOT_FOUND) {
            snprintf(msg, n, "no open gate that takes %s matches; nothing to answer", choice);
            return a->st;
        }
        if (a->st != RP_OK) {
            snprintf(msg, n, "the gates could not be read (%s); try again",
                     rp_status_string(a->st));
            return a->st;
        }
        char id[24], total[24], rate[24];
        snprintf(id, sizeof id, "%" PRId64, a->made.id);
        snprintf(total, sizeof total, "%" PRId64, a->made.total);
        snprintf(rate, sizeof rate, "%d", req->answer_many.rate);
        if (!req->answer_many.dry_run)
            RP_INFO("answer set made", "answer_set", id, "choice", choice, "total", total, "rate",
                    rate, "user", user, NULL);
        *est = rp_proto_encode_answer_many_reply(&a->made, req->answer_many.dry_run,
                                                 req->answer_many.choice,
                                                 req->answer_many.rate, enc, buf);
        return RP_OK;
    }
    int64_t job = req->answer_set.job;
    if (a->st == RP_ERR_NOT_FOUND) {
        snprintf(msg, n, "no answer set %" PRId64, job);
        return a->st;
    }
    if (a->st == RP_ERR_CONFLICT) {
        snprintf(msg, n, "answer set %" PRId64 " is %s already; nothing to cancel", job,
                 rp_answer_set_state_string(a->row.state));
        return a->st;
    }
    if (a->st != RP_OK) {
        snprintf(msg, n, "the answer set could not be read (%s); try again",
                 rp_status_string(a->st));
        return a->st;
    }
    if (req->answer_set.cancel) {
        char id[24];
        snprintf(id, sizeof id, "%" PRId64, job);
        RP_INFO("answer set cancelled", "answer_set", id, "user", user, NULL);
    }
    *est = rp_proto_encode_answer_set_reply(&a->row, req->answer_set.cancel, enc, buf);
    return RP_OK;
}

static rp_status rp_ctl_aset_start(rp_ctl *c) {
    rp_ctl_aset *a = calloc(1, sizeof *a); /* zeroed: a valid initial state */
    if (a == NULL) return RP_ERR_NOMEM;
    c->state = a;
    c->state_free = rp_ctl_aset_free;
    return rp_ctl_store_job(c);
}

static void rp_ctl_aset_work(rp_ctl *c) {
    if (!rp_ctl_store_ready(c)) return;
    rp_ctl_aset *a = c->state;
    const rp_control_store_port *s = &c->k->deps.store;
    rp_answer_set_port p;
    s->answer_sets(s->self, &p);
    rp_ctl_aset_run(&p, &c->req, rp_ctl_user(c), a);
    c->st = a->st;
}

static void rp_ctl_aset_done(rp_ctl *c) {
    rp_ctl_aset *a = c->state;
    if (c->st != RP_OK) a->st = c->st; /* the store could not be reached */
    char msg[300];
    rp_proto_buf buf = {0};
    rp_status est = RP_OK;
    rp_status st = rp_ctl_aset_reply(&c->req, a, rp_ctl_user(c), c->enc, &buf, &est, msg,
                                      sizeof msg);
    if (st != RP_OK) rp_ctl_error(c, rp_op_string(c->req.op), st, msg);
    else rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_answer_many = {
    .op = RP_OP_ANSWER_MANY, .start = rp_ctl_aset_start, .work = rp_ctl_aset_work,
    .done = rp_ctl_aset_done};
const rp_ctl_op rp_ctl_op_answer_set = {
    .op = RP_OP_ANSWER_SET, .start = rp_ctl_aset_start, .work = rp_ctl_aset_work,
    .done = rp_ctl_aset_done};
