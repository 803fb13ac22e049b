#include "report_text.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "rp_log.h"

/* "12.5 s past the deadline (grace 0 s)"-style measurement, in unit. */
static void rp_measure(const rp_verdict *v, char *buf, size_t n) {
    const char *unit = v->unit ? v->unit : "";
    if (v->measured < 0)
        snprintf(buf, n, "threshold %" PRId64 " %s", v->threshold, unit);
    else if (strcmp(unit, "seconds") == 0)
        snprintf(buf, n, "%.1f s (threshold %" PRId64 " s)", v->measured, v->threshold);
    else
        snprintf(buf, n, "%.0f %s (threshold %" PRId64 ")", v->measured, unit, v->threshold);
}

static void rp_time_text(rp_time_ms at, char *buf, size_t n) {
    time_t s = (time_t)(at / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void rp_report_print(FILE *f, const rp_report *r, rp_time_ms at, int64_t duration_ms) {
    char when[32];
    rp_time_text(at, when, sizeof when);
    size_t total = r->n_verdicts + r->n_omitted;
    fprintf(f, "reaper pass at %s: %s%s, %zu verdict%s, %" PRId64 " ms\n", when,
            r->ok ? "ok" : "NOT OK", r->dry_run ? " (dry run: nothing was written)" : "", total,
            total == 1 ? "" : "s", duration_ms);
    fprintf(f, "  requeued %zu, parked %zu, surfaced %zu, cleared %zu\n",
            r->counts[RP_ACTION_REQUEUED], r->counts[RP_ACTION_PARKED],
            r->counts[RP_ACTION_SURFACED], r->counts[RP_ACTION_CLEARED]);
    if (r->n_verdicts > 0) {
        fprintf(f, "\n  %-9s %-13s %-9s %-28s %-12s %s\n", "ACTION", "CONDITION", "SOURCE",
                "OBJECT", "PROJECT", "MEASURED");
        for (size_t i = 0; i < r->n_verdicts; i++) {
            const rp_verdict *v = &r->verdicts[i];
            char m[96];
            rp_measure(v, m, sizeof m);
            fprintf(f, "  %-9s %-13s %-9s %-28s %-12s %s\n", rp_action_string(v->action),
                    rp_condition_string(v->condition), rp_source_string(v->source),
                    v->object ? v->object : "-", v->project ? v->project : "-", m);
            if (v->detail) fprintf(f, "            %s\n", v->detail);
        }
    }
    if (r->n_unreadable > 0) {
        fprintf(f, "\nunreadable:\n");
        for (size_t i = 0; i < r->n_unreadable; i++) fprintf(f, "  %s\n", r->unreadable[i]);
    }
    if (r->n_notes > 0) {
        fprintf(f, "\nnotes:\n");
        for (size_t i = 0; i < r->n_notes; i++) fprintf(f, "  %s\n", r->notes[i]);
    }
    if (r->n_policies > 0) {
        fprintf(f, "\npolicies:\n");
        for (size_t i = 0; i < r->n_policies; i++)
            fprintf(f, "  %-24s %-12s %s\n", r->policies[i].name,
                    r->policies[i].verified ? "verified" : "NOT VERIFIED", r->policies[i].detail);
    }
}

void rp_verdict_log(void *arg, const rp_verdict *v, bool dry_run) {
    RP_UNUSED(arg);
    rp_log_level level = v->action == RP_ACTION_SURFACED ? RP_LOG_WARN : RP_LOG_INFO;
    if (level < rp_log_level_now()) return;
    char m[96];
    rp_measure(v, m, sizeof m);
    const char *msg = v->action == RP_ACTION_SURFACED  ? "condition surfaced"
                      : v->action == RP_ACTION_CLEARED ? "condition cleared"
                      : dry_run                        ? "would reap (dry run)"
                                                       : "work reaped";
    rp_log_write(level, msg, "action", rp_action_string(v->action), "condition",
                 rp_condition_string(v->condition), "source", rp_source_string(v->source),
                 "object", v->object, "queue", v->queue, "project", v->project, "measured", m,
                 "dry_run", dry_run ? "true" : "false", "detail", v->detail, NULL);
}

void rp_report_log(const rp_report *r, const char *scope, int64_t duration_ms) {
    const size_t *counts = r->counts;
    for (size_t i = 0; i < r->n_notes; i++)
        RP_INFO("pass note", "scope", scope, "note", r->notes[i], NULL);
    char n_req[24], n_park[24], n_surf[24], n_clear[24], ms[24];
    snprintf(n_req, sizeof n_req, "%zu", counts[RP_ACTION_REQUEUED]);
    snprintf(n_park, sizeof n_park, "%zu", counts[RP_ACTION_PARKED]);
    snprintf(n_surf, sizeof n_surf, "%zu", counts[RP_ACTION_SURFACED]);
    snprintf(n_clear, sizeof n_clear, "%zu", counts[RP_ACTION_CLEARED]);
    snprintf(ms, sizeof ms, "%" PRId64, duration_ms);
    char unreadable[256] = "";
    for (size_t i = 0; i < r->n_unreadable; i++) {
        size_t len = strlen(unreadable);
        snprintf(unreadable + len, sizeof unreadable - len, "%s%s", len ? "," : "",
                 r->unreadable[i]);
    }
    RP_LOG_AT(r->ok ? RP_LOG_INFO : RP_LOG_WARN, "pass finished", "scope", scope, "ok",
              r->ok ? "true" : "false", "dry_run", r->dry_run ? "true" : "false", "requeued",
              n_req, "parked", n_park, "surfaced", n_surf, "cleared", n_clear, "unreadable",
              r->n_unreadable ? unreadable : NULL, "duration_ms", ms, NULL);
}
