/* The metrics registry (rp_metrics.h); its text-format rendering is
 * adapters/http/rp_http_prom.c. Every
 * value is read and written with __atomic builtins (relaxed: each value is
 * independent; a scrape needs no ordering between them). */
#include "rp_metrics.h"
#include "rp_pass_policy.h"
#include "rp_sweep_vhosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

/* Every watched vhost has a slot. */
_Static_assert(RP_METRICS_VHOSTS == RP_SWEEP_VHOSTS_MAX,
               "a metrics slot for each vhost reaperd can watch");

const double rp_metrics_bucket_bounds[RP_METRICS_BUCKETS] = {
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
const double rp_metrics_delay_bounds[RP_METRICS_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

/* The ledger events a pass or the tap can commit (CONTRACT section 2; the
 * judges in rp_judge.c and rp_judge_broker.c): a surfaced condition can
 * later be cleared, with the same source and condition. */
static const struct {
    rp_source source;
    rp_condition condition;
    rp_action action;
} rp_reaped_series[] = {
    {RP_SOURCE_JOB_QUEUE, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_POISON, RP_ACTION_PARKED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_STALE_READY, RP_ACTION_SURFACED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_STALE_READY, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_HUNG_HANDLER, RP_ACTION_VERIFIED},
    {RP_SOURCE_BROKER, RP_COND_HUNG_HANDLER, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_HUNG_HANDLER, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_HOLDER_GONE, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_HOLDER_GONE, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_STALE_READY, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_STALE_READY, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_DEAD_LETTER, RP_ACTION_PARKED},
    {RP_SOURCE_BROKER, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_DEAD_LETTER, RP_ACTION_CLEARED},
    /* Issue 18 (rp_judge_runbook.c). */
    {RP_SOURCE_JOB_QUEUE, RP_COND_STALLED, RP_ACTION_SURFACED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_STALLED, RP_ACTION_REQUEUED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_STALLED, RP_ACTION_CLEARED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_WAITING_DEPTH, RP_ACTION_SURFACED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_WAITING_DEPTH, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_WAITING_DEPTH, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_WAITING_DEPTH, RP_ACTION_CLEARED},
    /* Issue 18 item 4 (rp_judge_wedged.c). */
    {RP_SOURCE_JOB_QUEUE, RP_COND_WEDGED, RP_ACTION_SURFACED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_WEDGED, RP_ACTION_CLEARED},
    /* Issue 18 item 3 (rp_judge_divergent.c). */
    {RP_SOURCE_JOB_QUEUE, RP_COND_DIVERGENT, RP_ACTION_SURFACED},
    {RP_SOURCE_JOB_QUEUE, RP_COND_DIVERGENT, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_DIVERGENT, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_DIVERGENT, RP_ACTION_CLEARED},
    /* Issue 18 item 1, broker (rp_judge_stalled_broker.c). */
    {RP_SOURCE_BROKER, RP_COND_STALLED, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_STALLED, RP_ACTION_CLEARED},

    /* Issue 18 item 4, broker half and the restart-loop breaker
     * (rp_judge_wedged_broker.c). */
    {RP_SOURCE_BROKER, RP_COND_WEDGED, RP_ACTION_SURFACED},
    {RP_SOURCE_BROKER, RP_COND_WEDGED, RP_ACTION_CLEARED},
    {RP_SOURCE_BROKER, RP_COND_WEDGED, RP_ACTION_RESTARTED},
    {RP_SOURCE_BROKER, RP_COND_WEDGED, RP_ACTION_RESTART_LOOP},
};

bool rp_metrics_reaped_valid(rp_source s, rp_condition c, rp_action a) {
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_reaped_series); i++)
        if (rp_reaped_series[i].source == s && rp_reaped_series[i].condition == c &&
            rp_reaped_series[i].action == a)
            return true;
    return false;
}

static const char *const rp_backend_names[RP_METRICS_BACKEND_COUNT_] = {"broker", "store"};
static const char *const rp_scope_names[RP_METRICS_SCOPE_COUNT_] = {"full", "leases"};
static const char *const rp_result_names[RP_METRICS_RESULT_COUNT_] = {"ok", "unreadable",
                                                                       "error"};
static const char *const rp_op_names[RP_METRICS_OPS] = {"reap",   "answer", "gates", "status",
                                                        "jobs",   "job",    "cancel",
                                                        "gate",   "doctor", "stats",
                                                        "answer_many", "answer_set", "unknown"};
static const char *const rp_outcome_names[RP_METRICS_OUTCOMES] = {
    "ok", "bad_request", "unknown_op", "forbidden", "not_found", "conflict", "unavailable",
    "internal"};

void rp_metrics_init(rp_metrics *m, const char *version, const char *revision) {
    memset(m, 0, sizeof *m);
    snprintf(m->version, sizeof m->version, "%s", version ? version : "");
    snprintf(m->revision, sizeof m->revision, "%s", revision ? revision : "");
}

void rp_metrics_connected(rp_metrics *m, rp_metrics_backend b) {
    if ((int)b < 0 || b >= RP_METRICS_BACKEND_COUNT_) return;
    ADD(&m->connects[b], 1);
}

void rp_metrics_set_clock(rp_metrics *m, int64_t now_ms) { STORE(&m->now_ms, now_ms); }

void rp_metrics_set_process(rp_metrics *m, const rp_metrics_process *p) {
    STORE(&m->process.cpu_us, p->cpu_us);
    STORE(&m->process.resident_bytes, p->resident_bytes);
    STORE(&m->process.open_fds, p->open_fds);
    STORE(&m->process.max_fds, p->max_fds);
    STORE(&m->process.start_time_ms, p->start_time_ms);
    STORE(&m->process_known, 1u);
}

void rp_metrics_pass_succeeded(rp_metrics *m, rp_metrics_scope scope, int64_t at_ms) {
    if ((int)scope < 0 || scope >= RP_METRICS_SCOPE_COUNT_) return;
    STORE(&m->last_ok_ms[scope], at_ms);
}

void rp_metrics_set_oldest_gates(rp_metrics *m, const int64_t opened_ms[RP_GATE_KIND_COUNT_]) {
    for (int i = 0; i < RP_GATE_KIND_COUNT_; i++) STORE(&m->oldest_gate_ms[i], opened_ms[i]);
    STORE(&m->oldest_gate_known, 1u);
}

/* ---- the watched vhosts' series -------------------------------------------- */

rp_status rp_metrics_vhost_register(rp_metrics *m, const char *vhost) {
    if (vhost == NULL || strlen(vhost) >= RP_METRICS_VHOST_NAME_MAX) return RP_ERR_INVALID;
    if (rp_metrics_vhost_slot(m, vhost) != RP_METRICS_VHOSTS) return RP_OK;
    uint32_t n = __atomic_load_n(&m->n_vhosts, __ATOMIC_ACQUIRE);
    if (n >= RP_METRICS_VHOSTS) return RP_ERR_TOO_LARGE;
    /* The slot is zero since rp_metrics_init; its name is written before
     * n_vhosts counts it (release), so that a reader that sees the count
     * (acquire) sees the whole name. */
    memcpy(m->vhosts[n].name, vhost, strlen(vhost) + 1);
    __atomic_store_n(&m->n_vhosts, n + 1, __ATOMIC_RELEASE);
    return RP_OK;
}

int rp_metrics_vhost_slot(const rp_metrics *m, const char *vhost) {
    if (vhost == NULL) return RP_METRICS_VHOSTS;
    uint32_t n = __atomic_load_n(&m->n_vhosts, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n && i < RP_METRICS_VHOSTS; i++)
        if (strcmp(m->vhosts[i].name, vhost) == 0) return (int)i;
    return RP_METRICS_VHOSTS;
}

/* vhost's slot; the overflow slot marked used when it has none, *first
 * true for the update that used it first. */
static rp_metrics_vhost *rp_vhost_of(rp_metrics *m, const char *vhost, bool *first) {
    int i = rp_metrics_vhost_slot(m, vhost);
    *first = false;
    if (i == RP_METRICS_VHOSTS)
        *first = __atomic_exchange_n(&m->overflowed, 1u, __ATOMIC_RELAXED) == 0;
    return &m->vhosts[i];
}

bool rp_metrics_set_tap(rp_metrics *m, const char *vhost, int64_t held_bytes, bool paused) {
    bool first;
    rp_metrics_vhost *v = rp_vhost_of(m, vhost, &first);
    STORE(&v->tap_held_bytes, held_bytes);
    STORE(&v->tap_paused, paused ? 1u : 0u);
    STORE(&v->tap_known, 1u);
    return first;
}

static void rp_histogram_observe(rp_metrics_histogram *h, const double *bounds, int64_t us) {
    if (us < 0) us = 0;
    double s = (double)us / 1e6;
    size_t b = 0;
    while (b < RP_METRICS_BUCKETS && s > bounds[b]) b++;
    ADD(&h->buckets[b], 1);
    ADD(&h->sum_us, (uint64_t)us);
    ADD(&h->count, 1);
}

bool rp_metrics_tap_parked(rp_metrics *m, const char *vhost, int64_t delay_us) {
    bool first;
    rp_metrics_vhost *v = rp_vhost_of(m, vhost, &first);
    rp_histogram_observe(&v->tap_park_delay, rp_metrics_delay_bounds, delay_us);
    return first;
}

void rp_metrics_feed_published(rp_metrics *m) { ADD(&m->feed_published, 1); }

void rp_metrics_set_up(rp_metrics *m, rp_metrics_backend b, bool up) {
    if ((int)b < 0 || b >= RP_METRICS_BACKEND_COUNT_) return;
    STORE(&m->up[b], up ? 1u : 0u);
}

void rp_metrics_reaped(rp_metrics *m, rp_source s, rp_condition c, rp_action a) {
    if ((int)s < 0 || s >= RP_SOURCE_COUNT_ || (int)c < 0 || c >= RP_COND_COUNT_ || (int)a < 0 ||
        a >= RP_ACTION_COUNT_)
        return;
    ADD(&m->reaped[s][c][a], 1);
}

void rp_metrics_set_sightings_open(rp_metrics *m, const int64_t by_condition[RP_COND_COUNT_]) {
    for (int i = 0; i < RP_COND_COUNT_; i++) STORE(&m->sightings_open[i], by_condition[i]);
    STORE(&m->sightings_known, 1u);
}

bool rp_metrics_dead_letters_parked(rp_metrics *m, const char *vhost, uint64_t n) {
    bool first;
    ADD(&rp_vhost_of(m, vhost, &first)->dead_letters_parked, n);
    return first;
}

bool rp_metrics_tap_ignored(rp_metrics *m, const char *vhost, uint64_t n) {
    bool first;
    ADD(&rp_vhost_of(m, vhost, &first)->tap_ignored, n);
    return first;
}
uint64_t rp_metrics_event_refused(rp_metrics *m) { return ADD(&m->events_refused, 1) + 1; }

void rp_metrics_set_gates_open(rp_metrics *m, const int64_t by_kind[RP_GATE_KIND_COUNT_]) {
    for (int i = 0; i < RP_GATE_KIND_COUNT_; i++) STORE(&m->gates_open[i], by_kind[i]);
    STORE(&m->gates_open_known, 1u);
}

void rp_metrics_gate_answered(rp_metrics *m, rp_gate_kind k, rp_choice c) {
    if ((int)k < 0 || k >= RP_GATE_KIND_COUNT_ || (int)c < 0 || c >= RP_CHOICE_COUNT_) return;
    ADD(&m->gates_answered[k][c], 1);
}

void rp_metrics_pass(rp_metrics *m, rp_metrics_scope scope, rp_metrics_result result,
                     int64_t duration_us) {
    if ((int)scope < 0 || scope >= RP_METRICS_SCOPE_COUNT_ || (int)result < 0 ||
        result >= RP_METRICS_RESULT_COUNT_)
        return;
    rp_histogram_observe(&m->pass_duration[scope], rp_metrics_bucket_bounds, duration_us);
    ADD(&m->passes[scope][result], 1);
}

void rp_metrics_set_event_lag_ms(rp_metrics *m, int64_t lag_ms) {
    STORE(&m->event_lag_ms, lag_ms < 0 ? 0 : lag_ms);
    STORE(&m->event_lag_known, 1u);
}

static size_t rp_index_of(const char *const *names, size_t n, const char *v, size_t fallback) {
    if (v == NULL) return fallback;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], v) == 0) return i;
    return fallback;
}

void rp_metrics_control(rp_metrics *m, const char *op, const char *outcome) {
    size_t o = rp_index_of(rp_op_names, RP_METRICS_OPS, op, RP_METRICS_OPS - 1);
    size_t r = rp_index_of(rp_outcome_names, RP_METRICS_OUTCOMES, outcome, RP_METRICS_OUTCOMES - 1);
    ADD(&m->control[o][r], 1);
}

void rp_metrics_feed_publish_failed(rp_metrics *m) { ADD(&m->feed_publish_failures, 1); }

const char *rp_metrics_backend_name(int i) {
    return i >= 0 && i < RP_METRICS_BACKEND_COUNT_ ? rp_backend_names[i] : "unknown";
}
const char *rp_metrics_scope_name(int i) {
    return i >= 0 && i < RP_METRICS_SCOPE_COUNT_ ? rp_scope_names[i] : "unknown";
}
const char *rp_metrics_result_name(int i) {
    return i >= 0 && i < RP_METRICS_RESULT_COUNT_ ? rp_result_names[i] : "unknown";
}
const char *rp_metrics_op_name(int i) {
    return i >= 0 && i < RP_METRICS_OPS ? rp_op_names[i] : "unknown";
}
const char *rp_metrics_outcome_name(int i) {
    return i >= 0 && i < RP_METRICS_OUTCOMES ? rp_outcome_names[i] : "unknown";
}

/* ---- reaper's policies (issue 18 item 5) --------------------------------- */

static const char *const rp_metrics_policy_names[RP_METRICS_POLICIES] = {
    RP_PASS_POLICY_NAME, RP_PASS_POLICY_CLASSIC_NAME};

const char *rp_metrics_policy_name(int i) {
    return i >= 0 && i < RP_METRICS_POLICIES ? rp_metrics_policy_names[i] : NULL;
}

void rp_metrics_set_policy_verified(rp_metrics *m, const char *name, const char *vhost,
                                    bool verified) {
    if (m == NULL || name == NULL) return;
    int p = -1;
    for (int i = 0; i < RP_METRICS_POLICIES; i++)
        if (strcmp(rp_metrics_policy_names[i], name) == 0) p = i;
    if (p < 0) return;
    uint32_t n = __atomic_load_n(&m->n_vhosts, __ATOMIC_ACQUIRE);
    if (n > RP_METRICS_VHOSTS) n = RP_METRICS_VHOSTS;
    uint32_t from = 0, to = n;
    if (vhost != NULL) {
        int slot = rp_metrics_vhost_slot(m, vhost);
        if (slot == RP_METRICS_VHOSTS) return; /* not watched: the detail text says it */
        from = (uint32_t)slot;
        to = from + 1;
    }
    for (uint32_t i = from; i < to; i++) {
        STORE(&m->vhosts[i].policy_verified[p], verified ? 1u : 0u);
        STORE(&m->vhosts[i].policy_known[p], 1u);
    }
}

void rp_metrics_set_policy_check(rp_metrics *m, const rp_policy_check *pc) {
    if (m == NULL || pc == NULL) return;
    if (pc->n_vhosts == 0) {
        rp_metrics_set_policy_verified(m, pc->name, NULL, pc->verified);
        return;
    }
    for (size_t i = 0; i < pc->n_vhosts; i++)
        rp_metrics_set_policy_verified(m, pc->name, pc->vhosts[i].vhost, pc->vhosts[i].verified);
}
