/*
 * doctor.h - `reaperd --doctor [--json]` and the probes behind the control
 * op `doctor` (issue #18 item 6): every probe of rp_doctor.h run against the
 * configuration in force, judged by core (rp_doctor_judge).
 *
 * rp_doctor_probe_all composes the three adapters' probes (AMQP, the
 * management API through a bridge, PostgreSQL): it is the one place that
 * talks to both backends, so it lives in cmd. It blocks (each probe bounded
 * by its time-out): a non-loop thread only.
 *
 * Ownership: rp_doctor_probes holds the strings its facts point into; the
 * configuration, password and bridge are borrowed for the call.
 */
#ifndef RP_CMD_DOCTOR_H
#define RP_CMD_DOCTOR_H

#include <stdbool.h>

#include "broker_http.h"
#include "rp_amqp_doctor.h"
#include "rp_config.h"
#include "rp_doctor.h"
#include "rp_mgmt_bridge.h"
#include "rp_mgmt_doctor.h"
#include "rp_pg_doctor.h"

typedef struct rp_doctor_probes {
    rp_doctor_facts facts;
    rp_broker_http_keep keep;
    rp_mgmt_doctor_keep mgmt;
    rp_pg_doctor_keep pg;
    char amqp_why[512];
    char mgmt_why[256];
} rp_doctor_probes;

/* A non-loop thread: runs every probe into p->facts. bridge NULL: the
 * management API is not tried (mgmt_why says why, borrowed). */
void rp_doctor_probe_all(const rp_config *cfg, const char *password, rp_mgmt_bridge *bridge,
                         const char *mgmt_why, rp_doctor_probes *p);

/* reaperd --doctor: probes, judges and prints (text, or one JSON object
 * with json). Returns the exit code: 0 when no check failed, 1 otherwise. */
int rp_doctor_cli(const rp_config *cfg, const char *password, bool json);

#endif
