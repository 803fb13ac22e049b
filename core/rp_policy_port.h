/*
 * rp_policy_port.h - what the policy reconcile (rp_pass_policy.h) needs from
 * the broker's management API: its version, the broker-wide
 * consumer_timeout, the policies and operator policies, writing and reading
 * back one policy, and the queues with the policy in force on each.
 * adapters/management fills it with plain HTTP calls (rp_mgmt_policy.c);
 * tests/unit/test_pass_policy.c fills it with a fake broker.
 *
 * CALLING CONVENTION as core/rp_ports.h: synchronous, an rp_status, detail
 * inside the adapter (last_error gives it as text for the report). The port
 * is used by one thread at a time (the store thread, or --once's).
 *
 * OWNERSHIP. Pointer arguments are borrowed for the call. A queue page
 * (list_queues) is LENT: valid until the next call of any function of the
 * port. Policies (list_policies, get_policy) are filled into the caller's
 * rp_policy_list / rp_policy, built with the functions below, and belong to
 * the caller, who frees them with rp_policy_list_cleanup / rp_policy_cleanup
 * (also after an error return).
 */
#ifndef RP_POLICY_PORT_H
#define RP_POLICY_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_judge.h"
#include "rp_status.h"

/* The broker's version (GET /api/overview). */
typedef struct rp_policy_version {
    int major, minor, patch;
    char text[32]; /* as the broker wrote it */
} rp_policy_version;

/* Whether v is major.minor or later. */
bool rp_policy_version_at_least(const rp_policy_version *v, int major, int minor);

/* One key of a policy definition (or of a queue's effective definition). */
typedef struct rp_policy_key {
    char *key;
    bool is_int;    /* an integer (or a real with an integral value): value */
    int64_t value;
    bool is_string; /* a string (its text is not needed) */
} rp_policy_key;

/* A policy as the broker lists it. Strings are NULL when absent (or not a
 * string). */
typedef struct rp_policy {
    char *vhost;
    char *name;
    char *pattern;
    char *apply_to;
    bool has_priority; /* priority was an integer */
    int64_t priority;
    bool definition_is_object; /* false: keys is empty */
    rp_policy_key *keys;       /* in the broker's order */
    size_t n_keys, cap_keys;
} rp_policy;

typedef struct rp_policy_list {
    rp_policy *items;
    size_t n, cap;
} rp_policy_list;

/* Frees what p holds and zeroes it. */
void rp_policy_cleanup(rp_policy *p);
/* Sets one string field of p to a copy of s (NULL clears it). RP_ERR_NOMEM. */
rp_status rp_policy_set_string(char **field, const char *s) RP_MUSTCHECK;
/* Appends a definition key (copied). RP_ERR_NOMEM. */
rp_status rp_policy_add_key(rp_policy *p, const char *key, bool is_int, int64_t value,
                            bool is_string) RP_MUSTCHECK;
/* Appends a zeroed policy to l and lends it in *out (valid until the next
 * append). RP_ERR_NOMEM. */
rp_status rp_policy_list_push(rp_policy_list *l, rp_policy **out) RP_MUSTCHECK;
void rp_policy_list_cleanup(rp_policy_list *l);

/* A queue as the policy check sees it (lent with its page). */
typedef struct rp_policy_queue {
    const char *vhost;
    const char *name;
    rp_queue_type type;
    bool policy_known;            /* the policy field was there (null: none) */
    const char *policy;           /* NULL: none */
    const char *operator_policy;  /* NULL: none or unknown */
    bool effective_known;         /* effective_policy_definition was there */
    const rp_policy_key *effective; /* n_effective keys of it */
    size_t n_effective;
    bool dlx_argument;            /* a string x-dead-letter-exchange argument */
} rp_policy_queue;

typedef struct rp_policy_queue_page {
    const rp_policy_queue *queues;
    size_t n;
    bool last; /* no page follows this one */
} rp_policy_queue_page;

typedef struct rp_policy_port {
    void *self;
    /* The broker's version. */
    rp_status (*version)(void *self, rp_policy_version *out);
    /* The broker-wide consumer_timeout (rp_judge_wide_timeout's input);
     * *why is lent (may be NULL). An error return counts as unreadable. */
    rp_status (*wide_timeout)(void *self, rp_wide_timeout_state *state, int64_t *value_ms,
                              const char **why);
    /* Every policy (operator_policies false) or every operator policy of
     * every vhost, appended to *out. Items without a string vhost or name
     * are left out. */
    rp_status (*list_policies)(void *self, bool operator_policies, rp_policy_list *out);
    /* One policy, read again. RP_OK with *found false when the answer is
     * not a policy the adapter can read (then *out is empty). */
    rp_status (*get_policy)(void *self, const char *vhost, const char *name, rp_policy *out,
                            bool *found);
    /* Writes p (name, pattern, apply_to, priority, keys as integers) on
     * vhost. `was` says why it is written (for the adapter's log line).
     * RP_ERR_FORBIDDEN when refused for lack of rights; any other error
     * with *refused true when the broker refused the policy itself (its
     * reason in last_error). */
    rp_status (*put_policy)(void *self, const char *vhost, const rp_policy *p, const char *was,
                            bool *refused);
    /* One page (from 1) of every queue of every vhost, with the fields
     * above; with_arguments asks for the arguments (dlx_argument). */
    rp_status (*list_queues)(void *self, size_t page, bool with_arguments,
                             rp_policy_queue_page *out);
    /* The last failure as text for a report ("" when none); lent. */
    const char *(*last_error)(void *self);
    /* The time, for the check's deadline, and a wait between its polls. */
    int64_t (*mono_ms)(void *self);
    void (*sleep_ms)(void *self, long ms);
} rp_policy_port;

#endif
