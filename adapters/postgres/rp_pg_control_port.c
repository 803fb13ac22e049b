/* The control part's store port over PostgreSQL (rp_pg_control_port.h). */
#include "rp_pg_control_port.h"

#include "rp_pg_answer_set.h"
#include "rp_pg_jobs.h"

static const rp_config *rp_pcs_config(void *self) {
    return *((rp_pg_control_src *)self)->cfg;
}

static rp_status rp_pcs_ready(void *self) {
    char err[256];
    return rp_pg_conn_ensure(((rp_pg_control_src *)self)->conn, err, sizeof err) == RP_OK
               ? RP_OK
               : RP_ERR_UNAVAILABLE;
}

static const rp_gate_port *rp_pcs_gates(void *self) { return ((rp_pg_control_src *)self)->gates; }

static void rp_pcs_set_claim_seconds(void *self, int64_t seconds) {
    rp_pg_store_set_claim_seconds(((rp_pg_control_src *)self)->store, seconds);
}

static void rp_pcs_gate_look(void *self, rp_gate_look_port *out) {
    rp_pg_gate_look_port(((rp_pg_control_src *)self)->store, out);
}

static void rp_pcs_jobs(void *self, rp_jobs_port *out) {
    rp_pg_jobs_port(((rp_pg_control_src *)self)->store, out);
}

static void rp_pcs_answer_sets(void *self, rp_answer_set_port *out) {
    rp_pg_answer_set_port(((rp_pg_control_src *)self)->store, out);
}

static const char *rp_pcs_claimer(void *self) {
    return rp_pg_store_claimer(((rp_pg_control_src *)self)->store);
}

void rp_pg_control_store_port(rp_pg_control_src *src, rp_control_store_port *out) {
    out->self = src;
    out->config = rp_pcs_config;
    out->ready = rp_pcs_ready;
    out->gates = rp_pcs_gates;
    out->set_claim_seconds = rp_pcs_set_claim_seconds;
    out->gate_look = rp_pcs_gate_look;
    out->jobs = rp_pcs_jobs;
    out->answer_sets = rp_pcs_answer_sets;
    out->claimer = rp_pcs_claimer;
}
