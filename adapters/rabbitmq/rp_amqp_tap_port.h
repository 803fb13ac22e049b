/*
 * rp_amqp_tap_port.h - the dead-letter tap's consumer port
 * (core/rp_tap_port.h) filled from the tap's own AMQP connection
 * (rp_amqp_tap.h), with the examiner that reads a delivery's headers into
 * core's stored form (rp_dl_stored, core/rp_backfill_port.h: rp_amqp_table,
 * rp_amqp_restore).
 *
 * Ownership: cfg is borrowed (read at each use) and must outlive the port;
 * the port filled borrows p. rp_amqp_tap_port_free closes the connection:
 * after the part stopped (app/rp_tap.h's stop order).
 * Threads: as core/rp_tap_port.h's consumer; made and freed on the loop.
 */
#ifndef RP_AMQP_TAP_PORT_H
#define RP_AMQP_TAP_PORT_H

#include <event2/event.h>
#include <stddef.h>

#include "rp_amqp_conn.h"
#include "rp_config.h"
#include "rp_tap_port.h"

typedef struct rp_amqp_tap_port rp_amqp_tap_port;

/* Opens nothing yet: the connection is made at the port's start, with the
 * params set by rp_amqp_tap_port_params (a body longer than body_max is
 * kept truncated). Fills *out. NULL when out of memory. */
rp_amqp_tap_port *rp_amqp_tap_port_new(struct event_base *base, const rp_config *const *cfg,
                                       size_t body_max, rp_tap_consumer_port *out);
/* The params the next start connects with (borrowed until then: the
 * connection copies them; NULL: a start is refused with RP_ERR_INTERNAL). */
void rp_amqp_tap_port_params(rp_amqp_tap_port *p, const rp_amqp_params *params);
void rp_amqp_tap_port_free(rp_amqp_tap_port *p);

#endif
