/*
 * The dead-letter tap's part (rp_tap.h): core's decisions (rp_tap_batch.h,
 * rp_tap_rules.h) driven by the tap's consumer port on the loop, its park on
 * its own thread over its store port, and its bindings on a thread of their
 * own over its bind port (core/rp_tap_port.h). What it logs and counts is
 * decided here from what core returns.
 */
#include "rp_tap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_clock.h"
#include "rp_log.h"
#include "rp_observe_vhost_taps.h"
#include "rp_tap_rules.h"
#include "worker.h"

struct rp_tap {
    rp_tap_deps deps;
    struct event_base *base;
    rp_tap_state s;        /* core's decisions (loop thread) */
    struct event *retry_ev;
    /* Deliveries are handed on once the read that brought them is all
     * decoded (rp_tap_on_item): made active, it runs after that drain. */
    struct event *kick_ev;
    struct event *gather_ev; /* a short batch's wait for more (rp_tap_state_gather) */
    /* The bindings' reconcile runs on a thread of its own with a
     * management client of its own, so that it never waits behind a sweep
     * (issue #14): bind_queued while one is wanted or running; bind_again
     * when another was asked for meanwhile (a change it may have missed). */
    rp_worker *bind_worker;
    bool bind_queued, bind_again;
    /* Readiness: the connection (broker_generation) the running reconcile
     * was asked for, whether it succeeded (written by the binding thread,
     * read in its done function), and the last connection whose bindings
     * are in place. A failed reconcile is tried again after a while. */
    unsigned bind_gen, bound_gen;
    bool bind_ok;
    struct event *bind_retry_ev;
    bool stopped; /* rp_tap_stop ran: nothing more is parked */
    /* The tap's own thread (rp_tap.h). */
    rp_worker *worker;
    rp_tap_park_mem *park_mem; /* the thread's, lent to every batch */
    rp_ports ports; /* the store port's dead_letters and clock; publisher: the feed */
};

static bool rp_tap_stopping(const rp_tap *t) {
    return __atomic_load_n(t->deps.stopping, __ATOMIC_ACQUIRE);
}

static const rp_config *rp_tap_cfg(const rp_tap *t) { return *t->deps.cfg; }

static bool rp_tap_env_stopping(void *ctx) { return rp_tap_stopping(ctx); }

/* The tap's thread: parks one batch (core/rp_tap_batch.h). */
static void rp_tap_work(void *ctx, void *job) {
    rp_tap *t = ctx;
    const rp_config *cfg = rp_tap_cfg(t);
    rp_tap_park_env env = {
        .batch = &t->deps.store.batch,
        .mem = t->park_mem,
        .ports = &t->ports,
        .site = {*t->deps.vhost, cfg->broker.tap_queue, cfg->reap.dead_letter_queue_pattern.code},
        .ex = &t->deps.consumer.examiner,
        .stopping = rp_tap_env_stopping,
        .stop_ctx = t,
    };
    rp_tap_park(&env, job);
}

/* ---- the loop ----------------------------------------------------------------- */

static void rp_tap_kick(rp_tap *t);
static void rp_tap_hold_check(rp_tap *t);

static void rp_tap_pause(rp_tap *t, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(t->retry_ev, &tv);
}

static void rp_tap_on_kick(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_tap_kick(arg);
}

static void rp_tap_on_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_tap *t = arg;
    rp_tap_state_retry(&t->s);
    rp_tap_kick(t);
}

/* Loop: a batch came back from the tap's thread. */
static void rp_tap_done(void *job, bool cancelled) {
    rp_tap_batch *b = job;
    rp_tap *t = b->arg;
    const rp_config *cfg = rp_tap_cfg(t);
    for (size_t k = 0; !cancelled && k < b->unpublished; k++)
        RP_DEBUG("a tap park's event was not handed to the feed", NULL);
    const rp_tap_settled *r = rp_tap_state_settle(&t->s, b, cancelled, rp_clock_mono_us());
    if (cancelled) {
        rp_tap_hold_check(t);
        return;
    }
    /* Under the tap's vhost (issue 19 item 1); one without a metrics
     * slot is logged once. */
    const char *vhost = *t->deps.vhost;
    bool overflow = false;
    for (size_t k = 0; k < r->n_delays; k++)
        overflow |= rp_metrics_tap_parked(t->deps.metrics, vhost, r->delays_us[k]);
    for (uint64_t k = 0; k < r->ignored; k++)
        RP_DEBUG("a tap delivery did not come through a dead-letter exchange (no x-death nor "
                 "x-first-death-queue, or published through the default exchange): not a dead "
                 "letter, acked",
                 NULL);
    if (r->first_ignored)
        RP_WARN("a delivery on the tap queue did not come through a dead-letter exchange "
                "(published straight into it, or without x-death): acked and not parked; "
                "later ones are only counted (reaper_tap_ignored_total)",
                "queue", cfg->broker.tap_queue, NULL);
    if (r->ignored > 0) overflow |= rp_metrics_tap_ignored(t->deps.metrics, vhost, r->ignored);
    if (overflow) rp_observe_vhost_overflow(vhost);
    for (size_t k = 0; k < r->n_stuck; k++)
        RP_ERROR("a dead letter could not be parked; it stays unacked on the tap until the "
                 "next reconnect",
                 "status", rp_status_string(r->stuck_st[k]), NULL);
    /* Ack what is settled; a failed ack drops the connection. */
    bool ok = true;
    for (size_t k = 0; ok && k < r->n_acks; k++)
        ok = t->deps.consumer.ack(t->deps.consumer.self, r->acks[k], r->multiple);
    if (r->parked > 0 || r->n_stuck > 0) {
        char np[24], nh[24];
        snprintf(np, sizeof np, "%" PRIu64, r->parked);
        snprintf(nh, sizeof nh, "%zu", r->held);
        RP_DEBUG("dead letters parked from the tap", "parked", np, "held", nh, NULL);
    }
    if (r->store_down) {
        if (r->warn_down)
            RP_WARN("the store is unreachable: the tap holds its dead letters unacked and "
                    "tries again",
                    "queue", cfg->broker.tap_queue, NULL);
        if (r->pause_ms > 0) rp_tap_pause(t, r->pause_ms);
    } else {
        if (r->resumed) RP_INFO("the tap parks again", "queue", cfg->broker.tap_queue, NULL);
        rp_tap_kick(t);
    }
    rp_tap_hold_check(t);
}

/* Stops consuming while the tap holds more than RP_TAP_HOLD_BYTES, and
 * consumes again once parks bring it to half: the broker keeps the rest
 * meanwhile, and the connection goes on serving everything else. */
static void rp_tap_hold_check(rp_tap *t) {
    rp_tap_hold_action a = rp_tap_state_hold_check(&t->s);
    if (a == RP_TAP_HOLD_NONE) return;
    char kib[24], n[24], back[24];
    snprintf(kib, sizeof kib, "%zu", t->s.held_bytes / 1024);
    snprintf(n, sizeof n, "%zu", rp_tap_state_messages(&t->s));
    if (a == RP_TAP_HOLD_CANCEL) {
        if (!t->deps.consumer.cancel(t->deps.consumer.self, t->s.tag)) return;
        rp_tap_state_hold_sent(&t->s, a);
        RP_INFO("the tap holds as much as it may keep in memory: it stops consuming until parks "
                "bring it to half (deliveries already on the way go back to the broker)",
                "held_kib", kib, "messages", n, NULL);
        return;
    }
    if (!t->deps.consumer.consume(t->deps.consumer.self, t->s.tag)) return;
    rp_tap_state_hold_sent(&t->s, a);
    snprintf(back, sizeof back, "%" PRIu64, t->s.returned);
    RP_INFO("the tap consumes again", "held_kib", kib, "messages", n, "returned", back, NULL);
}

/* Hands batches to the tap's thread while fewer than RP_TAP_IN_FLIGHT are
 * there (the second once a transaction's worth waits: rp_tap_state_take):
 * the next one is parked as soon as the last one commits, while the loop
 * acks the last one and gathers the one after; in a storm a short one with
 * none out waits a few milliseconds for more (rp_tap_state_gather), on a
 * timer that kicks again. */
static void rp_tap_kick(rp_tap *t) {
    if (t->stopped) return;
    int64_t wait_us = rp_tap_state_gather(&t->s, rp_clock_mono_us());
    if (wait_us > 0) {
        struct timeval tv = {(time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000)};
        evtimer_add(t->gather_ev, &tv);
        return;
    }
    for (;;) {
        bool nomem = false;
        rp_tap_batch *b = rp_tap_state_take(&t->s, &nomem);
        if (b == NULL) {
            if (nomem) rp_tap_pause(t, rp_tap_state_pause(&t->s));
            return;
        }
        b->arg = t;
        if (rp_tap_stopping(t) || rp_worker_submit(t->worker, rp_tap_work, rp_tap_done, b) != RP_OK) {
            /* Stopping: put them back; the broker keeps them for next time. */
            rp_tap_state_put_back(&t->s, b);
            return;
        }
    }
}

/* ---- the connection's hooks ---------------------------------------------------- */

static void rp_tap_on_up(void *arg) {
    rp_tap *t = arg;
    rp_tap_state_up(&t->s);
    /* Its queue is declared now: the bindings can be made. */
    rp_tap_bind_soon(t);
    rp_tap_kick(t);
}

static void rp_tap_on_down(void *arg) {
    rp_tap *t = arg;
    rp_tap_state_down(&t->s);
}

static bool rp_tap_returning(void *arg) { return rp_tap_state_off(&((rp_tap *)arg)->s); }

static void rp_tap_on_returned(void *arg) { rp_tap_state_returned(&((rp_tap *)arg)->s); }

/* A delivery is held here and handed on by rp_tap_on_kick, which runs once
 * the consumer's read is all decoded: a read brings many deliveries in a
 * storm, and kicked at each one the first went alone to the tap's thread
 * (nothing out) while the rest waited for it, a transaction of one in
 * every other (291 of the 618 transactions of a 50,000 storm held 5.5
 * dead letters each on average). The light storm loses nothing: its read
 * brings one, handed on in the same pass of the loop. */
static void rp_tap_on_item(void *arg, rp_tap_item *it) {
    rp_tap *t = arg;
    it->received_us = rp_clock_mono_us();
    rp_tap_state_hold(&t->s, it);
    event_active(t->kick_ev, 0, 0); /* (already active: nothing more) */
    rp_tap_hold_check(t);
}

static bool rp_tap_conn_stopping(void *arg) { return rp_tap_stopping(arg); }

rp_status rp_tap_connect(rp_tap *t) {
    rp_tap_consumer_hooks hooks = {
        .arg = t,
        .on_up = rp_tap_on_up,
        .on_down = rp_tap_on_down,
        .returning = rp_tap_returning,
        .on_returned = rp_tap_on_returned,
        .on_item = rp_tap_on_item,
        .stopping = rp_tap_conn_stopping,
    };
    return t->deps.consumer.start(t->deps.consumer.self, &hooks);
}

void rp_tap_gauges(const rp_tap *t, int64_t *held_bytes, bool *paused) {
    *held_bytes = (int64_t)t->s.held_bytes;
    *paused = rp_tap_state_paused(&t->s);
}

/* ---- bindings ------------------------------------------------------------------- */

/* The binding thread: derives the tap's bindings from the broker's
 * definitions and adds or removes what differs (the bind port); logs what
 * core makes of it. */
static bool rp_tap_reconcile_bindings(rp_tap *t) {
    const char *vhost = *t->deps.vhost;
    if (t->deps.bind == NULL || vhost == NULL) return false;
    const rp_config *cfg = rp_tap_cfg(t);
    rp_tap_bind_stats s = {0};
    const char *reason = "";
    rp_status st = t->deps.bind->reconcile(t->deps.bind->self, cfg, vhost, &s, &reason);
    char ex[24], add[24], rem[24], fail[24], unb[24];
    snprintf(ex, sizeof ex, "%zu", s.exchanges);
    snprintf(add, sizeof add, "%zu", s.added);
    snprintf(rem, sizeof rem, "%zu", s.removed);
    snprintf(fail, sizeof fail, "%zu", s.failed);
    snprintf(unb, sizeof unb, "%zu", s.unbindable);
    rp_tap_bind_outcome o = rp_tap_bind_judge(st, &s);
    switch (o) {
    case RP_TAP_BIND_TAP_MISSING:
        RP_DEBUG("the tap queue is not declared yet; its bindings wait for the connection",
                 "queue", cfg->broker.tap_queue, NULL);
        break;
    case RP_TAP_BIND_FAILED:
        RP_WARN("the tap's bindings could not be reconciled; tried again in 2 s",
                "status", rp_status_string(st), "reason", reason, "added", add, "removed", rem,
                "failed", fail, NULL);
        break;
    case RP_TAP_BIND_CHANGED:
        RP_INFO("tap bindings reconciled", "queue", cfg->broker.tap_queue, "exchanges", ex,
                "added", add, "removed", rem, NULL);
        break;
    case RP_TAP_BIND_IN_PLACE:
        RP_INFO("tap bindings in place", "queue", cfg->broker.tap_queue, "exchanges", ex, NULL);
        break;
    }
    /* Each such queue is a DEAD_LETTER sighting of the sweep (logged when
     * it opens and when it clears, rp_judge_dead_letter_route), not a
     * warning at every reconcile. */
    if (s.unbindable > 0)
        RP_DEBUG("owned queues dead-letter through the default exchange, which the tap cannot "
                 "bind: surfaced by the sweep, their dead-letter queue backfilled",
                 "queues", unb, NULL);
    return rp_tap_bind_in_place(o);
}

/* How long after a failed reconcile it is tried again. */
#define RP_TAP_BIND_RETRY_MS 2000

static void rp_tap_bind_work(void *ctx, void *job) {
    RP_UNUSED(ctx);
    rp_tap *t = job;
    t->bind_ok = rp_tap_reconcile_bindings(t);
}

static void rp_tap_bind_done(void *job, bool cancelled) {
    rp_tap *t = job;
    t->bind_queued = false;
    if (cancelled || t->stopped) return;
    if (t->bind_ok) {
        t->bound_gen = t->bind_gen;
    } else if (!t->bind_again && t->bind_retry_ev != NULL) {
        struct timeval tv = {RP_TAP_BIND_RETRY_MS / 1000, (RP_TAP_BIND_RETRY_MS % 1000) * 1000};
        evtimer_add(t->bind_retry_ev, &tv);
    }
    if (t->bind_again) {
        t->bind_again = false;
        rp_tap_bind_soon(t);
    }
}

static void rp_tap_on_bind_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_tap *t = arg;
    if (*t->deps.broker_up) rp_tap_bind_soon(t);
}

bool rp_tap_bound(const rp_tap *t) {
    if (t == NULL || t->bind_worker == NULL) return true; /* no management API: no bindings */
    return t->bound_gen != 0 && t->bound_gen == *t->deps.broker_generation;
}

void rp_tap_bind_soon(rp_tap *t) {
    if (t == NULL || t->stopped || t->bind_worker == NULL) return;
    if (t->bind_queued) {
        /* One is waiting or running: it may have read the broker before
         * this change, so one more follows it. */
        t->bind_again = true;
        return;
    }
    t->bind_queued = true;
    t->bind_gen = *t->deps.broker_generation;
    if (t->bind_retry_ev) evtimer_del(t->bind_retry_ev);
    if (rp_worker_submit(t->bind_worker, rp_tap_bind_work, rp_tap_bind_done, t) != RP_OK)
        t->bind_queued = false;
}

/* ---- life ---------------------------------------------------------------------- */

rp_tap *rp_tap_new(struct event_base *base, const rp_tap_deps *deps) {
    rp_tap *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->deps = *deps;
    t->base = base;
    rp_tap_state_init(&t->s, &deps->consumer.items);
    t->retry_ev = evtimer_new(base, rp_tap_on_retry, t);
    t->kick_ev = event_new(base, -1, 0, rp_tap_on_kick, t);
    t->gather_ev = evtimer_new(base, rp_tap_on_kick, t);
    t->bind_retry_ev = evtimer_new(base, rp_tap_on_bind_retry, t);
    t->ports = deps->store.ports;
    t->ports.publisher = deps->feed;
    t->park_mem = rp_tap_park_mem_new();
    t->worker = rp_worker_new(base, "tap", NULL, t, 0);
    if (deps->bind != NULL) t->bind_worker = rp_worker_new(base, "tapbind", NULL, t, 0);
    if (t->retry_ev == NULL || t->kick_ev == NULL || t->gather_ev == NULL ||
        t->bind_retry_ev == NULL || t->park_mem == NULL ||
        t->worker == NULL || (deps->bind != NULL && t->bind_worker == NULL)) {
        rp_tap_free(t);
        return NULL;
    }
    return t;
}

bool rp_tap_busy(const rp_tap *t) { return t != NULL && t->s.in_flight > 0; }

void rp_tap_cancel(rp_tap *t) {
    if (t == NULL || t->deps.store.cancel == NULL) return;
    t->deps.store.cancel(t->deps.store.self);
}

void rp_tap_stop(rp_tap *t) {
    if (t == NULL || t->stopped) return;
    t->stopped = true;
    rp_tap_state_stop(&t->s);
    if (t->kick_ev) event_del(t->kick_ev);
    if (t->gather_ev) event_del(t->gather_ev);
    /* The batch in flight stops at its next message (stopping); its done
     * function runs here and acks what was parked. */
    if (t->worker) rp_worker_free(t->worker);
    t->worker = NULL;
    if (t->bind_worker) rp_worker_free(t->bind_worker);
    t->bind_worker = NULL;
}

void rp_tap_free(rp_tap *t) {
    if (t == NULL) return;
    rp_tap_stop(t);
    if (t->retry_ev) event_free(t->retry_ev);
    if (t->kick_ev) event_free(t->kick_ev);
    if (t->gather_ev) event_free(t->gather_ev);
    if (t->bind_retry_ev) event_free(t->bind_retry_ev);
    rp_tap_state_cleanup(&t->s);
    rp_tap_park_mem_free(t->park_mem); /* the thread is joined (rp_tap_stop) */
    free(t);
}

bool rp_tap_gauges_hook(void *tapp, int64_t *held_bytes, bool *paused) {
    rp_tap *t = *(rp_tap **)tapp;
    if (t == NULL) return false;
    rp_tap_gauges(t, held_bytes, paused);
    return true;
}

bool rp_tap_bound_hook(void *tapp) { return rp_tap_bound(*(rp_tap **)tapp); }

void rp_tap_bind_soon_hook(void *tapp) { rp_tap_bind_soon(*(rp_tap **)tapp); }

void rp_tap_queue_hook(void *tapp, const char *vhost, const char *name, bool dlq, bool created) {
    RP_UNUSED(name);
    RP_UNUSED(dlq);
    RP_UNUSED(created);
    rp_tap *t = *(rp_tap **)tapp;
    /* Another vhost's change is another tap's (broker.vhosts). */
    const char *mine = t != NULL ? *t->deps.vhost : NULL;
    if (vhost != NULL && mine != NULL && strcmp(vhost, mine) != 0) return;
    rp_tap_bind_soon(t);
}
