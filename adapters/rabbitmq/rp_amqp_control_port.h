/*
 * rp_amqp_control_port.h - the control part's transport port
 * (core/rp_control_port.h) over the daemon's AMQP session: replies through
 * rp_amqp_control_reply on the session's publisher, acks through
 * rp_amqp_session_ack, reaperd's own user from broker.url.
 *
 * Ownership: src is the port's self; it and what it points at (the session
 * and publisher pointers, read at each call: NULL while not made or not
 * connected) are borrowed and must outlive the part. Threads: loop thread
 * (own_user: any).
 */
#ifndef RP_AMQP_CONTROL_PORT_H
#define RP_AMQP_CONTROL_PORT_H

#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_amqp_session.h"
#include "rp_control_port.h"

typedef struct rp_amqp_control_src {
    rp_amqp_session *const *session;
    rp_amqp_publisher *const *publisher;
} rp_amqp_control_src;

/* Fills *out with self = src. */
void rp_amqp_control_transport_port(rp_amqp_control_src *src, rp_control_transport_port *out);

/* Fills the two AMQP facts of the control part's store port
 * (core/rp_control_port.h), which use no self: kept_refusal
 * (rp_amqp_restore_refusal) and vhost_is_ours (broker.url's vhost,
 * rp_amqp_url_vhost_is). Moved from cmd/reaperd/ports.c. Any thread. */
void rp_amqp_control_store_facts(rp_control_store_port *out);

#endif
