/* Job triage's rules and its records' lifetimes (rp_jobs_port.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_jobs_port.h"

void rp_job_row_init(rp_job_row *r) { memset(r, 0, sizeof *r); }

void rp_job_row_cleanup(rp_job_row *r) {
    free(r->project);
    free(r->kind);
    free(r->lease_owner);
    free(r->payload);
    memset(r, 0, sizeof *r);
}

void rp_job_page_init(rp_job_page *p) { memset(p, 0, sizeof *p); }

void rp_job_page_cleanup(rp_job_page *p) {
    for (size_t i = 0; i < p->n; i++) rp_job_row_cleanup(&p->jobs[i]);
    free(p->jobs);
    memset(p, 0, sizeof *p);
}

void rp_job_cancel_result_init(rp_job_cancel_result *r) {
    memset(r, 0, sizeof *r);
    rp_job_row_init(&r->job);
}

void rp_job_cancel_result_cleanup(rp_job_cancel_result *r) {
    free(r->was_owner);
    rp_job_row_cleanup(&r->job);
    memset(r, 0, sizeof *r);
}

bool rp_job_cancellable(rp_job_state s) { return s == RP_JOB_READY || s == RP_JOB_LEASED; }

void rp_job_cancel_refusal(char *buf, size_t n, int64_t id, rp_job_state s) {
    if (n == 0) return;
    snprintf(buf, n, "job %" PRId64 " is %s; only a ready or leased job can be cancelled%s", id,
             rp_job_state_string(s),
             s == RP_JOB_AWAITING_HUMAN ? " (answer its gate: reaperctl gates, reaperctl answer)"
                                        : "");
}

void rp_job_not_found_text(char *buf, size_t n, int64_t id) {
    if (n == 0) return;
    snprintf(buf, n, "job %" PRId64 " does not exist", id);
}

const char *rp_jobs_refusal(rp_status st) {
    switch (st) {
    case RP_ERR_UNAVAILABLE: return "the store is unreachable";
    case RP_ERR_INVALID: return "the query was refused by the store adapter";
    case RP_ERR_NOMEM: return "out of memory";
    default: return "the job table could not be read or written";
    }
}
