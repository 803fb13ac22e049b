/*
 * rp_amqp_events.h - reading one message of amq.rabbitmq.event (routing key
 * and headers; the body is empty) into core's plain rp_broker_event
 * (rp_broker_event.h), defensively.
 *
 * The broker makes these headers, but reaper does not lean on that: a field
 * that is missing, of another type, too long or holding a NUL makes the
 * event unusable (rp_broker_event_parse returns false with a reason, the
 * caller logs it at debug and ignores the event). What is read, checked on
 * RabbitMQ 3.10.8 and 4.0.5 (RABBITMQ.md, and the comment in core/rp_consumers.c):
 *   queue.created / queue.deleted      name, vhost
 *   consumer.created / consumer.deleted queue, vhost, consumer_tag, channel
 *   channel.closed                      pid
 *   connection.closed                   pid (read, not used)
 *   policy.set / policy.cleared         name, vhost; pattern when present
 *   binding.created / binding.deleted   vhost, destination_name (into name;
 *                                       "" when absent: the tap then takes
 *                                       it as any binding), source_name
 *   exchange.created / exchange.deleted name, vhost
 *   every event                         timestamp_in_ms (optional),
 *                                       user_who_performed_action (optional)
 * Strings are longtext ('S') or bytes ('x'); numbers any integer kind.
 *
 * Ownership: the event holds copies in fixed buffers (no heap); the message
 * is borrowed for the call.
 */
#ifndef RP_AMQP_EVENTS_H
#define RP_AMQP_EVENTS_H

#include <amqp.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_broker_event.h"
#include "rp_common.h"

/* The exchange every broker event comes from. */
#define RP_BROKER_EVENT_EXCHANGE "amq.rabbitmq.event"

/* Whether a delivery on the event queue came from the broker's event
 * exchange. Anyone allowed to publish on the vhost can put a message
 * straight into reaper's event queue through the default exchange (its
 * name is in the management API), with forged headers: such a delivery is
 * no broker event and is never acted on. */
bool rp_broker_event_from_broker(amqp_bytes_t exchange);

/* Parses routing_key and headers. False, with a static reason in *why,
 * when a field the kind needs is missing or unusable; an unknown routing
 * key parses as RP_BEV_OTHER (true). */
bool rp_broker_event_parse(amqp_bytes_t routing_key, const amqp_basic_properties_t *props,
                           rp_broker_event *out, const char **why);

/* What became of one delivery on reaperd's broker-event queue
 * (rp_amqp_event_delivery). */
typedef enum rp_amqp_event_take {
    RP_AMQP_EVENT_REFUSED, /* not routed by amq.rabbitmq.event: not acted on */
    RP_AMQP_EVENT_IGNORED, /* from the broker, but its fields are unusable */
    RP_AMQP_EVENT_TAKEN,   /* *ev holds the event */
} rp_amqp_event_take;

struct rp_amqp_message;
struct rp_metrics;

/* One delivery on the broker-event queue, read as reaperd acts on it. A
 * delivery that amq.rabbitmq.event did not route (published straight into
 * the queue through the default exchange, say) is refused: counted in
 * metrics (reaper_broker_events_refused_total), said once at warning level
 * and later at debug, not even its timestamp read (the event consumer is
 * no-ack: nothing to settle). Otherwise its timestamp_in_ms, when it has
 * one, goes to *stamp_ms (*stamped says whether; for the event lag), and the
 * event is parsed into *ev (unusable fields: logged at debug, IGNORED).
 * Loop thread (the metrics are atomics). msg and metrics are borrowed for
 * the call. */
rp_amqp_event_take rp_amqp_event_delivery(const struct rp_amqp_message *msg,
                                          struct rp_metrics *metrics, rp_broker_event *ev,
                                          bool *stamped, int64_t *stamp_ms);

#endif
