/*
 * rp_once_pass.h - reaperd --once's run: one pass request (app/rp_pass_sequence.h
 * over the pass-run port) on a store thread of its own while the caller's
 * loop turns and carries what the port calls through it (the management
 * API's bridge, the events feed's session); SIGINT/SIGTERM end the pass
 * between rows, with what was done reported; at the end the report is
 * logged and written (app/report_text.h). cmd/reaperd/once.c fills the
 * ports and keeps the stop order: the bridge closed, rp_once_pass_join,
 * the feed settled (rp_once_pass_report), rp_once_pass_output,
 * rp_once_pass_free.
 *
 * Ownership: base is borrowed and must outlive rp_once_pass_join; the part
 * owns its request (and a copy of the project). Threads: the loop thread,
 * except rp_once_pass_post (the store thread).
 */
#ifndef RP_ONCE_PASS_H
#define RP_ONCE_PASS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>

#include "rp_pass_request.h"
#include "rp_pass_run_port.h"
#include "rp_report.h"
#include "rp_status.h"

typedef struct rp_once_pass rp_once_pass;

/* A full pass request (dry_run as given), nothing started. NULL when out of
 * memory (nothing logged). */
rp_once_pass *rp_once_pass_new(struct event_base *base, bool dry_run);

/* SIGINT/SIGTERM on the loop: the pass stops between rows. RP_ERR_INTERNAL
 * (logged "cannot set up the loop's events") when the events cannot be made. */
rp_status rp_once_pass_signals(rp_once_pass *o) RP_MUSTCHECK;

/* Narrows the pass to project (copied; NULL: every project), then starts
 * the store thread and submits the pass over *run (copied; its self must
 * outlive rp_once_pass_join). When the pass is done the loop calls
 * flush(flush_self), which calls rp_once_pass_end once the feed is flushed;
 * flush NULL: the loop ends at once. Logs and returns an error when out of
 * memory or the thread cannot start. */
rp_status rp_once_pass_start(rp_once_pass *o, const rp_pass_run_port *run, const char *project,
                             void (*flush)(void *flush_self), void *flush_self) RP_MUSTCHECK;

/* Store thread: fn(job, false) run on the loop (the feed's posts); o is
 * the part. */
rp_status rp_once_pass_post(void *o, void (*fn)(void *job, bool cancelled), void *job);

/* Loop: the pass and the feed's flush are over: the loop ends. o is the part. */
void rp_once_pass_end(void *o);

/* The store thread joined, the signals' events gone (before base is freed). */
void rp_once_pass_join(rp_once_pass *o);

/* The pass's report, for what the feed adds to it (after rp_once_pass_join). */
rp_report *rp_once_pass_report(rp_once_pass *o);

/* After a run: "pass stopped early" unless its status is ok (feed_ok false:
 * out of memory), the report's log lines, the report on f (JSON with
 * json). Returns the exit code: 0 when the pass was ok and f took it. */
int rp_once_pass_output(rp_once_pass *o, bool feed_ok, FILE *f, bool json);

void rp_once_pass_free(rp_once_pass *o);

#endif
