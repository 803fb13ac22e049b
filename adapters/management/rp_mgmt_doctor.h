/*
 * rp_mgmt_doctor.h - doctor's probes over the management API (core's
 * rp_doctor.h decides what they mean): the API itself (GET /api/overview),
 * the event exchange plugin (GET /api/exchanges/{vhost}/amq.rabbitmq.event),
 * the user's tags (GET /api/whoami), the vhost's policies (GET
 * /api/policies/{vhost}), the broker-wide consumer_timeout
 * (rp_mgmt_broker_wide_timeout) and the tap's bindings (rp_mgmt_dlx_reconcile
 * as a dry run: read and counted, nothing written). Only reads.
 *
 * Threads: like rp_mgmt_broker (one non-loop thread, blocking through the
 * bridge). Ownership: the probe's strings live in *keep, which must outlive
 * the facts that point into it; the options are borrowed for the call.
 */
#ifndef RP_MGMT_DOCTOR_H
#define RP_MGMT_DOCTOR_H

#include "rp_doctor.h"
#include "rp_config.h"
#include "rp_mgmt_dlx.h"

typedef struct rp_mgmt_doctor_keep {
    char mgmt_why[384];
    char version[32];
    char tags[256];
    char policies[1024];
    char tap_why[384];
    char timeout_why[384];
    char unbindable[RP_MGMT_DLX_NAMED][256];
} rp_mgmt_doctor_keep;

/* Fills the broker half of *f (mgmt, event exchange, tags, policies,
 * consumer_timeout, tap); f->vhost and f->user are the caller's. dlx gives
 * the tap's vhost, queue, owned pattern and skip list (dry_run is forced). */
void rp_mgmt_doctor_probe(rp_mgmt_broker *b, const rp_mgmt_dlx_options *dlx,
                          rp_mgmt_doctor_keep *keep, rp_doctor_facts *f);

/* The probe over a client of its own on bridge (borrowed for the call),
 * each request bounded by timeout_ms, with cfg's tap queue, owned pattern
 * and control queue (skipped) in vhost. false when out of memory (*why
 * says so). */
bool rp_mgmt_doctor_probe_config(rp_mgmt_bridge *bridge, const rp_config *cfg,
                                 const char *vhost, int timeout_ms, rp_mgmt_doctor_keep *keep,
                                 rp_doctor_facts *f, const char **why);

/* The reach a transport failure means, from its scrubbed reason (curl's
 * "Connection refused", "Could not resolve host", a time-out). */
rp_doctor_reach rp_mgmt_doctor_reach(rp_status st, long http_status, const char *why);

#endif
