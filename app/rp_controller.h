/*
 * rp_controller.h - the control part: one request of the control queue ->
 * its use case -> one reply (CONTRACT section 5, proto/SCHEMA.md).
 * (core/rp_control.h holds the protocol's decisions; this is the part that
 * runs them, hence the other name.)
 *
 * rp_controller_on_request takes a request as the transport read it (an
 * rp_control_envelope) and, in order: counts redeliveries, admits the
 * sender, the reply_to and the size, decodes the body, then runs the op
 * from the dispatch table (rp_ctl_internal.h: one row per op, each op in a
 * file of its own, app/rp_ctl_<op>.c), on the loop (status) or as a
 * store-thread job (the rest), and publishes the reply through the
 * transport port; the request is acked once the reply is confirmed (or at
 * once when there is no reply_to).
 *
 * It may call core (the decisions, the ports), the wire codec (proto/:
 * bytes in memory, no I/O), support (the logger, the worker's job types,
 * version.h) and the replays part; the backends come through
 * core/rp_control_port.h.
 *
 * Ownership: deps is copied; every pointer in it is borrowed and must
 * outlive the part (the daemon's). The part owns its sender table and its
 * redelivery count. Threads: loop thread, except the store port, which it
 * calls only on the store thread (through store_job).
 */
#ifndef RP_CONTROLLER_H
#define RP_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_config.h"
#include "rp_control.h"
#include "rp_control_port.h"
#include "rp_metrics.h"
#include "rp_replays.h"
#include "worker.h"

typedef struct rp_control_deps {
    void *self; /* for store_job and mono_ms */
    /* Runs fn(ctx, job) on the store thread, then done(job, cancelled) on
     * the loop; an error (RP_ERR_CLOSED: stopping) means neither runs. */
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    /* The monotonic clock (ms) a reap's rate is held to. */
    int64_t (*mono_ms)(void *self);
    rp_control_transport_port transport;
    rp_control_store_port store;
    const rp_config *const *cfg;          /* the configuration in force */
    rp_metrics *metrics;
    /* The status reply's values; a reap sets last_pass_at. */
    const bool *broker_up, *store_up;
    rp_time_ms *last_pass_at;
    const int64_t *open_sightings;
    rp_replays *replays;                  /* answers with replay */
} rp_control_deps;

typedef struct rp_controller rp_controller;

/* NULL when out of memory. */
rp_controller *rp_controller_new(const rp_control_deps *deps);
/* One request (loop thread): generation is the connection it came on,
 * delivery_tag its tag there; env (borrowed for the call) as the transport
 * read it. */
void rp_controller_on_request(rp_controller *k, unsigned generation, uint64_t delivery_tag,
                              const rp_control_envelope *env);
/* NULL is fine. After every request in flight has ended (the store thread
 * and the session are gone). */
void rp_controller_free(rp_controller *k);

#endif
