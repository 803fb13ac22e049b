/* The control op status: answered at once on the loop from the daemon's
 * state (rp_controller.h's deps). */
#include "rp_ctl_internal.h"
#include "version.h"

static rp_status rp_ctl_status_start(rp_ctl *c) {
    const rp_control_deps *d = &c->k->deps;
    rp_proto_status s = {
        .version = RP_VERSION_STRING,
        .broker_up = *d->broker_up,
        .store_up = *d->store_up,
        .last_pass_at = *d->last_pass_at,
        .open_sightings = *d->open_sightings,
    };
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_status_reply(&s, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
    return RP_OK;
}

const rp_ctl_op rp_ctl_op_status = {.op = RP_OP_STATUS, .start = rp_ctl_status_start};
