/*
 * daemon_internal.h - the daemon's state, shared by daemon.c (the loop,
 * passes, signals), broker.c (the AMQP connection, declarations,
 * deliveries) and control.c (the control protocol). Not for other files.
 *
 * Threads: fields marked "store thread" are touched only there; all others
 * only on the loop thread.
 */
#ifndef RP_DAEMON_INTERNAL_H
#define RP_DAEMON_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>

#include "broker_http.h"
#include "pass_runner.h"
#include "rp_mgmt_bridge.h"
#include "rp_amqp_conn.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_config.h"
#include "tap.h"
#include "worker.h"

#define RP_CONTROL_CONSUMER_TAG "reaper.control"
#define RP_EVENTS_CONSUMER_TAG "reaper.events"
#define RP_CONTROL_PREFETCH 16

typedef struct rp_daemon {
    struct event_base *base;
    const rp_config *cfg;
    struct event *sig_term, *sig_int;
    struct event *sweep_ev;    /* every interval_seconds, when reap.enabled */
    struct event *deadline_ev; /* the next lease deadline */
    rp_worker *store;

    /* The broker (loop thread). */
    rp_amqp_conn *amqp;
    rp_amqp_assembler assembler;
    rp_amqp_publisher *publisher;
    unsigned broker_generation; /* grows at every (re)connect: stale tags */
    bool broker_up;
    /* The management API: HTTP on the loop, called from the store thread
     * through the bridge. */
    rp_mgmt_bridge *mgmt;
    rp_broker_http_keep mgmt_keep;
    /* The dead-letter tap (tap.h). */
    rp_tap *tap;

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
} rp_daemon;

/* broker.c */
rp_status rp_broker_start(rp_daemon *d, const char *password) RP_MUSTCHECK;
void rp_broker_stop(rp_daemon *d);
/* Acks one delivery of the current connection generation (a tag from an
 * older connection is dropped: the broker redelivers that message). */
void rp_broker_ack(rp_daemon *d, unsigned generation, uint64_t tag);

/* control.c */
void rp_control_on_message(rp_daemon *d, const rp_amqp_message *msg);

/* feed.c: the publisher port (store thread) feeding the events exchange. */
void rp_feed_port(rp_daemon *d, rp_publisher_port *out);

/* daemon.c: runs fn(job) on the store thread, then done(job) on the loop. */
rp_status rp_daemon_store_job(rp_daemon *d, rp_work_fn fn, rp_done_fn done,
                              void *job) RP_MUSTCHECK;

#endif
