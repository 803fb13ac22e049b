/*
 * The pass scheduling of reaperd (rp_sweeper.h): the sweep and deadline
 * timers, the lease LISTEN's hooks, one pass at a time with wishes, and
 * the store thread's up/down news.
 */
#include "rp_sweeper.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_log.h"

struct rp_sweeper {
    struct event_base *base;
    rp_sweeper_deps deps;
    rp_worker *store;
    struct event *sweep_ev;    /* every interval_seconds, when reap.enabled */
    struct event *deadline_ev; /* the next lease deadline */
    void *listen;              /* the lease LISTEN (deps.listen) */
    /* Loop side. */
    bool pass_running;
    bool want_sweep, want_leases;
    /* When the deadline timer fires, on this host's wall clock (INT64_MAX:
     * not armed), and the store's clock offset measured by the last pass. */
    int64_t deadline_fire_ms;
    int64_t clock_offset_ms;
    uint64_t deadline_rearms;
    uint64_t passes;
    /* Store thread side only. */
    bool store_up_seen;
    unsigned store_checks, store_failures;
};

static const rp_config *rp_sw_cfg(const rp_sweeper *s) { return *s->deps.cfg; }

static int64_t rp_sw_now(const rp_sweeper *s) { return s->deps.clock.now_ms(s->deps.clock.self); }

static bool rp_sw_stopping(const rp_sweeper *s) {
    return __atomic_load_n(s->deps.stopping, __ATOMIC_ACQUIRE);
}

/* ---- the store thread's news -------------------------------------------- */

typedef struct rp_store_news {
    rp_sweeper *s;
    bool up;
    char detail[300];
} rp_store_news;

static void rp_store_news_on_loop(void *job, bool cancelled) {
    rp_store_news *n = job;
    if (!cancelled) {
        if (n->s->deps.on_store) n->s->deps.on_store(n->s->deps.arg, n->up);
        if (n->up)
            RP_INFO("store connected", "store", n->detail, NULL);
        else
            RP_WARN("store unreachable; retrying", "reason", n->detail, NULL);
    }
    free(n);
}

/* Tells the loop when the store's state changed (and every 30th failed
 * check, so a long outage stays visible in the log). Store thread. */
static void rp_store_tell(rp_sweeper *s, bool up, const char *detail) {
    bool changed = up != s->store_up_seen || s->store_checks == 0;
    s->store_failures = up ? 0 : s->store_failures + 1;
    s->store_checks++;
    if (!changed && (up || s->store_failures % 30 != 0)) return;
    s->store_up_seen = up;
    rp_store_news *n = calloc(1, sizeof *n);
    if (n == NULL) return;
    n->s = s;
    n->up = up;
    snprintf(n->detail, sizeof n->detail, "%s", detail);
    if (rp_worker_post(s->store, rp_store_news_on_loop, n) != RP_OK) free(n);
}

/* Runs on the store thread every RP_SWEEPER_STORE_CHECK_MS while idle:
 * connects, or checks the connection. */
static void rp_store_idle(rp_worker *w, void *ctx) {
    RP_UNUSED(w);
    rp_sweeper *s = ctx;
    char detail[300] = "";
    bool up = s->deps.pass.store(s->deps.pass.self, true, detail, sizeof detail);
    rp_store_tell(s, up, detail);
}

/* ---- passes ---------------------------------------------------------------- */

typedef struct rp_pass_job {
    rp_sweeper *s;
    rp_sweep_run run;
} rp_pass_job;

static void rp_pass_progress(void *arg, const char *phase, size_t done) {
    char n[24];
    snprintf(n, sizeof n, "%zu", done);
    RP_INFO("pass progress", "phase", phase, "rows", n, "scope", (const char *)arg, NULL);
}

/* Store thread: asked between rows; set by the loop on SIGTERM/SIGINT. */
static bool rp_pass_should_stop(void *arg) { return rp_sw_stopping(arg); }

/* Store thread: the pass itself, then what the store's state is now. */
static void rp_pass_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_pass_job *job = arg;
    rp_sweeper *s = job->s;
    s->deps.pass.run(s->deps.pass.self, &job->run);
    char detail[300] = "";
    bool up = s->deps.pass.store(s->deps.pass.self, false, detail, sizeof detail);
    rp_store_tell(s, up, up ? detail : "lost during a pass");
}

static void rp_submit_pass(rp_sweeper *s, rp_pass_scope scope);

static void rp_deadline_at(rp_sweeper *s, int64_t wait_ms) {
    if (wait_ms < 0) wait_ms = 0;
    struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
    evtimer_add(s->deadline_ev, &tv);
    s->deadline_fire_ms = rp_sw_now(s) + wait_ms;
}

static void rp_arm_deadline(rp_sweeper *s, const rp_sweep_run *run) {
    int64_t interval_ms = rp_sw_cfg(s)->reap.interval_seconds * 1000;
    int64_t wait_ms = interval_ms;
    s->clock_offset_ms = run->clock_offset_ms;
    if (run->deadline_known) {
        /* The deadline is on the database's clock, as the judgement is:
         * move it to ours with the offset measured at the pass's start.
         * Strictly past the grace: one millisecond after it is the first
         * moment the row counts as expired. */
        int64_t until = run->deadline_at + run->clock_offset_ms + 1 - rp_sw_now(s);
        if (until < wait_ms) wait_ms = until < 0 ? 0 : until;
    }
    /* A lease set after this pass read its deadline may have armed the
     * timer earlier meanwhile (rp_on_lease_deadline): keep that one. */
    int64_t now = rp_sw_now(s);
    if (s->deadline_fire_ms != INT64_MAX && s->deadline_fire_ms > now &&
        s->deadline_fire_ms - now < wait_ms)
        wait_ms = s->deadline_fire_ms - now;
    rp_deadline_at(s, wait_ms);
}

/* Listener hook (loop thread): a lease was set expiring at at_ms on the
 * database's clock. The timer moves only when this is earlier than the
 * one armed, so a thousand claims a second cost a comparison each. */
static void rp_on_lease_deadline(void *arg, int64_t at_ms) {
    rp_sweeper *s = arg;
    int64_t grace_ms = rp_sw_cfg(s)->reap.lease_grace_seconds * 1000;
    /* Strictly past the grace, on this host's clock (rp_arm_deadline). */
    int64_t fire = at_ms + grace_ms + s->clock_offset_ms + 1;
    if (fire >= s->deadline_fire_ms) return;
    s->deadline_rearms++;
    char in[24];
    snprintf(in, sizeof in, "%" PRId64, fire - rp_sw_now(s));
    RP_DEBUG("lease deadline brought forward", "in_ms", in, NULL);
    rp_deadline_at(s, fire - rp_sw_now(s));
}

/* Listener hook: listening (again). What was set while it was down was
 * not heard: the lease reap reads the earliest deadline from the table. */
static void rp_on_lease_listen_up(void *arg) { rp_submit_pass(arg, RP_PASS_LEASES); }

/* Loop thread: what follows the pass (the port's), arm the deadline, run
 * what was wished. */
static void rp_pass_done(void *arg, bool cancelled) {
    rp_pass_job *job = arg;
    rp_sweeper *s = job->s;
    s->pass_running = false;
    s->deps.pass.finish(s->deps.pass.self, &job->run, cancelled);
    if (!cancelled) {
        rp_arm_deadline(s, &job->run);
        if (s->want_sweep) rp_submit_pass(s, RP_PASS_FULL);
        else if (s->want_leases) rp_submit_pass(s, RP_PASS_LEASES);
    }
    free(job);
}

static void rp_submit_pass(rp_sweeper *s, rp_pass_scope scope) {
    if (rp_sw_stopping(s)) return;
    if (s->pass_running) {
        if (scope == RP_PASS_FULL) s->want_sweep = true;
        else s->want_leases = true;
        return;
    }
    rp_pass_job *job = calloc(1, sizeof *job);
    if (job == NULL) {
        RP_ERROR("out of memory: pass skipped", NULL);
        return;
    }
    job->s = s;
    job->run.scope = scope;
    job->run.scope_name = scope == RP_PASS_FULL ? "sweep" : "lease reap";
    job->run.progress = rp_pass_progress;
    job->run.progress_arg = (void *)job->run.scope_name;
    job->run.should_stop = rp_pass_should_stop;
    job->run.stop_arg = s;
    if (rp_worker_submit(s->store, rp_pass_work, rp_pass_done, job) != RP_OK) {
        free(job);
        RP_ERROR("the store thread refused a pass", NULL);
        return;
    }
    s->passes++;
    s->pass_running = true;
    if (scope == RP_PASS_FULL) s->want_sweep = false;
    s->want_leases = false; /* every pass reaps leases */
}

static void rp_on_sweep(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_submit_pass(arg, RP_PASS_FULL);
}

static void rp_on_deadline(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_sweeper *s = arg;
    s->deadline_fire_ms = INT64_MAX; /* armed again when the pass is done */
    rp_submit_pass(s, RP_PASS_LEASES);
}

static void rp_arm_sweep(rp_sweeper *s) {
    const rp_config *cfg = rp_sw_cfg(s);
    if (!cfg->reap.enabled) return;
    struct timeval tv = {(time_t)cfg->reap.interval_seconds, 0};
    event_add(s->sweep_ev, &tv);
}

/* ---- the part -------------------------------------------------------------- */

rp_sweeper *rp_sweeper_new(struct event_base *base, const rp_sweeper_deps *deps) {
    rp_sweeper *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->base = base;
    s->deps = *deps;
    s->deadline_fire_ms = INT64_MAX;
    s->sweep_ev = event_new(base, -1, EV_PERSIST, rp_on_sweep, s);
    s->deadline_ev = evtimer_new(base, rp_on_deadline, s);
    if (s->sweep_ev != NULL && s->deadline_ev != NULL)
        s->store = rp_worker_new(base, "store", rp_store_idle, s, RP_SWEEPER_STORE_CHECK_MS);
    if (s->store == NULL) {
        rp_sweeper_free(s);
        return NULL;
    }
    return s;
}

rp_status rp_sweeper_start(rp_sweeper *s) {
    rp_lease_listen_hooks lh = {.on_deadline = rp_on_lease_deadline,
                                .on_up = rp_on_lease_listen_up,
                                .arg = s};
    s->deadline_fire_ms = INT64_MAX;
    s->listen = s->deps.listen.open(s->deps.listen.self, &lh);
    if (s->listen == NULL) return RP_ERR_NOMEM;
    /* The first pass now: it connects the store and reaps what expired
     * while no reaper ran. Then the sweep on its interval. */
    rp_submit_pass(s, rp_sw_cfg(s)->reap.enabled ? RP_PASS_FULL : RP_PASS_LEASES);
    rp_arm_sweep(s);
    return RP_OK;
}

typedef struct rp_adopt_job {
    const rp_config **slot;
    const rp_config *cfg;
} rp_adopt_job;

static void rp_adopt_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_adopt_job *a = job;
    *a->slot = a->cfg; /* store thread: its next job reads it */
}

static void rp_adopt_done(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    free(job);
}

void rp_sweeper_reconfigure(rp_sweeper *s, const rp_config *old, const rp_config **store_cfg) {
    const rp_config *cfg = rp_sw_cfg(s);
    if (cfg->reap.enabled != old->reap.enabled ||
        cfg->reap.interval_seconds != old->reap.interval_seconds) {
        event_del(s->sweep_ev);
        rp_arm_sweep(s);
    }
    rp_adopt_job *a = malloc(sizeof *a);
    if (a != NULL) *a = (rp_adopt_job){store_cfg, cfg};
    if (a == NULL || rp_worker_submit(s->store, rp_adopt_work, rp_adopt_done, a) != RP_OK) {
        free(a);
        RP_WARN("the store thread did not take the new configuration", NULL);
    }
}

rp_worker *rp_sweeper_store(rp_sweeper *s) { return s ? s->store : NULL; }

bool rp_sweeper_busy(const rp_sweeper *s) { return s != NULL && s->pass_running; }

void rp_sweeper_state_get(const rp_sweeper *s, rp_sweeper_state *out) {
    *out = (rp_sweeper_state){
        .pass_running = s->pass_running,
        .want_sweep = s->want_sweep,
        .want_leases = s->want_leases,
        .deadline_fire_ms = s->deadline_fire_ms,
        .clock_offset_ms = s->clock_offset_ms,
        .deadline_rearms = s->deadline_rearms,
        .passes = s->passes,
    };
}

void rp_sweeper_stop(rp_sweeper *s) {
    if (s == NULL) return;
    event_del(s->sweep_ev);
    event_del(s->deadline_ev);
    s->deps.listen.close(s->deps.listen.self, s->listen); /* no more deadlines to hear */
    s->listen = NULL;
}

void rp_sweeper_free(rp_sweeper *s) {
    if (s == NULL) return;
    if (s->store) rp_worker_free(s->store);
    s->store = NULL;
    if (s->listen) s->deps.listen.close(s->deps.listen.self, s->listen);
    if (s->sweep_ev) event_free(s->sweep_ev);
    if (s->deadline_ev) event_free(s->deadline_ev);
    free(s);
}
