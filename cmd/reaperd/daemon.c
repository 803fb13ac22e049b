/*
 * The composition root of the long-running reaperd, read top to bottom:
 * the parts made in order (rp_daemon_start), the loop, and one stop
 * function with one visible order (rp_daemon_stop). Signals, the broker
 * connection, the timers and the store thread's posts are all events on
 * one event_base; nothing on this thread waits for the network (the AMQP
 * login and declarations run on a connect thread, PostgreSQL and every
 * pass on the store thread). Each part gets its narrow deps and never sees
 * rp_daemon: what each owns is in its header and docs/DESIGN.md "The layout".
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

#include "broker_http.h"
#include "ports.h"
#include "rp_amqp_control.h"
#include "rp_amqp_control_port.h"
#include "rp_amqp_events.h"
#include "rp_amqp_feed.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_amqp_session.h"
#include "rp_clock.h"
#include "rp_config.h"
#include "rp_controller.h"
#include "rp_events.h"
#include "rp_amqp_ask.h"
#include "rp_amqp_open.h"
#include "rp_http_console_jobs.h"
#include "rp_pg_console.h"
#include "rp_http.h"
#include "rp_http_process.h"
#include "rp_log.h"
#include "rp_metrics.h"
#include "rp_mgmt_bridge.h"
#include "rp_observe.h"
#include "rp_pass_sequence.h"
#include "rp_pg_listen.h"
#include "rp_replays.h"
#include "rp_answer_sets.h"
#include "rp_answer_one.h"
#include "rp_broker_state.h"
#include "rp_config_load.h"
#include "rp_signals.h"
#include "rp_store_jobs.h"
#include "rp_sweeper.h"
#include "rp_tap.h"
#include "rp_vhost_taps.h"
#include "rp_observe_vhost_taps.h"
#include "version.h"
#include "worker.h"

/* The daemon's state: the parts it composes and what they share.
 * Threads: runner is touched only on the store thread; every other field
 * only on the loop thread (stopping: atomic access only). No part sees this
 * struct: each gets its narrow deps. */
typedef struct rp_daemon {
    struct event_base *base;
    /* The configuration in force (loop thread). A reload (SIGHUP, rp_signals.h)
     * replaces it with a new snapshot; the store thread switches at its next
     * job (runner.cfg). boot_cfg is the configuration reaperd started with:
     * keys that need a restart (broker.*, store.*, http.listen) never
     * change, so a thread other than the loop (the AMQP connect thread)
     * reads those from boot_cfg, which lives as long as the daemon. */
    const rp_config *cfg;
    const rp_config *boot_cfg;
    const char *broker_password; /* borrowed from main for the run: doctor's probes */
    /* The parts daemon.c composes (each with its own deps). */
    struct rp_signals *signals;   /* SIGHUP reload, the bounded stop */
    struct rp_sweeper *sweeper;   /* the store thread and when passes run */
    struct rp_observe *observe;   /* the metrics glue */

    /* The broker (loop thread): the AMQP session (rp_amqp_session.h) and
     * the events feed's publisher port (rp_amqp_feed.h). publisher,
     * replay_publisher (on RP_REPLAY_CHANNEL), broker_generation and
     * broker_up are the session's, lent and kept current by daemon.c. */
    rp_amqp_session *session;
    rp_amqp_feed *feed;
    rp_amqp_publisher *publisher;
    rp_amqp_publisher *replay_publisher;
    unsigned broker_generation; /* grows at every (re)connect: stale tags */
    bool broker_up;
    rp_broker_state broker_state; /* the session's hooks (app/rp_broker_state.h) */
    /* The management API: HTTP on the loop, called from the store thread
     * through the bridge. */
    rp_mgmt_bridge *mgmt;
    rp_pg_listen_src listen_src; /* the lease LISTEN's port's self */
    rp_broker_http_keep mgmt_keep;
    /* Broker events as they happen (app/rp_events.h), and the backends of
     * its checks, seeds and reconciles (runner_port.h). */
    rp_events *events;
    rp_runner_backends events_backends;
    /* The dead-letter tap (app/rp_tap.h). */
    rp_tap *tap;
    rp_tap_ports *tap_ports; /* its backends (tap_ports.h) */
    rp_vhost_taps *vhost_taps; /* broker.vhosts' other vhosts (app/rp_vhost_taps.h) */
    rp_vhost_taps_src vhost_src; /* their backends (ports.h) */

    /* Store thread side only: the runner every pass and store job uses. */
    rp_pass_runner runner;
    /* The sweeper's pass port over the runner (app/rp_pass_sequence.h). */
    rp_sweep_passes sweep_passes;

    /* Loop side. */
    bool store_up; /* kept by the sweeper's store news */
    bool stopping; /* also read by the store thread: atomic access only */
    rp_time_ms last_pass_at;
    int64_t open_sightings;
    int exit_code;
    rp_store_jobs jobs; /* store jobs, counted while in flight */

    /* Metrics (any thread: atomics) and the HTTP endpoints (loop). */
    rp_metrics metrics;
    struct rp_http *http;
    struct rp_console_wiring *console; /* the browser console (rp_http_console_jobs.h) */
    /* The control queue's use cases (app/rp_controller.h) over their
     * transport (the session) and store (ports.h) ports, and the replays
     * (app/rp_replays.h) over theirs (ports.h); loop thread. */
    struct rp_controller *control;
    rp_amqp_control_src control_transport;
    rp_control_store_src control_store;
    struct rp_replays *replays;
    /* Answer sets (app/rp_answer_sets.h) over their ports (ports.h); loop thread. */
    rp_answer_one *answer_one;
    rp_control_store_port control_store_port;
    rp_answer_sets *answer_sets;
    struct rp_replay_wiring *replay_wiring;
} rp_daemon;

/* ---- the sweeper's ports: the pass (app/rp_pass_sequence.h), the lease LISTEN -- */

/* The sweeper's store news (loop thread). */
static void rp_on_store(void *arg, bool up) {
    rp_daemon *d = arg;
    d->store_up = up;
    if (up) rp_metrics_connected(&d->metrics, RP_METRICS_STORE);
}

/* Logs why a part could not be made. */
static rp_status rp_oom(void) {
    RP_ERROR("out of memory", NULL);
    return RP_ERR_NOMEM;
}

/* HTTP first: an address that cannot be bound stops reaperd before it
 * connects to anything. */
static rp_status rp_daemon_http_start(rp_daemon *d) {
    char user[256];
    bool known = rp_amqp_url_user(d->boot_cfg->broker.url, user, sizeof user);
    /* The console's two backends: the ask over an AMQP connection of its
     * own (broker.* of boot_cfg), the feed on the store thread. */
    rp_console_backends cb = {.ask = rp_amqp_ask_console,
                              .ask_self = (void *)d->boot_cfg,
                              .feed = rp_pg_console_feed_hook,
                              .feed_self = &d->runner.store,
                              .store_job = rp_store_jobs_submit,
                              .store_self = &d->jobs,
                              .cfg = &d->cfg,
                              .broker_password = &d->broker_password,
                              .own_user = known ? user : NULL};
    d->console = rp_console_wiring_new(d->base, &cb);
    if (d->console == NULL) return rp_oom();
    rp_http_hooks hooks = {.refresh = rp_observe_refresh, .ready = rp_observe_ready,
                           .arg = d->observe,
                           .console = rp_console_wiring_console(d->console)};
    char err[300];
    d->http = rp_http_new(d->base, d->cfg->http.listen, &d->metrics, &hooks, err, sizeof err);
    if (d->http == NULL) {
        RP_ERROR("cannot serve HTTP (/metrics, /healthz, /readyz)", "key", "http.listen", "reason",
                 err, NULL);
        return RP_ERR_IO;
    }
    RP_INFO("http listening", "listen", rp_http_bound(d->http), "paths",
            "/metrics /healthz /readyz", NULL);
    return RP_OK;
}

/* ---- signals' ports ------------------------------------------------------------ */

static void rp_signals_inflight_of(void *arg, rp_signals_inflight *out) {
    rp_daemon *d = arg;
    *out = (rp_signals_inflight){
        .pass_running = rp_sweeper_busy(d->sweeper),
        .store_jobs = d->jobs.inflight,
        .broker_up = d->broker_up,
        .unconfirmed = rp_amqp_publisher_pending(d->publisher) +
                       rp_amqp_publisher_pending(d->replay_publisher),
        .tap_busy = rp_tap_busy(d->tap) || rp_vhost_taps_busy(d->vhost_taps),
    };
}

/* The first stop signal: no new pass, no more deadlines to hear, and a
 * pass waiting on the management API is released at once. */
static void rp_signals_on_stop(void *arg) {
    rp_daemon *d = arg;
    rp_sweeper_stop(d->sweeper);
    rp_observe_stop(d->observe);
    if (d->mgmt) rp_mgmt_bridge_close(d->mgmt);
    rp_answer_sets_stop(d->answer_sets); /* its set let go while the loop turns */
}

static void rp_signals_cancel(void *arg, bool store, bool tap) {
    rp_daemon *d = arg;
    if (store) rp_pg_conn_cancel(d->runner.conn);
    if (tap) rp_tap_cancel(d->tap);
    if (tap) rp_vhost_taps_cancel(d->vhost_taps);
}

/* A reload replaced d->cfg: the sweep timer follows, and the store thread
 * switches between two jobs, never inside a pass. */
static void rp_signals_on_reload(void *arg, const rp_config *old) {
    rp_daemon *d = arg;
    rp_sweeper_reconfigure(d->sweeper, old, &d->runner.cfg);
}

/* ---- the broker session's wiring ------------------------------------------ */

/* After a sweep or when the session is ready, every tap's bindings are
 * looked at again. */
static void rp_daemon_after_sweep(void *arg) {
    rp_daemon *d = arg;
    rp_tap_bind_soon(d->tap);
    rp_vhost_taps_bind_soon(d->vhost_taps);
}

/* The control queue's deliveries. */
static void rp_on_control_delivery(void *arg, const rp_amqp_message *msg) {
    rp_daemon *d = arg;
    rp_control_envelope env;
    rp_amqp_control_envelope(msg, &env);
    rp_controller_on_request(d->control, d->broker_generation, msg->delivery_tag, &env);
}

/* The broker-event queue's deliveries, read (and refused when not the
 * broker's) by rp_amqp_event_delivery. */
static void rp_on_event_delivery(void *arg, const rp_amqp_message *msg) {
    rp_daemon *d = arg;
    rp_broker_event ev;
    bool stamped = false;
    int64_t stamp_ms = 0;
    rp_amqp_event_take take = rp_amqp_event_delivery(msg, &d->metrics, &ev, &stamped, &stamp_ms);
    if (stamped) rp_observe_event_lag(d->observe, stamp_ms);
    if (take == RP_AMQP_EVENT_TAKEN && d->events) rp_events_on_event(d->events, &ev);
}

/* The replays (app/rp_replays.h) over their ports (replay_port.h), and the
 * control queue's use cases (control.h). */
static rp_status rp_daemon_control_start(rp_daemon *d) {
    d->replay_wiring = rp_replay_wiring_new(&d->runner, &d->replay_publisher, &d->broker_up,
                                            d->boot_cfg->broker.url);
    if (d->replay_wiring == NULL) return RP_ERR_NOMEM;
    rp_replays_deps rd = {.store_job = rp_store_jobs_submit, .store_job_self = &d->jobs};
    rp_replay_wiring_ports(d->replay_wiring, &rd.store, &rd.publish);
    if ((d->replays = rp_replays_new(d->base, &rd)) == NULL) return RP_ERR_NOMEM;
    d->control_store =
        (rp_control_store_src){.runner = &d->runner, .broker_password = &d->broker_password};
    rp_control_store_fill(&d->control_store, &d->control_store_port);
    d->answer_one = rp_answer_one_new(&d->control_store_port, d->replays, &d->metrics,
                                      rp_store_jobs_submit, &d->jobs);
    if (d->answer_one == NULL) return RP_ERR_NOMEM;
    rp_answer_sets_deps ad = {0};
    rp_answer_one_deps(d->answer_one, &ad);
    ad.store_job_last = rp_store_jobs_submit_last; /* a stop lets its set go */
    if ((d->answer_sets = rp_answer_sets_new(d->base, &ad)) == NULL) return RP_ERR_NOMEM;
    d->control_transport = (rp_amqp_control_src){&d->session, &d->publisher};
    rp_control_deps cd = {
        .self = &d->jobs,
        .store_job = rp_store_jobs_submit,
        .mono_ms = rp_clock_mono_self,
        .cfg = &d->cfg,
        .metrics = &d->metrics,
        .broker_up = &d->broker_up,
        .store_up = &d->store_up,
        .last_pass_at = &d->last_pass_at,
        .open_sightings = &d->open_sightings,
        .replays = d->replays,
    };
    rp_amqp_control_transport_port(&d->control_transport, &cd.transport);
    cd.store = d->control_store_port;
    return (d->control = rp_controller_new(&cd)) == NULL ? RP_ERR_NOMEM : RP_OK;
}

/* Feed hooks: the store thread posts to the loop through the worker. */
static rp_status rp_feed_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    rp_worker *store = rp_sweeper_store(((rp_daemon *)ctx)->sweeper);
    return store != NULL ? rp_worker_post(store, fn, job) : RP_ERR_CLOSED;
}

static rp_amqp_publisher *rp_feed_publisher(void *ctx) { return ((rp_daemon *)ctx)->publisher; }

static void rp_feed_on_loop(void *ctx) {
    /* a gate or sighting may have changed */
    rp_observe_gauges_soon(((rp_daemon *)ctx)->observe);
}

/* The session: its consumers' handlers, the tap's connection with the same
 * parameters, then connecting. */
static rp_status rp_daemon_broker_start(rp_daemon *d, const char *password) {
    const rp_config *cfg = d->cfg;
    rp_amqp_params ap;
    rp_amqp_params_daemon(cfg, password, &ap);
    d->broker_state = (rp_broker_state){&d->broker_up, &d->broker_generation, &d->stopping,
                                        &d->metrics, &d->events, rp_daemon_after_sweep, d};
    rp_amqp_session_hooks sh = {
        .accepting = rp_broker_state_accepting,
        .on_up = rp_broker_state_on_up,
        .on_ready = rp_broker_state_on_ready,
        .on_down = rp_broker_state_on_down,
        .arg = &d->broker_state,
    };
    const char *err = NULL;
    d->session = rp_amqp_session_daemon_new(d->base, cfg, &ap, &sh, &err);
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
    d->vhost_src.params = ap;
    d->vhost_src.replays = d->replay_wiring;
    if (rp_vhost_taps_connect(d->vhost_taps) != RP_OK)
        return RP_ERR_INTERNAL;
    if (rp_amqp_session_start(d->session) != RP_OK) {
        RP_ERROR("cannot start the broker connection", NULL);
        return RP_ERR_INTERNAL;
    }
    return RP_OK;
}

/* ---- the run ---------------------------------------------------------------- */

/* The parts, made in order. */
static rp_status rp_daemon_start(rp_daemon *d, const char *broker_password) {
    const rp_config *cfg = d->cfg;
    d->broker_password = broker_password;
    d->jobs = (rp_store_jobs){.sweeper = &d->sweeper, .stopping = &d->stopping, .ctx = d};
    /* 1. The metrics glue and HTTP, first: an address that cannot be bound
     * stops reaperd before it connects to anything. */
    rp_metrics_init(&d->metrics, REAPER_VERSION, REAPER_GIT_REV);
    rp_observe_vhosts_register(&d->metrics, cfg);
    rp_observe_deps od = {
        .metrics = &d->metrics,
        .stopping = &d->stopping,
        .broker_up = &d->broker_up,
        .store_up = &d->store_up,
        .clock = {.now_ms = rp_clock_wall_self},
        .process_sample = rp_http_process_sample,
        .tap_gauges = rp_tap_gauges_hook,
        .tap_bound = rp_tap_bound_hook,
        .tap_arg = &d->tap,
        .tap_vhost = &d->mgmt_keep.vhost,
        .vhost_tap = rp_vhost_taps_observe,
        .vhost_tap_arg = &d->vhost_taps,
        .store_job = rp_store_jobs_submit,
        .store_job_arg = &d->jobs,
        .gauges_ms = RP_OBSERVE_GAUGES_MS,
    };
    rp_pg_gauges_port(&d->runner.store, &od.gauges); /* the store is made in step 3 */
    d->observe = rp_observe_new(d->base, &od);
    if (d->observe == NULL) return rp_oom();
    rp_status hst = rp_daemon_http_start(d);
    if (hst != RP_OK) return hst;
    /* 2. Signals (stop, reload). */
    rp_signals_deps sd = {
        .cfg = &d->cfg,
        .boot_cfg = d->boot_cfg,
        .stopping = &d->stopping,
        .inflight = rp_signals_inflight_of,
        .on_stop = rp_signals_on_stop,
        .cancel = rp_signals_cancel,
        .on_reload = rp_signals_on_reload,
        .arg = d,
        .load = rp_config_load_environ,
    };
    d->signals = rp_signals_new(d->base, &sd);
    if (d->signals == NULL) {
        RP_ERROR("cannot set up the loop's events", NULL);
        return RP_ERR_INTERNAL;
    }
    /* 3. The feed: every committed ledger event (gate answers included)
     * also goes to the events exchange. */
    rp_amqp_feed_hooks fh = {.post = rp_feed_post,
                             .publisher = rp_feed_publisher,
                             .on_loop = rp_feed_on_loop,
                             .ctx = d};
    d->feed = rp_amqp_feed_from_config(cfg, &d->metrics, &fh);
    if (d->feed == NULL) return rp_oom();
    /* 4. The broker half: the management API on this loop, for the store
     * thread through the bridge; the store's runner over it, its events
     * to the feed. */
    const char *herr = NULL;
    rp_status mst = rp_broker_http_bridge(d->base, cfg, broker_password, &d->mgmt_keep, &d->mgmt,
                                          &herr);
    if (mst == RP_ERR_CONFIG) {
        RP_ERROR("cannot use the broker URL", "key", "broker.url", NULL);
        return RP_ERR_CONFIG;
    }
    if (mst == RP_ERR_UNAVAILABLE) {
        RP_ERROR("cannot use the management API", "key", "broker.management_url", "reason", herr,
                 NULL);
        return RP_ERR_CONFIG;
    }
    if (mst != RP_OK || rp_pass_runner_open(&d->runner, cfg, d->mgmt, &d->mgmt_keep, true,
                                            broker_password) != RP_OK)
        return rp_oom();
    rp_publisher_port feed;
    rp_amqp_feed_port(d->feed, &feed);
    rp_pass_runner_set_publisher(&d->runner, &feed);
    /* 5. The sweeper: the store thread (it starts checking the store at
     * once); its passes start in step 8. */
    rp_sweeper_deps swd = {
        .cfg = &d->cfg,
        .stopping = &d->stopping,
        .clock = {.now_ms = rp_clock_wall_self},
        .on_store = rp_on_store,
        .arg = d,
    };
    d->sweep_passes = (rp_sweep_passes){.observe = d->observe,
                                        .last_pass_at = &d->last_pass_at,
                                        .open_sightings = &d->open_sightings,
                                        .after_sweep = rp_daemon_after_sweep,
                                        .arg = d};
    rp_pass_runner_port(&d->runner, &d->sweep_passes.run);
    rp_sweep_passes_port(&d->sweep_passes, &swd.pass);
    d->listen_src = (rp_pg_listen_src){d->base, &d->cfg};
    rp_pg_listen_port(&d->listen_src, &swd.listen);
    d->sweeper = rp_sweeper_new(d->base, &swd);
    if (d->sweeper == NULL) {
        RP_ERROR("cannot start the store thread", NULL);
        return RP_ERR_INTERNAL;
    }

    /* 6. The broker events and the dead-letter tap. */
    d->events_backends = (rp_runner_backends){.mgmt = d->mgmt, .keep = &d->mgmt_keep};
    rp_events_deps events_deps = {.cfg = &d->cfg, .stopping = &d->stopping,
                                  .mono_ms = rp_clock_mono_ms, .wall_ms = rp_clock_wall_ms,
                                  .metrics = &d->metrics,
                                  .watched = rp_vhost_taps_watched,
                                  .watched_arg = &d->vhost_taps};
    rp_runner_port_fill(&d->events_backends, &events_deps.runner);
    rp_amqp_feed_port(d->feed, &events_deps.publisher);
    d->events = rp_events_new(d->base, &events_deps);
    if (d->events == NULL) return rp_oom();
    rp_events_wrap_sweep_port(d->events, &d->runner.ports.broker);
    if (rp_events_add_queue_hook(d->events, rp_tap_queue_hook, &d->tap) != RP_OK)
        return rp_oom();
    rp_tap_deps tap_deps = {
        .cfg = &d->cfg,
        .stopping = &d->stopping,
        .vhost = &d->mgmt_keep.vhost,
        .broker_generation = &d->broker_generation,
        .broker_up = &d->broker_up,
        .metrics = &d->metrics,
    };
    rp_amqp_feed_port(d->feed, &tap_deps.feed);
    d->tap_ports = rp_tap_ports_new(d->base, &d->cfg, d->mgmt, &tap_deps);
    d->tap = d->tap_ports ? rp_tap_new(d->base, &tap_deps) : NULL;
    if (d->tap == NULL) return rp_oom();
    d->vhost_src = (rp_vhost_taps_src){.base = d->base, .cfg = &d->cfg, .mgmt = d->mgmt};
    rp_vhost_taps_port vtp;
    rp_vhost_taps_port_fill(&d->vhost_src, &vtp);
    d->vhost_taps = rp_vhost_taps_new(d->base, &d->cfg, &vtp, &tap_deps, d->events);
    if (d->vhost_taps == NULL) return rp_oom();
    if (rp_daemon_control_start(d) != RP_OK) return rp_oom();
    /* 7. The broker session. */
    if (rp_daemon_broker_start(d, broker_password) != RP_OK) return RP_ERR_INTERNAL;
    /* 8. The passes: the lease LISTEN, the first pass now (it connects the
     * store and reaps what expired while no reaper ran), then the sweep on
     * its interval. */
    if (rp_sweeper_start(d->sweeper) != RP_OK) return rp_oom();
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
    rp_observe_stop(d->observe); /* no recount is started */
    rp_events_stop(d->events); /* before the store thread: its publishes go through it */
    rp_tap_stop(d->tap); /* before the store thread: the tap's events post through it */
    rp_vhost_taps_stop(d->vhost_taps);
    rp_answer_sets_stop(d->answer_sets); /* before the replays: it starts them */
    rp_replays_stop(d->replays);
    /* The store thread joined (what it posted runs now), the timers and
     * the lease LISTEN gone. */
    rp_sweeper_free(d->sweeper);
    d->sweeper = NULL;
    rp_events_free(d->events); /* after: the sweep's broker port points at it */
    /* The session's publishers first (their pending callbacks may still
     * use the daemon), then its connection. */
    rp_amqp_session_free(d->session);
    d->session = NULL;
    d->publisher = NULL;
    d->replay_publisher = NULL;
    rp_tap_ports_free(d->tap_ports); /* its connection, sessions and client; after rp_tap_stop */
    rp_tap_free(d->tap);
    rp_vhost_taps_free(d->vhost_taps);
    rp_pass_runner_cleanup(&d->runner);
    /* After the store thread, the tap and the runners: nothing calls the
     * feed's port or runs a post it made. */
    rp_amqp_feed_free(d->feed);
    /* After the store thread and the session: no request or replay is in
     * flight. */
    rp_controller_free(d->control);
    rp_answer_sets_free(d->answer_sets); /* no answer of its in flight now */
    rp_answer_one_free(d->answer_one);
    rp_replays_free(d->replays);
    rp_replay_wiring_free(d->replay_wiring);
    rp_mgmt_bridge_free(d->mgmt);
    rp_http_free(d->http);
    rp_console_wiring_free(d->console); /* after the server: its calls answer nobody */
    rp_observe_free(d->observe);
    /* Last: the configurations a reload made (d->cfg may be one). */
    rp_signals_free(d->signals);
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
