/* The metrics registry and its text-format rendering (rp_metrics.h). Every
 * value is read and written with __atomic builtins (relaxed: each value is
 * independent; a scrape needs no ordering between them). */
#include "rp_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

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
static const char *const rp_op_names[RP_METRICS_OPS] = {"reap", "answer", "gates", "status",
                                                        "unknown"};
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

void rp_metrics_set_tap(rp_metrics *m, int64_t held_bytes, bool paused) {
    STORE(&m->tap_held_bytes, held_bytes);
    STORE(&m->tap_paused, paused ? 1u : 0u);
    STORE(&m->tap_known, 1u);
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

void rp_metrics_tap_parked(rp_metrics *m, int64_t delay_us) {
    rp_histogram_observe(&m->tap_park_delay, rp_metrics_delay_bounds, delay_us);
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

void rp_metrics_dead_letters_parked(rp_metrics *m, uint64_t n) { ADD(&m->dead_letters_parked, n); }
void rp_metrics_tap_ignored(rp_metrics *m, uint64_t n) { ADD(&m->tap_ignored, n); }
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

/* ---- rendering ------------------------------------------------------------ */

size_t rp_metrics_escape_label(const char *v, char *buf, size_t cap) {
    size_t n = 0, written = 0;
    bool room = cap > 0;
    for (const char *p = v ? v : ""; *p; p++) {
        char one[2] = {*p, '\0'};
        const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : one;
        size_t k = strlen(rep);
        if (room && written + k + 1 <= cap) {
            memcpy(buf + written, rep, k);
            written += k;
        } else {
            room = false;
        }
        n += k;
    }
    if (cap > 0) buf[written] = '\0';
    return n;
}

typedef struct rp_mbuf {
    char *p;
    size_t len, cap;
    bool nomem;
} rp_mbuf;

static void rp_mbuf_printf(rp_mbuf *b, const char *fmt, ...) RP_PRINTF(2, 3);

static void rp_mbuf_printf(rp_mbuf *b, const char *fmt, ...) {
    if (b->nomem) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->nomem = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->nomem = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

static void rp_family(rp_mbuf *b, const char *name, const char *type, const char *help) {
    rp_mbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values here are the core's enum names (no escapes needed), except
 * the version, which is escaped. */
/* labels: "scope=\"full\"," (with its trailing comma) or "" for none. */
static void rp_render_histogram(rp_mbuf *b, const char *name, const char *labels,
                                const double *bounds, const rp_metrics_histogram *h) {
    uint64_t cum = 0;
    for (size_t i = 0; i <= RP_METRICS_BUCKETS; i++) {
        cum += LOAD(&h->buckets[i]);
        if (i < RP_METRICS_BUCKETS)
            rp_mbuf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, bounds[i],
                           (unsigned long long)cum);
        else
            rp_mbuf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels,
                           (unsigned long long)cum);
    }
    /* The count is the +Inf bucket, so the two always agree in one scrape
     * even while a pass is being recorded. */
    size_t n = strlen(labels);
    char only[64];
    snprintf(only, sizeof only, "%.*s", n > 0 ? (int)n - 1 : 0, labels); /* without the comma */
    const char *open = n > 0 ? "{" : "", *close = n > 0 ? "}" : "";
    uint64_t sum = LOAD(&h->sum_us);
    rp_mbuf_printf(b, "%s_sum%s%s%s %llu.%06llu\n", name, open, only, close,
                   (unsigned long long)(sum / 1000000), (unsigned long long)(sum % 1000000));
    rp_mbuf_printf(b, "%s_count%s%s%s %llu\n", name, open, only, close, (unsigned long long)cum);
}

/* A duration in ms as seconds with three decimals (negative counts as 0). */
static void rp_render_ms(rp_mbuf *b, const char *series, int64_t ms) {
    if (ms < 0) ms = 0;
    rp_mbuf_printf(b, "%s %lld.%03lld\n", series, (long long)(ms / 1000), (long long)(ms % 1000));
}

static void rp_lower(char *dst, size_t n, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++)
        dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (char)(src[i] - 'A' + 'a') : src[i];
    dst[i] = '\0';
}

rp_status rp_metrics_render(const rp_metrics *m, char **out, size_t *len) {
    rp_mbuf b = {malloc(8192), 0, 8192, false};
    *out = NULL;
    if (len) *len = 0;
    if (b.p == NULL) return RP_ERR_NOMEM;
    b.p[0] = '\0';

    int64_t now = LOAD(&m->now_ms);
    if (LOAD(&m->process_known)) {
        int64_t cpu = LOAD(&m->process.cpu_us);
        rp_family(&b, "process_cpu_seconds_total", "counter",
                  "Total user and system CPU time spent in seconds.");
        rp_mbuf_printf(&b, "process_cpu_seconds_total %lld.%06lld\n", (long long)(cpu / 1000000),
                       (long long)(cpu % 1000000));
        rp_family(&b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        rp_mbuf_printf(&b, "process_resident_memory_bytes %lld\n",
                       (long long)LOAD(&m->process.resident_bytes));
        rp_family(&b, "process_open_fds", "gauge", "Number of open file descriptors.");
        rp_mbuf_printf(&b, "process_open_fds %lld\n", (long long)LOAD(&m->process.open_fds));
        rp_family(&b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        rp_mbuf_printf(&b, "process_max_fds %lld\n", (long long)LOAD(&m->process.max_fds));
        rp_family(&b, "process_start_time_seconds", "gauge",
                  "Start time of the process since unix epoch in seconds.");
        rp_render_ms(&b, "process_start_time_seconds", LOAD(&m->process.start_time_ms));
    }

    char ver[160], rev[160];
    rp_metrics_escape_label(m->version, ver, sizeof ver);
    rp_metrics_escape_label(m->revision, rev, sizeof rev);
    rp_family(&b, "reaper_build_info", "gauge",
              "The running reaperd's version and source revision (always 1).");
    rp_mbuf_printf(&b, "reaper_build_info{version=\"%s\",revision=\"%s\"} 1\n", ver, rev);

    rp_family(&b, "reaper_up", "gauge", "1 while the backend is connected, else 0.");
    for (int i = 0; i < RP_METRICS_BACKEND_COUNT_; i++)
        rp_mbuf_printf(&b, "reaper_up{backend=\"%s\"} %u\n", rp_backend_names[i], LOAD(&m->up[i]));

    rp_family(&b, "reaper_reconnects_total", "counter",
              "Connections to the backend established again after the first.");
    for (int i = 0; i < RP_METRICS_BACKEND_COUNT_; i++) {
        uint64_t c = LOAD(&m->connects[i]);
        rp_mbuf_printf(&b, "reaper_reconnects_total{backend=\"%s\"} %llu\n", rp_backend_names[i],
                       (unsigned long long)(c > 0 ? c - 1 : 0));
    }

    /* Conditions and actions in lower case, as on the events exchange's
     * routing keys; sources as on the wire (job_queue, broker). */
    rp_family(&b, "reaper_reaped_total", "counter",
              "Committed ledger events, by source, condition and action.");
    for (int s = 0; s < RP_SOURCE_COUNT_; s++)
        for (int c = 0; c < RP_COND_COUNT_; c++)
            for (int a = 0; a < RP_ACTION_COUNT_; a++) {
                uint64_t v = LOAD(&m->reaped[s][c][a]);
                if (v == 0 && !rp_metrics_reaped_valid((rp_source)s, (rp_condition)c, (rp_action)a))
                    continue;
                char cond[32], act[32];
                rp_lower(cond, sizeof cond, rp_condition_string((rp_condition)c));
                rp_lower(act, sizeof act, rp_action_string((rp_action)a));
                rp_mbuf_printf(&b,
                               "reaper_reaped_total{source=\"%s\",condition=\"%s\",action=\"%s\"} "
                               "%llu\n",
                               rp_source_string((rp_source)s), cond, act, (unsigned long long)v);
            }

    rp_family(&b, "reaper_sightings_open", "gauge",
              "Open sightings (surfaced conditions not yet cleared), after the last pass.");
    if (LOAD(&m->sightings_known))
        for (int c = 1; c < RP_COND_COUNT_; c++) {
            char cond[32];
            rp_lower(cond, sizeof cond, rp_condition_string((rp_condition)c));
            rp_mbuf_printf(&b, "reaper_sightings_open{condition=\"%s\"} %lld\n", cond,
                           (long long)LOAD(&m->sightings_open[c]));
        }

    rp_family(&b, "reaper_dead_letters_parked_total", "counter",
              "Dead letters parked (job, gate and ledger event committed).");
    rp_mbuf_printf(&b, "reaper_dead_letters_parked_total %llu\n",
                   (unsigned long long)LOAD(&m->dead_letters_parked));

    rp_family(&b, "reaper_tap_ignored_total", "counter",
              "Deliveries on the dead-letter tap that did not come through a dead-letter "
              "exchange (no x-death, or through the default exchange): acked, not parked.");
    rp_mbuf_printf(&b, "reaper_tap_ignored_total %llu\n",
                   (unsigned long long)LOAD(&m->tap_ignored));

    rp_family(&b, "reaper_broker_events_refused_total", "counter",
              "Deliveries on the broker-event queue that did not come from amq.rabbitmq.event "
              "(published straight into the queue): refused, not acted on.");
    rp_mbuf_printf(&b, "reaper_broker_events_refused_total %llu\n",
                   (unsigned long long)LOAD(&m->events_refused));

    rp_family(&b, "reaper_gates_open", "gauge", "Gates waiting for a person, by kind.");
    if (LOAD(&m->gates_open_known))
        for (int k = 0; k < RP_GATE_KIND_COUNT_; k++)
            rp_mbuf_printf(&b, "reaper_gates_open{kind=\"%s\"} %lld\n",
                           rp_gate_kind_string((rp_gate_kind)k), (long long)LOAD(&m->gates_open[k]));

    rp_family(&b, "reaper_oldest_open_gate_age_seconds", "gauge",
              "How long the oldest open gate of each kind has waited (0: none open).");
    if (LOAD(&m->oldest_gate_known))
        for (int k = 0; k < RP_GATE_KIND_COUNT_; k++) {
            int64_t at = LOAD(&m->oldest_gate_ms[k]);
            char series[96];
            snprintf(series, sizeof series, "reaper_oldest_open_gate_age_seconds{kind=\"%s\"}",
                     rp_gate_kind_string((rp_gate_kind)k));
            rp_render_ms(&b, series, at == 0 ? 0 : now - at);
        }

    /* The choices each kind takes (CONTRACT section 5). */
    static const struct {
        rp_gate_kind kind;
        rp_choice choice;
    } answered[] = {{RP_GATE_DELIVERY_EXHAUSTED, RP_CHOICE_RETRY},
                    {RP_GATE_DELIVERY_EXHAUSTED, RP_CHOICE_DISMISS},
                    {RP_GATE_BUS_DEAD_LETTERED, RP_CHOICE_REPLAY},
                    {RP_GATE_BUS_DEAD_LETTERED, RP_CHOICE_DISMISS}};
    rp_family(&b, "reaper_gates_answered_total", "counter", "Gates answered, by kind and choice.");
    for (size_t i = 0; i < RP_ARRAY_LEN(answered); i++)
        rp_mbuf_printf(&b, "reaper_gates_answered_total{kind=\"%s\",choice=\"%s\"} %llu\n",
                       rp_gate_kind_string(answered[i].kind), rp_choice_string(answered[i].choice),
                       (unsigned long long)LOAD(&m->gates_answered[answered[i].kind][answered[i].choice]));

    rp_family(&b, "reaper_pass_duration_seconds", "histogram",
              "How long the daemon's passes took (full: the sweep; leases: the lease reap).");
    for (int s = 0; s < RP_METRICS_SCOPE_COUNT_; s++) {
        char labels[32];
        snprintf(labels, sizeof labels, "scope=\"%s\",", rp_scope_names[s]);
        rp_render_histogram(&b, "reaper_pass_duration_seconds", labels, rp_metrics_bucket_bounds,
                            &m->pass_duration[s]);
    }

    rp_family(&b, "reaper_passes_total", "counter", "Passes run by the daemon, by scope and result.");
    for (int s = 0; s < RP_METRICS_SCOPE_COUNT_; s++)
        for (int r = 0; r < RP_METRICS_RESULT_COUNT_; r++)
            rp_mbuf_printf(&b, "reaper_passes_total{scope=\"%s\",result=\"%s\"} %llu\n",
                           rp_scope_names[s], rp_result_names[r],
                           (unsigned long long)LOAD(&m->passes[s][r]));

    rp_family(&b, "reaper_last_successful_pass_timestamp_seconds", "gauge",
              "When a pass of the scope last ended ok (seconds since the epoch).");
    for (int s = 0; s < RP_METRICS_SCOPE_COUNT_; s++) {
        int64_t at = LOAD(&m->last_ok_ms[s]);
        if (at == 0) continue;
        char series[96];
        snprintf(series, sizeof series, "reaper_last_successful_pass_timestamp_seconds{scope=\"%s\"}",
                 rp_scope_names[s]);
        rp_render_ms(&b, series, at);
    }

    rp_family(&b, "reaper_event_lag_seconds", "gauge",
              "For the last broker event handled: now minus its timestamp_in_ms.");
    if (LOAD(&m->event_lag_known)) {
        int64_t lag = LOAD(&m->event_lag_ms);
        rp_mbuf_printf(&b, "reaper_event_lag_seconds %lld.%03lld\n", (long long)(lag / 1000),
                       (long long)(lag % 1000));
    }

    rp_family(&b, "reaper_control_requests_total", "counter",
              "Control requests answered, by op and outcome (ok or the error code).");
    for (int o = 0; o < RP_METRICS_OPS; o++)
        for (int r = 0; r < RP_METRICS_OUTCOMES; r++) {
            uint64_t v = LOAD(&m->control[o][r]);
            /* ok for the four real ops always; the rest once they happen. */
            if (v == 0 && (r != 0 || o == RP_METRICS_OPS - 1)) continue;
            rp_mbuf_printf(&b, "reaper_control_requests_total{op=\"%s\",outcome=\"%s\"} %llu\n",
                           rp_op_names[o], rp_outcome_names[r], (unsigned long long)v);
        }

    rp_family(&b, "reaper_feed_publish_failures_total", "counter",
              "Ledger events not published to the events exchange (they stay on the ledger).");
    rp_mbuf_printf(&b, "reaper_feed_publish_failures_total %llu\n",
                   (unsigned long long)LOAD(&m->feed_publish_failures));
    rp_family(&b, "reaper_feed_published_total", "counter",
              "Ledger events the events exchange confirmed.");
    rp_mbuf_printf(&b, "reaper_feed_published_total %llu\n",
                   (unsigned long long)LOAD(&m->feed_published));

    if (LOAD(&m->tap_known)) {
        rp_family(&b, "reaper_tap_held_bytes", "gauge",
                  "What the dead-letter tap holds in memory (bodies and bookkeeping).");
        rp_mbuf_printf(&b, "reaper_tap_held_bytes %lld\n", (long long)LOAD(&m->tap_held_bytes));
        rp_family(&b, "reaper_tap_paused", "gauge",
                  "1 while the tap does not consume (at its memory bound) or waits to retry the store.");
        rp_mbuf_printf(&b, "reaper_tap_paused %u\n", LOAD(&m->tap_paused));
    }
    rp_family(&b, "reaper_tap_park_delay_seconds", "histogram",
              "From a dead letter's arrival at reaperd's tap to the commit of its park.");
    rp_render_histogram(&b, "reaper_tap_park_delay_seconds", "", rp_metrics_delay_bounds,
                        &m->tap_park_delay);

    if (b.nomem) {
        free(b.p);
        return RP_ERR_NOMEM;
    }
    *out = b.p;
    if (len) *len = b.len;
    return RP_OK;
}
