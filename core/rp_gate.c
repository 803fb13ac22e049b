#include "rp_gate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const rp_gate_kind_names[RP_GATE_KIND_COUNT_] = {
    "delivery_exhausted", "bus_dead_lettered"};
static const char *const rp_choice_names[RP_CHOICE_COUNT_] = {"retry", "replay", "dismiss"};
static const char *const rp_outcome_names[RP_OUTCOME_COUNT_] = {
    "retried", "replayed", "dismissed", "already_answered"};
static const char *const rp_gate_state_names[RP_GATE_STATE_COUNT_] = {"open", "answered",
                                                                       "all"};

static const char *rp_name(const char *const *names, int n, int v) {
    return (v < 0 || v >= n) ? "unknown" : names[v];
}

static bool rp_find(const char *const *names, int n, const char *s, int *out) {
    if (s == NULL) return false;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return true;
        }
    return false;
}

const char *rp_gate_kind_string(rp_gate_kind k) { return rp_name(rp_gate_kind_names, RP_GATE_KIND_COUNT_, (int)k); }
const char *rp_choice_string(rp_choice c) { return rp_name(rp_choice_names, RP_CHOICE_COUNT_, (int)c); }
const char *rp_outcome_string(rp_outcome o) { return rp_name(rp_outcome_names, RP_OUTCOME_COUNT_, (int)o); }
const char *rp_gate_state_string(rp_gate_state s) { return rp_name(rp_gate_state_names, RP_GATE_STATE_COUNT_, (int)s); }

#define RP_PARSER(fn, type, names, count)                  \
    bool fn(const char *s, type *out) {                    \
        int i;                                             \
        if (!rp_find(names, count, s, &i)) return false;   \
        *out = (type)i;                                    \
        return true;                                       \
    }
RP_PARSER(rp_gate_kind_parse, rp_gate_kind, rp_gate_kind_names, RP_GATE_KIND_COUNT_)
RP_PARSER(rp_choice_parse, rp_choice, rp_choice_names, RP_CHOICE_COUNT_)
RP_PARSER(rp_outcome_parse, rp_outcome, rp_outcome_names, RP_OUTCOME_COUNT_)
RP_PARSER(rp_gate_state_parse, rp_gate_state, rp_gate_state_names, RP_GATE_STATE_COUNT_)

bool rp_gate_accepts(rp_gate_kind k, rp_choice c) {
    if (c == RP_CHOICE_DISMISS) return k == RP_GATE_DELIVERY_EXHAUSTED || k == RP_GATE_BUS_DEAD_LETTERED;
    if (c == RP_CHOICE_RETRY) return k == RP_GATE_DELIVERY_EXHAUSTED;
    if (c == RP_CHOICE_REPLAY) return k == RP_GATE_BUS_DEAD_LETTERED;
    return false;
}

static const char *const rp_claim_names[RP_GATE_CLAIM_STATE_COUNT_] = {"none", "live",
                                                                        "stale"};

const char *rp_gate_claim_state_string(rp_gate_claim_state s) {
    return rp_name(rp_claim_names, RP_GATE_CLAIM_STATE_COUNT_, (int)s);
}

rp_gate_claim_state rp_gate_claim_judge(bool claimed, rp_time_ms claimed_at, rp_time_ms now,
                                        int64_t bound_seconds) {
    if (!claimed) return RP_GATE_CLAIM_NONE;
    if (bound_seconds <= 0) return RP_GATE_CLAIM_STALE;
    /* Overflow-safe: the bound is at most a day in the configuration, but
     * the times come from a database. */
    int64_t bound_ms = bound_seconds > INT64_MAX / 1000 ? INT64_MAX : bound_seconds * 1000;
    if (now < claimed_at) return RP_GATE_CLAIM_LIVE;
    return (uint64_t)now - (uint64_t)claimed_at >= (uint64_t)bound_ms ? RP_GATE_CLAIM_STALE
                                                                      : RP_GATE_CLAIM_LIVE;
}

void rp_gate_init(rp_gate *g) { memset(g, 0, sizeof *g); }

void rp_gate_cleanup(rp_gate *g) {
    free(g->project);
    free(g->question);
    free(g->answered_by);
    free(g->queue);
    free(g->origin_queue);
    free(g->reason);
    free(g->claimed_by);
    free(g->vhost);
    memset(g, 0, sizeof *g);
}
