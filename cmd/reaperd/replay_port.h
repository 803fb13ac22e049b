/*
 * replay_port.h - the replays part's ports (core/rp_replay_port.h) filled
 * from the adapters: the store side from the store thread's runner
 * (adapters/postgres/rp_pg_replay.h, the gate port's answer for the
 * settle: the gate port wrapped with the events feed, so two backends),
 * the message and its publish from adapters/rabbitmq
 * (rp_amqp_replay_port.h) on the replay channel's publisher.
 *
 * Ownership: the wiring borrows runner (initialised: its connection and
 * store are taken as they are at rp_replay_wiring_new), *publisher, *broker_up and
 * broker_url (the configuration reaperd started with: broker.* needs a
 * restart) for its life; it must outlive the replays part. Threads: made
 * and freed on the loop thread; the store port runs on the store thread,
 * publish on the loop.
 */
#ifndef RP_REPLAY_PORT_CMD_H
#define RP_REPLAY_PORT_CMD_H

#include <stdbool.h>

#include "pass_runner.h"
#include "rp_amqp_publisher.h"
#include "rp_replay_port.h"

typedef struct rp_replay_wiring rp_replay_wiring;

/* NULL when out of memory. *publisher NULL or *broker_up false: a publish
 * is refused with RP_ERR_UNAVAILABLE. */
rp_replay_wiring *rp_replay_wiring_new(rp_pass_runner *runner,
                                       rp_amqp_publisher *const *publisher,
                                       const bool *broker_up, const char *broker_url);
void rp_replay_wiring_ports(rp_replay_wiring *w, rp_replay_store_port *store,
                            rp_replay_publish_port *publish);
void rp_replay_wiring_free(rp_replay_wiring *w);

#endif
