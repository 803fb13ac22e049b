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
#include "rp_signals.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_clock.h"
#include "rp_log.h"

#define RP_STOP_CHECK_MS 50
/* After the grace: the store's command in progress is cancelled (again on
 * every check) and the loop waits this much longer for the store thread to
 * come back before it closes regardless. */
#define RP_STOP_CANCEL_MS 5000

typedef struct rp_cfg_snapshot rp_cfg_snapshot;
struct rp_cfg_snapshot {
    rp_config cfg;
    rp_cfg_snapshot *next;
};

struct rp_signals {
    struct event_base *base;
    rp_signals_deps deps;
    struct event *sig_term, *sig_int, *sig_hup;
    struct event *stop_check_ev; /* polls for in-flight work while stopping */
    int64_t stop_deadline_ms;    /* monotonic; the grace runs out then */
    bool stop_cancelled;         /* the store's command was cancelled */
    rp_cfg_snapshot *snapshots;  /* every reload's config, freed at exit */
};

/* ---- stop ----------------------------------------------------------------- */

static void rp_stop_check(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_signals *s = arg;
    rp_signals_inflight in;
    s->deps.inflight(s->deps.arg, &in);
    size_t unconfirmed = in.broker_up ? in.unconfirmed : 0;
    bool tap_busy = in.tap_busy;
    bool busy = in.pass_running || in.store_jobs > 0 || unconfirmed > 0 || tap_busy;
    int64_t now = rp_clock_mono_ms();
    if (busy && now < s->stop_deadline_ms) return;
    bool store_busy = in.pass_running || in.store_jobs > 0 || tap_busy;
    if (store_busy && now < s->stop_deadline_ms + RP_STOP_CANCEL_MS) {
        /* The grace ran out with the store thread or the tap's still in a
         * command (a lock wait, a slow query): cancel it, so the thread
         * comes back and the joins below do not wait for the store's own
         * time-out (the tap's parks have none). */
        if (!s->stop_cancelled)
            RP_WARN("stop grace ran out; cancelling the store's command in progress",
                    "tap", tap_busy ? "true" : "false", NULL);
        s->stop_cancelled = true;
        s->deps.cancel(s->deps.arg, in.pass_running || in.store_jobs > 0, tap_busy);
        return;
    }
    if (busy) {
        char jobs[24], pubs[24];
        snprintf(jobs, sizeof jobs, "%u", in.store_jobs + (in.pass_running ? 1u : 0u));
        snprintf(pubs, sizeof pubs, "%zu", in.unconfirmed);
        RP_WARN("stop grace ran out; closing with work in flight (unacked requests are "
                "delivered again, ledger events stay on the ledger)",
                "store_jobs", jobs, "unconfirmed_publishes", pubs, NULL);
    } else {
        RP_INFO("work in flight finished; closing", NULL);
    }
    event_del(s->stop_check_ev);
    event_base_loopexit(s->base, NULL);
}

static void rp_on_stop_signal(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(what);
    rp_signals *s = arg;
    const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (__atomic_load_n(s->deps.stopping, __ATOMIC_ACQUIRE)) {
        RP_WARN("second stop signal; closing now", "signal", name, NULL);
        event_base_loopexit(s->base, NULL);
        return;
    }
    rp_signals_inflight in;
    s->deps.inflight(s->deps.arg, &in);
    char jobs[24];
    snprintf(jobs, sizeof jobs, "%u", in.store_jobs);
    RP_INFO("stopping", "signal", name, "pass_running", in.pass_running ? "true" : "false",
            "store_jobs", jobs, NULL);
    /* A pass in flight stops after the row it is on (each row commits on
     * its own, so nothing is lost or half done); no new work is taken: the
     * timers stop, no more deadlines are heard, and a pass waiting on the
     * management API is released at once (on_stop). */
    __atomic_store_n(s->deps.stopping, true, __ATOMIC_RELEASE);
    s->deps.on_stop(s->deps.arg);
    s->stop_deadline_ms = rp_clock_mono_ms() + RP_STOP_GRACE_MS;
    struct timeval tv = {0, RP_STOP_CHECK_MS * 1000};
    event_add(s->stop_check_ev, &tv);
    rp_stop_check(-1, 0, s);
}

/* ---- reload --------------------------------------------------------------- */

static void rp_snapshot_free(rp_cfg_snapshot *snap) {
    rp_config_cleanup(&snap->cfg);
    free(snap);
}

static void rp_reload(rp_signals *s) {
    rp_cfg_snapshot *snap = calloc(1, sizeof *snap);
    if (snap == NULL) {
        RP_ERROR("out of memory: configuration not reloaded", NULL);
        return;
    }
    const char *path = s->deps.boot_cfg->path;
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    rp_status st = s->deps.load(path, &snap->cfg, &problems);
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
    const rp_config *old = *s->deps.cfg;
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
    snap->next = s->snapshots;
    s->snapshots = snap;
    *s->deps.cfg = &snap->cfg;
    rp_log_setup(snap->cfg.log.level, snap->cfg.log.format);
    /* The sweep timer follows; the store thread switches between two jobs,
     * never inside a pass; the old snapshot stays allocated until exit, for
     * whoever still reads it. */
    s->deps.on_reload(s->deps.arg, old);
    char a[24], k[24];
    snprintf(a, sizeof a, "%zu", applied);
    snprintf(k, sizeof k, "%zu", kept);
    RP_INFO("configuration reloaded", "file", path, "applied", a, "need_restart", k, NULL);
}

static void rp_on_hup(evutil_socket_t sig, short what, void *arg) {
    RP_UNUSED(sig);
    RP_UNUSED(what);
    rp_signals *s = arg;
    if (__atomic_load_n(s->deps.stopping, __ATOMIC_ACQUIRE)) return;
    RP_INFO("SIGHUP: reloading the configuration", NULL);
    rp_reload(s);
}

rp_signals *rp_signals_new(struct event_base *base, const rp_signals_deps *deps) {
    rp_signals *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->base = base;
    s->deps = *deps;
    s->sig_term = evsignal_new(base, SIGTERM, rp_on_stop_signal, s);
    s->sig_int = evsignal_new(base, SIGINT, rp_on_stop_signal, s);
    s->sig_hup = evsignal_new(base, SIGHUP, rp_on_hup, s);
    s->stop_check_ev = event_new(base, -1, EV_PERSIST, rp_stop_check, s);
    if (!s->sig_term || !s->sig_int || !s->sig_hup || !s->stop_check_ev ||
        evsignal_add(s->sig_term, NULL) || evsignal_add(s->sig_int, NULL) ||
        evsignal_add(s->sig_hup, NULL)) {
        rp_signals_free(s);
        return NULL;
    }
    return s;
}

void rp_signals_free(rp_signals *s) {
    if (s == NULL) return;
    if (s->sig_term) event_free(s->sig_term);
    if (s->sig_int) event_free(s->sig_int);
    if (s->sig_hup) event_free(s->sig_hup);
    if (s->stop_check_ev) event_free(s->stop_check_ev);
    while (s->snapshots) {
        rp_cfg_snapshot *snap = s->snapshots;
        s->snapshots = snap->next;
        rp_snapshot_free(snap);
    }
    free(s);
}
