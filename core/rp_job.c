#include "rp_job.h"

#include <string.h>

static const char *const rp_job_state_names[RP_JOB_STATE_COUNT_] = {
    "ready", "leased", "succeeded", "failed", "awaiting_human",
};

const char *rp_job_state_string(rp_job_state s) {
    if ((int)s < 0 || s >= RP_JOB_STATE_COUNT_) return "unknown";
    return rp_job_state_names[s];
}

bool rp_job_state_parse(const char *s, rp_job_state *out) {
    if (s == NULL) return false;
    for (int i = 0; i < RP_JOB_STATE_COUNT_; i++) {
        if (strcmp(rp_job_state_names[i], s) == 0) {
            *out = (rp_job_state)i;
            return true;
        }
    }
    return false;
}
