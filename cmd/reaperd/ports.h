/*
 * ports.h - the one file of cmd/reaperd that fills core's ports from more
 * than one backend (issue #17: a filler that uses one backend lives in that
 * backend's adapter). Each function below composes two or three adapters
 * into one set of ports:
 *
 *   rp_control_store_fill   the control part's store port
 *                           (core/rp_control_port.h): the pass runner's
 *                           PostgreSQL session and management client, the
 *                           doctor's three probes, two AMQP facts.
 *   rp_doctor_probe_all     the doctor's probes: AMQP, the management API,
 *                           PostgreSQL (reaperd --doctor and the op doctor).
 *   rp_runner_port_fill     the broker-event part's runner port
 *                           (core/rp_runner_port.h).
 *   rp_replay_wiring_*      the replays part's store and publish ports.
 *   rp_tap_ports_*          the tap part's consumer, store and bindings.
 *
 * Ownership and threads: with each function.
 */
#ifndef RP_CMD_PORTS_H
#define RP_CMD_PORTS_H

#include <stdbool.h>

#include "broker_http.h"
#include "pass_runner.h"
#include "rp_amqp_doctor.h"
#include "rp_config.h"
#include "rp_control_port.h"
#include "rp_doctor.h"
#include "rp_mgmt_bridge.h"
#include "rp_mgmt_doctor.h"
#include "rp_pg_doctor.h"

/* ---- the doctor's probes ---------------------------------------------------- */

/* Each probe's own bound: a doctor answers in seconds, not a pass's time. */
#define RP_DOCTOR_TIMEOUT_MS 5000

/* What the probes saw and the strings their facts point into. */
typedef struct rp_doctor_probes {
    rp_doctor_facts facts;
    rp_broker_http_keep keep;
    rp_mgmt_doctor_keep mgmt;
    rp_pg_doctor_keep pg;
    char amqp_why[512];
    char mgmt_why[256];
} rp_doctor_probes;

/* A non-loop thread: runs every probe into p->facts (each bounded by
 * RP_DOCTOR_TIMEOUT_MS). bridge NULL: the management API is not tried
 * (mgmt_why says why, borrowed). cfg, password and bridge are borrowed for
 * the call. */
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
