/*
 * pass_runner.h - one reaper's view of the store, and running a pass on it.
 *
 * A runner owns the PostgreSQL connection, the store adapter over it and
 * the ports built from them, with the pass options the configuration
 * gives. It is used by one thread only: the store thread of the daemon, or
 * the main thread of `reaperd --once`. Every call blocks.
 *
 * Ownership: the runner borrows cfg for its whole life. A pass request's
 * project is owned by the request (rp_pass_request_cleanup frees it and the
 * report).
 */
#ifndef RP_PASS_RUNNER_H
#define RP_PASS_RUNNER_H

#include <stdbool.h>

#include "rp_config.h"
#include "rp_pass.h"
#include "rp_publish.h"
#include "rp_pg_conn.h"
#include "rp_pg_store.h"
#include "rp_mgmt_broker.h"
#include "broker_http.h"
#include "rp_amqp_peek.h"
#include "rp_backfill_read.h"

typedef struct rp_pass_runner {
    const rp_config *cfg;
    rp_pg_conn *conn;
    rp_pg_store *store;
    rp_ports ports;
    /* The broker half, when attached (rp_pass_runner_attach_broker). */
    rp_mgmt_broker *broker;
    const rp_broker_http_keep *broker_keep; /* borrowed */
    /* Issue 18 item 1: the channel samples broker STALLED is judged on,
     * kept across this runner's passes (rp_stalled_broker.h), made with
     * the broker half. */
    rp_stall_memory *stall;
    /* The backfill, when attached (rp_pass_runner_attach_peek): core's read
     * of dead-letter queues (rp_backfill_read.h) over the AMQP peek and
     * the store's backfill record. */
    rp_amqp_peek *peek;
    rp_backfill_read *backfill;
    /* The gate port as the ports show it once a publisher is set: every
     * committed answer is handed to the publisher (rp_publish.h). */
    rp_gate_feed gate_feed;
} rp_pass_runner;

typedef struct rp_pass_request {
    /* What to run. */
    rp_pass_scope scope;
    bool dry_run;
    char *project;             /* NULL: every project */
    rp_pass_progress_fn progress;
    void *progress_arg;
    bool (*should_stop)(void *arg); /* polled between rows; may be NULL */
    void *stop_arg;
    /* What came of it. */
    rp_status status;          /* rp_pass_run's */
    rp_report report;
    rp_time_ms started_at;     /* the store's clock (the database's now()) */
    int64_t clock_offset_ms;   /* this host's clock minus the store's, then */
    int64_t duration_ms;
    int64_t open_sightings;    /* after the pass; -1 when unknown */
    int64_t open_by_condition[RP_COND_COUNT_]; /* the same by condition, when known */
    bool deadline_known;       /* a leased row is still in the table */
    rp_time_ms deadline_at;    /* its lease_expires_at + grace */
} rp_pass_request;

rp_status rp_pass_runner_init(rp_pass_runner *r, const rp_config *cfg) RP_MUSTCHECK;
void rp_pass_runner_cleanup(rp_pass_runner *r);
/* Gives the runner a broker half over bridge (borrowed; it must outlive the
 * runner): queue measurements through the management API, and the policy
 * reconcile after every full pass that is not narrowed to a project. */
rp_status rp_pass_runner_attach_broker(rp_pass_runner *r, rp_mgmt_bridge *bridge,
                                       const rp_broker_http_keep *keep) RP_MUSTCHECK;

/* Gives the runner the backfill's peek over an AMQP connection of its own
 * (rp_amqp_peek.h; the rules in rp_backfill_read.h), after attach_broker (it
 * asks the broker port for a queue's type). Without it the pass backfills
 * nothing (a note says so). */
rp_status rp_pass_runner_attach_peek(rp_pass_runner *r, const char *password) RP_MUSTCHECK;

/* Sets the publisher port every committed ledger event of this runner is
 * handed to: the pass's verdicts, parks, and every gate answer through
 * ports.gates (wrapped once; call at most once, before any use). The
 * publisher's self is borrowed for the runner's life. */
void rp_pass_runner_set_publisher(rp_pass_runner *r, const rp_publisher_port *publisher);

/* The pass options every pass of reaperd starts from: rp_pass_options_default
 * with the thresholds, patterns and peek limit of cfg (borrowed: the
 * options point into it) and verdicts logged. */
void rp_pass_runner_options(const rp_config *cfg, rp_pass_options *opt);

/* Connects when needed, then runs the pass. A store that cannot be reached
 * is reported in req->report (unreadable "job_queue", with the reason in a
 * note), never fatal. Afterwards reads the next lease deadline (unless the
 * store is down). */
void rp_pass_runner_run(rp_pass_runner *r, rp_pass_request *req);

void rp_pass_request_init(rp_pass_request *req, rp_pass_scope scope, bool dry_run);
void rp_pass_request_cleanup(rp_pass_request *req);

#endif
