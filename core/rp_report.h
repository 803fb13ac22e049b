/*
 * rp_report.h - the pass report (CONTRACT section 5): every verdict of one
 * pass, what could not be read, notes, and the policies checked.
 *
 * Ownership: an rp_report owns everything it holds. rp_report_init() makes an
 * empty one, rp_report_cleanup() frees it all. rp_report_add_verdict() takes
 * ownership of the verdict's strings (the caller's copy is zeroed), the
 * string adders copy their argument. A policy entry owns its name, detail
 * and per-vhost records (and each record's vhost name).
 */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_status.h"
#include "rp_verdict.h"

/* One vhost's verdict on one policy (issue 19 item 1): true when, in that
 * vhost, the policy was in force and every selected queue there carried it
 * as wanted (none carrying another policy, none, other values, none
 * contended, none of the owned dead-letter queues carrying it). */
typedef struct rp_policy_vhost {
    char *vhost;
    bool verified;
} rp_policy_vhost;

typedef struct rp_policy_check {
    char *name;
    bool verified; /* over every vhost the reconcile managed */
    char *detail;
    /* The vhosts the reconcile checked it on, one record each (none when
     * it failed before it got to them: then verified is false and no vhost
     * was checked). Owned by the entry. */
    rp_policy_vhost *vhosts;
    size_t n_vhosts;
} rp_policy_check;

/* Called for every verdict added, listed or not (the daemon logs each one
 * as it happens). Must not keep v. */
typedef void (*rp_report_verdict_fn)(void *arg, const rp_verdict *v, bool dry_run);

typedef struct rp_report {
    bool ok;        /* false when anything was unreadable */
    bool dry_run;
    /* Bounds: a pass over 100,000 rows must not hold 100,000 verdicts. With
     * max_verdicts set, verdicts past it are counted (n_omitted, counts)
     * and dropped; the ledger has them all. 0: no bound. */
    size_t max_verdicts;
    size_t n_omitted;
    size_t counts[RP_ACTION_COUNT_]; /* every verdict added, by action */
    rp_report_verdict_fn on_verdict; /* may be NULL */
    void *on_verdict_arg;
    rp_verdict *verdicts;
    size_t n_verdicts, cap_verdicts;
    char **unreadable;
    size_t n_unreadable, cap_unreadable;
    char **notes;
    size_t n_notes, cap_notes;
    rp_policy_check *policies;
    size_t n_policies, cap_policies;
} rp_report;

void rp_report_init(rp_report *r, bool dry_run);
void rp_report_cleanup(rp_report *r);

/* Moves *v into the report (or, past max_verdicts, counts and drops it)
 * and re-initialises *v. Calls on_verdict first. */
rp_status rp_report_add_verdict(rp_report *r, rp_verdict *v) RP_MUSTCHECK;
/* Records an unreadable source and sets r->ok to false. */
rp_status rp_report_add_unreadable(rp_report *r, const char *what) RP_MUSTCHECK;
rp_status rp_report_add_note(rp_report *r, const char *note) RP_MUSTCHECK;
rp_status rp_report_add_policy(rp_report *r, const char *name, bool verified,
                               const char *detail) RP_MUSTCHECK;
/* Adds one vhost's record to the last policy entry (RP_ERR_INVALID when
 * there is none or vhost is NULL); copies vhost. */
rp_status rp_report_add_policy_vhost(rp_report *r, const char *vhost, bool verified) RP_MUSTCHECK;

#endif
