/*
 * ports.h - the fillers of cmd/reaperd that compose core's ports from more
 * than one backend (a filler over one backend lives in that backend's
 * adapter, issue #17): the store thread's pass runner (PostgreSQL, the
 * management API, the backfill's AMQP peek), the broker events' runner
 * port, the replays' ports, the tap's ports, the taps of broker.vhosts'
 * other vhosts, the doctor's probes and the
 * control part's store port. None decides: core and the app parts do.
 * Ownership and threads: with each function.
 */
#ifndef RP_CMD_PORTS_H
#define RP_CMD_PORTS_H

#include <event2/event.h>
#include <stdbool.h>

#include "broker_http.h"
#include "rp_amqp_conn.h"
#include "rp_amqp_peek.h"
#include "rp_amqp_publisher.h"
#include "rp_backfill_read.h"
#include "rp_config.h"
#include "rp_control_port.h"
#include "rp_doctor_probe.h"
#include "rp_mgmt_bridge.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_doctor.h"
#include "rp_pass.h"
#include "rp_pass_request.h"
#include "rp_pass_run_port.h"
#include "rp_pg_conn.h"
#include "rp_pg_control_port.h"
#include "rp_pg_doctor.h"
#include "rp_pg_store.h"
#include "rp_publish.h"
#include "rp_replay_port.h"
#include "rp_runner_port.h"
#include "rp_tap.h"
#include "rp_vhost_taps.h"

/* ==== the pass runner: the store thread's PostgreSQL, management API and peek ===== */

/* A runner owns the PostgreSQL connection, the store adapter over it and
 * the ports built from them; it borrows cfg for its life. One thread uses
 * it (the store thread); every call blocks. */

typedef struct rp_pass_runner {
    const rp_config *cfg;
    rp_pg_conn *conn;
    rp_pg_store *store;
    rp_ports ports;
    /* The broker half (rp_pass_runner_open). */
    rp_mgmt_broker *broker;
    const rp_broker_http_keep *broker_keep; /* borrowed */
    /* Issue 18 item 1: the channel samples broker STALLED is judged on,
     * kept across this runner's passes (rp_stalled_broker.h), made with
     * the broker half. */
    rp_stall_memory *stall;
    /* The backfill, with a peek (rp_pass_runner_open): core's read
     * of dead-letter queues (rp_backfill_read.h) over the AMQP peek and
     * the store's backfill record. */
    rp_amqp_peek *peek;
    rp_backfill_read *backfill;
    /* The gate port as the ports show it once a publisher is set: every
     * committed answer is handed to the publisher (rp_publish.h). */
    rp_gate_feed gate_feed;
} rp_pass_runner;

/* The runner as the daemon, --once and the broker events' checks make it,
 * the one place it is wired: the PostgreSQL connection and store for cfg
 * (borrowed; connecting at the first use), the broker half over bridge
 * (borrowed with keep; they must outlive the runner: queue measurements
 * through the management API, and the policy reconcile after every full
 * pass that is not narrowed to a project) and, with peek, the backfill's
 * peek over an AMQP connection of its own logged in with password
 * (rp_amqp_peek.h; the rules in rp_backfill_read.h; without it the pass
 * backfills nothing and a note says so). RP_OK, or RP_ERR_NOMEM with the
 * runner taken apart. */
rp_status rp_pass_runner_open(rp_pass_runner *r, const rp_config *cfg, rp_mgmt_bridge *bridge,
                              const rp_broker_http_keep *keep, bool peek,
                              const char *password) RP_MUSTCHECK;
/* Takes the runner apart; a zeroed or taken-apart runner too. */
void rp_pass_runner_cleanup(rp_pass_runner *r);

/* Sets the publisher port every committed ledger event of this runner is
 * handed to: the pass's verdicts, parks, and every gate answer through
 * ports.gates (wrapped once; call at most once, before any use). The
 * publisher's self is borrowed for the runner's life. */
void rp_pass_runner_set_publisher(rp_pass_runner *r, const rp_publisher_port *publisher);

/* The pass-run port (core/rp_pass_run_port.h) over the runner, self = r
 * (an open runner: its reconcile is the broker half's). */
void rp_pass_runner_port(rp_pass_runner *r, rp_pass_run_port *out);

/* Runs the pass request on the runner: app/rp_pass_sequence.h over the
 * pass-run port (core/rp_pass_run_port.h) this file fills from it. */
void rp_pass_runner_run(rp_pass_runner *r, rp_pass_request *req);

/* ==== the broker events' runner port (core/rp_runner_port.h) ================== */

/* A set with a store is a pass runner; without, a management client
 * alone. Threads: as core/rp_runner_port.h. b is the port's self, borrowed
 * with what it points at: it must outlive every set opened. */

typedef struct rp_runner_backends {
    rp_mgmt_bridge *mgmt;              /* NULL: open makes no set */
    const rp_broker_http_keep *keep;
} rp_runner_backends;

/* Fills *out with self = b. */
void rp_runner_port_fill(rp_runner_backends *b, rp_runner_port *out);

/* ==== the replays' store and publish ports (core/rp_replay_port.h) ============ */

/* The store side over the runner (adapters/postgres/rp_pg_replay.h; its
 * settle through the runner's gate port, wrapped with the events feed),
 * the publish over the replay channel (rp_amqp_replay_port.h). Borrows
 * runner, *publisher, *broker_up and broker_url for its life; it outlives
 * the replays part. Loop thread; the store port runs on the store thread. */

typedef struct rp_replay_wiring rp_replay_wiring;

/* NULL when out of memory. *publisher NULL or *broker_up false: a publish
 * is refused with RP_ERR_UNAVAILABLE. */
rp_replay_wiring *rp_replay_wiring_new(rp_pass_runner *runner,
                                       rp_amqp_publisher *const *publisher,
                                       const bool *broker_up, const char *broker_url);
void rp_replay_wiring_ports(rp_replay_wiring *w, rp_replay_store_port *store,
                            rp_replay_publish_port *publish);
void rp_replay_wiring_free(rp_replay_wiring *w);

/* ==== the tap's consumer, store and bindings (core/rp_tap_port.h) ============= */

/* The consumer (adapters/rabbitmq/rp_amqp_tap_port), the store
 * (adapters/postgres/rp_pg_park_batch) and the bindings
 * (adapters/management/rp_mgmt_dlx). Borrows cfg and mgmt, which outlive
 * it. Stop order: rp_tap_stop, rp_tap_ports_free, rp_tap_free. Loop thread. */

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

/* ==== the taps of broker.vhosts' other vhosts (app/rp_vhost_taps.h) ========== */

/* The port's self: each vhost's backends are a tap's ports (above) and a
 * publishing session of the replays' (rp_amqp_replay_vhost_start). Borrows what it points at; params (the daemon's) and replays
 * are set before rp_vhost_taps_connect. Loop thread. */
typedef struct rp_vhost_taps_src {
    struct event_base *base;
    const rp_config *const *cfg;
    rp_mgmt_bridge *mgmt;
    rp_amqp_params params;
    rp_replay_wiring *replays;
} rp_vhost_taps_src;

/* Fills *out with self = src. */
void rp_vhost_taps_port_fill(rp_vhost_taps_src *src, rp_vhost_taps_port *out);

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
    rp_pg_control_src pg;                 /* first: the PostgreSQL half's self (set by fill) */
    rp_pass_runner *runner;               /* the store thread's (an open runner) */
    const char *const *broker_password;   /* the doctor's probes */
} rp_control_store_src;

/* Fills *out with self = src (borrowed, with what it points at, for the
 * part's life): the PostgreSQL half by adapters/postgres/rp_pg_control_port,
 * the two AMQP facts by rp_amqp_control_port, the rest here. Threads: as
 * core/rp_control_port.h. */
void rp_control_store_fill(rp_control_store_src *src, rp_control_store_port *out);

#endif
