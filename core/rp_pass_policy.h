/*
 * rp_pass_policy.h - the policy half of the hung-handler condition
 * (CONTRACT section 8): which broker policies reaper wants, the semantic
 * diff with what is there, the writes, the conflicts with other policies,
 * the check of the queues and the report, decided here over a policy port
 * (rp_policy_port.h). adapters/management/rp_mgmt_policy.c fills the port
 * with HTTP calls and keeps rp_mgmt_policy_reconcile as the entry point.
 *
 * WHAT IS WANTED, by the broker's version:
 *  - RabbitMQ 3.12 and later (4.x included): `vibey-reap`, apply-to
 *    quorum_queues, {consumer-timeout: consumer_timeout_seconds * 1000,
 *    delivery-limit: delivery_limit}; and `vibey-reap-classic`, apply-to
 *    classic_queues, {consumer-timeout}. On 4.3+ a note says RabbitMQ
 *    enforces consumer timeouts on quorum queues only.
 *  - before 3.12 (3.10, 3.11): the broker refuses the consumer-timeout key
 *    and per-type apply-to (both 400, checked on 3.10.8), so `vibey-reap`,
 *    apply-to queues, {delivery-limit} only; 3.10.8 applies a policy with
 *    only delivery-limit to quorum queues and not to classic ones (checked).
 *    A pass note says the broker-wide consumer_timeout is what bounds (a).
 *  Owned quorum queues with no dead-letter exchange that stays in force
 *  under reaper's policy (x-dead-letter-exchange argument, or an operator
 *  policy's) are left out of the pattern by name (issue 14 item 2: a
 *  delivery-limit there makes the broker DROP a poison message), said in a
 *  note; past RP_PASS_POLICY_MAX_NODLX (100) of them, `vibey-reap` carries
 *  no delivery-limit at all instead.
 *  Priority reap.policy_priority; the pattern selects owned queues that are
 *  NOT dead-letter queues and not reaper's own queues (the control and tap
 *  queues, by exact name: rp_pass_policy_pattern_excluding).
 *
 * ONE LISTING (issue 19 item 5). Given the sweep's listing of the queues
 * (options.listing, rp_queue_listing.h, read by the pass just before), the
 * vhost scan reads it, and so does the first queue check when nothing was
 * written: a steady sweep lists the broker's queues once, not three times.
 *
 * HOW. In every vhost that holds a queue the pattern selects, and always in
 * o->vhost: each policy is read, compared semantically (pattern, apply-to,
 * priority, and exactly the wanted definition keys with equal values) and
 * written only when different, then read again. Then the queues are
 * checked: each selected queue of a type a policy covers must show that
 * policy with the wanted values in force, and no owned dead-letter queue may
 * carry one of reaper's policies. Those fields lag (about 5 s), so while a
 * queue does not show what is wanted the check is repeated every poll_ms up
 * to verify_wait_ms (port->mono_ms, port->sleep_ms; a dry run waits only
 * for queues not reporting): a mismatch counts only when it outlasts that.
 *
 * CONFLICTS. Every other policy of a managed vhost whose apply-to covers a
 * queue type reaper's policy covers and whose pattern matches a selected
 * queue is reported in the notes: one with the same or a higher priority
 * contends with reaper's (and fails its check); one with a lower priority is
 * displaced by reaper's there (said, never silent). Every operator policy
 * matching a selected queue is reported too, saying which keys it sets.
 * Patterns are matched with PCRE2 under rp_match.h's limits.
 *
 * REFUSALS ARE REPORTED, NOT RAISED. A refused write gives a policy entry
 * with verified = false and the detail, and the reconcile goes on to check
 * what is in force. dry_run reads only: nothing is written, what would be
 * written is said.
 *
 * OUTPUT into the caller's report: one rp_report_add_policy entry per
 * wanted policy (name, verified, detail) and notes. Returns RP_OK when the
 * reconcile ran to its end, whatever it found; the port's error when the
 * broker could not be read (the entries say so, verified false);
 * RP_ERR_INVALID when the patterns cannot be composed (entries say why);
 * RP_ERR_NOMEM.
 *
 * Threads: the caller's (the port's). Ownership: everything is borrowed for
 * the call; the report receives copies. Core: no I/O of its own, no log.
 */
#ifndef RP_PASS_POLICY_H
#define RP_PASS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_policy_port.h"
#include "rp_report.h"
#include "rp_status.h"

#define RP_PASS_POLICY_NAME "vibey-reap"
#define RP_PASS_POLICY_CLASSIC_NAME "vibey-reap-classic"
/* Owned quorum queues without a dead-letter exchange left out by name. */
#define RP_PASS_POLICY_MAX_NODLX 100
#define RP_PASS_POLICY_VERIFY_WAIT_MS 12000L
#define RP_PASS_POLICY_POLL_MS 1000L

typedef struct rp_queue_listing rp_queue_listing; /* rp_queue_listing.h */

typedef struct rp_pass_policy_options {
    const char *owned_pattern;        /* reap.owned_queue_pattern, as text */
    const char *dead_letter_pattern;  /* reap.dead_letter_queue_pattern, as text */
    const char *exclude[4];           /* reaper's own queues (control, tap): never selected */
    size_t n_exclude;                 /* entries of exclude used */
    int64_t consumer_timeout_seconds; /* >= 1 */
    int64_t longest_lease_seconds;    /* >= 0; the broker-wide timeout is checked against it */
    int64_t delivery_limit;           /* >= 1 */
    int64_t priority;                 /* >= 0 */
    bool dry_run;
    const char *vhost;                /* always managed; NULL: "/" */
    long verify_wait_ms;              /* 0: RP_PASS_POLICY_VERIFY_WAIT_MS */
    long poll_ms;                     /* 0: RP_PASS_POLICY_POLL_MS */
    /* The sweep's own listing (rp_queue_listing.h), borrowed: when it is
     * usable, the vhost scan and the first queue check read it instead of
     * listing the broker (a check after a write, and every later poll,
     * still list the broker). NULL or not usable: the broker is listed. */
    rp_queue_listing *listing;
    /* Issue 19 item 1: more vhosts always managed (the watched vhosts a
     * sweep listed), each once with vhost. Borrowed; n 0: none. */
    const char *const *also_vhosts;
    size_t n_also_vhosts;
} rp_pass_policy_options;

/* Fills the defaults of CONTRACT section 3 (patterns unset). */
void rp_pass_policy_options_default(rp_pass_policy_options *o);

typedef struct rp_pass_policy_stats {
    unsigned writes;        /* writes made by this reconcile */
    unsigned refused;       /* of which the broker refused */
    unsigned conflicts;     /* contending or displaced policies, operator policies on owned queues */
    unsigned vhosts;        /* vhosts managed */
    size_t selected;        /* queues the pattern selects (last check) */
    size_t verified_queues; /* of which carry reaper's policy as wanted */
    rp_policy_version version;
    unsigned listings;      /* queue listings read through the port (each counted at its page 1) */
    bool listing_reused;    /* the scan read options.listing */
} rp_pass_policy_stats;

rp_status rp_pass_policy_reconcile(const rp_policy_port *port, const rp_pass_policy_options *o,
                                   rp_report *report, rp_pass_policy_stats *stats) RP_MUSTCHECK;

/* Composes the broker policy pattern that selects exactly the names that
 * `owned` matches and `dead_letter` does not (both searched unanchored, the
 * way the broker and rp_match do):
 *     ^(?!(?s:.*?)(?:DEAD_LETTER))(?=(?s:.*?)(?:OWNED))
 * Each pattern keeps its own inline options and alternation inside its
 * group. Refused (RP_ERR_INVALID, reason in err): an empty pattern, one
 * that does not compile, a numbered back-reference or subroutine call (the
 * group numbers would shift once the two are joined), or a result that does
 * not compile with the sum of their groups. *out is a heap string the
 * caller frees (NULL on error). RP_ERR_NOMEM. */
rp_status rp_pass_policy_pattern(const char *owned, const char *dead_letter, char **out,
                                 char *err, size_t errlen) RP_MUSTCHECK;

/* The same, and never any of the n_exclude names given (each matched
 * whole, as a literal; NULL or empty entries skipped):
 *     ^(?!(?:NAME1|NAME2)\z)(?!(?s:.*?)(?:DEAD_LETTER))(?=(?s:.*?)(?:OWNED))
 * Every ASCII character of a name but letters and digits is escaped with a
 * backslash (literal in PCRE2 and in the broker's Erlang re). */
rp_status rp_pass_policy_pattern_excluding(const char *owned, const char *dead_letter,
                                           const char *const *exclude, size_t n_exclude,
                                           char **out, char *err, size_t errlen) RP_MUSTCHECK;

#endif
