/*
 * rp_ctl_internal.h - what the control part's files share (app/rp_ctl_*.c):
 * one request in flight (rp_ctl), the dispatch table's row (rp_ctl_op) and
 * the helpers that answer a request. Private to app/.
 *
 * ADDING AN OP: write app/rp_ctl_<op>.c defining `const rp_ctl_op
 * rp_ctl_op_<op>` (its start, or its store-thread work and its loop done),
 * declare it below and add one row to rp_ctl_ops[] in rp_controller.c.
 *
 * Ownership: an rp_ctl owns its request, its envelope's strings and its
 * op's state (freed with state_free); whoever answers it (rp_ctl_reply,
 * rp_ctl_error, rp_ctl_encoded) takes it.
 */
#ifndef RP_CTL_INTERNAL_H
#define RP_CTL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_controller.h"
#include "rp_proto.h"
#include "rp_redelivery.h"

typedef struct rp_ctl rp_ctl;

typedef struct rp_ctl_op {
    rp_op op;
    /* Loop: starts the request. RP_OK: c is taken (answered, or in flight);
     * an error: c is answered unavailable "reaperd is shutting down". NULL:
     * the store job of work, then done. */
    rp_status (*start)(rp_ctl *c);
    /* Store thread: the op's backends (through k->deps.store). */
    void (*work)(rp_ctl *c);
    /* Loop: the reply (c is taken). Not called when the job was cancelled
     * (shutting down: c is freed unacked, so delivered again later). */
    void (*done)(rp_ctl *c);
} rp_ctl_op;

struct rp_controller {
    rp_control_deps deps;
    /* Who sent requests, and what they were told (rp_control.h). */
    rp_control_senders senders;
    /* Control requests the broker handed over again, counted by identity. */
    rp_redelivery redeliveries;
};

struct rp_ctl {
    rp_controller *k;
    const rp_ctl_op *op;
    unsigned generation;
    uint64_t delivery_tag;
    rp_control_envelope env; /* its rp_bytes only during rp_controller_on_request */
    rp_encoding enc;
    uint64_t identity; /* rp_control_identity of the request */
    rp_request req;
    rp_status st;      /* the store could not be reached, or the op's status */
    void *state;       /* the op's, freed with state_free */
    void (*state_free)(void *state);
};

/* The rows (one file each). */
extern const rp_ctl_op rp_ctl_op_status;
extern const rp_ctl_op rp_ctl_op_reap;
extern const rp_ctl_op rp_ctl_op_gates;
extern const rp_ctl_op rp_ctl_op_answer;
extern const rp_ctl_op rp_ctl_op_gate;
extern const rp_ctl_op rp_ctl_op_jobs; /* rp_ctl_jobs.c: jobs, job, cancel */
extern const rp_ctl_op rp_ctl_op_job;
extern const rp_ctl_op rp_ctl_op_cancel;
extern const rp_ctl_op rp_ctl_op_doctor;
extern const rp_ctl_op rp_ctl_op_stats;
extern const rp_ctl_op rp_ctl_op_answer_many; /* rp_ctl_answer_set.c: both */
extern const rp_ctl_op rp_ctl_op_answer_set;

/* The broker-validated sender, NULL when none. */
const char *rp_ctl_user(const rp_ctl *c);
/* Store thread: connects the store when needed; false (c->st set to
 * RP_ERR_UNAVAILABLE) when it cannot be reached. */
bool rp_ctl_store_ready(rp_ctl *c);
/* Runs work then done of c->op as a store job. */
rp_status rp_ctl_store_job(rp_ctl *c);
/* Frees c (its request, its state). */
void rp_ctl_free(rp_ctl *c);
/* Publishes buf as the reply (or acks at once without reply_to); takes c
 * and buf's bytes. */
void rp_ctl_reply(rp_ctl *c, rp_proto_buf *buf);
/* Answers an error (op NULL: the reply's op is null); takes c. */
void rp_ctl_error(rp_ctl *c, const char *op, rp_status code, const char *message);
/* Answers with buf when est is RP_OK (counted ok), else the encoder's
 * failure; takes c and buf. */
void rp_ctl_encoded(rp_ctl *c, rp_status est, rp_proto_buf *buf);

#endif
