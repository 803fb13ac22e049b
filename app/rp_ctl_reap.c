/* The control op reap: a pass on demand on the store thread (the store
 * port's reap), held to control.reap_rate_seconds per user; the report
 * logged as "on demand" and sent back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_text.h"
#include "rp_ctl_internal.h"
#include "rp_log.h"

static void rp_ctl_reap_state_free(void *state) {
    rp_pass_request *pass = state;
    if (pass == NULL) return;
    rp_pass_request_cleanup(pass);
    free(pass);
}

/* True (and c answered busy) when a reap comes too soon for its user. */
static bool rp_ctl_reap_too_soon(rp_ctl *c) {
    const rp_control_deps *d = &c->k->deps;
    char why[200];
    if (!rp_control_reap_too_soon(&c->k->senders, rp_ctl_user(c),
                                  (*d->cfg)->control.reap_rate_seconds, d->mono_ms(d->self), why,
                                  sizeof why))
        return false;
    rp_ctl_error(c, "reap", RP_ERR_BUSY, why);
    return true;
}

static rp_status rp_ctl_reap_start(rp_ctl *c) {
    if (rp_ctl_reap_too_soon(c)) return RP_OK;
    rp_pass_request *pass = calloc(1, sizeof *pass);
    if (pass == NULL) return RP_ERR_NOMEM;
    rp_pass_request_init(pass, RP_PASS_FULL, c->req.reap.dry_run);
    c->state = pass;
    c->state_free = rp_ctl_reap_state_free;
    if (c->req.reap.project && (pass->project = strdup(c->req.reap.project)) == NULL)
        return RP_ERR_NOMEM;
    return rp_ctl_store_job(c);
}

static void rp_ctl_reap_work(rp_ctl *c) {
    const rp_control_store_port *s = &c->k->deps.store;
    s->reap(s->self, c->state);
}

static void rp_ctl_reap_done(rp_ctl *c) {
    rp_pass_request *pass = c->state;
    if (pass->status != RP_OK) {
        rp_ctl_error(c, "reap", RP_ERR_INTERNAL, "the pass stopped early");
        return;
    }
    if (!pass->dry_run) *c->k->deps.last_pass_at = pass->started_at + pass->clock_offset_ms;
    char who[300];
    snprintf(who, sizeof who, "%s", c->env.has_user ? c->env.user : "(unknown)");
    rp_report_log(&pass->report, "on demand", pass->duration_ms);
    RP_INFO("reap request answered", "user", who, "dry_run", pass->dry_run ? "true" : "false",
            "ok", pass->report.ok ? "true" : "false", NULL);
    rp_proto_buf buf = {0};
    rp_status est = rp_proto_encode_reap_reply(&pass->report, c->enc, &buf);
    rp_ctl_encoded(c, est, &buf);
}

const rp_ctl_op rp_ctl_op_reap = {
    .op = RP_OP_REAP, .start = rp_ctl_reap_start, .work = rp_ctl_reap_work,
    .done = rp_ctl_reap_done};
