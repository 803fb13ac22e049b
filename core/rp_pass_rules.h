/*
 * rp_pass_rules.h - issue 18 item 5, the design's remaining rules for
 * what makes a pass ok (pure decisions, no I/O).
 *
 * A pass is ok only when reaper's policy is absent or verified: every
 * policy entry a reconcile put in the report says verified, or there is
 * none (no reconcile ran: no broker inspection, a pass narrowed to one
 * project). A dry run writes no policy, so its policy entries (a policy
 * it would write is not in force yet) never make it not ok.
 *
 * (A lease row that fails on its own is named in the report's unreadable,
 * core/rp_pass_store.c; a foreign work queue is judged in
 * core/rp_judge_broker.c.)
 */
#ifndef RP_PASS_RULES_H
#define RP_PASS_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_report.h"
#include "rp_status.h"

/* Whether policies[0..n) let the pass be ok (see above). NULL with n 0 is
 * none. */
bool rp_pass_policies_ok(const rp_policy_check *policies, size_t n, bool dry_run);

/* Applies the rule to the entries r->policies[from..] (the ones one
 * reconcile added, dry_run as it ran): when they do not let the pass be ok, r->ok becomes
 * false and one note per unverified policy says so ("policy NAME is not
 * verified: the pass is not ok"). RP_ERR_INVALID for NULL; RP_ERR_NOMEM. */
rp_status rp_pass_policies_settle(rp_report *r, size_t from, bool dry_run) RP_MUSTCHECK;

#endif
