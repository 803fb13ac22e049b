/* Job triage's replies (SCHEMA.md section 4 `jobs`, `job`, `cancel`, and
 * 5.5): the job tree and the three result shapes. */
#include <stdlib.h>
#include <string.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

static bool rp_job_valid(const rp_job_row *j) {
    return j != NULL && (int)j->state >= 0 && j->state < RP_JOB_STATE_COUNT_;
}

json_t *rp_proto_job_json(const rp_job_row *j) {
    if (!rp_job_valid(j)) return NULL;
    json_t *t = json_object();
    bool ok =
        t != NULL && rp__set(t, "id", json_integer(j->id)) &&
        rp__set(t, "project", rp__json_string(j->project)) &&
        rp__set(t, "kind", rp__json_string(j->kind)) &&
        rp__set(t, "state", json_string(rp_job_state_string(j->state))) &&
        rp__set(t, "attempts", json_integer(j->attempts)) &&
        rp__set(t, "max_attempts", json_integer(j->max_attempts)) &&
        rp__set(t, "lease_owner", rp__json_string(j->lease_owner)) &&
        rp__set(t, "lease_expires_at", rp__time_json(j->has_lease_expires ? j->lease_expires_at : 0)) &&
        rp__set(t, "run_after", rp__time_json(j->run_after)) &&
        rp__set(t, "depends_on", j->depends_on > 0 ? json_integer(j->depends_on) : json_null()) &&
        rp__set(t, "finished_at", rp__time_json(j->has_finished ? j->finished_at : 0)) &&
        rp__set(t, "created_at", rp__time_json(j->created_at)) &&
        rp__set(t, "updated_at", rp__time_json(j->updated_at));
    if (!ok) {
        json_decref(t);
        return NULL;
    }
    return t;
}

rp_status rp_proto_encode_jobs_reply(const rp_job_page *page, rp_encoding enc,
                                     rp_proto_buf *out) {
    if (page == NULL || (page->n > 0 && page->jobs == NULL)) return RP_ERR_INVALID;
    for (size_t i = 0; i < page->n; i++)
        if (!rp_job_valid(&page->jobs[i])) return RP_ERR_INVALID;
    json_t *t = json_object(), *a = json_array();
    bool ok = t != NULL && a != NULL;
    for (size_t i = 0; ok && i < page->n; i++) {
        json_t *j = rp_proto_job_json(&page->jobs[i]);
        ok = j != NULL && json_array_append_new(a, j) == 0;
    }
    ok = ok && rp__set(t, "jobs", json_incref(a)) &&
         rp__set(t, "total", json_integer(page->total)) &&
         rp__set(t, "next_after",
                 page->next_after > 0 ? json_integer(page->next_after) : json_null());
    json_decref(a);
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_JOBS, t, enc, out);
}

rp_status rp_proto_encode_job_reply(const rp_job_row *job, rp_encoding enc, rp_proto_buf *out) {
    if (!rp_job_valid(job)) return RP_ERR_INVALID;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "job", rp_proto_job_json(job)) &&
              rp__set(t, "payload", rp__json_string(job->payload)) &&
              rp__set(t, "payload_truncated", json_boolean(job->payload_truncated));
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_JOB, t, enc, out);
}

rp_status rp_proto_encode_cancel_reply(const rp_job_cancel_result *r, rp_encoding enc,
                                       rp_proto_buf *out) {
    if (r == NULL || !rp_job_valid(&r->job) || (int)r->was < 0 || r->was >= RP_JOB_STATE_COUNT_)
        return RP_ERR_INVALID;
    json_t *t = json_object();
    bool ok = t != NULL && rp__set(t, "job", rp_proto_job_json(&r->job)) &&
              rp__set(t, "from", json_string(rp_job_state_string(r->was))) &&
              rp__set(t, "lease_owner", rp__json_string(r->was_owner)) &&
              rp__set(t, "seq", json_integer(r->seq));
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_CANCEL, t, enc, out);
}
