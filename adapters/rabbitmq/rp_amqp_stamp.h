/*
 * rp_amqp_stamp.h - when the broker made an event: the timestamp_in_ms
 * header RabbitMQ puts on every message of amq.rabbitmq.event (the daemon's
 * event lag metric).
 *
 * Ownership: msg is borrowed for the call. Threads: any.
 */
#ifndef RP_AMQP_STAMP_H
#define RP_AMQP_STAMP_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_amqp_msg.h"

/* The header's value (an integer of any AMQP kind) in *ms; false when the
 * message has no such header or it is not an integer. */
bool rp_amqp_timestamp_in_ms(const rp_amqp_message *msg, int64_t *ms);

#endif
