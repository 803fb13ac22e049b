/*
 * The loop, read top to bottom: signals, the broker connection (its socket
 * and heartbeat timer), the sweep and deadline timers, and the store
 * thread's posts are all events on one event_base. Nothing on this thread
 * waits for the network: the AMQP login and declarations run on a connect
 * thread, PostgreSQL and every pass on the store thread.
 *
 * Passes. One pass runs at a time, on the store thread:
 *  - the sweep (a full pass) every reap.interval_seconds while reap.enabled;
 *  - the lease reap (RP_PASS_LEASES) on the deadline timer, which after
 *    every pass is armed for the earliest lease_expires_at + grace still in
 *    the table (at most interval_seconds away), so a dead worker's job is
 *    back about when its lease runs out. It runs even with reap.enabled
 *    false: it is crash recovery.
 * A timer that fires while a pass runs leaves a wish that the end of the
 * pass fulfils; a sweep wish covers a lease wish.
 */
#include "daemon.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "daemon_internal.h"
#include "replay_port.h"
#include "rp_amqp_events.h"
#include "rp_pg_listen.h"
#include "rp_replays.h"
#include "rp_clock.h"
#include "report_text.h"
#include "rp_log.h"
#include "version.h"

#define RP_STORE_CHECK_MS 2000
#define RP_HEARTBEAT_SECONDS 10
/* The largest delivery body kept on the session's connection: a control
 * request is at most 64 KiB (proto/SCHEMA.md; a longer one is kept only to
 * say it is too large, truncated at the limit), broker events are small.
 * The tap has a connection of its own (app/rp_tap.h), which keeps a dead letter
 * whole up to what the store keeps. */
#define RP_DELIVERY_BODY_LIMIT 65536
#define RP_CONTROL_PREFETCH 16
/* Replays publish on a confirm-mode channel of their own: a stored message
 * the broker refuses with a channel error (406) closes only this channel,
 * never the control, events or tap channel (app/rp_replays.h). */
#define RP_REPLAY_CHANNEL 4

/* ---- the store thread ---------------------------------------------------- */

typedef struct rp_store_news {
    rp_daemon *d;
    bool up;
    char detail[300];
} rp_store_news;

static void rp_store_news_on_loop(void *job, bool cancelled) {
    rp_store_news *n = job;
    if (!cancelled) {
        n->d->store_up = n->up;
        if (n->up) rp_metrics_connected(&n->d->metrics, RP_METRICS_STORE);
        if (n->up)
            RP_INFO("store connected", "store", n->detail, NULL);
        else
            RP_WARN("store unreachable; retrying", "reason", n->detail, NULL);
    }
    free(n);
}

/* Tells the loop when the store's state changed (and every 30th failed
 * check, so a long outage stays visible in the log). Store thread. */
static void rp_store_tell(rp_worker *w, rp_daemon *d, bool up, const char *err) {
    bool changed = up != d->store_up_seen || d->store_checks == 0;
    d->store_failures = up ? 0 : d->store_failures + 1;
    d->store_checks++;
    if (!changed && (up || d->store_failures % 30 != 0)) return;
    d->store_up_seen = up;
    rp_store_news *n = calloc(1, sizeof *n);
    if (n == NULL) return;
    n->d = d;
    n->up = up;
    if (up)
        snprintf(n->detail, sizeof n->detail, "%s (server %d)", rp_pg_conn_peer(d->runner.conn),
                 rp_pg_conn_server_version(d->runner.conn));
    else
        snprintf(n->detail, sizeof n->detail, "%s", err);
    if (rp_worker_post(w, rp_store_news_on_loop, n) != RP_OK) free(n);
}

/* Runs on the store thread every RP_STORE_CHECK_MS while idle: connects, or
 * checks the connection. */
static void rp_store_idle(rp_worker *w, void *ctx) {
    rp_daemon *d = ctx;
    char err[256] = "";
    rp_pg_conn *c = d->runner.conn;
    rp_status st = rp_pg_conn_is_up(c) ? rp_pg_conn_ping(c, err, sizeof err)
                                       : rp_pg_conn_ensure(c, err, sizeof err);
    rp_store_tell(w, d, st == RP_OK, err);
}

/* ---- passes ---------------------------------------------------------------- */

typedef struct rp_pass_job {
    rp_daemon *d;
    rp_pass_request req;
    const char *scope_name;
} rp_pass_job;

static void rp_pass_progress(void *arg, const char *phase, size_t done) {
    char n[24];
    snprintf(n, sizeof n, "%zu", done);
    RP_INFO("pass progress", "phase", phase, "rows", n, "scope", (const char *)arg, NULL);
}

/* Store thread: asked between rows; set by the loop on SIGTERM/SIGINT. */
static bool rp_pass_should_stop(void *arg) {
    return __atomic_load_n(&((rp_daemon *)arg)->stopping, __ATOMIC_ACQUIRE);
}

/* Store thread: the pass itself. */
static void rp_pass_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_pass_job *job = arg;
    rp_pass_runner_run(&d->runner, &job->req);
    rp_observe_pass_store(d, &job->req);
    rp_store_tell(d->store, d, rp_pg_conn_is_up(d->runner.conn), "lost during a pass");
}

static void rp_submit_pass(rp_daemon *d, rp_pass_scope scope);

static void rp_deadline_at(rp_daemon *d, int64_t wait_ms) {
    if (wait_ms < 0) wait_ms = 0;
    struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
    evtimer_add(d->deadline_ev, &tv);
    d->deadline_fire_ms = rp_clock_wall_ms() + wait_ms;
}

static void rp_arm_deadline(rp_daemon *d, const rp_pass_request *req) {
    int64_t interval_ms = d->cfg->reap.interval_seconds * 1000;
    int64_t wait_ms = interval_ms;
    d->clock_offset_ms = req->clock_offset_ms;
    if (req->deadline_known) {
        /* The deadline is on the database's clock, as the judgement is:
         * move it to ours with the offset measured at the pass's start.
         * Strictly past the grace: one millisecond after it is the first
         * moment the row counts as expired. */
        int64_t until = req->deadline_at + req->clock_offset_ms + 1 - rp_clock_wall_ms();
        if (until < wait_ms) wait_ms = until < 0 ? 0 : until;
    }
    /* A lease set after this pass read its deadline may have armed the
     * timer earlier meanwhile (rp_on_lease_deadline): keep that one. */
    int64_t now = rp_clock_wall_ms();
    if (d->deadline_fire_ms != INT64_MAX && d->deadline_fire_ms > now &&
        d->deadline_fire_ms - now < wait_ms)
        wait_ms = d->deadline_fire_ms - now;
    rp_deadline_at(d, wait_ms);
}

/* Listener hook (loop thread): a lease was set expiring at at_ms on the
 * database's clock. The timer moves only when this is earlier than the
 * one armed, so a thousand claims a second cost a comparison each. */
static void rp_on_lease_deadline(void *arg, int64_t at_ms) {
    rp_daemon *d = arg;
    int64_t grace_ms = d->cfg->reap.lease_grace_seconds * 1000;
    /* Strictly past the grace, on this host's clock (rp_arm_deadline). */
    int64_t fire = at_ms + grace_ms + d->clock_offset_ms + 1;
    if (fire >= d->deadline_fire_ms) return;
    d->deadline_rearms++;
    char in[24];
    snprintf(in, sizeof in, "%" PRId64, fire - rp_clock_wall_ms());
    RP_DEBUG("lease deadline brought forward", "in_ms", in, NULL);
    rp_deadline_at(d, fire - rp_clock_wall_ms());
}

/* Listener hook: listening (again). What was set while it was down was
 * not heard: the lease reap reads the earliest deadline from the table. */
static void rp_on_lease_listen_up(void *arg) {
    rp_daemon *d = arg;
    rp_submit_pass(d, RP_PASS_LEASES);
}

/* Loop thread: log the outcome, arm the deadline, run what was wished. */
static void rp_pass_done(void *arg, bool cancelled) {
    rp_pass_job *job = arg;
    rp_daemon *d = job->d;
    d->pass_running = false;
    if (!cancelled) {
        if (job->req.status != RP_OK)
            RP_ERROR("pass stopped early", "scope", job->scope_name, "status",
                     rp_status_string(job->req.status), NULL);
        rp_report_log(&job->req.report, job->scope_name, job->req.duration_ms);
        rp_observe_pass_done(d, &job->req);
        d->last_pass_at = rp_clock_wall_ms();
        if (job->req.open_sightings >= 0) d->open_sightings = job->req.open_sightings;
        rp_arm_deadline(d, &job->req);
        /* After a sweep the tap's bindings are looked at again, on the
         * tap's own binding thread like every other reconcile, so two
         * reconciles never overlap (one reading the broker before the
         * other's change could undo it). */
        if (job->req.scope == RP_PASS_FULL && !job->req.dry_run && job->req.project == NULL)
            rp_tap_bind_soon(d->tap);
        if (d->want_sweep) rp_submit_pass(d, RP_PASS_FULL);
        else if (d->want_leases) rp_submit_pass(d, RP_PASS_LEASES);
    }
    rp_pass_request_cleanup(&job->req);
    free(job);
}

static void rp_submit_pass(rp_daemon *d, rp_pass_scope scope) {
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) return;
    if (d->pass_running) {
        if (scope == RP_PASS_FULL) d->want_sweep = true;
        else d->want_leases = true;
        return;
    }
    rp_pass_job *job = calloc(1, sizeof *job);
    if (job == NULL) {
        RP_ERROR("out of memory: pass skipped", NULL);
        return;
    }
    job->d = d;
    job->scope_name = scope == RP_PASS_FULL ? "sweep" : "lease reap";
    rp_pass_request_init(&job->req, scope, false);
    job->req.progress = rp_pass_progress;
    job->req.progress_arg = (void *)job->scope_name;
    job->req.should_stop = rp_pass_should_stop;
    job->req.stop_arg = d;
    if (rp_worker_submit(d->store, rp_pass_work, rp_pass_done, job) != RP_OK) {
        rp_pass_request_cleanup(&job->req);
        free(job);
        RP_ERROR("the store thread refused a pass", NULL);
        return;
    }
    d->pass_running = true;
    if (scope == RP_PASS_FULL) d->want_sweep = false;
    d->want_leases = false; /* every pass reaps leases */
}

/* A store job counted while in flight, so that a stop waits for it. */
typedef struct rp_counted_job {
    rp_daemon *d;
    rp_work_fn fn;
    rp_done_fn done;
    void *job;
} rp_counted_job;

static void rp_counted_work(void *ctx, void *arg) {
    rp_counted_job *cj = arg;
    cj->fn(ctx, cj->job);
}

static void rp_counted_done(void *arg, bool cancelled) {
    rp_counted_job *cj = arg;
    cj->d->store_jobs--;
    cj->done(cj->job, cancelled);
    free(cj);
}

rp_status rp_daemon_store_job(rp_daemon *d, rp_work_fn fn, rp_done_fn done, void *job) {
    if (d->store == NULL || __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) return RP_ERR_CLOSED;
    rp_counted_job *cj = malloc(sizeof *cj);
    if (cj == NULL) return RP_ERR_NOMEM;
    *cj = (rp_counted_job){d, fn, done, job};
    rp_status st = rp_worker_submit(d->store, rp_counted_work, rp_counted_done, cj);
    if (st != RP_OK) {
        free(cj);
        return st;
    }
    d->store_jobs++;
    return RP_OK;
}

static void rp_on_sweep(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_submit_pass(arg, RP_PASS_FULL);
}

static void rp_on_deadline(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_daemon *d = arg;
    d->deadline_fire_ms = INT64_MAX; /* armed again when the pass is done */
    rp_submit_pass(d, RP_PASS_LEASES);
}

/* ---- the broker session's wiring ------------------------------------------ */

/* The AMQP parameters of the session and the tap, from the configuration
 * reaperd started with (broker.* needs a restart). */
static void rp_daemon_amqp_params(const rp_config *cfg, const char *password, rp_amqp_params *ap) {
    *ap = (rp_amqp_params){
        .url = cfg->broker.url,
        .password = password,
        .heartbeat_seconds = RP_HEARTBEAT_SECONDS,
        .connect_timeout_ms = 5000,
        .connection_name = "reaperd",
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
}

/* Session hooks (loop thread). Stopping: no new delivery is taken. */
static bool rp_session_accepting(void *arg) {
    return !__atomic_load_n(&((rp_daemon *)arg)->stopping, __ATOMIC_ACQUIRE);
}

static void rp_session_on_up(void *arg, unsigned generation) {
    rp_daemon *d = arg;
    d->broker_up = true;
    d->broker_generation = generation;
    rp_metrics_connected(&d->metrics, RP_METRICS_BROKER);
}

static void rp_session_on_ready(void *arg) {
    rp_daemon *d = arg;
    if (d->events) rp_events_on_up(d->events); /* events are not replayed: list again */
    rp_tap_bind_soon(d->tap);
}

static void rp_session_on_down(void *arg, bool was_up, const char *why) {
    rp_daemon *d = arg;
    RP_UNUSED(why);
    if (was_up && d->events) rp_events_on_down(d->events);
    d->broker_up = false;
}

/* The control queue's deliveries. */
static void rp_on_control_delivery(void *arg, const rp_amqp_message *msg) {
    rp_controller_on_message(((rp_daemon *)arg)->control, msg);
}

/* A delivery on the event queue that amq.rabbitmq.event did not route
 * (published straight into the queue through the default exchange, say):
 * not acted on, not even for the event lag; counted, and said once. The
 * event consumer is no-ack, so there is nothing to settle. */
static void rp_event_refused(rp_daemon *d, const rp_amqp_message *msg) {
    uint64_t n = rp_metrics_event_refused(&d->metrics);
    char ex[64];
    snprintf(ex, sizeof ex, "%.*s", (int)(msg->exchange.len < 48 ? msg->exchange.len : 48),
             msg->exchange.len ? (const char *)msg->exchange.bytes : "");
    if (n == 1)
        RP_WARN("a delivery on the broker-event queue did not come from amq.rabbitmq.event "
                "(published straight into the queue?): refused and not acted on; later ones "
                "are only counted (reaper_broker_events_refused_total)",
                "exchange", ex, NULL);
    else
        RP_DEBUG("broker event refused: not from amq.rabbitmq.event", "exchange", ex, NULL);
}

/* The broker-event queue's deliveries. */
static void rp_on_event_delivery(void *arg, const rp_amqp_message *msg) {
    rp_daemon *d = arg;
    if (!rp_broker_event_from_broker(msg->exchange)) {
        rp_event_refused(d, msg);
        return;
    }
    rp_observe_event(d, msg);
    rp_broker_event ev;
    const char *why = NULL;
    if (!rp_broker_event_parse(msg->routing_key, &msg->props, &ev, &why)) {
        RP_DEBUG("broker event ignored", "routing_key", ev.routing_key, "reason", why, NULL);
        return;
    }
    if (d->events) rp_events_on_event(d->events, &ev);
}

void rp_broker_ack(rp_daemon *d, unsigned generation, uint64_t tag) {
    (void)rp_amqp_session_ack(d->session, generation, tag);
}

/* The control's and the replays' hooks: a store job, an ack. */
static rp_status rp_daemon_store_job_port(void *self, rp_work_fn fn, rp_done_fn done,
                                          void *job) {
    return rp_daemon_store_job(self, fn, done, job);
}

static void rp_daemon_ack_port(void *self, unsigned generation, uint64_t tag) {
    rp_broker_ack(self, generation, tag);
}

/* The replays (app/rp_replays.h) over their ports (replay_port.h), and the
 * control queue's use cases (control.h). */
static rp_status rp_daemon_control_start(rp_daemon *d) {
    d->replay_wiring = rp_replay_wiring_new(&d->runner, &d->replay_publisher, &d->broker_up,
                                            d->boot_cfg->broker.url);
    if (d->replay_wiring == NULL) return RP_ERR_NOMEM;
    rp_replays_deps rd = {.store_job = rp_daemon_store_job_port, .store_job_self = d};
    rp_replay_wiring_ports(d->replay_wiring, &rd.store, &rd.publish);
    if ((d->replays = rp_replays_new(d->base, &rd)) == NULL) return RP_ERR_NOMEM;
    rp_control_deps cd = {
        .self = d,
        .store_job = rp_daemon_store_job_port,
        .ack = rp_daemon_ack_port,
        .broker_generation = &d->broker_generation,
        .publisher = &d->publisher,
        .cfg = &d->cfg,
        .runner = &d->runner,
        .metrics = &d->metrics,
        .broker_up = &d->broker_up,
        .store_up = &d->store_up,
        .last_pass_at = &d->last_pass_at,
        .open_sightings = &d->open_sightings,
        .replays = d->replays,
    };
    return (d->control = rp_controller_new(&cd)) == NULL ? RP_ERR_NOMEM : RP_OK;
}

/* Feed hooks: the store thread posts to the loop through the worker. */
static rp_status rp_feed_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    return rp_worker_post(((rp_daemon *)ctx)->store, fn, job);
}

static rp_amqp_publisher *rp_feed_publisher(void *ctx) { return ((rp_daemon *)ctx)->publisher; }

static void rp_feed_on_loop(void *ctx) {
    rp_observe_gauges_soon(ctx); /* a gate or sighting may have changed */
}

void rp_feed_port(rp_daemon *d, rp_publisher_port *out) { rp_amqp_feed_port(d->feed, out); }

/* The session: its consumers' handlers, the tap's connection with the same
 * parameters, then connecting. */
static rp_status rp_daemon_broker_start(rp_daemon *d, const char *password) {
    const rp_config *cfg = d->cfg;
    rp_amqp_params ap;
    rp_daemon_amqp_params(cfg, password, &ap);
    rp_amqp_session_params sp = {
        .amqp = &ap,
        .events_exchange = cfg->broker.events_exchange,
        .control_queue = cfg->broker.control_queue,
        .control_prefetch = RP_CONTROL_PREFETCH,
        .replay_channel = RP_REPLAY_CHANNEL,
        .body_limit = RP_DELIVERY_BODY_LIMIT,
    };
    rp_amqp_session_hooks sh = {
        .accepting = rp_session_accepting,
        .on_up = rp_session_on_up,
        .on_ready = rp_session_on_ready,
        .on_down = rp_session_on_down,
        .arg = d,
    };
    const char *err = NULL;
    d->session = rp_amqp_session_new(d->base, &sp, &sh, &err);
    if (d->session == NULL) {
        RP_ERROR("cannot use the broker URL", "key", "broker.url", "reason", err, NULL);
        return RP_ERR_CONFIG;
    }
    d->publisher = rp_amqp_session_publisher(d->session);
    d->replay_publisher = rp_amqp_session_replay_publisher(d->session);
    if (rp_amqp_session_on(d->session, RP_AMQP_SESSION_CONTROL_TAG, rp_on_control_delivery, d) !=
            RP_OK ||
        rp_amqp_session_on(d->session, RP_AMQP_SESSION_EVENTS_TAG, rp_on_event_delivery, d) !=
            RP_OK)
        return RP_ERR_NOMEM;
    if (d->tap != NULL && rp_tap_ports_connect(d->tap_ports, d->tap, &ap) != RP_OK) {
        RP_ERROR("cannot start the tap's broker connection", NULL);
        return RP_ERR_INTERNAL;
    }
    if (rp_amqp_session_start(d->session) != RP_OK) {
        RP_ERROR("cannot start the broker connection", NULL);
        return RP_ERR_INTERNAL;
    }
    return RP_OK;
}

/* ---- the run ---------------------------------------------------------------- */

/* Events hook (loop thread): an owned queue appeared or vanished, or a
 * policy over them changed: the tap's bindings follow its dead-letter
 * exchange (coalesced with any reconcile already wanted). */
static void rp_on_owned_queue_change(void *arg, const char *vhost, const char *name, bool dlq,
                                     bool created) {
    RP_UNUSED(vhost);
    RP_UNUSED(name);
    RP_UNUSED(dlq);
    RP_UNUSED(created);
    rp_tap_bind_soon(((rp_daemon *)arg)->tap);
}

static rp_status rp_daemon_start(rp_daemon *d, const char *broker_password) {
    const rp_config *cfg = d->cfg;
    /* HTTP first: an address that cannot be bound stops reaperd before it
     * connects to anything. Signals (stop, reload) are in signals.c. */
    rp_status hst = rp_observe_start(d);
    if (hst != RP_OK) return hst;
    d->sweep_ev = event_new(d->base, -1, EV_PERSIST, rp_on_sweep, d);
    d->deadline_ev = evtimer_new(d->base, rp_on_deadline, d);
    if (!d->sweep_ev || !d->deadline_ev || rp_signals_start(d) != RP_OK) {
        RP_ERROR("cannot set up the loop's events", NULL);
        return RP_ERR_INTERNAL;
    }
    if (rp_pass_runner_init(&d->runner, cfg) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    /* Every committed ledger event (gate answers included) also goes to
     * the events exchange. */
    rp_amqp_feed_hooks fh = {.post = rp_feed_post,
                             .publisher = rp_feed_publisher,
                             .on_loop = rp_feed_on_loop,
                             .ctx = d};
    rp_encoding enc =
        cfg->broker.events_format == RP_EVENTS_FORMAT_JSON ? RP_ENC_JSON : RP_ENC_MSGPACK;
    d->feed = rp_amqp_feed_new(cfg->broker.events_exchange, enc, &d->metrics, &fh);
    if (d->feed == NULL) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    rp_publisher_port feed;
    rp_feed_port(d, &feed);
    rp_pass_runner_set_publisher(&d->runner, &feed);
    /* The broker half: the management API on this loop, for the store
     * thread through the bridge. */
    rp_mgmt_http_params hp;
    if (rp_broker_http_params(cfg, broker_password, &d->mgmt_keep, &hp) != RP_OK) {
        RP_ERROR("cannot use the broker URL", "key", "broker.url", NULL);
        return RP_ERR_CONFIG;
    }
    const char *herr = NULL;
    rp_mgmt_http *http = rp_mgmt_http_new(d->base, &hp, &herr);
    if (http == NULL) {
        RP_ERROR("cannot use the management API", "key", "broker.management_url", "reason", herr,
                 NULL);
        return RP_ERR_CONFIG;
    }
    d->mgmt = rp_mgmt_bridge_new(d->base, http);
    if (d->mgmt == NULL || rp_pass_runner_attach_broker(&d->runner, d->mgmt, &d->mgmt_keep) != RP_OK ||
        rp_pass_runner_attach_peek(&d->runner, broker_password) != RP_OK) {
        if (d->mgmt == NULL) rp_mgmt_http_free(http);
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    d->store = rp_worker_new(d->base, "store", rp_store_idle, d, RP_STORE_CHECK_MS);
    if (d->store == NULL) {
        RP_ERROR("cannot start the store thread", NULL);
        return RP_ERR_INTERNAL;
    }

    d->events_backends = (rp_runner_backends){.mgmt = d->mgmt, .keep = &d->mgmt_keep};
    rp_events_deps events_deps = {.cfg = &d->cfg, .stopping = &d->stopping,
                                  .mono_ms = rp_clock_mono_ms, .wall_ms = rp_clock_wall_ms};
    rp_runner_port_fill(&d->events_backends, &events_deps.runner);
    rp_feed_port(d, &events_deps.publisher);
    d->events = rp_events_new(d->base, &events_deps);
    if (d->events == NULL) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    rp_events_wrap_sweep_port(d->events, &d->runner.ports.broker);
    if (rp_events_add_queue_hook(d->events, rp_on_owned_queue_change, d) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    rp_tap_deps tap_deps = {
        .cfg = &d->cfg,
        .stopping = &d->stopping,
        .vhost = &d->mgmt_keep.vhost,
        .broker_generation = &d->broker_generation,
        .broker_up = &d->broker_up,
        .metrics = &d->metrics,
    };
    rp_feed_port(d, &tap_deps.feed);
    d->tap_ports = rp_tap_ports_new(d->base, &d->cfg, d->mgmt, &tap_deps);
    d->tap = d->tap_ports ? rp_tap_new(d->base, &tap_deps) : NULL;
    if (d->tap == NULL) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    if (rp_daemon_control_start(d) != RP_OK) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }
    if (rp_daemon_broker_start(d, broker_password) != RP_OK) return RP_ERR_INTERNAL;
    rp_pg_listen_hooks lh = {.on_deadline = rp_on_lease_deadline,
                             .on_up = rp_on_lease_listen_up,
                             .arg = d};
    d->deadline_fire_ms = INT64_MAX;
    d->lease_listen = rp_pg_listen_new(d->base, cfg->store.dsn, cfg->store.schema, &lh);
    if (d->lease_listen == NULL) {
        RP_ERROR("out of memory", NULL);
        return RP_ERR_NOMEM;
    }

    /* The first pass now: it connects the store and reaps what expired
     * while no reaper ran. Then the sweep on its interval. */
    rp_submit_pass(d, cfg->reap.enabled ? RP_PASS_FULL : RP_PASS_LEASES);
    if (cfg->reap.enabled) {
        struct timeval tv = {(time_t)cfg->reap.interval_seconds, 0};
        event_add(d->sweep_ev, &tv);
    }
    char interval[24];
    snprintf(interval, sizeof interval, "%" PRId64, cfg->reap.interval_seconds);
    RP_INFO("reaperd started", "version", RP_VERSION_STRING, "broker", rp_amqp_session_peer(d->session),
            "store_schema", cfg->store.schema, "sweep", cfg->reap.enabled ? "on" : "off (lease reap only)",
            "interval_seconds", interval, NULL);
    return RP_OK;
}

/* The stop order, in one place. The store thread ends the pass in flight
 * at the next row and is joined; the bridge is closed first so that no
 * call waits on a loop that no longer turns. Every part tolerates never
 * having been made (a start that failed half way). */
static void rp_daemon_stop(rp_daemon *d) {
    if (d->mgmt) rp_mgmt_bridge_close(d->mgmt);
    rp_events_stop(d->events); /* before the store thread: its publishes go through it */
    rp_tap_stop(d->tap); /* before the store thread: the tap's events post through it */
    rp_replays_stop(d->replays);
    if (d->store) rp_worker_free(d->store);
    rp_events_free(d->events); /* after: the sweep's broker port points at it */
    /* The session's publishers first (their pending callbacks may still
     * use the daemon), then its connection. */
    rp_amqp_session_free(d->session);
    d->session = NULL;
    d->publisher = NULL;
    d->replay_publisher = NULL;
    rp_tap_ports_free(d->tap_ports); /* its connection, sessions and client; after rp_tap_stop */
    rp_tap_free(d->tap);
    rp_pass_runner_cleanup(&d->runner);
    /* After the store thread, the tap and the runners: nothing calls the
     * feed's port or runs a post it made. */
    rp_amqp_feed_free(d->feed);
    /* After the store thread and the session: no request or replay is in
     * flight. */
    rp_controller_free(d->control);
    rp_replays_free(d->replays);
    rp_replay_wiring_free(d->replay_wiring);
    rp_mgmt_bridge_free(d->mgmt);
    rp_http_free(d->http);
    rp_signals_cleanup(d);
    if (d->sweep_ev) event_free(d->sweep_ev);
    rp_pg_listen_free(d->lease_listen);
    if (d->deadline_ev) event_free(d->deadline_ev);
    if (d->gauges_ev) event_free(d->gauges_ev);
    event_base_free(d->base);
}

int rp_daemon_run(const rp_config *cfg, const char *broker_password) {
    rp_daemon d;
    memset(&d, 0, sizeof d);
    d.cfg = cfg;
    d.boot_cfg = cfg;
    d.exit_code = 1;
    if (evthread_use_pthreads() != 0 || (d.base = event_base_new()) == NULL) {
        RP_ERROR("cannot create the event loop", NULL);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if (rp_daemon_start(&d, broker_password) == RP_OK) {
        event_base_dispatch(d.base);
        d.exit_code = 0;
    }
    rp_daemon_stop(&d);
    if (d.exit_code == 0) RP_INFO("reaperd stopped", NULL);
    return d.exit_code;
}
