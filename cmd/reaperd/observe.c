/*
 * The daemon's metrics glue: starts the HTTP endpoints (http.h) over the
 * daemon's registry (rp_metrics.h), copies loop-side state into it before
 * each scrape, and records what the loop and the store thread see: the
 * event lag of broker events, every pass, the open sightings and gates
 * after a pass.
 *
 * Hooks other code calls (all thread-safe, on &d->metrics):
 *   rp_metrics_reaped               feed.c, every committed ledger event
 *   rp_metrics_dead_letters_parked  feed.c counts DEAD_LETTER/PARKED events
 *   rp_metrics_gate_answered        control.c, an answer that changed a gate
 *   rp_metrics_control              control.c, once per reply
 *   rp_metrics_feed_publish_failed  feed.c
 *   rp_observe_event                broker.c, each broker event
 *   rp_observe_pass_store           daemon.c, store thread, after a pass
 *   rp_observe_pass_done            daemon.c, loop, when a pass is done
 *   rp_observe_gauges_soon          feed.c, loop, after each published ledger
 *                                   event: the open gates and sightings are
 *                                   counted again at most once every
 *                                   RP_OBSERVE_GAUGES_MS (a park, an answer,
 *                                   a sighting opened or cleared between
 *                                   passes shows within that)
 */
#include <amqp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon_internal.h"
#include "rp_log.h"
#include "version.h"

#define RP_OBSERVE_GAUGES_MS 2000

static void rp_observe_refresh(void *arg) {
    rp_daemon *d = arg;
    rp_metrics_set_up(&d->metrics, RP_METRICS_BROKER, d->broker_up);
    rp_metrics_set_up(&d->metrics, RP_METRICS_STORE, d->store_up);
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
    rp_metrics_init(&d->metrics, RP_VERSION_STRING);
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

static rp_time_ms rp_observe_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (rp_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The broker stamps each event with a timestamp_in_ms header (a long). */
void rp_observe_event(rp_daemon *d, const rp_amqp_message *msg) {
    const amqp_basic_properties_t *p = &msg->props;
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG)) return;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (e->key.len != 15 || memcmp(e->key.bytes, "timestamp_in_ms", 15) != 0) continue;
        int64_t ts;
        switch (e->value.kind) {
        case AMQP_FIELD_KIND_I64: ts = e->value.value.i64; break;
        case AMQP_FIELD_KIND_U64:
        case AMQP_FIELD_KIND_TIMESTAMP: ts = (int64_t)e->value.value.u64; break;
        case AMQP_FIELD_KIND_I32: ts = e->value.value.i32; break;
        case AMQP_FIELD_KIND_U32: ts = e->value.value.u32; break;
        default: return;
        }
        rp_metrics_set_event_lag_ms(&d->metrics, rp_observe_wall_ms() - ts);
        return;
    }
}

void rp_observe_pass_store(rp_daemon *d, const rp_pass_request *req) {
    if (req->open_sightings >= 0) rp_metrics_set_sightings_open(&d->metrics, req->open_by_condition);
    if (!rp_pg_conn_is_up(d->runner.conn)) return;
    int64_t gates[RP_GATE_KIND_COUNT_];
    if (rp_pg_store_count_open_gates(d->runner.store, gates) == RP_OK)
        rp_metrics_set_gates_open(&d->metrics, gates);
}

void rp_observe_pass_done(rp_daemon *d, const rp_pass_request *req) {
    rp_metrics_result result = req->status != RP_OK   ? RP_METRICS_RESULT_ERROR
                               : !req->report.ok      ? RP_METRICS_RESULT_UNREADABLE
                                                      : RP_METRICS_RESULT_OK;
    rp_metrics_pass(&d->metrics,
                    req->scope == RP_PASS_FULL ? RP_METRICS_SCOPE_FULL : RP_METRICS_SCOPE_LEASES,
                    result, req->duration_ms * 1000);
}

typedef struct rp_gauge_job {
    rp_daemon *d;
    bool gates_ok, sightings_ok;
    int64_t gates[RP_GATE_KIND_COUNT_];
    int64_t sightings[RP_COND_COUNT_];
} rp_gauge_job;

/* Store thread. */
static void rp_gauges_count(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_gauge_job *j = arg;
    if (!rp_pg_conn_is_up(j->d->runner.conn)) return;
    j->gates_ok = rp_pg_store_count_open_gates(j->d->runner.store, j->gates) == RP_OK;
    j->sightings_ok = rp_pg_store_count_open_sightings(j->d->runner.store, j->sightings) == RP_OK;
}

/* Loop. */
static void rp_gauges_done(void *arg, bool cancelled) {
    rp_gauge_job *j = arg;
    j->d->gauges_queued = false;
    if (!cancelled && j->gates_ok) rp_metrics_set_gates_open(&j->d->metrics, j->gates);
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
