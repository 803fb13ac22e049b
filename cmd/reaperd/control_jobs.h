/*
 * control_jobs.h - job triage's use cases for the control ops jobs, job and
 * cancel (proto/SCHEMA.md section 4; core/rp_jobs_port.h): run the request
 * through the jobs port on the store thread, then, on the loop, log what a
 * cancel did and build the reply or the refusal. control.c only routes the
 * three ops here, so that its own edit stays a small dispatch.
 *
 * Ownership: rp_ctl_jobs holds the port's results (its page, row, cancel
 * result) until rp_ctl_jobs_cleanup; the request, the port and the user are
 * borrowed for each call.
 */
#ifndef RP_CTL_JOBS_H
#define RP_CTL_JOBS_H

#include "rp_jobs_port.h"
#include "rp_proto.h"

typedef struct rp_ctl_jobs {
    rp_status st;                /* the port's status */
    rp_job_page page;            /* jobs */
    rp_job_row job;              /* job */
    rp_job_cancel_result cancel; /* cancel */
} rp_ctl_jobs;

/* Zeroing (calloc) is a valid initial state too. */
void rp_ctl_jobs_init(rp_ctl_jobs *j);
void rp_ctl_jobs_cleanup(rp_ctl_jobs *j);

/* Store thread: runs req (op jobs, job or cancel) through port; user is the
 * broker-validated sender (a cancel's "by"). The status lands in j->st. */
void rp_ctl_jobs_run(const rp_jobs_port *port, const rp_request *req, const char *user,
                     rp_ctl_jobs *j);

/* Loop: the reply of a run. RP_OK: *buf holds the encoded result (est is
 * the encoder's status, to be handled as control.c handles every encode).
 * Otherwise the op failed: *code is its error code and msg (n bytes) the
 * sentence to answer with; *buf is untouched. */
rp_status rp_ctl_jobs_reply(const rp_request *req, const rp_ctl_jobs *j, const char *user,
                            rp_encoding enc, rp_proto_buf *buf, rp_status *est, char *msg,
                            size_t n);

#endif
