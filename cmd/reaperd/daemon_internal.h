/*
 * daemon_internal.h - TRANSITIONAL: the daemon's state, still read by the
 * two files of cmd/reaperd that have no deps struct of their own yet
 * (control.c, replay.c). daemon.c composes the parts (app/rp_sweeper.h,
 * app/rp_observe.h, signals.h, the tap, the events) and hands each its
 * narrow deps; none of them sees this struct. Once control.c and replay.c
 * take their own deps, rp_daemon moves into daemon.c and this header goes.
 *
 * Threads: runner is touched only on the store thread; all other fields
 * only on the loop thread (stopping: atomic access only).
 */
#ifndef RP_DAEMON_INTERNAL_H
#define RP_DAEMON_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>

#include "broker_http.h"
#include "events.h"
#include "rp_metrics.h"
#include "pass_runner.h"
#include "rp_mgmt_bridge.h"
#include "rp_amqp_feed.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_amqp_session.h"
#include "rp_config.h"
#include "rp_redelivery.h"
#include "tap.h"
#include "worker.h"

struct rp_http;
struct rp_observe;
struct rp_signals;
struct rp_sweeper;

typedef struct rp_daemon {
    struct event_base *base;
    /* The configuration in force (loop thread). A reload (SIGHUP, signals.h)
     * replaces it with a new snapshot; the store thread switches at its next
     * job (runner.cfg). boot_cfg is the configuration reaperd started with:
     * keys that need a restart (broker.*, store.*, http.listen) never
     * change, so a thread other than the loop (the AMQP connect thread)
     * reads those from boot_cfg, which lives as long as the daemon. */
    const rp_config *cfg;
    const rp_config *boot_cfg;
    /* The parts daemon.c composes (each with its own deps). */
    struct rp_signals *signals;   /* SIGHUP reload, the bounded stop */
    struct rp_sweeper *sweeper;   /* the store thread and when passes run */
    struct rp_observe *observe;   /* the metrics glue */

    /* The broker (loop thread): the AMQP session (rp_amqp_session.h) and
     * the events feed's publisher port (rp_amqp_feed.h). publisher,
     * replay_publisher (on RP_REPLAY_CHANNEL), broker_generation and
     * broker_up are the session's, lent and kept current by daemon.c. */
    rp_amqp_session *session;
    rp_amqp_feed *feed;
    rp_amqp_publisher *publisher;
    rp_amqp_publisher *replay_publisher;
    unsigned broker_generation; /* grows at every (re)connect: stale tags */
    bool broker_up;
    /* The management API: HTTP on the loop, called from the store thread
     * through the bridge. */
    rp_mgmt_bridge *mgmt;
    rp_broker_http_keep mgmt_keep;
    /* Broker events as they happen (events.h). */
    rp_events *events;
    /* The dead-letter tap (tap.h). */
    rp_tap *tap;

    /* Store thread side only: the runner every pass and store job uses. */
    rp_pass_runner runner;

    /* Loop side. */
    bool store_up; /* kept by the sweeper's store news */
    bool stopping; /* also read by the store thread: atomic access only */
    rp_time_ms last_pass_at;
    int64_t open_sightings;
    int exit_code;
    unsigned store_jobs; /* store jobs submitted and not yet done */

    /* Metrics (any thread: atomics) and the HTTP endpoints (loop). */
    rp_metrics metrics;
    struct rp_http *http;
    /* Control requests the broker handed over again, counted by identity
     * (control.c; loop thread; zeroed with the daemon). */
    rp_redelivery redeliveries;
    /* Gates whose replay is in flight (replay.c; loop thread). */
    int64_t *replaying;
    size_t n_replaying, cap_replaying;
} rp_daemon;

/* daemon.c: acks one delivery of the current connection generation (a tag
 * from an older connection is dropped: the broker redelivers that
 * message; rp_amqp_session_ack). */
void rp_broker_ack(rp_daemon *d, unsigned generation, uint64_t tag);

/* control.c */
void rp_control_on_message(rp_daemon *d, const rp_amqp_message *msg);

/* daemon.c: runs fn(d, job) on the store thread, then done(job) on the
 * loop; counted while in flight, so that a stop waits for it. */
rp_status rp_daemon_store_job(rp_daemon *d, rp_work_fn fn, rp_done_fn done,
                              void *job) RP_MUSTCHECK;

#endif
