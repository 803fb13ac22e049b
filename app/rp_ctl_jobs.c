/* Job triage's control ops jobs, job and cancel (proto/SCHEMA.md section 4;
 * core/rp_jobs_port.h): the port call per op on the store thread; on the
 * loop the log line of a cancel and the reply or the refusal. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_ctl_internal.h"
#include "rp_log.h"

typedef struct rp_ctl_jobs {
    rp_job_page page;            /* jobs */
    rp_job_row job;              /* job */
    rp_job_cancel_result cancel; /* cancel */
} rp_ctl_jobs;

static void rp_ctl_jobs_free(void *state) {
    rp_ctl_jobs *j = state;
    if (j == NULL) return;
    rp_job_page_cleanup(&j->page);
    rp_job_row_cleanup(&j->job);
    rp_job_cancel_result_cleanup(&j->cancel);
    free(j);
}

static rp_status rp_ctl_jobs_start(rp_ctl *c) {
    rp_ctl_jobs *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    rp_job_page_init(&j->page);
    rp_job_row_init(&j->job);
    rp_job_cancel_result_init(&j->cancel);
    c->state = j;
    c->state_free = rp_ctl_jobs_free;
    return rp_ctl_store_job(c);
}

static void rp_ctl_jobs_work(rp_ctl *c) {
    if (!rp_ctl_store_ready(c)) return;
    rp_ctl_jobs *j = c->state;
    const rp_control_store_port *s = &c->k->deps.store;
    const rp_request *req = &c->req;
    rp_jobs_port p;
    s->jobs(s->self, &p);
    switch (req->op) {
    case RP_OP_JOBS: {
        rp_job_query q = {
            .any_state = req->jobs.any_state,
            .state = req->jobs.state,
            .project = req->jobs.project,
            .kind = req->jobs.kind,
            .limit = (size_t)req->jobs.limit,
            .after = req->jobs.after,
        };
        c->st = p.list(p.self, &q, &j->page);
        break;
    }
    case RP_OP_JOB: c->st = p.get(p.self, req->job.job, &j->job); break;
    case RP_OP_CANCEL:
        /* by is the broker-validated user, as a gate's answered_by. */
        c->st = p.cancel(p.self, req->cancel.job, rp_ctl_user(c), req->cancel.reason,
                         &j->cancel);
        break;
    default: c->st = RP_ERR_INTERNAL; break;
    }
}

static void rp_ctl_jobs_done(rp_ctl *c) {
    const rp_ctl_jobs *j = c->state;
    const rp_request *req = &c->req;
    const char *user = rp_ctl_user(c);
    int64_t id = req->op == RP_OP_CANCEL ? req->cancel.job : req->job.job;
    char job[32];
    snprintf(job, sizeof job, "%" PRId64, id);
    if (c->st != RP_OK) {
        char msg[200];
        if (c->st == RP_ERR_NOT_FOUND) rp_job_not_found_text(msg, sizeof msg, id);
        else if (c->st == RP_ERR_CONFLICT) rp_job_cancel_refusal(msg, sizeof msg, id, j->cancel.was);
        else snprintf(msg, sizeof msg, "%s", rp_jobs_refusal(c->st));
        if (req->op == RP_OP_CANCEL)
            RP_WARN("job cancel refused", "job", job, "reason", msg, "user", user, NULL);
        rp_ctl_error(c, rp_op_string(req->op), c->st, msg);
        return;
    }
    rp_proto_buf buf = {0};
    rp_status est;
    if (req->op == RP_OP_JOBS) {
        est = rp_proto_encode_jobs_reply(&j->page, c->enc, &buf);
    } else if (req->op == RP_OP_JOB) {
        est = rp_proto_encode_job_reply(&j->job, c->enc, &buf);
    } else {
        RP_INFO("job cancelled", "job", job, "from", rp_job_state_string(j->cancel.was),
                "lease_owner", j->cancel.was_owner, "user", user, NULL);
        est = rp_proto_encode_cancel_reply(&j->cancel, c->enc, &buf);
    }
    rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_jobs = {
    .op = RP_OP_JOBS, .start = rp_ctl_jobs_start, .work = rp_ctl_jobs_work,
    .done = rp_ctl_jobs_done};
const rp_ctl_op rp_ctl_op_job = {
    .op = RP_OP_JOB, .start = rp_ctl_jobs_start, .work = rp_ctl_jobs_work,
    .done = rp_ctl_jobs_done};
const rp_ctl_op rp_ctl_op_cancel = {
    .op = RP_OP_CANCEL, .start = rp_ctl_jobs_start, .work = rp_ctl_jobs_work,
    .done = rp_ctl_jobs_done};
