/*
 * control.h - the control protocol's use cases (control.c): request ->
 * use case -> reply, with the narrow things they use handed in.
 *
 * Ownership: deps is copied; every pointer in it is borrowed and must
 * outlive the controller (the daemon's). The controller owns its sender
 * table and its redelivery count. Threads: loop thread, except runner,
 * which only the store thread touches (through store_job).
 */
#ifndef RP_CONTROL_CMD_H
#define RP_CONTROL_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include "pass_runner.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_config.h"
#include "rp_metrics.h"
#include "rp_replays.h"
#include "worker.h"

typedef struct rp_control_deps {
    void *self; /* for store_job and ack */
    /* Runs fn(ctx, job) on the store thread, then done(job, cancelled) on
     * the loop; an error (RP_ERR_CLOSED: stopping) means neither runs. */
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    /* Acks a delivery of connection generation (a stale one is dropped). */
    void (*ack)(void *self, unsigned generation, uint64_t tag);
    const unsigned *broker_generation;    /* the current connection's */
    rp_amqp_publisher *const *publisher;  /* replies; NULL: not connected */
    const rp_config *const *cfg;          /* the configuration in force */
    rp_pass_runner *runner;               /* store thread: reap, gates, answer */
    rp_metrics *metrics;
    /* The status reply's values; a reap sets last_pass_at. */
    const bool *broker_up, *store_up;
    rp_time_ms *last_pass_at;
    const int64_t *open_sightings;
    rp_replays *replays;                  /* answers with replay */
    const char *const *broker_password;   /* doctor's probes (control_doctor.h) */
} rp_control_deps;

typedef struct rp_controller rp_controller;

/* NULL when out of memory. */
rp_controller *rp_controller_new(const rp_control_deps *deps);
/* One delivery of the control queue (loop thread). */
void rp_controller_on_message(rp_controller *k, const rp_amqp_message *msg);
/* NULL is fine. After every request in flight has ended (the store thread
 * and the session are gone). */
void rp_controller_free(rp_controller *k);

#endif
