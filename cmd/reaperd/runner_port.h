/*
 * runner_port.h - the daemon's filler of core/rp_runner_port.h (the
 * backends of the broker-event part, app/rp_events.h): a set with a store
 * is a pass runner (pass_runner.h: a PostgreSQL connection of its own and
 * a management client over the bridge); a set without one is a management
 * client alone (rp_mgmt_broker.h). The seed's listing is
 * rp_mgmt_broker_list with the columns name, vhost, type and consumers;
 * the reconcile is rp_mgmt_policy_reconcile with the options of
 * rp_broker_policy_options (not a dry run).
 *
 * Threads: as core/rp_runner_port.h.
 * Ownership: b is the port's self; it and what it points at (the bridge,
 * the keep-alive settings) are borrowed and must outlive every set opened
 * through the port.
 */
#ifndef RP_RUNNER_PORT_FILL_H
#define RP_RUNNER_PORT_FILL_H

#include "broker_http.h"
#include "rp_mgmt_bridge.h"
#include "rp_runner_port.h"

typedef struct rp_runner_backends {
    rp_mgmt_bridge *mgmt;              /* NULL: open makes no set */
    const rp_broker_http_keep *keep;
} rp_runner_backends;

/* Fills *out with self = b. */
void rp_runner_port_fill(rp_runner_backends *b, rp_runner_port *out);

#endif
