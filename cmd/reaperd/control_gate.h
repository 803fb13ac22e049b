/*
 * control_gate.h - the use case of the control op `gate` (proto/SCHEMA.md
 * section 4; core/rp_gate_look.h): one gate looked inside on the store
 * thread (its job, its stored dead letter, a window of the body), whether a
 * replay would go ahead now (core's replay checks, rp_replay.h), then on the
 * loop the reply.
 *
 * Ownership: rp_ctl_gate owns what the look returned until
 * rp_ctl_gate_cleanup; the request and the runner are borrowed for the call.
 */
#ifndef RP_CTL_GATE_H
#define RP_CTL_GATE_H

#include "pass_runner.h"
#include "rp_gate_look.h"
#include "rp_proto.h"

typedef struct rp_ctl_gate {
    rp_status st;        /* the look's status */
    rp_gate_look look;
    bool replayable;
    char why_not[400];   /* when !replayable */
} rp_ctl_gate;

void rp_ctl_gate_init(rp_ctl_gate *g);
void rp_ctl_gate_cleanup(rp_ctl_gate *g);

/* Store thread: looks req's gate up over the runner's store. */
void rp_ctl_gate_run(rp_pass_runner *r, const rp_request *req, rp_ctl_gate *g);

/* Loop: the reply. RP_OK: *buf holds it (est: the encoder's status).
 * Otherwise the op failed: its code, and msg (n bytes) the sentence. */
rp_status rp_ctl_gate_reply(const rp_request *req, const rp_ctl_gate *g, rp_encoding enc,
                            rp_proto_buf *buf, rp_status *est, char *msg, size_t n);

#endif
