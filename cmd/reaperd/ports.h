/*
 * ports.h - the one file of cmd/reaperd that fills core's ports from more
 * than one backend (issue #17: a filler that uses one backend lives in that
 * backend's adapter). Each function below composes two or three adapters
 * into one set of ports:
 *
 *   rp_pass_runner_*        the store thread's pass runner: the store's
 *                           PostgreSQL session, the management API's
 *                           client and the backfill's AMQP peek behind one
 *                           rp_ports, and the pass-run port over them
 *                           (core/rp_pass_run_port.h; the run itself is
 *                           app/rp_pass_sequence.h's).
 *   rp_control_store_fill   the control part's store port
 *                           (core/rp_control_port.h): the pass runner's
 *                           PostgreSQL session and management client (the
 *                           answer-set port included), the doctor's three
 *                           probes, two AMQP facts.
 *   rp_doctor_probe_all     the doctor's probe port: AMQP, the management
 *                           API, PostgreSQL (the order and the facts:
 *                           app/rp_doctor_probe.h; reaperd --doctor and the
 *                           op doctor).
 *   rp_runner_port_fill     the broker-event part's runner port
 *                           (core/rp_runner_port.h).
 *   rp_replay_wiring_*      the replays part's store and publish ports.
 *   rp_answer_set_wiring_*  the answer-set runner's ports.
 *   rp_tap_ports_*          the tap part's consumer, store and bindings.
 *
 * Why one file in cmd and not app/ or an adapter: each of these is where
 * two or three backends meet (an adapter never links another backend, and
 * app/ includes no adapter), and none decides anything: what is decided
 * runs in core or in the app part the ports are for.
 *
 * Ownership and threads: with each function.
 */
#ifndef RP_CMD_PORTS_H
#define RP_CMD_PORTS_H

#include <event2/event.h>
#include <stdbool.h>

#include "broker_http.h"
#include "rp_amqp_conn.h"
#include "rp_amqp_doctor.h"
#include "rp_amqp_peek.h"
#include "rp_amqp_publisher.h"
#include "rp_answer_sets.h"
#include "rp_backfill_read.h"
#include "rp_config.h"
#include "rp_control_port.h"
#include "rp_doctor.h"
#include "rp_doctor_probe.h"
#include "rp_mgmt_bridge.h"
#include "rp_mgmt_broker.h"
#include "rp_metrics.h"
#include "rp_mgmt_doctor.h"
#include "rp_pass.h"
#include "rp_pass_request.h"
#include "rp_pass_run_port.h"
#include "rp_pg_conn.h"
#include "rp_pg_doctor.h"
#include "rp_pg_store.h"
#include "rp_publish.h"
#include "rp_replay_port.h"
#include "rp_replays.h"
#include "rp_runner_port.h"
#include "rp_status.h"
#include "rp_tap.h"
#include "worker.h"

/* ==== the pass runner: the store thread's PostgreSQL, management API and peek ===== */

/*
 * pass_runner.h - one reaper's view of the store, and running a pass on it.
 *
 * A runner owns the PostgreSQL connection, the store adapter over it and
 * the ports built from them, with the pass options the configuration
 * gives. It is used by one thread only: the store thread of the daemon, or
 * the main thread of `reaperd --once`. Every call blocks.
 *
 * Ownership: the runner borrows cfg for its whole life. The pass request
 * (what to run and what came of it) is core's: rp_pass_request.h.
 */

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

/* The pass-run port (core/rp_pass_run_port.h) over the runner, self = r;
 * its reconcile is there when the broker half is attached (call after
 * rp_pass_runner_attach_broker). */
void rp_pass_runner_port(rp_pass_runner *r, rp_pass_run_port *out);

/* Runs the pass request on the runner: app/rp_pass_sequence.h over the
 * pass-run port (core/rp_pass_run_port.h) this file fills from it. */
void rp_pass_runner_run(rp_pass_runner *r, rp_pass_request *req);

/* ==== the broker events' runner port (core/rp_runner_port.h) ================== */

/*
 * runner_port.h - the daemon's filler of core/rp_runner_port.h (the
 * backends of the broker-event part, app/rp_events.h): a set with a store
 * is a pass runner (pass_runner.h: a PostgreSQL connection of its own and
 * a management client over the bridge); a set without one is a management
 * client alone (rp_mgmt_broker.h). The seed's listing is
 * rp_mgmt_broker_list with the columns name, vhost, type and consumers;
 * the reconcile is rp_mgmt_policy_reconcile with the options of
 * rp_broker_policy_options (not a dry run).
 *
 * Threads: as core/rp_runner_port.h.
 * Ownership: b is the port's self; it and what it points at (the bridge,
 * the keep-alive settings) are borrowed and must outlive every set opened
 * through the port.
 */

typedef struct rp_runner_backends {
    rp_mgmt_bridge *mgmt;              /* NULL: open makes no set */
    const rp_broker_http_keep *keep;
} rp_runner_backends;

/* Fills *out with self = b. */
void rp_runner_port_fill(rp_runner_backends *b, rp_runner_port *out);

/* ==== the replays' store and publish ports (core/rp_replay_port.h) ============ */

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

typedef struct rp_replay_wiring rp_replay_wiring;

/* NULL when out of memory. *publisher NULL or *broker_up false: a publish
 * is refused with RP_ERR_UNAVAILABLE. */
rp_replay_wiring *rp_replay_wiring_new(rp_pass_runner *runner,
                                       rp_amqp_publisher *const *publisher,
                                       const bool *broker_up, const char *broker_url);
void rp_replay_wiring_ports(rp_replay_wiring *w, rp_replay_store_port *store,
                            rp_replay_publish_port *publish);
void rp_replay_wiring_free(rp_replay_wiring *w);

/* ==== the answer-set runner's ports (app/rp_answer_sets.h) =================== */

/*
 * The answer-set runner's ports (issue #20 item 3) filled for reaperd: the
 * store side over the pass runner's session
 * (adapters/postgres/rp_pg_answer_set.h), and one gate's answer as a single
 * `answer` request runs it: a replay through the replays part
 * (app/rp_replays.h), a dismiss through the runner's gate port (wrapped
 * with the events feed) on the store thread. Two backends (PostgreSQL and
 * the broker's replay channel), hence here.
 *
 * Ownership: the wiring borrows runner, replays and metrics (they outlive
 * it); rp_answer_set_wiring_free frees it after the answer-set part.
 * Threads: the loop thread; the port's calls as rp_answer_sets.h says.
 */

typedef struct rp_answer_set_wiring rp_answer_set_wiring;

/* NULL when out of memory. store_job runs a job on the store thread (as
 * rp_answer_sets_deps says). */
rp_answer_set_wiring *rp_answer_set_wiring_new(
    rp_pass_runner *runner, rp_replays *replays, rp_metrics *metrics,
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job),
    void *store_job_self);
/* Fills the ports, the owner (this process's instance id) and the clock of
 * *deps (lease_ms, idle_ms left as they are). */
void rp_answer_set_wiring_deps(rp_answer_set_wiring *w, rp_answer_sets_deps *deps);
void rp_answer_set_wiring_free(rp_answer_set_wiring *w);

/* ==== the tap's consumer, store and bindings (core/rp_tap_port.h) ============= */

/*
 * tap_ports.h - the dead-letter tap's backends (app/rp_tap.h's ports,
 * core/rp_tap_port.h), each filled by its adapter: the consumer by the
 * tap's own AMQP connection (adapters/rabbitmq/rp_amqp_tap_port), the store
 * by two PostgreSQL sessions (adapters/postgres/rp_pg_park_batch), the
 * bindings' reconcile by a management client of its own
 * (adapters/management/rp_mgmt_dlx). Composed here: the three together.
 *
 * Ownership: the daemon owns it; rp_tap_ports_new borrows cfg (read at
 * each use) and mgmt, which must outlive it. The ports filled borrow it.
 * The stop order: rp_tap_stop, then rp_tap_ports_free (closes the
 * connection, the sessions and the client), then rp_tap_free.
 * Threads: the loop thread, but what the ports say of their own.
 */

typedef struct rp_tap_ports rp_tap_ports;

/* Opens nothing yet (the sessions connect at their first use); fills
 * deps->consumer, deps->store and deps->bind (NULL when mgmt is NULL: no
 * bindings). NULL when out of memory. */
rp_tap_ports *rp_tap_ports_new(struct event_base *base, const rp_config *const *cfg,
                               rp_mgmt_bridge *mgmt, rp_tap_deps *deps);
void rp_tap_ports_free(rp_tap_ports *p);

/* Starts the tap's own connection (params as the daemon's, copied by the
 * call; its name and frame_max are the tap's own) through rp_tap_connect.
 * RP_ERR_CONFIG when the URL does not parse (logged); RP_ERR_INTERNAL when
 * its connect thread cannot start. */
rp_status rp_tap_ports_connect(rp_tap_ports *p, rp_tap *t,
                               const rp_amqp_params *params) RP_MUSTCHECK;

/* ---- the doctor's probes ---------------------------------------------------- */

/* The probe port's self (core/rp_doctor_probe_port.h) and what the probes
 * saw (app/rp_doctor_probe.h): the strings their facts point into. */
typedef struct rp_doctor_probes {
    rp_doctor_probed seen;
    rp_broker_http_keep keep;
    rp_mgmt_doctor_keep mgmt;
    rp_pg_doctor_keep pg;
    const char *password;     /* borrowed for the call */
    rp_mgmt_bridge *bridge;   /* borrowed for the call; NULL: none */
    const char *mgmt_why;     /* why there is no bridge (borrowed) */
} rp_doctor_probes;

/* A non-loop thread: runs every probe (rp_doctor_probe_run) into
 * p->seen.facts, each bounded by RP_DOCTOR_TIMEOUT_MS. bridge NULL: the
 * management API is not tried (mgmt_why says why, borrowed). cfg, password
 * and bridge are borrowed for the call. */
void rp_doctor_probe_all(const rp_config *cfg, const char *password, rp_mgmt_bridge *bridge,
                         const char *mgmt_why, rp_doctor_probes *p);

/* ---- the control part's store port ----------------------------------------- */

typedef struct rp_control_store_src {
    rp_pass_runner *runner;               /* the store thread's */
    const char *const *broker_password;   /* the doctor's probes */
} rp_control_store_src;

/* Fills *out with self = src (borrowed, with what it points at, for the
 * part's life). Threads: as core/rp_control_port.h. */
void rp_control_store_fill(rp_control_store_src *src, rp_control_store_port *out);

#endif
