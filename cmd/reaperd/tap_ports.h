/*
 * tap_ports.h - the dead-letter tap's backends (app/rp_tap.h's ports,
 * core/rp_tap_port.h), each filled by its adapter: the consumer by the
 * tap's own AMQP connection (adapters/rabbitmq/rp_amqp_tap_port), the store
 * by two PostgreSQL sessions (adapters/postgres/rp_pg_park_batch), the
 * bindings' reconcile by a management client of its own
 * (adapters/management/rp_mgmt_dlx). Composed here: the three together.
 *
 * Ownership: the daemon owns it; rp_tap_ports_new borrows cfg (read at
 * each use) and mgmt, which must outlive it. The ports filled borrow it.
 * The stop order: rp_tap_stop, then rp_tap_ports_free (closes the
 * connection, the sessions and the client), then rp_tap_free.
 * Threads: the loop thread, but what the ports say of their own.
 */
#ifndef RP_TAP_PORTS_H
#define RP_TAP_PORTS_H

#include <event2/event.h>

#include "rp_amqp_conn.h"
#include "rp_config.h"
#include "rp_mgmt_bridge.h"
#include "rp_status.h"
#include "rp_tap.h"

typedef struct rp_tap_ports rp_tap_ports;

/* Opens nothing yet (the sessions connect at their first use); fills
 * deps->consumer, deps->store and deps->bind (NULL when mgmt is NULL: no
 * bindings). NULL when out of memory. */
rp_tap_ports *rp_tap_ports_new(struct event_base *base, const rp_config *const *cfg,
                               rp_mgmt_bridge *mgmt, rp_tap_deps *deps);
void rp_tap_ports_free(rp_tap_ports *p);

/* Starts the tap's own connection (params as the daemon's, copied by the
 * call; its name and frame_max are the tap's own) through rp_tap_connect.
 * RP_ERR_CONFIG when the URL does not parse (logged); RP_ERR_INTERNAL when
 * its connect thread cannot start. */
rp_status rp_tap_ports_connect(rp_tap_ports *p, rp_tap *t,
                               const rp_amqp_params *params) RP_MUSTCHECK;

#endif
