/*
 * Signals, as events on the loop.
 *
 * SIGTERM / SIGINT: a bounded stop. reaperd takes no new work (deliveries
 * that arrive are left unacked, so the broker hands them to the next
 * reaper when this connection closes; timers are stopped; new store jobs
 * are refused), the pass in flight stops after the row it is on (each row
 * commits on its own), and the loop keeps turning until what is in flight
 * is done: store jobs (control requests, parks) finished and their replies
 * or events confirmed by the broker. Then it closes and exits 0. When that
 * takes longer than RP_STOP_GRACE_MS it closes anyway: a request not acked
 * by then is delivered again by the broker, a ledger event not yet
 * published stays on the ledger. A second signal closes at once.
 *
 * SIGHUP: reload. The configuration is read again from the same file and
 * environment as at start. A configuration with any problem is refused
 * (each problem logged) and the one in force stays. Otherwise each changed
 * key is logged by name (never by value): keys that need a restart
 * (broker.*, store.*, http.listen; rp_config_key_needs_restart) are kept at
 * their old value and logged as such, the others apply at once on the
 * loop (log level and format, the sweep's interval and reap.enabled,
 * control.allowed_users) and on the store thread from its next job (the
 * thresholds and patterns of the next pass).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_internal.h"
#include "rp_pg_listen.h"
#include "rp_clock.h"
#include "rp_config_load.h"
#include "rp_log.h"
#include "rp_tap.h"

extern char **environ;

#define RP_STOP_CHECK_MS 50
/* After the grace: the store's command in progress is cancelled (again on
 * every check) and the loop waits this much longer for the store thread to
 * come back before it closes regardless. */
#define RP_STOP_CANCEL_MS 5000

struct rp_cfg_snapshot {
    rp_config cfg;
    rp_cfg_snapshot *next;
};

/* ---- stop ----------------------------------------------------------------- */

static void rp_stop_check(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_daemon *d = arg;
    size_t unconfirmed = d->broker_up ? rp_amqp_publisher_pending(d->publisher) +
                                            rp_amqp_publisher_pending(d->replay_publisher)
                                      : 0;
    bool tap_busy = rp_tap_busy(d->tap);
    bool busy = d->pass_running || d->store_jobs > 0 || unconfirmed > 0 || tap_busy;
    int64_t now = rp_clock_mono_ms();
    if (busy && now < d->stop_deadline_ms) return;
    bool store_busy = d->pass_running || d->store_jobs > 0 || tap_busy;
    if (store_busy && now < d->stop_deadline_ms + RP_STOP_CANCEL_MS) {
        /* The grace ran out with the store thread or the tap's still in a
         * command (a lock wait, a slow query): cancel it, so the thread
         * comes back and the joins below do not wait for the store's own
         * time-out (the tap's parks have none). */
        if (!d->stop_cancelled)
            RP_WARN("stop grace ran out; cancelling the store's command in progress",
                    "tap", tap_busy ? "true" : "false", NULL);
        d->stop_cancelled = true;
        if (d->pass_running || d->store_jobs > 0) rp_pg_conn_cancel(d->runner.conn);
        if (tap_busy) rp_tap_cancel(d->tap);
        return;
    }
    if (busy) {
        char jobs[24], pubs[24];
        snprintf(jobs, sizeof jobs, "%u", d->store_jobs + (d->pass_running ? 1u : 0u));
        snprintf(pubs, sizeof pubs, "%zu",
                 rp_amqp_publisher_pending(d->publisher) +
                     rp_amqp_publisher_pending(d->replay_publisher));
        RP_WARN("stop grace ran out; closing with work in flight (unacked requests are "
                "delivered again, ledger events stay on the ledger)",
                "store_jobs", jobs, "unconfirmed_publishes", pubs, NULL);
    } else {
        RP_INFO("work in flight finished; closing", NULL);
    }
    event_del(d->stop_check_ev);
    event_base_loopexit(d->base, NULL);
}

static void rp_on_stop_signal(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(what);
    rp_daemon *d = arg;
    const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
        RP_WARN("second stop signal; closing now", "signal", name, NULL);
        event_base_loopexit(d->base, NULL);
        return;
    }
    char jobs[24];
    snprintf(jobs, sizeof jobs, "%u", d->store_jobs);
    RP_INFO("stopping", "signal", name, "pass_running", d->pass_running ? "true" : "false",
            "store_jobs", jobs, NULL);
    /* A pass in flight stops after the row it is on (each row commits on
     * its own, so nothing is lost or half done); no new work is taken. */
    __atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
    if (d->sweep_ev) event_del(d->sweep_ev);
    if (d->deadline_ev) event_del(d->deadline_ev);
    rp_pg_listen_free(d->lease_listen); /* no more deadlines to hear */
    d->lease_listen = NULL;
    /* A pass waiting on the management API is released at once. */
    if (d->mgmt) rp_mgmt_bridge_close(d->mgmt);
    d->stop_deadline_ms = rp_clock_mono_ms() + RP_STOP_GRACE_MS;
    struct timeval tv = {0, RP_STOP_CHECK_MS * 1000};
    event_add(d->stop_check_ev, &tv);
    rp_stop_check(-1, 0, d);
}

/* ---- reload --------------------------------------------------------------- */

static void rp_adopt_work(void *ctx, void *job) {
    rp_daemon *d = ctx;
    d->runner.cfg = &((rp_cfg_snapshot *)job)->cfg; /* store thread: its next job reads it */
}

static void rp_adopt_done(void *job, bool cancelled) {
    RP_UNUSED(job);
    RP_UNUSED(cancelled);
}

static void rp_snapshot_free(rp_cfg_snapshot *s) {
    rp_config_cleanup(&s->cfg);
    free(s);
}

static void rp_reload(rp_daemon *d) {
    rp_cfg_snapshot *snap = calloc(1, sizeof *snap);
    if (snap == NULL) {
        RP_ERROR("out of memory: configuration not reloaded", NULL);
        return;
    }
    const char *path = d->boot_cfg->path;
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    rp_status st = rp_config_load(path, environ, &snap->cfg, &problems);
    if (st != RP_OK) {
        for (size_t i = 0; i < problems.n; i++)
            RP_ERROR("configuration problem", "problem", problems.items[i].message, NULL);
        char n[24];
        snprintf(n, sizeof n, "%zu", rp_config_problems_count(&problems));
        RP_ERROR("new configuration refused; the one in force stays", "problems", n, "status",
                 rp_status_string(st), "file", path, NULL);
        rp_config_problems_cleanup(&problems);
        rp_snapshot_free(snap);
        return;
    }
    rp_config_problems_cleanup(&problems);
    const rp_config *old = d->cfg;
    size_t applied = 0, kept = 0;
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        rp_config_key_id id = (rp_config_key_id)i;
        if (rp_config_key_equal(old, &snap->cfg, id)) continue;
        if (rp_config_key_needs_restart(id)) {
            RP_WARN("configuration key changed; it applies at the next start, not now", "key",
                    rp_config_key_name(id), NULL);
            if (rp_config_copy_key(&snap->cfg, old, id) != RP_OK) {
                RP_ERROR("out of memory: configuration not reloaded", NULL);
                rp_snapshot_free(snap);
                return;
            }
            kept++;
        } else {
            RP_INFO("configuration key changed; applied", "key", rp_config_key_name(id), NULL);
            applied++;
        }
    }
    if (applied == 0) {
        RP_INFO("configuration reloaded; nothing to apply", "file", path, NULL);
        rp_snapshot_free(snap);
        return;
    }
    snap->next = d->snapshots;
    d->snapshots = snap;
    d->cfg = &snap->cfg;
    const rp_config *cfg = d->cfg;
    rp_log_setup(cfg->log.level, cfg->log.format);
    if (cfg->reap.enabled != old->reap.enabled ||
        cfg->reap.interval_seconds != old->reap.interval_seconds) {
        event_del(d->sweep_ev);
        if (cfg->reap.enabled) {
            struct timeval tv = {(time_t)cfg->reap.interval_seconds, 0};
            event_add(d->sweep_ev, &tv);
        }
    }
    /* The store thread switches between two jobs, never inside a pass; the
     * old snapshot stays allocated until exit, for whoever still reads it. */
    if (rp_worker_submit(d->store, rp_adopt_work, rp_adopt_done, snap) != RP_OK)
        RP_WARN("the store thread did not take the new configuration", NULL);
    char a[24], k[24];
    snprintf(a, sizeof a, "%zu", applied);
    snprintf(k, sizeof k, "%zu", kept);
    RP_INFO("configuration reloaded", "file", path, "applied", a, "need_restart", k, NULL);
}

static void rp_on_hup(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(sig);
    RP_UNUSED(what);
    rp_daemon *d = arg;
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) return;
    RP_INFO("SIGHUP: reloading the configuration", NULL);
    rp_reload(d);
}

rp_status rp_signals_start(rp_daemon *d) {
    d->sig_term = evsignal_new(d->base, SIGTERM, rp_on_stop_signal, d);
    d->sig_int = evsignal_new(d->base, SIGINT, rp_on_stop_signal, d);
    d->sig_hup = evsignal_new(d->base, SIGHUP, rp_on_hup, d);
    d->stop_check_ev = event_new(d->base, -1, EV_PERSIST, rp_stop_check, d);
    if (!d->sig_term || !d->sig_int || !d->sig_hup || !d->stop_check_ev ||
        evsignal_add(d->sig_term, NULL) || evsignal_add(d->sig_int, NULL) ||
        evsignal_add(d->sig_hup, NULL))
        return RP_ERR_INTERNAL;
    return RP_OK;
}

void rp_signals_cleanup(rp_daemon *d) {
    if (d->sig_term) event_free(d->sig_term);
    if (d->sig_int) event_free(d->sig_int);
    if (d->sig_hup) event_free(d->sig_hup);
    if (d->stop_check_ev) event_free(d->stop_check_ev);
    d->sig_term = d->sig_int = d->sig_hup = d->stop_check_ev = NULL;
    while (d->snapshots) {
        rp_cfg_snapshot *s = d->snapshots;
        d->snapshots = s->next;
        rp_snapshot_free(s);
    }
}
