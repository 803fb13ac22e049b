/* A pass report in words (rp_report_text.h). */
#include "rp_report_text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_text.h"

void rp_verdict_measure(const rp_verdict *v, char *buf, size_t n) {
    const char *unit = v->unit ? v->unit : "";
    if (v->measured < 0)
        snprintf(buf, n, "threshold %" PRId64 " %s", v->threshold, unit);
    else if (strcmp(unit, "seconds") == 0)
        snprintf(buf, n, "%.1f s (threshold %" PRId64 " s)", v->measured, v->threshold);
    else
        snprintf(buf, n, "%.0f %s (threshold %" PRId64 ")", v->measured, unit, v->threshold);
}

const char *rp_verdict_message(const rp_verdict *v, bool dry_run) {
    return v->action == RP_ACTION_SURFACED  ? "condition surfaced"
           : v->action == RP_ACTION_CLEARED ? "condition cleared"
           : dry_run                        ? "would reap (dry run)"
                                            : "work reaped";
}

bool rp_verdict_warns(const rp_verdict *v) { return v->action == RP_ACTION_SURFACED; }

void rp_report_figures_of(const rp_report *r, int64_t duration_ms, rp_report_figures *out) {
    const size_t *counts = r->counts;
    snprintf(out->requeued, sizeof out->requeued, "%zu", counts[RP_ACTION_REQUEUED]);
    snprintf(out->parked, sizeof out->parked, "%zu", counts[RP_ACTION_PARKED]);
    snprintf(out->surfaced, sizeof out->surfaced, "%zu", counts[RP_ACTION_SURFACED]);
    snprintf(out->cleared, sizeof out->cleared, "%zu", counts[RP_ACTION_CLEARED]);
    snprintf(out->duration_ms, sizeof out->duration_ms, "%" PRId64, duration_ms);
    out->unreadable[0] = '\0';
    for (size_t i = 0; i < r->n_unreadable; i++) {
        size_t len = strlen(out->unreadable);
        snprintf(out->unreadable + len, sizeof out->unreadable - len, "%s%s", len ? "," : "",
                 r->unreadable[i]);
    }
    out->warns = !r->ok;
}

rp_status rp_report_text(const rp_report *r, rp_time_ms at, int64_t duration_ms, char **out,
                         size_t *len) {
    *out = NULL;
    if (len) *len = 0;
    rp_text_buf b = {malloc(1024), 0, 1024, false};
    if (b.p == NULL) return RP_ERR_NOMEM;
    b.p[0] = '\0';
    char when[32];
    time_t s = (time_t)(at / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t total = r->n_verdicts + r->n_omitted;
    rp_text_buf_printf(&b, "reaper pass at %s: %s%s, %zu verdict%s, %" PRId64 " ms\n", when,
           r->ok ? "ok" : "NOT OK", r->dry_run ? " (dry run: nothing was written)" : "", total,
           total == 1 ? "" : "s", duration_ms);
    rp_text_buf_printf(&b, "  requeued %zu, parked %zu, surfaced %zu, cleared %zu\n",
           r->counts[RP_ACTION_REQUEUED], r->counts[RP_ACTION_PARKED],
           r->counts[RP_ACTION_SURFACED], r->counts[RP_ACTION_CLEARED]);
    if (r->n_verdicts > 0) {
        rp_text_buf_printf(&b, "\n  %-9s %-13s %-9s %-28s %-12s %s\n", "ACTION", "CONDITION", "SOURCE",
               "OBJECT", "PROJECT", "MEASURED");
        for (size_t i = 0; i < r->n_verdicts; i++) {
            const rp_verdict *v = &r->verdicts[i];
            char m[96];
            rp_verdict_measure(v, m, sizeof m);
            rp_text_buf_printf(&b, "  %-9s %-13s %-9s %-28s %-12s %s\n", rp_action_string(v->action),
                   rp_condition_string(v->condition), rp_source_string(v->source),
                   v->object ? v->object : "-", v->project ? v->project : "-", m);
            if (v->detail) rp_text_buf_printf(&b, "            %s\n", v->detail);
        }
    }
    if (r->n_unreadable > 0) {
        rp_text_buf_printf(&b, "\nunreadable:\n");
        for (size_t i = 0; i < r->n_unreadable; i++) rp_text_buf_printf(&b, "  %s\n", r->unreadable[i]);
    }
    if (r->n_notes > 0) {
        rp_text_buf_printf(&b, "\nnotes:\n");
        for (size_t i = 0; i < r->n_notes; i++) rp_text_buf_printf(&b, "  %s\n", r->notes[i]);
    }
    if (r->n_policies > 0) {
        rp_text_buf_printf(&b, "\npolicies:\n");
        for (size_t i = 0; i < r->n_policies; i++)
            rp_text_buf_printf(&b, "  %-24s %-12s %s\n", r->policies[i].name,
                   r->policies[i].verified ? "verified" : "NOT VERIFIED", r->policies[i].detail);
    }
    if (b.nomem) {
        free(b.p);
        return RP_ERR_NOMEM;
    }
    *out = b.p;
    if (len) *len = b.len;
    return RP_OK;
}
