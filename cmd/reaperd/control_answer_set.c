/* The answer-set control ops (control_answer_set.h). */
#include "control_answer_set.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rp_log.h"

void rp_ctl_answer_set_cleanup(rp_ctl_answer_set *a) { rp_answer_set_made_cleanup(&a->made); }

void rp_ctl_answer_set_run(const rp_answer_set_port *p, const rp_request *req, const char *user,
                           rp_ctl_answer_set *a) {
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

rp_status rp_ctl_answer_set_reply(const rp_request *req, const rp_ctl_answer_set *a,
                                  const char *user, rp_encoding enc, rp_proto_buf *buf,
                                  rp_status *est, char *msg, size_t n) {
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
