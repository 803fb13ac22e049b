/*
 * rp_mgmt_policy.h - the reconcile of reaper's broker policies (CONTRACT
 * section 8) over the management API, as one blocking call for a
 * non-loop thread (the store thread, or --once through rp_mgmt_loop).
 *
 * The decisions (what is wanted per broker version, the pattern, the
 * semantic diff, the conflicts, the queue check, the notes and entries of
 * the report) are core's: core/rp_pass_policy.h describes them. This file
 * fills core's policy port (core/rp_policy_port.h) with management API
 * calls: GET /api/overview, GET /api/config/effective (the broker-wide
 * consumer_timeout), GET /api/policies and /api/operator-policies, PUT and
 * GET /api/policies/VHOST/NAME, and the paged GET /api/queues with the
 * policy columns; it logs each write ("policy written", "policy write
 * refused").
 *
 * Returns what rp_pass_policy_reconcile returns: RP_OK when the reconcile
 * ran to its end, whatever it found; RP_ERR_UNAVAILABLE or
 * RP_ERR_FORBIDDEN when the management API could not be read (the entries
 * say so, verified false); RP_ERR_INVALID when the patterns cannot be
 * composed (entries say why); RP_ERR_NOMEM.
 *
 * Threads: the broker's (one non-loop thread). Ownership: everything is
 * borrowed for the call; the report receives copies.
 */
#ifndef RP_MGMT_POLICY_H
#define RP_MGMT_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_mgmt_broker.h"
#include "rp_pass_policy.h"
#include "rp_report.h"

#define RP_MGMT_POLICY_NAME RP_PASS_POLICY_NAME
#define RP_MGMT_POLICY_CLASSIC_NAME RP_PASS_POLICY_CLASSIC_NAME

/* What the reconcile wants: core's options (rp_pass_policy.h), vhost NULL
 * meaning "/" (the vhost of broker.url). Without also_vhosts, the vhosts
 * b lists (rp_mgmt_broker_set_vhosts) are managed too. */
typedef rp_pass_policy_options rp_mgmt_policy_options;

/* Fills the defaults of CONTRACT section 3 (patterns unset). */
void rp_mgmt_policy_options_default(rp_mgmt_policy_options *o);

typedef struct rp_mgmt_policy_stats {
    unsigned writes;     /* PUTs made by this reconcile */
    unsigned refused;    /* of which the broker refused (401, 403, 400) */
    unsigned conflicts;  /* contending or displaced policies, operator policies on owned queues */
    unsigned vhosts;     /* vhosts managed */
    size_t selected;     /* queues the pattern selects (last check) */
    size_t verified_queues; /* of which carry reaper's policy as wanted */
    rp_mgmt_version version;
    unsigned listings;   /* queue listings read (GET /api/queues, counted at page 1) */
    bool listing_reused; /* the scan read the sweep's listing (options.listing) */
} rp_mgmt_policy_stats;

rp_status rp_mgmt_policy_reconcile(rp_mgmt_broker *b, const rp_mgmt_policy_options *o,
                                   rp_report *report, rp_mgmt_policy_stats *stats) RP_MUSTCHECK;
/* The same, with what it did in core's own stats (the runner port's
 * reconcile, core/rp_runner_port.h). */
rp_status rp_mgmt_policy_reconcile_core(rp_mgmt_broker *b, const rp_mgmt_policy_options *o,
                                        rp_report *report,
                                        rp_pass_policy_stats *stats) RP_MUSTCHECK;

/* The policy pattern itself: rp_pass_policy_pattern and
 * rp_pass_policy_pattern_excluding (core/rp_pass_policy.h). */

#endif
