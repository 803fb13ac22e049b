/*
 * rp_broker_state.h - what reaperd does when its broker session comes up,
 * is ready or goes down, and whether it takes a delivery (moved from
 * cmd/reaperd/daemon.c's session hooks): it keeps the daemon's broker_up
 * and broker_generation, counts the connection in the metrics, lists the
 * broker events' queues again when the session is ready (events are not
 * replayed) and calls the daemon's ready hook (every tap, the URL's vhost's
 * and each of broker.vhosts', looks at its bindings again). The four
 * functions have the signatures of the session's hooks
 * (adapters/rabbitmq/rp_amqp_session.h), which cmd/reaperd fills with them
 * and arg = the rp_broker_state.
 *
 * Ownership: an embedded struct; every pointer is borrowed from the daemon
 * and must outlive the session. Threads: the loop thread (stopping is read
 * atomically: the store thread writes it).
 */
#ifndef RP_BROKER_STATE_H
#define RP_BROKER_STATE_H

#include <stdbool.h>

#include "rp_events.h"
#include "rp_metrics.h"

typedef struct rp_broker_state {
    bool *up;                /* the daemon's broker_up */
    unsigned *generation;    /* the daemon's broker_generation: stale tags */
    const bool *stopping;    /* atomic access only */
    rp_metrics *metrics;
    rp_events *const *events; /* *events NULL: not made yet */
    void (*ready)(void *arg); /* when the session is ready, after the events */
    void *ready_arg;
} rp_broker_state;

/* Stopping: no new delivery is taken. */
bool rp_broker_state_accepting(void *state);
void rp_broker_state_on_up(void *state, unsigned generation);
void rp_broker_state_on_ready(void *state);
void rp_broker_state_on_down(void *state, bool was_up, const char *why);

#endif
