/* The metrics registry rendered in the Prometheus text format
 * (rp_http_prom.h). Every value is read with __atomic builtins (relaxed:
 * each value is independent; a scrape needs no ordering between them). */
#include "rp_http_prom.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_text.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* Room for a histogram's labels: a vhost name escaped (each byte at most
 * two) in vhost="...", with its comma. */
#define RP_PROM_LABELS_MAX (2 * RP_METRICS_VHOST_NAME_MAX + 16)

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

static void rp_family(rp_text_buf *b, const char *name, const char *type, const char *help) {
    rp_text_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values here are the core's enum names (no escapes needed), except
 * the version and the vhost names, which are escaped. */
/* labels: "scope=\"full\"," (with its trailing comma) or "" for none. */
static void rp_render_histogram(rp_text_buf *b, const char *name, const char *labels,
                                const double *bounds, const rp_metrics_histogram *h) {
    uint64_t cum = 0;
    for (size_t i = 0; i <= RP_METRICS_BUCKETS; i++) {
        cum += LOAD(&h->buckets[i]);
        if (i < RP_METRICS_BUCKETS)
            rp_text_buf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, bounds[i],
                           (unsigned long long)cum);
        else
            rp_text_buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels,
                           (unsigned long long)cum);
    }
    /* The count is the +Inf bucket, so the two always agree in one scrape
     * even while a pass is being recorded. */
    size_t n = strlen(labels);
    char only[RP_PROM_LABELS_MAX];
    snprintf(only, sizeof only, "%.*s", n > 0 ? (int)n - 1 : 0, labels); /* without the comma */
    const char *open = n > 0 ? "{" : "", *close = n > 0 ? "}" : "";
    uint64_t sum = LOAD(&h->sum_us);
    rp_text_buf_printf(b, "%s_sum%s%s%s %llu.%06llu\n", name, open, only, close,
                   (unsigned long long)(sum / 1000000), (unsigned long long)(sum % 1000000));
    rp_text_buf_printf(b, "%s_count%s%s%s %llu\n", name, open, only, close, (unsigned long long)cum);
}

/* A duration in ms as seconds with three decimals (negative counts as 0). */
static void rp_render_ms(rp_text_buf *b, const char *series, int64_t ms) {
    if (ms < 0) ms = 0;
    rp_text_buf_printf(b, "%s %lld.%03lld\n", series, (long long)(ms / 1000), (long long)(ms % 1000));
}

static void rp_lower(char *dst, size_t n, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++)
        dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (char)(src[i] - 'A' + 'a') : src[i];
    dst[i] = '\0';
}

rp_status rp_metrics_render(const rp_metrics *m, char **out, size_t *len) {
    rp_text_buf b = {malloc(8192), 0, 8192, false};
    *out = NULL;
    if (len) *len = 0;
    if (b.p == NULL) return RP_ERR_NOMEM;
    b.p[0] = '\0';

    int64_t now = LOAD(&m->now_ms);
    if (LOAD(&m->process_known)) {
        int64_t cpu = LOAD(&m->process.cpu_us);
        rp_family(&b, "process_cpu_seconds_total", "counter",
                  "Total user and system CPU time spent in seconds.");
        rp_text_buf_printf(&b, "process_cpu_seconds_total %lld.%06lld\n", (long long)(cpu / 1000000),
                       (long long)(cpu % 1000000));
        rp_family(&b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        rp_text_buf_printf(&b, "process_resident_memory_bytes %lld\n",
                       (long long)LOAD(&m->process.resident_bytes));
        rp_family(&b, "process_open_fds", "gauge", "Number of open file descriptors.");
        rp_text_buf_printf(&b, "process_open_fds %lld\n", (long long)LOAD(&m->process.open_fds));
        rp_family(&b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        rp_text_buf_printf(&b, "process_max_fds %lld\n", (long long)LOAD(&m->process.max_fds));
        rp_family(&b, "process_start_time_seconds", "gauge",
                  "Start time of the process since unix epoch in seconds.");
        rp_render_ms(&b, "process_start_time_seconds", LOAD(&m->process.start_time_ms));
    }

    char ver[160], rev[160];
    rp_metrics_escape_label(m->version, ver, sizeof ver);
    rp_metrics_escape_label(m->revision, rev, sizeof rev);
    rp_family(&b, "reaper_build_info", "gauge",
              "The running reaperd's version and source revision (always 1).");
    rp_text_buf_printf(&b, "reaper_build_info{version=\"%s\",revision=\"%s\"} 1\n", ver, rev);

    rp_family(&b, "reaper_up", "gauge", "1 while the backend is connected, else 0.");
    for (int i = 0; i < RP_METRICS_BACKEND_COUNT_; i++)
        rp_text_buf_printf(&b, "reaper_up{backend=\"%s\"} %u\n", rp_metrics_backend_name(i), LOAD(&m->up[i]));

    rp_family(&b, "reaper_reconnects_total", "counter",
              "Connections to the backend established again after the first.");
    for (int i = 0; i < RP_METRICS_BACKEND_COUNT_; i++) {
        uint64_t c = LOAD(&m->connects[i]);
        rp_text_buf_printf(&b, "reaper_reconnects_total{backend=\"%s\"} %llu\n", rp_metrics_backend_name(i),
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
                rp_text_buf_printf(&b,
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
            rp_text_buf_printf(&b, "reaper_sightings_open{condition=\"%s\"} %lld\n", cond,
                           (long long)LOAD(&m->sightings_open[c]));
        }

    /* The watched vhosts' slots, with their escaped names; the overflow
     * slot (vhost="") last, once used. */
    uint32_t nv = __atomic_load_n(&m->n_vhosts, __ATOMIC_ACQUIRE);
    if (nv > RP_METRICS_VHOSTS) nv = RP_METRICS_VHOSTS;
    size_t slot[RP_METRICS_VHOSTS + 1], ns = 0;
    for (uint32_t i = 0; i < nv; i++) slot[ns++] = i;
    if (LOAD(&m->overflowed)) slot[ns++] = RP_METRICS_VHOSTS;
    /* Each render escapes into its own buffer (renders may overlap on
     * two threads): on the heap, freed below. */
    char (*esc)[2 * RP_METRICS_VHOST_NAME_MAX] = calloc(ns ? ns : 1, sizeof *esc);
    if (esc == NULL) {
        free(b.p);
        return RP_ERR_NOMEM;
    }
    for (size_t k = 0; k < ns; k++)
        rp_metrics_escape_label(m->vhosts[slot[k]].name, esc[k], sizeof esc[k]);

    /* Issue 18 item 5, issue 19 item 1: whether reaper's policies were
     * verified in each watched vhost, once a reconcile has checked them
     * there (never the overflow slot). */
    bool any_policy = false;
    for (uint32_t v = 0; v < nv; v++)
        for (int i = 0; i < RP_METRICS_POLICIES; i++)
            any_policy |= LOAD(&m->vhosts[v].policy_known[i]) != 0;
    if (any_policy) {
        rp_family(&b, "reaper_policy_verified", "gauge",
                  "1 when the last reconcile verified reaper's policy in force in the vhost, "
                  "0 when not (refused, conflicting, not carried): a pass is then not ok.");
        for (int i = 0; i < RP_METRICS_POLICIES; i++)
            for (uint32_t v = 0; v < nv; v++)
                if (LOAD(&m->vhosts[v].policy_known[i]))
                    rp_text_buf_printf(&b, "reaper_policy_verified{policy=\"%s\",vhost=\"%s\"} %u\n",
                                       rp_metrics_policy_name(i), esc[v],
                                       LOAD(&m->vhosts[v].policy_verified[i]));
    }

    rp_family(&b, "reaper_dead_letters_parked_total", "counter",
              "Dead letters parked (job, gate and ledger event committed), by vhost.");
    for (size_t k = 0; k < ns; k++)
        rp_text_buf_printf(&b, "reaper_dead_letters_parked_total{vhost=\"%s\"} %llu\n", esc[k],
                           (unsigned long long)LOAD(&m->vhosts[slot[k]].dead_letters_parked));

    rp_family(&b, "reaper_tap_ignored_total", "counter",
              "Deliveries on a vhost's dead-letter tap that did not come through a dead-letter "
              "exchange (no x-death, or through the default exchange): acked, not parked.");
    for (size_t k = 0; k < ns; k++)
        rp_text_buf_printf(&b, "reaper_tap_ignored_total{vhost=\"%s\"} %llu\n", esc[k],
                           (unsigned long long)LOAD(&m->vhosts[slot[k]].tap_ignored));

    rp_family(&b, "reaper_broker_events_refused_total", "counter",
              "Deliveries on the broker-event queue that did not come from amq.rabbitmq.event "
              "(published straight into the queue): refused, not acted on.");
    rp_text_buf_printf(&b, "reaper_broker_events_refused_total %llu\n",
                   (unsigned long long)LOAD(&m->events_refused));

    rp_family(&b, "reaper_gates_open", "gauge", "Gates waiting for a person, by kind.");
    if (LOAD(&m->gates_open_known))
        for (int k = 0; k < RP_GATE_KIND_COUNT_; k++)
            rp_text_buf_printf(&b, "reaper_gates_open{kind=\"%s\"} %lld\n",
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
        rp_text_buf_printf(&b, "reaper_gates_answered_total{kind=\"%s\",choice=\"%s\"} %llu\n",
                       rp_gate_kind_string(answered[i].kind), rp_choice_string(answered[i].choice),
                       (unsigned long long)LOAD(&m->gates_answered[answered[i].kind][answered[i].choice]));

    rp_family(&b, "reaper_pass_duration_seconds", "histogram",
              "How long the daemon's passes took (full: the sweep; leases: the lease reap).");
    for (int s = 0; s < RP_METRICS_SCOPE_COUNT_; s++) {
        char labels[32];
        snprintf(labels, sizeof labels, "scope=\"%s\",", rp_metrics_scope_name(s));
        rp_render_histogram(&b, "reaper_pass_duration_seconds", labels, rp_metrics_bucket_bounds,
                            &m->pass_duration[s]);
    }

    rp_family(&b, "reaper_passes_total", "counter", "Passes run by the daemon, by scope and result.");
    for (int s = 0; s < RP_METRICS_SCOPE_COUNT_; s++)
        for (int r = 0; r < RP_METRICS_RESULT_COUNT_; r++)
            rp_text_buf_printf(&b, "reaper_passes_total{scope=\"%s\",result=\"%s\"} %llu\n",
                           rp_metrics_scope_name(s), rp_metrics_result_name(r),
                           (unsigned long long)LOAD(&m->passes[s][r]));

    rp_family(&b, "reaper_last_successful_pass_timestamp_seconds", "gauge",
              "When a pass of the scope last ended ok (seconds since the epoch).");
    for (int s = 0; s < RP_METRICS_SCOPE_COUNT_; s++) {
        int64_t at = LOAD(&m->last_ok_ms[s]);
        if (at == 0) continue;
        char series[96];
        snprintf(series, sizeof series, "reaper_last_successful_pass_timestamp_seconds{scope=\"%s\"}",
                 rp_metrics_scope_name(s));
        rp_render_ms(&b, series, at);
    }

    rp_family(&b, "reaper_event_lag_seconds", "gauge",
              "For the last broker event handled: now minus its timestamp_in_ms.");
    if (LOAD(&m->event_lag_known)) {
        int64_t lag = LOAD(&m->event_lag_ms);
        rp_text_buf_printf(&b, "reaper_event_lag_seconds %lld.%03lld\n", (long long)(lag / 1000),
                       (long long)(lag % 1000));
    }

    rp_family(&b, "reaper_control_requests_total", "counter",
              "Control requests answered, by op and outcome (ok or the error code).");
    for (int o = 0; o < RP_METRICS_OPS; o++)
        for (int r = 0; r < RP_METRICS_OUTCOMES; r++) {
            uint64_t v = LOAD(&m->control[o][r]);
            /* ok for the four real ops always; the rest once they happen. */
            if (v == 0 && (r != 0 || o == RP_METRICS_OPS - 1)) continue;
            rp_text_buf_printf(&b, "reaper_control_requests_total{op=\"%s\",outcome=\"%s\"} %llu\n",
                           rp_metrics_op_name(o), rp_metrics_outcome_name(r), (unsigned long long)v);
        }

    rp_family(&b, "reaper_feed_publish_failures_total", "counter",
              "Ledger events not published to the events exchange (they stay on the ledger).");
    rp_text_buf_printf(&b, "reaper_feed_publish_failures_total %llu\n",
                   (unsigned long long)LOAD(&m->feed_publish_failures));
    rp_family(&b, "reaper_feed_published_total", "counter",
              "Ledger events the events exchange confirmed.");
    rp_text_buf_printf(&b, "reaper_feed_published_total %llu\n",
                   (unsigned long long)LOAD(&m->feed_published));

    /* The tap gauges of the vhosts whose tap was measured. */
    bool any_tap = false;
    for (size_t k = 0; k < ns; k++) any_tap |= LOAD(&m->vhosts[slot[k]].tap_known) != 0;
    if (any_tap) {
        rp_family(&b, "reaper_tap_held_bytes", "gauge",
                  "What a vhost's dead-letter tap holds in memory (bodies and bookkeeping).");
        for (size_t k = 0; k < ns; k++)
            if (LOAD(&m->vhosts[slot[k]].tap_known))
                rp_text_buf_printf(&b, "reaper_tap_held_bytes{vhost=\"%s\"} %lld\n", esc[k],
                                   (long long)LOAD(&m->vhosts[slot[k]].tap_held_bytes));
        rp_family(&b, "reaper_tap_paused", "gauge",
                  "1 while a vhost's tap does not consume (at its memory bound) or waits to retry "
                  "the store.");
        for (size_t k = 0; k < ns; k++)
            if (LOAD(&m->vhosts[slot[k]].tap_known))
                rp_text_buf_printf(&b, "reaper_tap_paused{vhost=\"%s\"} %u\n", esc[k],
                                   LOAD(&m->vhosts[slot[k]].tap_paused));
    }
    rp_family(&b, "reaper_tap_park_delay_seconds", "histogram",
              "From a dead letter's arrival at reaperd's tap of its vhost to the commit of its "
              "park.");
    for (size_t k = 0; k < ns; k++) {
        char labels[RP_PROM_LABELS_MAX];
        snprintf(labels, sizeof labels, "vhost=\"%s\",", esc[k]);
        rp_render_histogram(&b, "reaper_tap_park_delay_seconds", labels, rp_metrics_delay_bounds,
                            &m->vhosts[slot[k]].tap_park_delay);
    }
    free(esc);

    if (b.nomem) {
        free(b.p);
        return RP_ERR_NOMEM;
    }
    *out = b.p;
    if (len) *len = b.len;
    return RP_OK;
}
