/*
 * rp_pass_setup.h - what a pass run by reaperd starts from and ends with,
 * apart from the connections that run it (the pass runner, cmd/reaperd/ports.c): the
 * pass options the configuration gives, the report of a pass that could
 * not reach the store, and the open sightings counted by condition.
 *
 * Pure. Ownership: the options point into cfg (borrowed: cfg must outlive
 * them); the sighting list is borrowed.
 */
#ifndef RP_PASS_SETUP_H
#define RP_PASS_SETUP_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_config.h"
#include "rp_pass.h"
#include "rp_ports.h"
#include "rp_report.h"

/* rp_pass_options_default with the thresholds, patterns, own queues, peek
 * limit and lease batch size of cfg. on_verdict is left as the default
 * (the caller logs verdicts). */
void rp_pass_options_from_config(const rp_config *cfg, rp_pass_options *opt);

/* The report of a pass that cannot read the job table at all, in the shape
 * a pass gives so that every caller handles one: r initialised afresh (any
 * earlier content is the caller's to clean up first), not ok, "job_queue"
 * unreadable, and the note "job_queue: store unreachable: WHY".
 * RP_ERR_NOMEM. */
rp_status rp_pass_report_unreachable(rp_report *r, bool dry_run, const char *why) RP_MUSTCHECK;

/* The open sightings of list counted by condition into out (zeroed first;
 * a row with a condition outside the enum is not counted). */
void rp_sightings_by_condition(const rp_sighting_list *list, int64_t out[RP_COND_COUNT_]);

#endif
