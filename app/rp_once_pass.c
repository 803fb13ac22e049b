/* reaperd --once's run on its loop and store thread (rp_once_pass.h). */
#include "rp_once_pass.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "report_text.h"
#include "rp_log.h"
#include "rp_pass_sequence.h"
#include "worker.h"

struct rp_once_pass {
    struct event_base *base;
    rp_pass_run_port run;
    rp_pass_request req;
    rp_worker *store;
    void (*flush)(void *flush_self);
    void *flush_self;
    struct event *sig_int, *sig_term;
    bool stop; /* SIGINT/SIGTERM (read by the store thread: atomic) */
};

static bool rp_once_should_stop(void *arg) {
    return __atomic_load_n(&((rp_once_pass *)arg)->stop, __ATOMIC_ACQUIRE);
}

static void rp_once_on_signal(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(sig);
    RP_UNUSED(what);
    __atomic_store_n(&((rp_once_pass *)arg)->stop, true, __ATOMIC_RELEASE);
}

static void rp_once_progress(void *arg, const char *phase, size_t done) {
    RP_UNUSED(arg);
    char n[24];
    snprintf(n, sizeof n, "%zu", done);
    RP_INFO("pass progress", "phase", phase, "rows", n, NULL);
}

rp_once_pass *rp_once_pass_new(struct event_base *base, bool dry_run) {
    rp_once_pass *o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    o->base = base;
    rp_pass_request_init(&o->req, RP_PASS_FULL, dry_run);
    return o;
}

rp_status rp_once_pass_signals(rp_once_pass *o) {
    o->sig_int = evsignal_new(o->base, SIGINT, rp_once_on_signal, o);
    o->sig_term = evsignal_new(o->base, SIGTERM, rp_once_on_signal, o);
    if (!o->sig_int || !o->sig_term || event_add(o->sig_int, NULL) != 0 ||
        event_add(o->sig_term, NULL) != 0) {
        RP_ERROR("cannot set up the loop's events", NULL);
        return RP_ERR_INTERNAL;
    }
    return RP_OK;
}

rp_status rp_once_pass_post(void *o, void (*fn)(void *job, bool cancelled), void *job) {
    return rp_worker_post(((rp_once_pass *)o)->store, fn, job);
}

void rp_once_pass_end(void *o) { event_base_loopbreak(((rp_once_pass *)o)->base); }

static void rp_once_pass_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_once_pass *o = job;
    rp_pass_sequence_run(&o->run, &o->req);
}

/* Loop: the pass is done; the feed's confirms are waited for, then the
 * loop ends. */
static void rp_once_pass_done(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    rp_once_pass *o = job;
    if (o->flush == NULL) rp_once_pass_end(o);
    else o->flush(o->flush_self);
}

rp_status rp_once_pass_start(rp_once_pass *o, const rp_pass_run_port *run, const char *project,
                             void (*flush)(void *flush_self), void *flush_self) {
    o->run = *run;
    o->flush = flush;
    o->flush_self = flush_self;
    o->req.progress = rp_once_progress;
    o->req.should_stop = rp_once_should_stop;
    o->req.stop_arg = o;
    if (project != NULL && (o->req.project = strdup(project)) == NULL) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    o->store = rp_worker_new(o->base, "store", NULL, NULL, 0);
    if (o->store == NULL || rp_worker_submit(o->store, rp_once_pass_work, rp_once_pass_done, o) !=
                                RP_OK) {
        RP_ERROR("cannot start the store thread", NULL);
        return RP_ERR_INTERNAL;
    }
    return RP_OK;
}

void rp_once_pass_join(rp_once_pass *o) {
    if (o->store) rp_worker_free(o->store);
    o->store = NULL;
    if (o->sig_int) event_free(o->sig_int);
    if (o->sig_term) event_free(o->sig_term);
    o->sig_int = o->sig_term = NULL;
}

rp_report *rp_once_pass_report(rp_once_pass *o) { return &o->req.report; }

int rp_once_pass_output(rp_once_pass *o, bool feed_ok, FILE *f, bool json) {
    if (!feed_ok) o->req.status = RP_ERR_NOMEM;
    int rc = (o->req.status == RP_OK && o->req.report.ok) ? 0 : 1;
    if (o->req.status != RP_OK)
        RP_ERROR("the pass stopped early", "status", rp_status_string(o->req.status), NULL);
    rp_report_log(&o->req.report, "once", o->req.duration_ms);
    if (rp_report_output(f, &o->req.report, json, o->req.started_at, o->req.duration_ms) != 0)
        rc = 1;
    return rc;
}

void rp_once_pass_free(rp_once_pass *o) {
    if (o == NULL) return;
    rp_once_pass_join(o);
    rp_pass_request_cleanup(&o->req);
    free(o);
}
