/*
 * report_text.h - the pass report for people (reaperd --once without
 * --json) and its lines in the daemon's log: the printing and the logging
 * only; the words are core's (rp_report_text.h), since core does not log.
 *
 * Ownership: nothing is kept; the report is borrowed.
 */
#ifndef RP_REPORT_TEXT_H
#define RP_REPORT_TEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "rp_backfill_read.h"
#include "rp_report.h"

/* Writes the report as aligned text: a headline, one line per verdict,
 * then what was unreadable, the notes and the policies. */
void rp_report_print(FILE *f, const rp_report *r, rp_time_ms at, int64_t duration_ms);

/* reaperd --once's output: the report as one JSON object and a newline
 * (json: CONTRACT section 5, rp_proto_report_json_text) or as text
 * (rp_report_print), then f flushed. 0, or 1 when it could not be encoded
 * (logged) or f could not be flushed. */
int rp_report_output(FILE *f, const rp_report *r, bool json, rp_time_ms at, int64_t duration_ms);

/* Logs one verdict as it happens (SURFACED at warn, the rest at info): an
 * rp_report_verdict_fn, safe on any thread. Its fields: action, condition,
 * source, object, queue, project, measured, dry_run, detail, and vhost
 * when the verdict's object names one (core/rp_verdict_vhost.h). */
void rp_verdict_log(void *arg, const rp_verdict *v, bool dry_run);

/* Logs one line per note and a summary line "pass finished" with the
 * counts of every verdict (listed in the report or not). scope names the
 * pass ("sweep", "lease reap", "on demand"). */
void rp_report_log(const rp_report *r, const char *scope, int64_t duration_ms);

/* Logs what the backfill's read of dead-letter queues has to say (a read
 * recorded at info; a park, a record, an unlock or a read that failed at
 * warning): an rp_backfill_read_deps on_news, on the thread of the pass. */
void rp_backfill_news_log(void *arg, const rp_backfill_news *b);

#endif
