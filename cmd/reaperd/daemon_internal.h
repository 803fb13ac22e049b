/*
 * daemon_internal.h - the daemon's state, shared by daemon.c (the
 * composition root: the loop, passes, the broker session's wiring) and the
 * parts still in cmd/reaperd that read it. Not for other files.
 *
 * Threads: fields marked "store thread" are touched only there; all others
 * only on the loop thread.
 */
#ifndef RP_DAEMON_INTERNAL_H
#define RP_DAEMON_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>

#include "broker_http.h"
#include "rp_events.h"
#include "rp_http.h"
#include "rp_metrics.h"
#include "pass_runner.h"
#include "runner_port.h"
#include "rp_mgmt_bridge.h"
#include "rp_amqp_feed.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_amqp_session.h"
#include "rp_config.h"
#include "rp_tap.h"
#include "tap_ports.h"
#include "worker.h"

typedef struct rp_cfg_snapshot rp_cfg_snapshot;

typedef struct rp_daemon {
    struct event_base *base;
    /* The configuration in force (loop thread). A reload (SIGHUP) replaces
     * it with a new snapshot; the store thread switches at its next job
     * (runner.cfg). boot_cfg is the configuration reaperd started with:
     * keys that need a restart (broker.*, store.*, http.listen) never
     * change, so a thread other than the loop (the AMQP connect thread)
     * reads those from boot_cfg, which lives as long as the daemon. */
    const rp_config *cfg;
    const rp_config *boot_cfg;
    rp_cfg_snapshot *snapshots; /* every reload's config, freed at exit */
    struct event *sig_term, *sig_int;
    struct event *sweep_ev;    /* every interval_seconds, when reap.enabled */
    struct event *deadline_ev; /* the next lease deadline */
    /* Lease deadlines as they are set (rp_pg_listen.h): the deadline timer
     * is armed earlier when a new lease expires before it fires. When it
     * fires, on this host's wall clock (INT64_MAX: not armed), and the
     * store's clock offset measured by the last pass. */
    struct rp_pg_listen *lease_listen;
    int64_t deadline_fire_ms;
    int64_t clock_offset_ms;
    uint64_t deadline_rearms; /* times a notification brought the timer forward */
    rp_worker *store;

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
    /* Broker events as they happen (app/rp_events.h), and the backends of
     * its checks, seeds and reconciles (runner_port.h). */
    rp_events *events;
    rp_runner_backends events_backends;
    /* The dead-letter tap (app/rp_tap.h). */
    rp_tap *tap;
    rp_tap_ports *tap_ports; /* its backends (tap_ports.h) */

    /* Store thread side only. */
    rp_pass_runner runner;
    bool store_up_seen;
    unsigned store_checks, store_failures;
    int64_t open_sightings_seen;

    /* Loop side. */
    bool store_up;
    bool pass_running;
    bool want_sweep, want_leases;
    bool stopping; /* also read by the store thread: atomic access only */
    rp_time_ms last_pass_at;
    int64_t open_sightings;
    int exit_code;

    /* Metrics (any thread: atomics) and the HTTP endpoints (loop). */
    rp_metrics metrics;
    rp_http *http;
    /* Signals and the bounded stop (signals.c). */
    struct event *sig_hup;
    struct event *stop_check_ev; /* polls for in-flight work while stopping */
    int64_t stop_deadline_ms;    /* monotonic; the grace runs out then */
    unsigned store_jobs;         /* store jobs submitted and not yet done */
    bool stop_cancelled;         /* the store's command was cancelled */
    /* The control queue's use cases (control.h) and the replays
     * (app/rp_replays.h) over their ports (replay_port.h); loop thread. */
    struct rp_controller *control;
    struct rp_replays *replays;
    struct rp_replay_wiring *replay_wiring;
    /* The gauges' recount after ledger events (observe.c; loop thread). */
    struct event *gauges_ev;
    bool gauges_queued; /* a recount waits on the store thread */
} rp_daemon;

/* daemon.c: acks one delivery of the current connection generation (a tag
 * from an older connection is dropped: the broker redelivers that
 * message; rp_amqp_session_ack). */
void rp_broker_ack(rp_daemon *d, unsigned generation, uint64_t tag);

/* daemon.c: the publisher port (store thread) feeding the events exchange
 * (rp_amqp_feed.h). */
void rp_feed_port(rp_daemon *d, rp_publisher_port *out);

/* signals.c: SIGHUP reload, the bounded stop on SIGTERM/SIGINT. */
rp_status rp_signals_start(rp_daemon *d) RP_MUSTCHECK;
void rp_signals_cleanup(rp_daemon *d);
/* The grace a stop waits for work in flight before closing anyway. */
#define RP_STOP_GRACE_MS 10000

/* observe.c: the metrics glue (HTTP start, loop-side state, event lag,
 * the store-side counts after a pass). */
rp_status rp_observe_start(rp_daemon *d) RP_MUSTCHECK;
void rp_observe_event(rp_daemon *d, const rp_amqp_message *msg);
/* Store thread, after a daemon pass: the open sightings and gates. */
void rp_observe_pass_store(rp_daemon *d, const rp_pass_request *req);
/* Loop, when a daemon pass is done: its duration and result. */
void rp_observe_pass_done(rp_daemon *d, const rp_pass_request *req);
/* Loop: count the open gates and sightings again soon (debounced). */
void rp_observe_gauges_soon(rp_daemon *d);

/* daemon.c: runs fn(job) on the store thread, then done(job) on the loop. */
rp_status rp_daemon_store_job(rp_daemon *d, rp_work_fn fn, rp_done_fn done,
                              void *job) RP_MUSTCHECK;

#endif
