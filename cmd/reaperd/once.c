/*
 * reaperd --once: the daemon's own parts, run until one pass is done. The
 * pass, its store thread and SIGINT/SIGTERM are app/rp_once_pass.h's; this
 * file fills its ports: the pass runner (ports.h), the management API (the
 * bridge, on this loop) and the events feed's session
 * (adapters/rabbitmq/rp_amqp_pass_feed.h: publish only, connects with the
 * first committed event, flushed at the end of the pass; what it could not
 * publish is a note, never exit 1), and keeps the stop order.
 */
#include "once.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "ports.h"
#include "rp_amqp_pass_feed.h"
#include "rp_log.h"
#include "rp_mgmt_bridge.h"
#include "rp_observe_vhost_taps.h"
#include "rp_once_pass.h"
#include "version.h"

/* How long the end of the pass waits for the feed's confirms (and its one
 * retry) before it reports the rest as not published. */
#define RP_ONCE_FEED_FLUSH_MS 10000

typedef struct rp_once {
    struct event_base *base;
    const rp_config *cfg;
    rp_once_pass *pass;
    rp_pass_runner runner;
    rp_mgmt_bridge *mgmt;
    rp_broker_http_keep keep;
    rp_amqp_pass_feed *feed; /* NULL: none (a dry run, or broker.url unusable) */
    rp_metrics metrics;
} rp_once;

/* Loop: the pass is done; the feed's confirms are waited for. */
static void rp_once_flush(void *arg) {
    rp_amqp_pass_feed_flush(((rp_once *)arg)->feed, RP_ONCE_FEED_FLUSH_MS);
}

/* Makes the parts and submits the pass. Returns 0, or the exit code (what
 * was made is taken apart by rp_once_stop). */
static int rp_once_start(rp_once *o, const char *password, const char *project, bool dry_run) {
    const rp_config *cfg = o->cfg;
    if (rp_once_pass_signals(o->pass) != RP_OK) return 1;
    /* The broker half over the management API, on this loop for the store
     * thread through the bridge, and the store's runner over it. */
    const char *herr = NULL;
    if (rp_broker_http_bridge(o->base, cfg, password, &o->keep, &o->mgmt, &herr) != RP_OK ||
        rp_pass_runner_open(&o->runner, cfg, o->mgmt, &o->keep, true, password) != RP_OK) {
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
                                       .post = rp_once_pass_post,
                                       .post_ctx = o->pass,
                                       .on_flushed = rp_once_pass_end,
                                       .flushed_arg = o->pass};
        rp_publisher_port feed;
        if ((o->feed = rp_amqp_pass_feed_new(&fp, &ferr)) != NULL) {
            rp_amqp_pass_feed_port(o->feed, &feed);
            rp_pass_runner_set_publisher(&o->runner, &feed);
        } else
            RP_WARN("the events feed is off for this pass", "key", "broker.url", "reason", ferr,
                    NULL);
    }
    rp_pass_run_port run;
    rp_pass_runner_port(&o->runner, &run);
    return rp_once_pass_start(o->pass, &run, project, o->feed ? rp_once_flush : NULL, o) == RP_OK
               ? 0
               : 1;
}

/* The stop order: the bridge closed (no call waits on a loop that no
 * longer turns), the store thread joined, then the session (what it did not
 * confirm is settled as dropped), the rest. */
static void rp_once_stop(rp_once *o) {
    if (o->mgmt) rp_mgmt_bridge_close(o->mgmt);
    rp_once_pass_join(o->pass);
    rp_amqp_pass_feed_close(o->feed);
    rp_pass_runner_cleanup(&o->runner);
    rp_mgmt_bridge_free(o->mgmt);
    event_base_free(o->base);
}

int rp_once_run(const rp_config *cfg, const char *password, const char *project, bool dry_run,
                bool json) {
    signal(SIGPIPE, SIG_IGN);
    rp_once *o = calloc(1, sizeof *o);
    if (o == NULL || evthread_use_pthreads() != 0 || (o->base = event_base_new()) == NULL ||
        (o->pass = rp_once_pass_new(o->base, dry_run)) == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        if (o && o->base) event_base_free(o->base);
        free(o);
        return 1;
    }
    o->cfg = cfg;
    rp_metrics_init(&o->metrics, REAPER_VERSION, REAPER_GIT_REV);
    /* The feed counts the pass's parks per vhost: the watched ones have
     * their slots, so none is taken for one without. */
    rp_observe_vhosts_register(&o->metrics, cfg);
    int rc = rp_once_start(o, password, project, dry_run);
    if (rc == 0) event_base_dispatch(o->base);
    bool ran = rc == 0;
    /* Stopping settles what the feed has left (as dropped), for its count;
     * the report outlives the parts. */
    rp_once_stop(o);
    if (ran)
        rc = rp_once_pass_output(
            o->pass, rp_amqp_pass_feed_finish(o->feed, rp_once_pass_report(o->pass)) == RP_OK,
            stdout, json);
    rp_amqp_pass_feed_free(o->feed);
    rp_once_pass_free(o->pass);
    free(o);
    return rc;
}

/* ---- reaperd --doctor ---------------------------------------------------------- */

typedef struct rp_doctor_cli_run {
    const rp_config *cfg;
    const char *password;
    rp_mgmt_bridge *bridge;
    const char *mgmt_why;
    rp_doctor_probes probes;
} rp_doctor_cli_run;

static void rp_doctor_cli_probe(void *arg) {
    rp_doctor_cli_run *r = arg;
    rp_doctor_probe_all(r->cfg, r->password, r->bridge, r->mgmt_why, &r->probes);
}

static void rp_doctor_cli_close(void *arg) {
    rp_doctor_cli_run *r = arg;
    if (r->bridge) rp_mgmt_bridge_close(r->bridge);
}

int rp_doctor_cli(const rp_config *cfg, const char *password, bool json) {
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = NULL;
    rp_doctor_cli_run *r = calloc(1, sizeof *r);
    if (r == NULL || evthread_use_pthreads() != 0 || (base = event_base_new()) == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        free(r);
        return 1;
    }
    *r = (rp_doctor_cli_run){.cfg = cfg, .password = password};
    /* The management API's client on this loop, for the probe thread
     * (none: the probe says why). */
    rp_broker_http_keep keep;
    if (rp_broker_http_bridge_with(base, cfg, password, RP_DOCTOR_TIMEOUT_MS, &keep, &r->bridge,
                                   &r->mgmt_why) != RP_OK)
        r->bridge = NULL;
    int rc = 1;
    if (rp_doctor_probe_on_thread(base, rp_doctor_cli_probe, rp_doctor_cli_close, r) == RP_OK)
        rc = rp_doctor_output(stdout, &r->probes.seen.facts, json);
    rp_mgmt_bridge_free(r->bridge);
    event_base_free(base);
    free(r);
    return rc;
}
