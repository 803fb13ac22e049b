/* The control op doctor (proto/SCHEMA.md section 4): the same probes as
 * reaperd --doctor, run on the store thread through the store port against
 * the configuration in force when the request came (each probe bounded by
 * its time-out; a pass waits meanwhile); then, on the loop, the checks
 * judged by core (rp_doctor_judge), the counts logged and the reply. */
#include <stdio.h>
#include <stdlib.h>

#include "rp_ctl_internal.h"
#include "rp_log.h"

typedef struct rp_ctl_doctor {
    const rp_control_store_port *store;
    rp_control_doctor *probes;
    const rp_config *cfg; /* the configuration in force when it came */
} rp_ctl_doctor;

static void rp_ctl_doctor_free(void *state) {
    rp_ctl_doctor *d = state;
    if (d == NULL) return;
    d->store->doctor_free(d->store->self, d->probes);
    free(d);
}

static rp_status rp_ctl_doctor_start(rp_ctl *c) {
    const rp_control_store_port *s = &c->k->deps.store;
    rp_ctl_doctor *d = calloc(1, sizeof *d);
    if (d != NULL) {
        d->store = s;
        d->cfg = *c->k->deps.cfg;
        c->state = d;
        c->state_free = rp_ctl_doctor_free;
    }
    if (d == NULL || (d->probes = s->doctor_new(s->self)) == NULL) {
        rp_ctl_error(c, "doctor", RP_ERR_INTERNAL, "out of memory");
        return RP_OK;
    }
    return rp_ctl_store_job(c);
}

static void rp_ctl_doctor_work(rp_ctl *c) {
    rp_ctl_doctor *d = c->state;
    d->store->doctor_run(d->store->self, d->probes, d->cfg);
}

static void rp_ctl_doctor_done(rp_ctl *c) {
    rp_ctl_doctor *d = c->state;
    rp_doctor_report r;
    if (rp_doctor_judge(d->store->doctor_facts(d->store->self, d->probes), &r) != RP_OK) {
        rp_ctl_error(c, "doctor", RP_ERR_INTERNAL, "out of memory");
        return;
    }
    char fail[16], warn[16];
    snprintf(fail, sizeof fail, "%zu", r.n_fail);
    snprintf(warn, sizeof warn, "%zu", r.n_warn);
    RP_INFO("doctor checks run", "fail", fail, "warn", warn, "user", rp_ctl_user(c), NULL);
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_doctor_reply(&r, c->enc, &buf);
    rp_doctor_report_cleanup(&r);
    rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_doctor = {
    .op = RP_OP_DOCTOR, .start = rp_ctl_doctor_start, .work = rp_ctl_doctor_work,
    .done = rp_ctl_doctor_done};
