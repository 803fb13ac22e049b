/*
 * The daemon's metrics glue: starts the HTTP endpoints (adapters/http,
 * rp_http.h) over the
 * daemon's registry (rp_metrics.h), copies loop-side state into it before
 * each scrape, and records what the loop and the store thread see: the
 * event lag of broker events, every pass, the open sightings and gates
 * after a pass.
 *
 * Hooks other code calls (all thread-safe, on &d->metrics):
 *   rp_metrics_reaped               rp_amqp_feed.c, every committed ledger event
 *   rp_metrics_dead_letters_parked  rp_amqp_feed.c counts DEAD_LETTER/PARKED events
 *   rp_metrics_gate_answered        control.c, an answer that changed a gate
 *   rp_metrics_control              control.c, once per reply
 *   rp_metrics_feed_publish_failed  rp_amqp_feed.c
 *   rp_metrics_feed_published       rp_amqp_feed.c, an event the exchange confirmed
 *   rp_metrics_connected            daemon.c (the session's hooks), each connection made
 *   rp_metrics_tap_parked           tap.c, each dead letter it parked
 *   rp_observe_event                daemon.c, each broker event
 *   rp_observe_pass_store           daemon.c, store thread, after a pass
 *   rp_observe_pass_done            daemon.c, loop, when a pass is done
 *   rp_observe_gauges_soon          rp_amqp_feed.c, loop, after each published ledger
 *                                   event: the open gates and sightings are
 *                                   counted again at most once every
 *                                   RP_OBSERVE_GAUGES_MS (a park, an answer,
 *                                   a sighting opened or cleared between
 *                                   passes shows within that)
 *
 * Before each scrape (rp_observe_refresh, on the loop) it takes what the
 * process uses (rp_http_process.h: CPU, resident memory, open descriptors)
 * and the tap's gauges, and sets the wall clock the gate ages are measured
 * at. The rendering and the listener are the HTTP adapter's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "daemon_internal.h"
#include "rp_amqp_stamp.h"
#include "rp_http.h"
#include "rp_http_process.h"
#include "rp_log.h"
#include "rp_clock.h"
#include "version.h"

#define RP_OBSERVE_GAUGES_MS 2000

static void rp_observe_process(rp_daemon *d) {
    rp_metrics_process p;
    if (rp_http_process_sample(&p)) rp_metrics_set_process(&d->metrics, &p);
}

static void rp_observe_refresh(void *arg) {
    rp_daemon *d = arg;
    rp_metrics_set_up(&d->metrics, RP_METRICS_BROKER, d->broker_up);
    rp_metrics_set_up(&d->metrics, RP_METRICS_STORE, d->store_up);
    rp_metrics_set_clock(&d->metrics, rp_clock_wall_ms());
    rp_observe_process(d);
    if (d->tap) {
        int64_t held;
        bool paused;
        rp_tap_gauges(d->tap, &held, &paused);
        rp_metrics_set_tap(&d->metrics, held, paused);
    }
}

static bool rp_observe_ready(void *arg, char *why, size_t cap) {
    rp_daemon *d = arg;
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
        snprintf(why, cap, "stopping");
        return false;
    }
    if (d->broker_up && d->store_up) {
        if (rp_tap_bound(d->tap)) return true;
        snprintf(why, cap, "dead-letter tap not bound yet");
        return false;
    }
    snprintf(why, cap, "%s%s%s", d->broker_up ? "" : "broker down",
             !d->broker_up && !d->store_up ? ", " : "", d->store_up ? "" : "store down");
    return false;
}

rp_status rp_observe_start(rp_daemon *d) {
    rp_metrics_init(&d->metrics, REAPER_VERSION, REAPER_GIT_REV);
    rp_http_hooks hooks = {.refresh = rp_observe_refresh, .ready = rp_observe_ready, .arg = d};
    char err[300];
    d->http = rp_http_new(d->base, d->cfg->http.listen, &d->metrics, &hooks, err, sizeof err);
    if (d->http == NULL) {
        RP_ERROR("cannot serve HTTP (/metrics, /healthz, /readyz)", "key", "http.listen", "reason",
                 err, NULL);
        return RP_ERR_IO;
    }
    RP_INFO("http listening", "listen", rp_http_bound(d->http), "paths",
            "/metrics /healthz /readyz", NULL);
    return RP_OK;
}

/* The broker stamps each event with a timestamp_in_ms header (a long). */
void rp_observe_event(rp_daemon *d, const rp_amqp_message *msg) {
    int64_t ts;
    if (rp_amqp_timestamp_in_ms(msg, &ts))
        rp_metrics_set_event_lag_ms(&d->metrics, rp_clock_wall_ms() - ts);
}

/* The open gates and how old the oldest of each kind is, into the metrics
 * (the age from the database's clock, put on ours as the moment it
 * opened). Store thread. */
static void rp_observe_gates(rp_daemon *d, const int64_t gates[RP_GATE_KIND_COUNT_],
                             const int64_t age_ms[RP_GATE_KIND_COUNT_]) {
    rp_time_ms now = rp_clock_wall_ms();
    int64_t opened[RP_GATE_KIND_COUNT_];
    for (int k = 0; k < RP_GATE_KIND_COUNT_; k++) opened[k] = gates[k] > 0 ? now - age_ms[k] : 0;
    rp_metrics_set_gates_open(&d->metrics, gates);
    rp_metrics_set_oldest_gates(&d->metrics, opened);
}

void rp_observe_pass_store(rp_daemon *d, const rp_pass_request *req) {
    if (req->open_sightings >= 0) rp_metrics_set_sightings_open(&d->metrics, req->open_by_condition);
    if (!rp_pg_conn_is_up(d->runner.conn)) return;
    int64_t gates[RP_GATE_KIND_COUNT_], age[RP_GATE_KIND_COUNT_];
    if (rp_pg_store_count_open_gates_aged(d->runner.store, gates, age) == RP_OK)
        rp_observe_gates(d, gates, age);
}

void rp_observe_pass_done(rp_daemon *d, const rp_pass_request *req) {
    rp_metrics_result result = req->status != RP_OK   ? RP_METRICS_RESULT_ERROR
                               : !req->report.ok      ? RP_METRICS_RESULT_UNREADABLE
                                                      : RP_METRICS_RESULT_OK;
    rp_metrics_pass(&d->metrics,
                    req->scope == RP_PASS_FULL ? RP_METRICS_SCOPE_FULL : RP_METRICS_SCOPE_LEASES,
                    result, req->duration_ms * 1000);
    if (result == RP_METRICS_RESULT_OK)
        rp_metrics_pass_succeeded(
            &d->metrics, req->scope == RP_PASS_FULL ? RP_METRICS_SCOPE_FULL : RP_METRICS_SCOPE_LEASES,
            rp_clock_wall_ms());
}

typedef struct rp_gauge_job {
    rp_daemon *d;
    bool gates_ok, sightings_ok;
    int64_t gates[RP_GATE_KIND_COUNT_];
    int64_t gate_age[RP_GATE_KIND_COUNT_];
    int64_t sightings[RP_COND_COUNT_];
} rp_gauge_job;

/* Store thread. */
static void rp_gauges_count(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_gauge_job *j = arg;
    if (!rp_pg_conn_is_up(j->d->runner.conn)) return;
    j->gates_ok =
        rp_pg_store_count_open_gates_aged(j->d->runner.store, j->gates, j->gate_age) == RP_OK;
    if (j->gates_ok) rp_observe_gates(j->d, j->gates, j->gate_age);
    j->sightings_ok = rp_pg_store_count_open_sightings(j->d->runner.store, j->sightings) == RP_OK;
}

/* Loop. */
static void rp_gauges_done(void *arg, bool cancelled) {
    rp_gauge_job *j = arg;
    j->d->gauges_queued = false;
    if (!cancelled && j->sightings_ok) rp_metrics_set_sightings_open(&j->d->metrics, j->sightings);
    free(j);
}

static void rp_gauges_due(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_daemon *d = arg;
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) return;
    /* One recount at a time: behind a long pass they would pile up. */
    if (d->gauges_queued) return;
    rp_gauge_job *j = calloc(1, sizeof *j);
    if (j == NULL) return; /* the next pass counts them */
    j->d = d;
    if (rp_daemon_store_job(d, rp_gauges_count, rp_gauges_done, j) != RP_OK) free(j);
    else d->gauges_queued = true;
}

void rp_observe_gauges_soon(rp_daemon *d) {
    if (d->gauges_ev == NULL) {
        d->gauges_ev = evtimer_new(d->base, rp_gauges_due, d);
        if (d->gauges_ev == NULL) return;
    }
    if (evtimer_pending(d->gauges_ev, NULL)) return;
    struct timeval tv = {RP_OBSERVE_GAUGES_MS / 1000, (RP_OBSERVE_GAUGES_MS % 1000) * 1000};
    evtimer_add(d->gauges_ev, &tv);
}
