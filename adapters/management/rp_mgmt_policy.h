/*
 * rp_mgmt_policy.h - the reconcile of reaper's broker policies (CONTRACT
 * section 8) over the management API, as one blocking call for a
 * non-loop thread (the store thread, or --once through rp_mgmt_loop).
 *
 * WHAT IS WANTED, by the broker's version (GET /api/overview):
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
 *  note; past RP_POLICY_MAX_NODLX (100) of them, `vibey-reap` carries no
 *  delivery-limit at all instead.
 *  Priority reap.policy_priority; the pattern selects owned queues that are
 *  NOT dead-letter queues and not reaper's own queues (the control and tap
 *  queues, by exact name: rp_mgmt_policy_pattern_excluding): reaper never
 *  puts a delivery limit on a dead-letter queue, nor on the tap (whose
 *  x-delivery-limit -1 a policy's limit would override on RabbitMQ 4).
 *
 * HOW. In every vhost that holds a queue the pattern selects, and always in
 * opt->vhost: each policy is read (GET /api/policies), compared
 * semantically (pattern, apply-to, priority, and exactly the wanted
 * definition keys with equal values) and written (PUT) only when different,
 * then read again. Then the queues themselves are checked: each selected
 * queue of a type a policy covers must show that policy (`policy`) with the
 * wanted values in `effective_policy_definition`, and no owned dead-letter
 * queue may carry one of reaper's policies. The statistics that carry those
 * fields lag (about 5 s, after reaper's writes and after anyone else's
 * change), so while a queue does not show what is wanted, or has not
 * reported them yet, the check is repeated every poll_ms up to
 * verify_wait_ms (a dry run waits only for queues not reporting): a
 * mismatch counts only when it outlasts that; a queue still not reporting
 * then is named as not yet checked, and does not fail the check. So a pass
 * where all is in force costs one listing, and one with a real mismatch
 * costs verify_wait_ms more.
 *
 * CONFLICTS. Every other policy of a managed vhost whose apply-to covers a
 * queue type reaper's policy covers and whose pattern (compiled here with
 * PCRE2) matches a selected queue is reported in the notes: one with the
 * same or a higher priority contends with reaper's (and fails its check);
 * one with a lower priority is displaced by reaper's on those queues (said,
 * never silent). Every operator policy (/api/operator-policies) matching a
 * selected queue is reported too, saying which keys it sets; when it
 * changes a value reaper wants, the queue check fails with its name.
 *
 * REFUSALS ARE REPORTED, NOT RAISED. A write answered 401/403 (the
 * management user lacks the policymaker or administrator tag) or 400 (the
 * broker's reason, HTML-unescaped) gives a policy entry with verified =
 * false and the detail, and the reconcile goes on to check what is in
 * force. dry_run reads only: nothing is written, and what would be written
 * is said.
 *
 * OUTPUT into the caller's report: one rp_report_add_policy entry per
 * wanted policy (name, verified, detail: what was done in each vhost, the
 * queue check, conflicts) and notes.
 *
 * Returns RP_OK when the reconcile ran to its end, whatever it found;
 * RP_ERR_UNAVAILABLE or RP_ERR_FORBIDDEN when the management API could not
 * be read (the entries say so, verified false); RP_ERR_INVALID when the
 * patterns cannot be composed (entries say why); RP_ERR_NOMEM.
 *
 * Threads: the broker's (one non-loop thread). Ownership: everything is
 * borrowed for the call; the report receives copies.
 */
#ifndef RP_MGMT_POLICY_H
#define RP_MGMT_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_mgmt_broker.h"
#include "rp_report.h"

#define RP_MGMT_POLICY_NAME "vibey-reap"
#define RP_MGMT_POLICY_CLASSIC_NAME "vibey-reap-classic"

typedef struct rp_mgmt_policy_options {
    const char *owned_pattern;        /* reap.owned_queue_pattern, as text */
    const char *dead_letter_pattern;  /* reap.dead_letter_queue_pattern, as text */
    const char *exclude[4];           /* reaper's own queues (control, tap): never selected */
    size_t n_exclude;                 /* entries of exclude used */
    int64_t consumer_timeout_seconds; /* >= 1 */
    int64_t longest_lease_seconds;    /* >= 0; the broker-wide timeout is checked against it */
    int64_t delivery_limit;           /* >= 1 */
    int64_t priority;                 /* >= 0 */
    bool dry_run;
    const char *vhost;                /* always managed; NULL: "/" (the vhost of broker.url) */
    long verify_wait_ms;              /* 0: 12000 (statistics lag 5-10 s; checked on 3.10.8 and 4.0.5) */
    long poll_ms;                     /* 0: 1000 */
} rp_mgmt_policy_options;

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
} rp_mgmt_policy_stats;

rp_status rp_mgmt_policy_reconcile(rp_mgmt_broker *b, const rp_mgmt_policy_options *o,
                                   rp_report *report, rp_mgmt_policy_stats *stats) RP_MUSTCHECK;

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
rp_status rp_mgmt_policy_pattern(const char *owned, const char *dead_letter, char **out,
                                 char *err, size_t errlen) RP_MUSTCHECK;

/* The same, and never any of the n_exclude names given (each matched
 * whole, as a literal; NULL or empty entries skipped):
 *     ^(?!(?:NAME1|NAME2)\z)(?!(?s:.*?)(?:DEAD_LETTER))(?=(?s:.*?)(?:OWNED))
 * Every ASCII character of a name but letters and digits is escaped with a
 * backslash (literal in PCRE2 and in the broker's Erlang re). */
rp_status rp_mgmt_policy_pattern_excluding(const char *owned, const char *dead_letter,
                                           const char *const *exclude, size_t n_exclude,
                                           char **out, char *err, size_t errlen) RP_MUSTCHECK;

#endif
