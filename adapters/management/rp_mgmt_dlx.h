/*
 * rp_mgmt_dlx.h - the dead-letter tap's bindings (CONTRACT section 8,
 * issue #5), reconciled through the management API.
 *
 * The tap queue must receive a copy of every message that the dead-letter
 * exchange of an owned queue routes to its dead-letter queues, whatever the
 * exchange's type. So, in the vhost given:
 *   1. every queue whose name owned_pattern matches (reaper's own queues
 *      listed in skip excepted, the tap first of all) names its dead-letter
 *      exchange in the argument x-dead-letter-exchange and/or in the
 *      dead-letter-exchange key of the policy in force on it. That policy
 *      is worked out from GET /api/policies/{vhost} as the broker does (the
 *      matching policy of the highest priority whose apply-to fits the
 *      queue's type; all of them on a tie), because the listing shows a new
 *      queue's effective_policy_definition only after the next statistics
 *      emission (seen on 3.10.8); that field is taken too when present.
 *      Every source is taken when several are set (which one the broker
 *      uses differs by version and queue type; a binding too many only
 *      costs a message the tap skips). The default exchange ("") cannot be
 *      bound: such a queue is counted in unbindable, and the first
 *      RP_MGMT_DLX_NAMED of them are named in unbindable_names;
 *   2. for each such exchange, its bindings to queues (GET
 *      /api/exchanges/{vhost}/{x}/bindings/source), the tap's own excepted,
 *      are the routes dead letters take: each distinct (routing key,
 *      arguments) among them is wanted on the tap, so the tap gets exactly
 *      what reaches the dead-letter queues (a fanout exchange ignores the
 *      key, a headers exchange routes by the arguments, direct and topic by
 *      the key). An exchange with no queue bound routes dead letters
 *      nowhere, and so nowhere for the tap either;
 *   3. the tap's bindings (GET /api/queues/{vhost}/{tap}/bindings) are
 *      compared: a wanted one missing is created (POST
 *      /api/bindings/{vhost}/e/{x}/q/{tap}), one from an exchange whose
 *      binding is no longer wanted is deleted (DELETE .../{properties_key}).
 *      The default exchange's implicit binding is left alone.
 * Exchange-to-exchange bindings from a dead-letter exchange are followed,
 * at any depth (each exchange once, so a cycle ends; at most 1,024): the
 * queue bindings of every exchange a dead letter can reach are copied to
 * the tap from that exchange. A message that reaches such an exchange by
 * another road and is not a dead letter is skipped by the tap. Nothing here reads, consumes or purges a queue's messages.
 *
 * Threads: like rp_mgmt_broker (one non-loop thread; blocking through the
 * bridge). Ownership: everything borrowed for the call.
 */
#ifndef RP_MGMT_DLX_H
#define RP_MGMT_DLX_H

#include <pcre2.h>
#include <stddef.h>

#include "rp_mgmt_broker.h"
#include "rp_tap_port.h"

typedef struct rp_mgmt_dlx_options {
    const char *vhost;
    const char *tap_queue;
    const pcre2_code *owned_pattern;
    const char *const *skip; /* queue names never considered owned here */
    size_t n_skip;
    bool dry_run;            /* read and count, write nothing */
} rp_mgmt_dlx_options;

/* How many untappable queues a reconcile names (RabbitMQ's queue names are
 * at most 255 bytes). */
#define RP_MGMT_DLX_NAMED 3

typedef struct rp_mgmt_dlx_stats {
    size_t owned;       /* owned queues seen */
    size_t with_dlx;    /* of them, with a dead-letter exchange */
    size_t unbindable;  /* of them, dead-lettering through the default exchange */
    /* The first min(unbindable, RP_MGMT_DLX_NAMED) of those, by name, in
     * the listing's order (as the broker spells them: untrusted). */
    char unbindable_names[RP_MGMT_DLX_NAMED][256];
    size_t exchanges;   /* distinct exchanges dead letters can reach */
    size_t wanted;      /* tap bindings wanted */
    size_t added, removed;
    size_t failed;      /* writes that failed (the next reconcile retries) */
    bool tap_missing;   /* the tap queue does not exist (yet): nothing written */
} rp_mgmt_dlx_stats;

/* Reconciles once. RP_OK when every read succeeded (failed writes are
 * counted in stats->failed, with the last reason in
 * rp_mgmt_broker_last_error); else the failing read's status (nothing is
 * removed then: a partial view never unbinds). */
rp_status rp_mgmt_dlx_reconcile(rp_mgmt_broker *b, const rp_mgmt_dlx_options *o,
                                rp_mgmt_dlx_stats *stats) RP_MUSTCHECK;

/* The dead-letter tap's bind port (core/rp_tap_port.h) over b (self = b,
 * borrowed): a reconcile in the vhost given, with cfg's tap queue and owned
 * pattern, reaper's control queue skipped; *reason is
 * rp_mgmt_broker_last_error(b). */
void rp_mgmt_dlx_tap_bind_port(rp_mgmt_broker *b, rp_tap_bind_port *out);

#endif
