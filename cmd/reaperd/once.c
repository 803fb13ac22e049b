/*
 * reaperd --once: the daemon's own parts, run until one pass is done. The
 * loop on this thread carries the management API (the bridge) and the
 * events feed's session; the pass runs on the store thread, as in the
 * daemon. SIGINT/SIGTERM end the pass between rows, with what was done
 * reported.
 *
 * The feed's session is publish-only (it consumes nothing: the control
 * queue stays the daemons') and starts with the first committed event (a
 * pass that commits nothing never connects). At the end of the pass it
 * waits for the confirms, at most RP_ONCE_FEED_FLUSH_MS, and gives up once
 * a connection attempt made after a failure failed as well; what was not
 * confirmed then is a note and a warning, never exit 1 (the ledger has it).
 */
#include "once.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_runner.h"
#include "report_text.h"
#include "rp_amqp_feed.h"
#include "rp_amqp_session.h"
#include "rp_log.h"
#include "rp_mgmt_bridge.h"
#include "rp_proto.h"
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
    rp_amqp_session *session;
    rp_amqp_feed *feed;
    rp_publisher_port feed_port; /* the feed's, wrapped to count events */
    rp_metrics metrics;
    struct event *sig_int, *sig_term, *flush_ev;
    bool stop; /* SIGINT/SIGTERM (read by the store thread: atomic) */
    bool feed_on, started, flushing;
    /* What came of the feed (loop thread, but events: store thread, atomic). */
    size_t events, seen, settled, confirmed, retried;
    int64_t first_failed_seq, last_failed_seq;
    bool failed_once;
    char why[256]; /* the first failure, without secrets */
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

static void rp_once_why(rp_once *o, const char *why) {
    if (o->why[0] == '\0') snprintf(o->why, sizeof o->why, "%s", why);
}

/* Loop: the pass is done and every event it gave the feed is settled, or
 * the feed gave up. */
static void rp_once_maybe_end(rp_once *o) {
    if (o->flushing && o->settled == __atomic_load_n(&o->events, __ATOMIC_ACQUIRE))
        event_base_loopbreak(o->base);
}

/* ---- the feed's hooks (loop thread) ---------------------------------------- */

static rp_status rp_once_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    return rp_worker_post(((rp_once *)ctx)->store, fn, job);
}

static rp_amqp_publisher *rp_once_publisher(void *ctx) {
    return rp_amqp_session_publisher(((rp_once *)ctx)->session);
}

/* An event reached the loop: the first one starts the session. One that
 * arrives while a failed connection is being made again is sent again. */
static void rp_once_on_event(void *ctx) {
    rp_once *o = ctx;
    o->seen++;
    if (!o->started) {
        o->started = true;
        if (rp_amqp_session_start(o->session) != RP_OK)
            rp_once_why(o, "cannot start the broker connection");
    } else if (o->failed_once && !rp_amqp_session_up(o->session)) {
        o->retried++;
    }
}

static void rp_once_on_settled(void *ctx, int64_t seq, rp_publish_outcome outcome) {
    rp_once *o = ctx;
    o->settled++;
    if (outcome == RP_PUBLISH_CONFIRMED) {
        o->confirmed++;
    } else {
        if (outcome == RP_PUBLISH_NACKED) rp_once_why(o, "the broker nacked an event");
        if (o->first_failed_seq == 0 || seq < o->first_failed_seq) o->first_failed_seq = seq;
        if (seq > o->last_failed_seq) o->last_failed_seq = seq;
    }
    rp_once_maybe_end(o);
}

/* The session went down: what was not confirmed goes out again on the next
 * connection. During the flush, a connection attempt that fails ends it. */
static void rp_once_on_down(void *arg, bool was_up, const char *why) {
    rp_once *o = arg;
    rp_once_why(o, why);
    o->failed_once = true;
    if (was_up) o->retried += o->seen - o->settled;
    if (o->flushing && !was_up) event_base_loopbreak(o->base);
}

static void rp_once_flush_timeout(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    event_base_loopbreak(((rp_once *)arg)->base);
}

/* Store thread: the port the pass publishes through, counting what it
 * accepted. */
static rp_status rp_once_feed_publish(void *self, const rp_ledger_event *ev) {
    rp_once *o = self;
    rp_publisher_port inner;
    rp_amqp_feed_port(o->feed, &inner);
    rp_status st = inner.publish(inner.self, ev);
    if (st == RP_OK) __atomic_add_fetch(&o->events, 1, __ATOMIC_ACQ_REL);
    return st;
}

/* The publish-only session and the feed over it. False when broker.url
 * does not parse (*err says why): the pass runs without a feed. */
static bool rp_once_feed_new(rp_once *o, const char *password, const char **err) {
    const rp_config *cfg = o->cfg;
    rp_amqp_params ap = {
        .url = cfg->broker.url,
        .password = password,
        .heartbeat_seconds = 10,
        .connect_timeout_ms = 5000,
        .connection_name = "reaperd --once",
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
    rp_amqp_session_params sp = {.amqp = &ap,
                                 .events_exchange = cfg->broker.events_exchange,
                                 .body_limit = 4096,
                                 .quiet = true};
    rp_amqp_session_hooks sh = {.on_down = rp_once_on_down, .arg = o};
    o->session = rp_amqp_session_new(o->base, &sp, &sh, err);
    if (o->session == NULL) return false;
    rp_amqp_feed_hooks fh = {.post = rp_once_post,
                             .publisher = rp_once_publisher,
                             .on_loop = rp_once_on_event,
                             .on_settled = rp_once_on_settled,
                             .ctx = o};
    rp_encoding enc =
        cfg->broker.events_format == RP_EVENTS_FORMAT_JSON ? RP_ENC_JSON : RP_ENC_MSGPACK;
    o->feed = rp_amqp_feed_new(cfg->broker.events_exchange, enc, &o->metrics, &fh);
    if (o->feed == NULL) {
        *err = "out of memory";
        return false;
    }
    o->feed_port = (rp_publisher_port){.self = o, .publish = rp_once_feed_publish};
    o->feed_on = true;
    return true;
}

/* After the pass: says in the report (a note) and the log (a warning) how
 * many committed events the exchange did not get. Never changes the exit
 * code: the ledger has every one of them. */
static rp_status rp_once_feed_finish(rp_once *o, rp_report *report) {
    const rp_config *cfg = o->cfg;
    size_t events = __atomic_load_n(&o->events, __ATOMIC_ACQUIRE);
    size_t failed = events - o->confirmed;
    char n[24], ok[24], again[24];
    snprintf(n, sizeof n, "%zu", events);
    snprintf(ok, sizeof ok, "%zu", o->confirmed);
    snprintf(again, sizeof again, "%zu", o->retried);
    if (failed == 0) {
        if (o->retried > 0)
            RP_INFO("ledger events published to the events exchange", "exchange",
                    cfg->broker.events_exchange, "events", n, "confirmed", ok, "retried", again,
                    "first_failure", o->why, NULL);
        else if (events > 0)
            RP_INFO("ledger events published to the events exchange", "exchange",
                    cfg->broker.events_exchange, "events", n, "confirmed", ok, "retried", again,
                    NULL);
        return RP_OK;
    }
    rp_once_why(o, "no confirm from the broker in time");
    char nfailed[24], range[64], note[640];
    snprintf(nfailed, sizeof nfailed, "%zu", failed);
    snprintf(range, sizeof range, "%" PRId64 "..%" PRId64, o->first_failed_seq,
             o->last_failed_seq);
    RP_WARN("ledger events committed but not published to the events exchange (the ledger "
            "has them)",
            "exchange", cfg->broker.events_exchange, "events", n, "not_published", nfailed,
            "seq", range, "reason", o->why, NULL);
    snprintf(note, sizeof note,
             "events feed: %zu of %zu committed ledger events were not published to the events "
             "exchange %s (%s); the ledger has them (seq %s)",
             failed, events, cfg->broker.events_exchange, o->why, range);
    return rp_report_add_note(report, note);
}

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
    o->flushing = true;
    if (!o->feed_on || !o->started) {
        event_base_loopbreak(o->base);
        return;
    }
    struct timeval tv = {RP_ONCE_FEED_FLUSH_MS / 1000, (RP_ONCE_FEED_FLUSH_MS % 1000) * 1000};
    if (o->flush_ev == NULL || evtimer_add(o->flush_ev, &tv) != 0) {
        event_base_loopbreak(o->base);
        return;
    }
    rp_once_maybe_end(o);
}

/* Makes the parts and submits the pass. Returns 0, or the exit code (what
 * was made is taken apart by rp_once_stop). */
static int rp_once_start(rp_once *o, const char *password, const char *project, bool dry_run) {
    const rp_config *cfg = o->cfg;
    o->sig_int = evsignal_new(o->base, SIGINT, rp_once_on_signal, o);
    o->sig_term = evsignal_new(o->base, SIGTERM, rp_once_on_signal, o);
    o->flush_ev = evtimer_new(o->base, rp_once_flush_timeout, o);
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
    rp_mgmt_http_params hp;
    rp_mgmt_http *http = NULL;
    const char *herr = NULL;
    if (rp_broker_http_params(cfg, password, &o->keep, &hp) != RP_OK ||
        (http = rp_mgmt_http_new(o->base, &hp, &herr)) == NULL ||
        (o->mgmt = rp_mgmt_bridge_new(o->base, http)) == NULL ||
        rp_pass_runner_attach_broker(&o->runner, o->mgmt, &o->keep) != RP_OK ||
        rp_pass_runner_attach_peek(&o->runner, password) != RP_OK) {
        if (http != NULL && o->mgmt == NULL) rp_mgmt_http_free(http);
        RP_ERROR("cannot use the management API", "key", "broker.management_url", "reason",
                 herr ? herr : "out of memory", NULL);
        return 1;
    }
    /* The events feed, for what the pass commits. A dry run commits
     * nothing and publishes nothing: it gets no publisher at all. */
    if (!dry_run) {
        const char *ferr = NULL;
        if (rp_once_feed_new(o, password, &ferr))
            rp_pass_runner_set_publisher(&o->runner, &o->feed_port);
        else
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
    rp_amqp_session_free(o->session);
    o->session = NULL;
    rp_amqp_feed_free(o->feed);
    o->feed = NULL;
    rp_pass_runner_cleanup(&o->runner);
    rp_mgmt_bridge_free(o->mgmt);
    if (o->sig_int) event_free(o->sig_int);
    if (o->sig_term) event_free(o->sig_term);
    if (o->flush_ev) event_free(o->flush_ev);
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
        if (o->feed_on && o->started && rp_once_feed_finish(o, &o->req.report) != RP_OK)
            o->req.status = RP_ERR_NOMEM;
        rc = (o->req.status == RP_OK && o->req.report.ok) ? 0 : 1;
        if (o->req.status != RP_OK)
            RP_ERROR("the pass stopped early", "status", rp_status_string(o->req.status), NULL);
        rp_report_log(&o->req.report, "once", o->req.duration_ms);
        if (json) {
            char *text = NULL;
            if (rp_proto_report_json_text(&o->req.report, false, &text) != RP_OK) {
                RP_ERROR("cannot encode the report", NULL);
                rc = 1;
            } else {
                fputs(text, stdout);
                fputc('\n', stdout);
                free(text);
            }
        } else {
            rp_report_print(stdout, &o->req.report, o->req.started_at, o->req.duration_ms);
        }
        if (fflush(stdout) != 0) rc = 1;
    }
    rp_pass_request_cleanup(&o->req);
    free(o);
    return rc;
}
