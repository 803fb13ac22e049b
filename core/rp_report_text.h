/*
 * rp_report_text.h - a pass report in words: the aligned text for people
 * (reaperd --once without --json), a verdict's measurement and log message,
 * and the figures of the "pass finished" log line. Pure: the caller prints
 * or logs them (app/report_text.c).
 *
 * Ownership: the report is borrowed; rp_report_text's *out is a heap
 * string the caller frees; the other results are written into the
 * caller's buffers or are static.
 */
#ifndef RP_REPORT_TEXT_CORE_H
#define RP_REPORT_TEXT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_report.h"
#include "rp_status.h"

/* The report as aligned text: a headline (at: Unix ms, shown in UTC), the
 * counts, one line per verdict, then what was unreadable, the notes and the
 * policies. *out (NUL-terminated, *len bytes; len may be NULL). RP_ERR_NOMEM
 * (*out NULL). */
rp_status rp_report_text(const rp_report *r, rp_time_ms at, int64_t duration_ms, char **out,
                         size_t *len) RP_MUSTCHECK;

/* "12.5 s (threshold 10 s)", "3 messages (threshold 1)", or "threshold 10
 * s" when nothing was measured (measured < 0), into buf (cut to n). */
void rp_verdict_measure(const rp_verdict *v, char *buf, size_t n);

/* The log message of a verdict as it happens ("condition surfaced",
 * "condition cleared", "would reap (dry run)", "work reaped"; static), and
 * whether it is logged as a warning (a surfaced condition) or info. */
const char *rp_verdict_message(const rp_verdict *v, bool dry_run);
bool rp_verdict_warns(const rp_verdict *v);

/* The figures of the "pass finished" line, as text. */
typedef struct rp_report_figures {
    char requeued[24], parked[24], surfaced[24], cleared[24];
    char duration_ms[24];
    char unreadable[256]; /* comma-separated, cut to fit; "" when none */
    bool warns;           /* not ok: logged as a warning */
} rp_report_figures;

void rp_report_figures_of(const rp_report *r, int64_t duration_ms, rp_report_figures *out);

#endif
