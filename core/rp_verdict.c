#include "rp_verdict.h"

#include <stdlib.h>
#include <string.h>

static const char *const rp_condition_names[RP_COND_COUNT_] = {
    "NONE",          "HUNG_HANDLER", "HOLDER_GONE", "LEASE_EXPIRED",
    "POISON",        "STALE_READY",  "DEAD_LETTER", "STALLED",
    "WAITING_DEPTH", "WEDGED", "DIVERGENT",
};
static const char *const rp_action_names[RP_ACTION_COUNT_] = {
    "NONE", "REQUEUED", "PARKED", "SURFACED", "CLEARED", "VERIFIED",
    "RESTARTED", "RESTART_LOOP",
};
static const char *const rp_source_names[RP_SOURCE_COUNT_] = {
    "job_queue",
    "broker",
};

const char *rp_condition_string(rp_condition c) {
    if ((int)c < 0 || c >= RP_COND_COUNT_) return "unknown";
    return rp_condition_names[c];
}

const char *rp_action_string(rp_action a) {
    if ((int)a < 0 || a >= RP_ACTION_COUNT_) return "unknown";
    return rp_action_names[a];
}

const char *rp_source_string(rp_source s) {
    if ((int)s < 0 || s >= RP_SOURCE_COUNT_) return "unknown";
    return rp_source_names[s];
}

static bool rp_lookup(const char *const *names, int n, const char *s, int *out) {
    if (s == NULL) return false;
    for (int i = 0; i < n; i++) {
        if (names[i] != NULL && strcmp(names[i], s) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

bool rp_condition_parse(const char *s, rp_condition *out) {
    int i;
    if (!rp_lookup(rp_condition_names, RP_COND_COUNT_, s, &i)) return false;
    *out = (rp_condition)i;
    return true;
}

bool rp_action_parse(const char *s, rp_action *out) {
    int i;
    if (!rp_lookup(rp_action_names, RP_ACTION_COUNT_, s, &i)) return false;
    *out = (rp_action)i;
    return true;
}

bool rp_source_parse(const char *s, rp_source *out) {
    int i;
    if (!rp_lookup(rp_source_names, RP_SOURCE_COUNT_, s, &i)) return false;
    *out = (rp_source)i;
    return true;
}

void rp_verdict_init(rp_verdict *v) {
    memset(v, 0, sizeof *v);
    v->trusted = true;
}

void rp_verdict_cleanup(rp_verdict *v) {
    free(v->object);
    free(v->queue);
    free(v->project);
    free(v->unit);
    free(v->detail);
    memset(v, 0, sizeof *v);
}

static rp_status rp_set(char **field, const char *s) {
    char *copy = NULL;
    if (s != NULL) {
        copy = strdup(s);
        if (copy == NULL) return RP_ERR_NOMEM;
    }
    free(*field);
    *field = copy;
    return RP_OK;
}

rp_status rp_verdict_set_object(rp_verdict *v, const char *s) { return rp_set(&v->object, s); }
rp_status rp_verdict_set_queue(rp_verdict *v, const char *s) { return rp_set(&v->queue, s); }
rp_status rp_verdict_set_project(rp_verdict *v, const char *s) { return rp_set(&v->project, s); }
rp_status rp_verdict_set_unit(rp_verdict *v, const char *s) { return rp_set(&v->unit, s); }
rp_status rp_verdict_set_detail(rp_verdict *v, const char *s) { return rp_set(&v->detail, s); }

rp_status rp_verdict_copy(rp_verdict *dst, const rp_verdict *src) {
    rp_verdict_init(dst);
    dst->condition = src->condition;
    dst->measured = src->measured;
    dst->threshold = src->threshold;
    dst->action = src->action;
    dst->source = src->source;
    dst->trusted = src->trusted;
    if (rp_set(&dst->object, src->object) != RP_OK ||
        rp_set(&dst->queue, src->queue) != RP_OK ||
        rp_set(&dst->project, src->project) != RP_OK ||
        rp_set(&dst->unit, src->unit) != RP_OK ||
        rp_set(&dst->detail, src->detail) != RP_OK) {
        rp_verdict_cleanup(dst);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}
