/*
 * reaperd --once: the daemon's own parts, run until one pass is done. The
 * loop on this thread carries the management API (the bridge) and the
 * events feed's session (adapters/rabbitmq/rp_amqp_pass_feed.h: publish
 * only, connects with the first committed event, flushed at the end of the
 * pass; what it could not publish is a note, never exit 1); the pass runs
 * on the store thread, as in the daemon. SIGINT/SIGTERM end the pass
 * between rows, with what was done reported.
 */
#include "once.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ports.h"
#include "report_text.h"
#include "rp_amqp_pass_feed.h"
#include "rp_log.h"
#include "rp_mgmt_bridge.h"
#include "version.h"
#include "worker.h"

/* How long the end of the pass waits for the feed's confirms (and its one
 * retry) before it reports the rest as not published. */
#define RP_ONCE_FEED_FLUSH_MS 10000

typedef struct rp_once {
    struct event_base *base;
    const rp_config *cfg;
    rp_pass_runner runner;
    rp_pass_request req;
    rp_worker *store;
    rp_mgmt_bridge *mgmt;
    rp_broker_http_keep keep;
    rp_amqp_pass_feed *feed; /* NULL: none (a dry run, or broker.url unusable) */
    rp_metrics metrics;
    struct event *sig_int, *sig_term;
    bool stop; /* SIGINT/SIGTERM (read by the store thread: atomic) */
} rp_once;

static bool rp_once_should_stop(void *arg) {
    return __atomic_load_n(&((rp_once *)arg)->stop, __ATOMIC_ACQUIRE);
}

static void rp_once_on_signal(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(sig);
    RP_UNUSED(what);
    __atomic_store_n(&((rp_once *)arg)->stop, true, __ATOMIC_RELEASE);
}

static void rp_once_progress(void *arg, const char *phase, size_t done) {
    RP_UNUSED(arg);
    char n[24];
    snprintf(n, sizeof n, "%zu", done);
    RP_INFO("pass progress", "phase", phase, "rows", n, NULL);
}

/* Store thread: the feed's work for the loop. */
static rp_status rp_once_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    return rp_worker_post(((rp_once *)ctx)->store, fn, job);
}

/* Loop: the pass and the feed's flush are over. */
static void rp_once_end(void *arg) { event_base_loopbreak(((rp_once *)arg)->base); }

/* ---- the pass ------------------------------------------------------------------ */

static void rp_once_pass_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_once *o = job;
    rp_pass_runner_run(&o->runner, &o->req);
}

/* Loop: the pass is done; the feed's confirms are waited for, then the
 * loop ends. */
static void rp_once_pass_done(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    rp_once *o = job;
    if (o->feed == NULL) rp_once_end(o);
    else rp_amqp_pass_feed_flush(o->feed, RP_ONCE_FEED_FLUSH_MS);
}

/* Makes the parts and submits the pass. Returns 0, or the exit code (what
 * was made is taken apart by rp_once_stop). */
static int rp_once_start(rp_once *o, const char *password, const char *project, bool dry_run) {
    const rp_config *cfg = o->cfg;
    o->sig_int = evsignal_new(o->base, SIGINT, rp_once_on_signal, o);
    o->sig_term = evsignal_new(o->base, SIGTERM, rp_once_on_signal, o);
    if (!o->sig_int || !o->sig_term || event_add(o->sig_int, NULL) != 0 ||
        event_add(o->sig_term, NULL) != 0) {
        RP_ERROR("cannot set up the loop's events", NULL);
        return 1;
    }
    if (rp_pass_runner_init(&o->runner, cfg) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        return 1;
    }
    /* The broker half over the management API, on this loop for the store
     * thread through the bridge. */
    const char *herr = NULL;
    if (rp_broker_http_bridge(o->base, cfg, password, &o->keep, &o->mgmt, &herr) != RP_OK ||
        rp_pass_runner_attach_broker(&o->runner, o->mgmt, &o->keep) != RP_OK ||
        rp_pass_runner_attach_peek(&o->runner, password) != RP_OK) {
        RP_ERROR("cannot use the management API", "key", "broker.management_url", "reason",
                 herr ? herr : "out of memory", NULL);
        return 1;
    }
    /* The events feed, for what the pass commits. A dry run commits
     * nothing and publishes nothing: it gets no publisher at all. */
    if (!dry_run) {
        const char *ferr = NULL;
        rp_amqp_pass_feed_params fp = {.base = o->base,
                                       .cfg = cfg,
                                       .password = password,
                                       .metrics = &o->metrics,
                                       .post = rp_once_post,
                                       .post_ctx = o,
                                       .on_flushed = rp_once_end,
                                       .flushed_arg = o};
        rp_publisher_port feed;
        if ((o->feed = rp_amqp_pass_feed_new(&fp, &ferr)) != NULL) {
            rp_amqp_pass_feed_port(o->feed, &feed);
            rp_pass_runner_set_publisher(&o->runner, &feed);
        } else
            RP_WARN("the events feed is off for this pass", "key", "broker.url", "reason", ferr,
                    NULL);
    }
    o->req.progress = rp_once_progress;
    o->req.should_stop = rp_once_should_stop;
    o->req.stop_arg = o;
    if (project != NULL && (o->req.project = strdup(project)) == NULL) {
        RP_ERROR("out of memory", NULL);
        return 1;
    }
    o->store = rp_worker_new(o->base, "store", NULL, NULL, 0);
    if (o->store == NULL || rp_worker_submit(o->store, rp_once_pass_work, rp_once_pass_done, o) !=
                                RP_OK) {
        RP_ERROR("cannot start the store thread", NULL);
        return 1;
    }
    return 0;
}

/* The stop order: the bridge closed (no call waits on a loop that no
 * longer turns), the store thread joined, then the session (what it did not
 * confirm is settled as dropped), the rest. */
static void rp_once_stop(rp_once *o) {
    if (o->mgmt) rp_mgmt_bridge_close(o->mgmt);
    if (o->store) rp_worker_free(o->store);
    rp_amqp_pass_feed_close(o->feed);
    rp_pass_runner_cleanup(&o->runner);
    rp_mgmt_bridge_free(o->mgmt);
    if (o->sig_int) event_free(o->sig_int);
    if (o->sig_term) event_free(o->sig_term);
    event_base_free(o->base);
}

int rp_once_run(const rp_config *cfg, const char *password, const char *project, bool dry_run,
                bool json) {
    signal(SIGPIPE, SIG_IGN);
    rp_once *o = calloc(1, sizeof *o);
    if (o == NULL || evthread_use_pthreads() != 0 || (o->base = event_base_new()) == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        free(o);
        return 1;
    }
    o->cfg = cfg;
    rp_metrics_init(&o->metrics, REAPER_VERSION, REAPER_GIT_REV);
    rp_pass_request_init(&o->req, RP_PASS_FULL, dry_run);
    int rc = rp_once_start(o, password, project, dry_run);
    if (rc == 0) event_base_dispatch(o->base);
    bool ran = rc == 0;
    /* Stopping settles what the feed has left (as dropped), for its count;
     * the report outlives the parts. */
    rp_once_stop(o);
    if (ran) {
        if (rp_amqp_pass_feed_finish(o->feed, &o->req.report) != RP_OK)
            o->req.status = RP_ERR_NOMEM;
        rc = (o->req.status == RP_OK && o->req.report.ok) ? 0 : 1;
        if (o->req.status != RP_OK)
            RP_ERROR("the pass stopped early", "status", rp_status_string(o->req.status), NULL);
        rp_report_log(&o->req.report, "once", o->req.duration_ms);
        if (rp_report_output(stdout, &o->req.report, json, o->req.started_at,
                             o->req.duration_ms) != 0)
            rc = 1;
    }
    rp_amqp_pass_feed_free(o->feed);
    rp_pass_request_cleanup(&o->req);
    free(o);
    return rc;
}

/* ---- reaperd --doctor ---------------------------------------------------------- */

typedef struct rp_doctor_cli_run {
    struct event_base *base;
    const rp_config *cfg;
    const char *password;
    rp_mgmt_bridge *bridge;
    const char *mgmt_why;
    rp_doctor_probes probes;
} rp_doctor_cli_run;

static void rp_doctor_cli_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_doctor_cli_run *r = job;
    rp_doctor_probe_all(r->cfg, r->password, r->bridge, r->mgmt_why, &r->probes);
}

static void rp_doctor_cli_done(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    event_base_loopbreak(((rp_doctor_cli_run *)job)->base);
}

int rp_doctor_cli(const rp_config *cfg, const char *password, bool json) {
    signal(SIGPIPE, SIG_IGN);
    rp_doctor_cli_run *r = calloc(1, sizeof *r);
    if (r == NULL || evthread_use_pthreads() != 0 || (r->base = event_base_new()) == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        free(r);
        return 1;
    }
    r->cfg = cfg;
    r->password = password;
    /* The management API's client on this loop, for the probe thread
     * (none: the probe says why). */
    rp_broker_http_keep keep;
    if (rp_broker_http_bridge_with(r->base, cfg, password, RP_DOCTOR_TIMEOUT_MS, &keep,
                                   &r->bridge, &r->mgmt_why) != RP_OK)
        r->bridge = NULL;
    int rc = 1;
    rp_worker *w = rp_worker_new(r->base, "doctor", NULL, NULL, 0);
    if (w == NULL || rp_worker_submit(w, rp_doctor_cli_work, rp_doctor_cli_done, r) != RP_OK) {
        RP_ERROR("cannot start the probe thread", NULL);
        if (w) rp_worker_free(w);
        goto out;
    }
    event_base_loop(r->base, EVLOOP_NO_EXIT_ON_EMPTY);
    if (r->bridge) rp_mgmt_bridge_close(r->bridge);
    rp_worker_free(w);

    rc = rp_doctor_output(stdout, &r->probes.seen.facts, json);
out:
    rp_mgmt_bridge_free(r->bridge);
    event_base_free(r->base);
    free(r);
    return rc;
}
