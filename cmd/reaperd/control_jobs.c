/* Job triage's use cases (control_jobs.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "control_jobs.h"
#include "rp_log.h"

void rp_ctl_jobs_init(rp_ctl_jobs *j) {
    memset(j, 0, sizeof *j);
    rp_job_page_init(&j->page);
    rp_job_row_init(&j->job);
    rp_job_cancel_result_init(&j->cancel);
}

void rp_ctl_jobs_cleanup(rp_ctl_jobs *j) {
    rp_job_page_cleanup(&j->page);
    rp_job_row_cleanup(&j->job);
    rp_job_cancel_result_cleanup(&j->cancel);
}

void rp_ctl_jobs_run(const rp_jobs_port *p, const rp_request *req, const char *user,
                     rp_ctl_jobs *j) {
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
        j->st = p->list(p->self, &q, &j->page);
        break;
    }
    case RP_OP_JOB: j->st = p->get(p->self, req->job.job, &j->job); break;
    case RP_OP_CANCEL:
        /* by is the broker-validated user, as a gate's answered_by. */
        j->st = p->cancel(p->self, req->cancel.job, user, req->cancel.reason, &j->cancel);
        break;
    default: j->st = RP_ERR_INTERNAL; break;
    }
}

rp_status rp_ctl_jobs_reply(const rp_request *req, const rp_ctl_jobs *j, const char *user,
                            rp_encoding enc, rp_proto_buf *buf, rp_status *est, char *msg,
                            size_t n) {
    int64_t id = req->op == RP_OP_CANCEL ? req->cancel.job : req->job.job;
    char job[32];
    snprintf(job, sizeof job, "%" PRId64, id);
    if (j->st != RP_OK) {
        if (j->st == RP_ERR_NOT_FOUND) rp_job_not_found_text(msg, n, id);
        else if (j->st == RP_ERR_CONFLICT) rp_job_cancel_refusal(msg, n, id, j->cancel.was);
        else snprintf(msg, n, "%s", rp_jobs_refusal(j->st));
        if (req->op == RP_OP_CANCEL)
            RP_WARN("job cancel refused", "job", job, "reason", msg, "user", user, NULL);
        return j->st;
    }
    if (req->op == RP_OP_JOBS) {
        *est = rp_proto_encode_jobs_reply(&j->page, enc, buf);
    } else if (req->op == RP_OP_JOB) {
        *est = rp_proto_encode_job_reply(&j->job, enc, buf);
    } else {
        RP_INFO("job cancelled", "job", job, "from", rp_job_state_string(j->cancel.was),
                "lease_owner", j->cancel.was_owner, "user", user, NULL);
        *est = rp_proto_encode_cancel_reply(&j->cancel, enc, buf);
    }
    return RP_OK;
}
