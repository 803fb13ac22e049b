/* Every probe of the doctor, in order, and its output (rp_doctor_probe.h). */
#include "rp_doctor_probe.h"

#include <stdio.h>
#include <stdlib.h>

#include "rp_log.h"
#include "worker.h"

void rp_doctor_probe_run(const rp_doctor_probe_port *port, const rp_config *cfg,
                         rp_doctor_probed *out) {
    void *self = port->self;
    rp_doctor_facts *f = &out->facts;
    rp_doctor_facts_init(f);
    f->broker_url = cfg->broker.url;
    f->management_url = cfg->broker.management_url;
    f->dsn = cfg->store.dsn;
    f->schema = cfg->store.schema;
    f->tap_queue = cfg->broker.tap_queue;
    f->consumer_timeout_seconds = cfg->reap.consumer_timeout_seconds;
    const char *user = NULL, *vhost = NULL;
    bool url_ok = port->identity(self, cfg, &user, &vhost);
    if (url_ok) {
        f->user = user;
        f->vhost = vhost;
    }

    /* AMQP. */
    if (url_ok) {
        f->amqp = port->amqp(self, cfg, RP_DOCTOR_TIMEOUT_MS, out->amqp_why, sizeof out->amqp_why);
        f->amqp_why = out->amqp_why;
    }

    /* The management API. */
    const char *why = NULL;
    if (!url_ok) {
        snprintf(out->mgmt_why, sizeof out->mgmt_why, "%s", "broker.url does not parse");
        f->mgmt_why = out->mgmt_why;
    } else if (!port->mgmt(self, cfg, RP_DOCTOR_TIMEOUT_MS, f, &why)) {
        snprintf(out->mgmt_why, sizeof out->mgmt_why, "%s", why ? why : "no client");
        f->mgmt_why = out->mgmt_why;
    }

    /* The store. */
    port->store(self, cfg, RP_DOCTOR_TIMEOUT_MS, f);
}

int rp_doctor_output(FILE *f, const rp_doctor_facts *facts, bool json) {
    rp_doctor_report rep;
    char *text = NULL;
    if (rp_doctor_judge(facts, &rep) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        return 1;
    }
    rp_status st = json ? rp_doctor_json(&rep, &text) : rp_doctor_text(&rep, &text);
    if (st != RP_OK) {
        RP_ERROR("out of memory", NULL);
        rp_doctor_report_cleanup(&rep);
        return 1;
    }
    fputs(text, f);
    if (json) fputc('\n', f);
    free(text);
    int rc = rp_doctor_exit_code(&rep);
    if (fflush(f) != 0) rc = 1;
    rp_doctor_report_cleanup(&rep);
    return rc;
}

typedef struct rp_doctor_thread_run {
    struct event_base *base;
    void (*probe)(void *arg);
    void *arg;
} rp_doctor_thread_run;

static void rp_doctor_thread_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_doctor_thread_run *r = job;
    r->probe(r->arg);
}

static void rp_doctor_thread_done(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    event_base_loopbreak(((rp_doctor_thread_run *)job)->base);
}

rp_status rp_doctor_probe_on_thread(struct event_base *base, void (*probe)(void *arg),
                                    void (*before_join)(void *arg), void *arg) {
    rp_doctor_thread_run r = {base, probe, arg};
    rp_worker *w = rp_worker_new(base, "doctor", NULL, NULL, 0);
    if (w == NULL || rp_worker_submit(w, rp_doctor_thread_work, rp_doctor_thread_done, &r) != RP_OK) {
        RP_ERROR("cannot start the probe thread", NULL);
        if (w) rp_worker_free(w);
        return RP_ERR_INTERNAL;
    }
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    if (before_join) before_join(arg);
    rp_worker_free(w);
    return RP_OK;
}
