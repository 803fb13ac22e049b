/*
 * rp_broker_event.h - one event of the broker's event exchange
 * (amq.rabbitmq.event), as core reads it: a plain struct with no AMQP in it.
 *
 * adapters/rabbitmq/rp_amqp_events.h fills it from a delivery's routing key
 * and headers (defensively: what it cannot use is refused there, with a
 * reason); core/rp_consumers.h acts on it. What each kind carries, checked
 * on RabbitMQ 3.10.8 and 4.0.5 (RABBITMQ.md):
 *   queue.created / queue.deleted      name, vhost
 *   consumer.created / consumer.deleted queue (into name), vhost,
 *                                       consumer_tag, channel (into pid)
 *   channel.closed                      pid
 *   connection.closed                   pid (read, not used)
 *   policy.set / policy.cleared         name, vhost; pattern when present
 *   binding.created / binding.deleted   vhost, destination_name (into name;
 *                                       "" when absent: the tap then takes
 *                                       it as any binding), source_name
 *   exchange.created / exchange.deleted name, vhost
 *   every event                         timestamp_in_ms (optional),
 *                                       user_who_performed_action (optional)
 *
 * Ownership: the event holds copies in fixed buffers (no heap).
 */
#ifndef RP_BROKER_EVENT_H
#define RP_BROKER_EVENT_H

#include <stdbool.h>
#include <stdint.h>

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

#endif
