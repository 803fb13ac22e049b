/* The control op doctor (control_doctor.h). */
#include "control_doctor.h"

#include <stdio.h>
#include <stdlib.h>

#include "rp_log.h"

struct rp_ctl_doctor {
    rp_doctor_probes probes;
};

rp_ctl_doctor *rp_ctl_doctor_new(void) { return calloc(1, sizeof(rp_ctl_doctor)); }

void rp_ctl_doctor_free(rp_ctl_doctor *d) { free(d); }

void rp_ctl_doctor_run(rp_ctl_doctor *d, const rp_config *cfg, const char *password,
                       rp_mgmt_bridge *bridge) {
    rp_doctor_probe_all(cfg, password, bridge, "the daemon has no management API client",
                        &d->probes);
}

rp_status rp_ctl_doctor_reply(rp_ctl_doctor *d, const char *user, rp_encoding enc,
                              rp_proto_buf *buf, rp_status *est) {
    rp_doctor_report r;
    if (rp_doctor_judge(&d->probes.facts, &r) != RP_OK) return RP_ERR_NOMEM;
    char fail[16], warn[16];
    snprintf(fail, sizeof fail, "%zu", r.n_fail);
    snprintf(warn, sizeof warn, "%zu", r.n_warn);
    RP_INFO("doctor checks run", "fail", fail, "warn", warn, "user", user, NULL);
    *est = rp_proto_encode_doctor_reply(&r, enc, buf);
    rp_doctor_report_cleanup(&r);
    return RP_OK;
}
