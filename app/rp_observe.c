/*
 * The daemon's metrics glue (rp_observe.h). Before each scrape it takes
 * what the process uses (deps->process_sample: CPU, resident memory, open
 * descriptors) and the tap's gauges, and sets the wall clock the gate ages
 * are measured at. The rendering and the listener are the HTTP adapter's.
 */
#include "rp_observe.h"
#include "rp_observe_vhost_taps.h"

#include <stdio.h>
#include <stdlib.h>

#include "rp_clock.h"
#include "rp_log.h"

struct rp_observe {
    struct event_base *base;
    rp_observe_deps deps;
    /* The gauges' recount after ledger events (loop thread). */
    struct event *gauges_ev;
    bool gauges_queued; /* a recount waits on the store thread */
    int64_t gauges_took_ms; /* how long the last recount took */
    bool stopped;
};

static int64_t rp_obs_now(const rp_observe *o) { return o->deps.clock.now_ms(o->deps.clock.self); }

void rp_observe_refresh(void *arg) {
    rp_observe *o = arg;
    rp_metrics *m = o->deps.metrics;
    rp_metrics_set_up(m, RP_METRICS_BROKER, *o->deps.broker_up);
    rp_metrics_set_up(m, RP_METRICS_STORE, *o->deps.store_up);
    rp_metrics_set_clock(m, rp_obs_now(o));
    rp_metrics_process p;
    if (o->deps.process_sample && o->deps.process_sample(&p)) rp_metrics_set_process(m, &p);
    /* Each tap's gauges under its vhost: the daemon's (broker.url's
     * vhost), then those of broker.vhosts. */
    if (o->deps.tap_gauges) {
        int64_t held;
        bool paused;
        const char *vhost = o->deps.tap_vhost ? *o->deps.tap_vhost : NULL;
        if (o->deps.tap_gauges(o->deps.tap_arg, &held, &paused) &&
            rp_metrics_set_tap(m, vhost, held, paused))
            rp_observe_vhost_overflow(vhost);
    }
    rp_observe_vhost_taps_gauges(&o->deps);
}

bool rp_observe_ready(void *arg, char *why, size_t cap) {
    rp_observe *o = arg;
    bool broker_up = *o->deps.broker_up, store_up = *o->deps.store_up;
    if (__atomic_load_n(o->deps.stopping, __ATOMIC_ACQUIRE)) {
        snprintf(why, cap, "stopping");
        return false;
    }
    if (broker_up && store_up) {
        if (o->deps.tap_bound != NULL && !o->deps.tap_bound(o->deps.tap_arg)) {
            snprintf(why, cap, "dead-letter tap not bound yet");
            return false;
        }
        return rp_observe_vhost_taps_ready(&o->deps, why, cap);
    }
    snprintf(why, cap, "%s%s%s", broker_up ? "" : "broker down",
             !broker_up && !store_up ? ", " : "", store_up ? "" : "store down");
    return false;
}

void rp_observe_event_lag(rp_observe *o, int64_t stamped_ms) {
    rp_metrics_set_event_lag_ms(o->deps.metrics, rp_obs_now(o) - stamped_ms);
}

/* The open gates and how old the oldest of each kind is, into the metrics
 * (the age from the database's clock, put on ours as the moment it
 * opened). Store thread. */
static void rp_observe_gates(rp_observe *o, const int64_t gates[RP_GATE_KIND_COUNT_],
                             const int64_t age_ms[RP_GATE_KIND_COUNT_]) {
    rp_time_ms now = rp_obs_now(o);
    int64_t opened[RP_GATE_KIND_COUNT_];
    for (int k = 0; k < RP_GATE_KIND_COUNT_; k++) opened[k] = gates[k] > 0 ? now - age_ms[k] : 0;
    rp_metrics_set_gates_open(o->deps.metrics, gates);
    rp_metrics_set_oldest_gates(o->deps.metrics, opened);
}

void rp_observe_pass_store(rp_observe *o, const int64_t *open_by_condition) {
    if (open_by_condition != NULL) rp_metrics_set_sightings_open(o->deps.metrics, open_by_condition);
    const rp_gauges_port *g = &o->deps.gauges;
    if (!g->store_up(g->self)) return;
    int64_t gates[RP_GATE_KIND_COUNT_], age[RP_GATE_KIND_COUNT_];
    if (g->open_gates_aged(g->self, gates, age) == RP_OK) rp_observe_gates(o, gates, age);
}

void rp_observe_pass_policies(rp_observe *o, const rp_report *report) {
    if (o == NULL || report == NULL) return;
    for (size_t i = 0; i < report->n_policies; i++)
        rp_metrics_set_policy_check(o->deps.metrics, &report->policies[i]);
}

void rp_observe_pass_done(rp_observe *o, rp_pass_scope scope, rp_status status, bool report_ok,
                          int64_t duration_ms) {
    rp_metrics_result result = status != RP_OK ? RP_METRICS_RESULT_ERROR
                               : !report_ok    ? RP_METRICS_RESULT_UNREADABLE
                                               : RP_METRICS_RESULT_OK;
    rp_metrics_scope ms = scope == RP_PASS_FULL ? RP_METRICS_SCOPE_FULL : RP_METRICS_SCOPE_LEASES;
    rp_metrics_pass(o->deps.metrics, ms, result, duration_ms * 1000);
    if (result == RP_METRICS_RESULT_OK) rp_metrics_pass_succeeded(o->deps.metrics, ms, rp_obs_now(o));
}

typedef struct rp_gauge_job {
    rp_observe *o;
    int64_t took_ms; /* the counts' time on the store thread */
    bool gates_ok, sightings_ok;
    int64_t gates[RP_GATE_KIND_COUNT_];
    int64_t gate_age[RP_GATE_KIND_COUNT_];
    int64_t sightings[RP_COND_COUNT_];
} rp_gauge_job;

/* Store thread. */
static void rp_gauges_count(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_gauge_job *j = arg;
    const rp_gauges_port *g = &j->o->deps.gauges;
    if (!g->store_up(g->self)) return;
    int64_t t0 = rp_clock_mono_ms();
    j->gates_ok = g->open_gates_aged(g->self, j->gates, j->gate_age) == RP_OK;
    if (j->gates_ok) rp_observe_gates(j->o, j->gates, j->gate_age);
    j->sightings_ok = g->open_sightings(g->self, j->sightings) == RP_OK;
    j->took_ms = rp_clock_mono_ms() - t0;
}

/* Loop. */
static void rp_gauges_done(void *arg, bool cancelled) {
    rp_gauge_job *j = arg;
    j->o->gauges_queued = false;
    if (!cancelled) j->o->gauges_took_ms = j->took_ms;
    if (!cancelled && j->sightings_ok) rp_metrics_set_sightings_open(j->o->deps.metrics, j->sightings);
    free(j);
}

static void rp_gauges_due(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_observe *o = arg;
    if (o->stopped || __atomic_load_n(o->deps.stopping, __ATOMIC_ACQUIRE)) return;
    /* One recount at a time: behind a long pass they would pile up. */
    if (o->gauges_queued) return;
    rp_gauge_job *j = calloc(1, sizeof *j);
    if (j == NULL) return; /* the next pass counts them */
    j->o = o;
    if (o->deps.store_job(o->deps.store_job_arg, rp_gauges_count, rp_gauges_done, j) != RP_OK)
        free(j);
    else
        o->gauges_queued = true;
}

int64_t rp_observe_gauges_wait_ms(int64_t debounce_ms, int64_t last_took_ms) {
    int64_t spaced = last_took_ms * RP_OBSERVE_GAUGES_SPACING;
    if (spaced > RP_OBSERVE_GAUGES_MAX_MS) spaced = RP_OBSERVE_GAUGES_MAX_MS;
    return spaced > debounce_ms ? spaced : debounce_ms;
}

void rp_observe_gauges_soon(rp_observe *o) {
    if (o == NULL || o->stopped || evtimer_pending(o->gauges_ev, NULL)) return;
    int64_t ms = rp_observe_gauges_wait_ms(
        o->deps.gauges_ms > 0 ? o->deps.gauges_ms : RP_OBSERVE_GAUGES_MS, o->gauges_took_ms);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(o->gauges_ev, &tv);
}

rp_observe *rp_observe_new(struct event_base *base, const rp_observe_deps *deps) {
    rp_observe *o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    o->base = base;
    o->deps = *deps;
    o->gauges_ev = evtimer_new(base, rp_gauges_due, o);
    if (o->gauges_ev == NULL) {
        free(o);
        return NULL;
    }
    return o;
}

void rp_observe_stop(rp_observe *o) {
    if (o == NULL) return;
    o->stopped = true;
    event_del(o->gauges_ev);
}

void rp_observe_free(rp_observe *o) {
    if (o == NULL) return;
    event_free(o->gauges_ev);
    free(o);
}
