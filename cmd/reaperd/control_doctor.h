/*
 * control_doctor.h - the control op `doctor` (proto/SCHEMA.md section 4):
 * the same probes as reaperd --doctor (doctor.h), run by the daemon on its
 * store thread against the configuration in force, through the daemon's own
 * management bridge; then, on the loop, the checks judged by core and the
 * reply. control.c only routes the op here.
 *
 * The probes block the store thread (each bounded by doctor.h's time-out;
 * a pass waits meanwhile), like every other store-thread op.
 *
 * Ownership: rp_ctl_doctor holds the probes' facts and strings until it is
 * freed; the configuration, password and bridge are borrowed for the run.
 */
#ifndef RP_CTL_DOCTOR_H
#define RP_CTL_DOCTOR_H

#include "doctor.h"
#include "rp_proto.h"

typedef struct rp_ctl_doctor rp_ctl_doctor;

/* NULL when out of memory. */
rp_ctl_doctor *rp_ctl_doctor_new(void);
void rp_ctl_doctor_free(rp_ctl_doctor *d);

/* Store thread: every probe. bridge NULL: the management API is not tried. */
void rp_ctl_doctor_run(rp_ctl_doctor *d, const rp_config *cfg, const char *password,
                       rp_mgmt_bridge *bridge);

/* Loop: the reply. RP_OK: *buf holds it (est is the encoder's status), and
 * the counts are logged; else RP_ERR_NOMEM. */
rp_status rp_ctl_doctor_reply(rp_ctl_doctor *d, const char *user, rp_encoding enc,
                              rp_proto_buf *buf, rp_status *est);

#endif
