/*
 * rp_runner_port.h - the backends the broker-event part (app/rp_events.h)
 * runs its work on: a per-thread SET of ports (a store session and a
 * management client of its own, so that a long sweep on the store thread
 * never delays an event check), the owned-queue listing of the seed, and
 * the policy reconcile.
 *
 * cmd/reaperd/ports.c fills it from the daemon's pass runner
 * (ports.h: a PostgreSQL connection of its own, rp_mgmt_broker,
 * rp_mgmt_policy_reconcile); tests/unit/test_app_events.c fills it with the
 * memory adapter.
 *
 * CALLING CONVENTION as core/rp_ports.h: synchronous, an rp_status, detail
 * inside the filler (last_error gives it as text).
 *
 * THREADS. open and close on any thread (the part calls them on the loop
 * thread, at its _new and _stop). Every other function on one thread at a
 * time per set: the thread the set serves (the part's "events" thread for
 * the checks' set, its "policy" thread for the seeds' and reconciles').
 *
 * OWNERSHIP. open returns a set the caller owns and gives back with close
 * (after the last use of anything it lent). The config and the publisher
 * given to open are borrowed for the set's life (the publisher's self
 * too). The ports a set shows (ports) are lent for the set's life; what
 * they return is lent per rp_ports.h. A listing page (list_queues) is
 * lent until the next call on the same set. A report given to reconcile
 * is the caller's (filled, never freed).
 */
#ifndef RP_RUNNER_PORT_H
#define RP_RUNNER_PORT_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_pass.h"
#include "rp_pass_policy.h"
#include "rp_ports.h"
#include "rp_report.h"
#include "rp_status.h"

/* One thread's backends; what it holds is the filler's. */
typedef struct rp_runner_set rp_runner_set;

typedef struct rp_runner_port {
    void *self;
    /* A new set over the management API: ports().broker always; with_store
     * also a store session (not connected until connect) behind
     * ports().store, .gates, .clock, .dead_letters, and publisher as
     * ports().publisher (NULL: none; it is set as given, not wrapped).
     * NULL when out of memory or when a backend cannot be made. */
    rp_runner_set *(*open)(void *self, const rp_config *cfg, bool with_store,
                           const rp_publisher_port *publisher);
    /* The set's ports, lent for the set's life. */
    const rp_ports *(*ports)(void *self, rp_runner_set *s);
    /* Connects the set's store when it is not connected: RP_OK, or an
     * error with the reason in err (n bytes). A set without a store:
     * RP_ERR_INVALID. */
    rp_status (*connect)(void *self, rp_runner_set *s, char *err, size_t n);
    /* The pass options every check starts from (the sweep's: thresholds
     * and patterns of cfg, which they point into, and verdicts logged). */
    void (*pass_options)(void *self, const rp_config *cfg, rp_pass_options *opt);
    /* One page (from 1) of every queue of every vhost with only its name,
     * vhost, type and consumer count (the seed's listing: a lighter
     * request than the sweep's). */
    rp_status (*list_queues)(void *self, rp_runner_set *s, size_t page, rp_queue_page *out);
    /* The scrubbed reason of the set's last failed call ("" when none);
     * lent until the next call on the set. */
    const char *(*last_error)(void *self, rp_runner_set *s);
    /* Writes reaper's policies as cfg wants them (CONTRACT section 8; not a
     * dry run) and verifies them: rp_pass_policy_reconcile over the set's
     * management client. Its checks and notes go to report, its counts to
     * stats. */
    rp_status (*reconcile)(void *self, rp_runner_set *s, const rp_config *cfg, rp_report *report,
                           rp_pass_policy_stats *stats);
    void (*close)(void *self, rp_runner_set *s);
} rp_runner_port;

#endif
