/*
 * events_parse.h - reading one message of amq.rabbitmq.event (routing key
 * and headers; the body is empty) into a plain struct, defensively.
 *
 * The broker makes these headers, but reaper does not lean on that: a field
 * that is missing, of another type, too long or holding a NUL makes the
 * event unusable (rp_broker_event_parse returns false with a reason, the
 * caller logs it at debug and ignores the event). What is read, checked on
 * RabbitMQ 3.10.8 and 4.0.5 (RABBITMQ.md, and the comment in events.c):
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
#ifndef RP_EVENTS_PARSE_H
#define RP_EVENTS_PARSE_H

#include <amqp.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"

typedef enum rp_broker_event_kind {
    RP_BEV_OTHER = 0, /* a routing key reaper does not act on */
    RP_BEV_QUEUE_CREATED,
    RP_BEV_QUEUE_DELETED,
    RP_BEV_CONSUMER_CREATED,
    RP_BEV_CONSUMER_DELETED,
    RP_BEV_CHANNEL_CLOSED,
    RP_BEV_CONNECTION_CLOSED,
    RP_BEV_POLICY_SET,
    RP_BEV_POLICY_CLEARED,
    RP_BEV_BINDING_CREATED,
    RP_BEV_BINDING_DELETED,
    RP_BEV_EXCHANGE_CREATED,
    RP_BEV_EXCHANGE_DELETED,
} rp_broker_event_kind;

/* Queue names are at most 255 bytes (AMQP shortstr); vhosts likewise. */
#define RP_BEV_NAME_MAX 256
#define RP_BEV_PID_MAX 128

typedef struct rp_broker_event {
    rp_broker_event_kind kind;
    char routing_key[64];
    char vhost[RP_BEV_NAME_MAX];
    char name[RP_BEV_NAME_MAX];     /* queue.*, policy.*, exchange.*: name; consumer.*: queue;
                                       binding.*: the destination */
    char source[RP_BEV_NAME_MAX];   /* binding.*: the source exchange */
    char consumer_tag[RP_BEV_NAME_MAX];
    char pid[RP_BEV_PID_MAX];       /* consumer.*: channel; channel/connection.closed: pid */
    char user[RP_BEV_NAME_MAX];     /* user_who_performed_action, "" when absent */
    bool has_pattern;
    char pattern[1024];             /* policy.set */
    bool has_timestamp;
    int64_t timestamp_ms;           /* timestamp_in_ms: when the broker emitted it */
} rp_broker_event;

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

#endif
