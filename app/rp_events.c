/*
 * Broker events as they happen (rp_events.h): the wiring around the
 * decisions of core/rp_consumers.h (the inventory, the consumer counts, the
 * debounce, the seed merge, the reconcile timer; why they are what they
 * are: the comment at the top of core/rp_consumers.c). Here: the timers
 * core asks for, the jobs on the "events" and "policy" threads over the
 * runner port's sets (core/rp_runner_port.h), the counts the sweep shares,
 * and every log line.
 */
#include "rp_events.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "rp_consumers.h"
#include "rp_log.h"
#include "rp_pass.h"
#include "rp_pass_policy.h"
#include "worker.h"

static const char *const rp_own_policies[] = {RP_PASS_POLICY_NAME, RP_PASS_POLICY_CLASSIC_NAME,
                                              NULL};

typedef struct rp_hook {
    rp_events_queue_fn fn;
    void *arg;
} rp_hook;

/* The events' consumer count of a queue that the sweep uses too (see
 * rp_events_wrap_sweep_port), until until_mono. */
typedef struct rp_recent {
    char *vhost, *name;
    int64_t consumers;
    int64_t until_mono;
} rp_recent;

struct rp_events {
    rp_events_deps deps; /* see rp_events.h */
    unsigned generation; /* grows at every rp_events_on_up: a job of an older one is stale */
    bool up;             /* between rp_events_on_up and rp_events_on_down */
    rp_consumers *core;
    struct event *check_ev;
    rp_hook *hooks;
    size_t n_hooks;
    /* Seeding and reconciles run on the policy thread, over a runner set of
     * their own (a management client serves one thread). */
    rp_worker *policy;
    rp_runner_set *pset;
    struct event *reconcile_ev;
    struct event *seed_retry_ev;
    /* Checks run on a thread of their own over a runner set of their own (a
     * store session and a management client: rp_runner_port.h), so that a
     * long sweep on the store thread never delays them. */
    rp_worker *checker;
    rp_runner_set *cset;
    const rp_ports *cports; /* cset's, lent for its life */
    /* The consumer counts from events that the sweep uses too (see
     * rp_events_wrap_sweep_port): written by the loop, read by the store
     * thread, under recent_mu. */
    pthread_mutex_t recent_mu;
    bool recent_mu_ready;
    rp_recent *recent;
    size_t n_recent, cap_recent;
    rp_broker_port sweep_real;
    rp_queue_facts *sweep_copy; /* store thread only */
    size_t cap_sweep_copy;
    bool closing; /* rp_events_free runs: done functions only free their job */
};

/* ---- timers core asks for ---------------------------------------------------- */

static void rp_arm_at(struct event *ev, int64_t at, int64_t now) {
    int64_t wait = at > now ? at - now : 0;
    struct timeval tv = {(time_t)(wait / 1000), (suseconds_t)((wait % 1000) * 1000)};
    evtimer_add(ev, &tv);
}

static void rp_arm(rp_events *e, rp_consumers_due due, int64_t now) {
    if (due.check_at) rp_arm_at(e->check_ev, due.check_at, now);
    if (due.reconcile_at) rp_arm_at(e->reconcile_ev, due.reconcile_at, now);
}

/* ---- what core says ------------------------------------------------------------ */

static void rp_sink_queue(void *self, const char *vhost, const char *name, bool dlq,
                          bool created) {
    rp_events *e = self;
    for (size_t i = 0; i < e->n_hooks; i++) e->hooks[i].fn(e->hooks[i].arg, vhost, name, dlq, created);
}

/* Loop: records what a queue's count is now (or forgets it), and drops
 * what has expired. */
static void rp_sink_recent(void *self, const char *vhost, const char *name, bool known,
                           int64_t consumers, int64_t now, int64_t until) {
    rp_events *e = self;
    pthread_mutex_lock(&e->recent_mu);
    for (size_t i = 0; i < e->n_recent;) {
        if (e->recent[i].until_mono <= now ||
            (strcmp(e->recent[i].vhost, vhost) == 0 && strcmp(e->recent[i].name, name) == 0)) {
            free(e->recent[i].vhost);
            free(e->recent[i].name);
            e->recent[i] = e->recent[--e->n_recent];
            continue;
        }
        i++;
    }
    if (known && e->n_recent == e->cap_recent) {
        size_t cap = e->cap_recent ? e->cap_recent * 2 : 16;
        rp_recent *r = realloc(e->recent, cap * sizeof *r);
        if (r != NULL) {
            e->recent = r;
            e->cap_recent = cap;
        }
    }
    if (known && e->n_recent < e->cap_recent) {
        rp_recent *r = &e->recent[e->n_recent];
        r->vhost = strdup(vhost);
        r->name = strdup(name);
        r->consumers = consumers;
        r->until_mono = until;
        if (r->vhost && r->name) {
            e->n_recent++;
        } else {
            free(r->vhost);
            free(r->name);
        }
    }
    pthread_mutex_unlock(&e->recent_mu);
}

static void rp_sink_reconcile(void *self, bool wanted, const char *why, const char *name) {
    RP_UNUSED(self);
    if (!wanted)
        RP_DEBUG("policy reconcile not run: reap.enabled is false", "why", why, "name", name, NULL);
    else
        RP_DEBUG("policy reconcile wanted", "why", why, "name", name, NULL);
}

static void rp_sink_pattern_unknown(void *self, bool first, const char *policy, const char *vhost,
                                    const char *queue) {
    RP_UNUSED(self);
    if (first)
        RP_WARN("a policy pattern could not be matched against an owned queue within the "
                "match limits: its coverage is unknown, left to the policy reconcile; later "
                "ones are logged at debug level",
                "policy", policy, "vhost", vhost, "queue", queue, NULL);
    else
        RP_DEBUG("policy pattern over the match limits: coverage unknown", "policy", policy,
                 "vhost", vhost, "queue", queue, NULL);
}

static void rp_sink_check_skipped(void *self, const char *name) {
    RP_UNUSED(self);
    RP_ERROR("out of memory: event check skipped", "queue", name, NULL);
}

rp_status rp_events_add_queue_hook(rp_events *e, rp_events_queue_fn fn, void *arg) {
    if (e == NULL || fn == NULL) return RP_ERR_INVALID;
    rp_hook *h = realloc(e->hooks, (e->n_hooks + 1) * sizeof *h);
    if (h == NULL) return RP_ERR_NOMEM;
    e->hooks = h;
    e->hooks[e->n_hooks++] = (rp_hook){fn, arg};
    return RP_OK;
}

/* ---- the counts the sweep shares -------------------------------------------- */

/* While a queue's consumers changed less than a statistics interval ago
 * (and no channel of it closed meanwhile), the management API's count of
 * it is stale and the events' count is the one to use - in the sweep too:
 * otherwise a sweep right after a cancel reads the stale consumer, finds
 * nothing, and clears the sighting the event check just opened, which the
 * next check opens again. */
static rp_recent *rp_recent_find(rp_events *e, const char *vhost, const char *name) {
    for (size_t i = 0; i < e->n_recent; i++)
        if (strcmp(e->recent[i].vhost, vhost) == 0 && strcmp(e->recent[i].name, name) == 0)
            return &e->recent[i];
    return NULL;
}

/* Store thread: applies the events' counts to facts (a copy). */
static void rp_recent_apply(rp_events *e, rp_queue_facts *q, size_t n) {
    int64_t t = e->deps.mono_ms();
    pthread_mutex_lock(&e->recent_mu);
    for (size_t i = 0; i < n && e->n_recent > 0; i++) {
        if (q[i].vhost == NULL || q[i].name == NULL) continue;
        const rp_recent *r = rp_recent_find(e, q[i].vhost, q[i].name);
        if (r == NULL || r->until_mono <= t) continue;
        if (!q[i].consumers_known || q[i].consumers != r->consumers) {
            char was[24], now[24];
            snprintf(was, sizeof was, "%" PRId64, q[i].consumers);
            snprintf(now, sizeof now, "%" PRId64, r->consumers);
            RP_DEBUG("sweep: consumer count from events", "queue", q[i].name, "reported",
                     q[i].consumers_known ? was : "unknown", "from_events", now, NULL);
        }
        q[i].consumers_known = true;
        q[i].consumers = r->consumers;
    }
    pthread_mutex_unlock(&e->recent_mu);
}

static rp_status rp_sweep_list(void *self, size_t page, rp_queue_page *out) {
    rp_events *e = self;
    rp_status st = e->sweep_real.list_queues(e->sweep_real.self, page, out);
    if (st != RP_OK || out->n == 0) return st;
    if (out->n > e->cap_sweep_copy) {
        rp_queue_facts *c = realloc(e->sweep_copy, out->n * sizeof *c);
        if (c == NULL) return st; /* the reading as it is: what the sweep did before */
        e->sweep_copy = c;
        e->cap_sweep_copy = out->n;
    }
    memcpy(e->sweep_copy, out->queues, out->n * sizeof *e->sweep_copy);
    rp_recent_apply(e, e->sweep_copy, out->n);
    out->queues = e->sweep_copy;
    return st;
}

static rp_status rp_sweep_get(void *self, const char *vhost, const char *name,
                              rp_queue_facts *out) {
    rp_events *e = self;
    rp_status st = e->sweep_real.get_queue(e->sweep_real.self, vhost, name, out);
    if (st == RP_OK) rp_recent_apply(e, out, 1);
    return st;
}

static rp_status rp_sweep_timeout(void *self, const char *vhost, const char *name,
                                  rp_timeout_in_force *out) {
    rp_events *e = self;
    return e->sweep_real.get_timeout_in_force(e->sweep_real.self, vhost, name, out);
}

static rp_status rp_sweep_exchange(void *self, const char *vhost, const char *name,
                                   bool *exists) {
    rp_events *e = self;
    return e->sweep_real.exchange_exists(e->sweep_real.self, vhost, name, exists);
}

static rp_status rp_sweep_bound(void *self, const char *vhost, const char *name,
                                const char *const *except, size_t n_except, bool *bound) {
    rp_events *e = self;
    return e->sweep_real.exchange_bound(e->sweep_real.self, vhost, name, except, n_except, bound);
}

static rp_status rp_sweep_channels(void *self, rp_channel_list *out) {
    rp_events *e = self;
    return e->sweep_real.list_channels(e->sweep_real.self, out);
}

static rp_status rp_sweep_consumers(void *self, const char *vhost, const char *name,
                                   rp_name_list *out) {
    rp_events *e = self;
    return e->sweep_real.consumer_connections(e->sweep_real.self, vhost, name, out);
}

static rp_status rp_sweep_close(void *self, const char *name, const char *reason) {
    rp_events *e = self;
    return e->sweep_real.close_connection(e->sweep_real.self, name, reason);
}

void rp_events_wrap_sweep_port(rp_events *e, rp_broker_port *port) {
    if (e == NULL || port->list_queues == NULL || port->get_queue == NULL ||
        port->get_timeout_in_force == NULL)
        return;
    e->sweep_real = *port;
    port->self = e;
    port->list_queues = rp_sweep_list;
    port->get_queue = rp_sweep_get;
    port->get_timeout_in_force = rp_sweep_timeout;
    if (port->exchange_exists) port->exchange_exists = rp_sweep_exchange;
    if (port->exchange_bound) port->exchange_bound = rp_sweep_bound;
    if (port->list_channels) port->list_channels = rp_sweep_channels;
    /* Issue 18 item 4's restart-loop breaker: through to the real port. */
    if (port->consumer_connections) port->consumer_connections = rp_sweep_consumers;
    if (port->close_connection) port->close_connection = rp_sweep_close;
}

/* ---- the check (the "events" thread) ---------------------------------------- */

typedef struct rp_check_job {
    rp_events *e;
    const rp_config *cfg; /* *deps.cfg when made, on the loop (a reload replaces it) */
    unsigned generation;
    rp_consumers_batch batch;
    rp_report report;
    rp_status status;
    int64_t duration_ms;
    int64_t judged_wall_ms;
} rp_check_job;

static rp_consumers_check *rp_job_item(rp_check_job *j, const char *vhost, const char *name) {
    for (size_t i = 0; i < j->batch.n; i++) {
        rp_consumers_check *it = &j->batch.items[i];
        if (strcmp(it->vhost, vhost) == 0 && strcmp(it->name, name) == 0) return it;
    }
    return NULL;
}

/* The broker port of a check: the runner's, with the consumer count from
 * the events where the item carries one. The "events" thread. */
static rp_status rp_check_get_queue(void *self, const char *vhost, const char *name,
                                    rp_queue_facts *out) {
    rp_check_job *j = self;
    const rp_broker_port *real = &j->e->cports->broker;
    rp_status st = real->get_queue(real->self, vhost, name, out);
    rp_consumers_check *it = rp_job_item(j, vhost, name);
    if (it == NULL) return st;
    it->read_status = st;
    it->got = (rp_consumers_reading){0};
    if (st != RP_OK) return st;
    it->got = (rp_consumers_reading){true, out->counts_known, out->consumers_known,
                                     out->ready, out->unacked, out->consumers};
    if (it->override) {
        out->consumers_known = true;
        out->consumers = it->consumers_ev;
    }
    return st;
}

/* Whether a dead-letter exchange exists, through the runner's port (a
 * check judges an owned queue's dead-letter route as the sweep does). */
static rp_status rp_check_exchange_exists(void *self, const char *vhost, const char *name,
                                          bool *exists) {
    rp_check_job *j = self;
    const rp_broker_port *real = &j->e->cports->broker;
    return real->exchange_exists(real->self, vhost, name, exists);
}

static rp_status rp_check_exchange_bound(void *self, const char *vhost, const char *name,
                                         const char *const *except, size_t n_except,
                                         bool *bound) {
    rp_check_job *j = self;
    const rp_broker_port *real = &j->e->cports->broker;
    return real->exchange_bound(real->self, vhost, name, except, n_except, bound);
}

static void rp_check_work(void *ctx, void *arg) {
    rp_events *e = ctx;
    rp_check_job *j = arg;
    const rp_config *cfg = j->cfg;
    int64_t t0 = e->deps.mono_ms();
    char err[256] = "";
    /* A store that is down shows in the report (the sightings cannot be
     * read nor opened); the check itself still runs. */
    if (e->deps.runner.connect(e->deps.runner.self, e->cset, err, sizeof err) != RP_OK)
        RP_DEBUG("event check: store unreachable", "reason", err, NULL);
    rp_ports ports = *e->cports;
    ports.broker.self = j;
    ports.broker.get_queue = rp_check_get_queue;
    ports.broker.list_queues = NULL;
    ports.broker.get_timeout_in_force = NULL;
    ports.broker.list_channels = NULL; /* a check judges no broker STALLED */
    ports.broker.exchange_exists =
        e->cports->broker.exchange_exists ? rp_check_exchange_exists : NULL;
    ports.broker.exchange_bound =
        e->cports->broker.exchange_bound ? rp_check_exchange_bound : NULL;
    /* A targeted check restarts nothing (rp_pass_queues counts no wedge). */
    ports.broker.consumer_connections = NULL;
    ports.broker.close_connection = NULL;
    rp_pass_options opt;
    e->deps.runner.pass_options(e->deps.runner.self, cfg, &opt);
    size_t n = j->batch.n;
    rp_queue_ref *refs = calloc(n ? n : 1, sizeof *refs);
    if (refs == NULL || e->cports->broker.get_queue == NULL) {
        free(refs);
        j->status = refs == NULL ? RP_ERR_NOMEM : RP_ERR_INVALID;
        return;
    }
    for (size_t i = 0; i < n; i++)
        refs[i] = (rp_queue_ref){j->batch.items[i].vhost, j->batch.items[i].name};
    rp_report_cleanup(&j->report);
    j->status = rp_pass_queues(&ports, &opt, refs, n, &j->report);
    free(refs);
    j->judged_wall_ms = e->deps.wall_ms();
    j->duration_ms = e->deps.mono_ms() - t0;
}

static void rp_check_job_free(rp_check_job *j) {
    rp_consumers_batch_cleanup(&j->batch);
    rp_report_cleanup(&j->report);
    free(j);
}

static void rp_i64(char *buf, size_t n, bool known, int64_t v) {
    if (known) snprintf(buf, n, "%" PRId64, v);
    else snprintf(buf, n, "unknown");
}

/* Loop: log what each queue read and what was judged; core then
 * reschedules later checks that found nothing new and resets bases from
 * fresh readings. */
static void rp_check_done(void *arg, bool cancelled) {
    rp_check_job *j = arg;
    rp_events *e = j->e;
    if (cancelled || e == NULL || e->closing) {
        rp_check_job_free(j);
        return;
    }
    if (j->status != RP_OK)
        RP_ERROR("event check stopped early", "status", rp_status_string(j->status), NULL);
    for (size_t i = 0; i < j->report.n_notes; i++)
        RP_INFO("event check note", "note", j->report.notes[i], NULL);
    for (size_t i = 0; i < j->batch.n; i++) {
        const rp_consumers_check *it = &j->batch.items[i];
        const rp_consumers_reading *g = &it->got;
        char cons[24], ev[24], unacked[24], ready[24], delay[24] = "", judged[48] = "nothing new";
        rp_i64(cons, sizeof cons, g->read && g->consumers_known, g->consumers);
        rp_i64(ev, sizeof ev, it->override, it->consumers_ev);
        rp_i64(unacked, sizeof unacked, g->read && g->counts_known, g->unacked);
        rp_i64(ready, sizeof ready, g->read && g->counts_known, g->ready);
        if (it->has_ts) snprintf(delay, sizeof delay, "%" PRId64, j->judged_wall_ms - it->event_ts_ms);
        for (size_t k = 0; k < j->report.n_verdicts; k++) {
            const rp_verdict *v = &j->report.verdicts[k];
            if (v->queue && strcmp(v->queue, it->name) == 0)
                snprintf(judged, sizeof judged, "%s %s", rp_condition_string(v->condition),
                         rp_action_string(v->action));
        }
        RP_INFO("event check", "queue", it->name, "vhost", it->vhost, "trigger", it->trigger,
                "phase", it->late ? "after statistics" : "at once", "read",
                g->read ? "yes" : (it->read_status == RP_ERR_NOT_FOUND ? "gone" : "no"),
                "consumers_reported", cons, "consumers_from_events", ev, "unacked", unacked,
                "ready", ready, "judged", judged, "event_to_judgement_ms",
                it->has_ts ? delay : NULL, NULL);
    }
    int64_t now = e->deps.mono_ms();
    rp_consumers_due due = rp_consumers_check_done(e->core, &j->batch,
                                                   j->generation != e->generation, now);
    char n[24], ms[24];
    snprintf(n, sizeof n, "%zu", j->batch.n);
    snprintf(ms, sizeof ms, "%" PRId64, j->duration_ms);
    RP_DEBUG("event check finished", "queues", n, "duration_ms", ms, NULL);
    rp_check_job_free(j);
    rp_arm(e, due, now);
}

static void rp_on_check_timer(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_events *e = arg;
    int64_t t = e->deps.mono_ms();
    rp_check_job *j = calloc(1, sizeof *j);
    rp_consumers_due due = {0, 0};
    if (j == NULL) {
        RP_ERROR("out of memory: event checks delayed", NULL);
        rp_arm(e, (rp_consumers_due){rp_consumers_check_at(e->core), 0}, t);
        return;
    }
    if (rp_consumers_take_due(e->core, t, &j->batch, &due) != RP_OK) {
        free(j);
        RP_ERROR("out of memory: event checks delayed", NULL);
        rp_arm(e, due, t);
        return;
    }
    if (j->batch.n == 0) {
        free(j);
        rp_arm(e, due, t);
        return;
    }
    j->e = e;
    j->cfg = *e->deps.cfg;
    j->generation = e->generation;
    rp_report_init(&j->report, false);
    if (__atomic_load_n(e->deps.stopping, __ATOMIC_ACQUIRE) ||
        rp_worker_submit(e->checker, rp_check_work, rp_check_done, j) != RP_OK) {
        rp_check_job_free(j);
        rp_consumers_check_abort(e->core);
        return; /* stopping */
    }
}

/* ---- policies (policy thread) ------------------------------------------------ */

typedef struct rp_reconcile_job {
    rp_events *e;
    const rp_config *cfg; /* *deps.cfg when made, on the loop */
    rp_report report;
    rp_pass_policy_stats stats;
    rp_status status;
    int64_t duration_ms;
} rp_reconcile_job;

static void rp_reconcile_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_reconcile_job *j = arg;
    const rp_events *e = j->e;
    int64_t t0 = e->deps.mono_ms();
    memset(&j->stats, 0, sizeof j->stats);
    j->status = e->deps.runner.reconcile(e->deps.runner.self, e->pset, j->cfg, &j->report,
                                         &j->stats);
    j->duration_ms = e->deps.mono_ms() - t0;
}

static void rp_reconcile_done(void *arg, bool cancelled) {
    rp_reconcile_job *j = arg;
    rp_events *e = j->e;
    if (!cancelled && !e->closing) {
        int64_t now = e->deps.mono_ms();
        for (size_t i = 0; i < j->report.n_policies; i++) {
            const rp_policy_check *pc = &j->report.policies[i];
            rp_metrics_set_policy_check(e->deps.metrics, pc);
            RP_LOG_AT(pc->verified ? RP_LOG_INFO : RP_LOG_WARN, "policy reconciled on event",
                      "policy", pc->name, "verified", pc->verified ? "true" : "false", "detail",
                      pc->detail, NULL);
        }
        for (size_t i = 0; i < j->report.n_notes; i++)
            RP_INFO("policy note", "note", j->report.notes[i], NULL);
        bool backoff = j->status != RP_OK || j->stats.refused > 0 || j->stats.writes > 0;
        rp_consumers_due due = rp_consumers_reconcile_done(e->core, backoff, now);
        char w[24], ms[24];
        snprintf(w, sizeof w, "%u", j->stats.writes);
        snprintf(ms, sizeof ms, "%" PRId64, j->duration_ms);
        RP_INFO("policy reconcile on event finished", "status", rp_status_string(j->status),
                "writes", w, "duration_ms", ms, NULL);
        rp_arm(e, due, now);
    }
    rp_report_cleanup(&j->report);
    free(j);
}

static void rp_on_reconcile_timer(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_events *e = arg;
    int64_t t = e->deps.mono_ms();
    rp_consumers_due due;
    if (!rp_consumers_reconcile_fire(e->core, t, &due)) {
        rp_arm(e, due, t);
        return;
    }
    rp_reconcile_job *j = calloc(1, sizeof *j);
    if (j == NULL) {
        rp_consumers_reconcile_abort(e->core);
        return;
    }
    j->e = e;
    j->cfg = *e->deps.cfg;
    rp_report_init(&j->report, false);
    if (rp_worker_submit(e->policy, rp_reconcile_work, rp_reconcile_done, j) != RP_OK) {
        rp_report_cleanup(&j->report);
        free(j);
        rp_consumers_reconcile_abort(e->core);
        return;
    }
}

/* ---- the seed (policy thread) ------------------------------------------------ */

typedef struct rp_seed_job {
    rp_events *e;
    const rp_config *cfg; /* *deps.cfg when made, on the loop */
    unsigned generation;
    rp_consumers_seed_item *items;
    size_t n, cap;
    rp_status status;
    char error[256];
} rp_seed_job;

static void rp_seed_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_seed_job *j = arg;
    const rp_config *cfg = j->cfg;
    for (size_t page = 1;; page++) {
        rp_queue_page pg;
        const rp_runner_port *rp = &j->e->deps.runner;
        rp_status st = rp->list_queues(rp->self, j->e->pset, page, &pg);
        if (st != RP_OK) {
            j->status = st;
            snprintf(j->error, sizeof j->error, "%s", rp->last_error(rp->self, j->e->pset));
            return;
        }
        for (size_t i = 0; i < pg.n; i++) {
            const rp_queue_facts *q = &pg.queues[i];
            bool dlq;
            if (!rp_consumers_classify(cfg, q->name, &dlq)) continue;
            if (j->n == j->cap) {
                size_t cap = j->cap ? j->cap * 2 : 64;
                rp_consumers_seed_item *ni = realloc(j->items, cap * sizeof *ni);
                if (ni == NULL) {
                    j->status = RP_ERR_NOMEM;
                    return;
                }
                j->items = ni;
                j->cap = cap;
            }
            rp_consumers_seed_item *it = &j->items[j->n];
            char *vhost = strdup(q->vhost), *name = strdup(q->name);
            if (vhost == NULL || name == NULL) {
                free(vhost);
                free(name);
                j->status = RP_ERR_NOMEM;
                return;
            }
            *it = (rp_consumers_seed_item){vhost, name, dlq, q->consumers_known, q->consumers};
            j->n++;
        }
        if (pg.last || pg.n == 0) break;
    }
    j->status = RP_OK;
}

static void rp_seed_job_free(rp_seed_job *j) {
    for (size_t i = 0; i < j->n; i++) {
        free((char *)j->items[i].vhost);
        free((char *)j->items[i].name);
    }
    free(j->items);
    free(j);
}

static void rp_start_seed(rp_events *e);

static void rp_seed_done(void *arg, bool cancelled) {
    rp_seed_job *j = arg;
    rp_events *e = j->e;
    if (cancelled || e->closing) {
        rp_seed_job_free(j);
        return;
    }
    rp_consumers_seed_result r =
        rp_consumers_seed_done(e->core, j->generation != e->generation, j->status,
                               j->items, j->n, e->deps.mono_ms());
    switch (r.outcome) {
    case RP_SEED_AGAIN:
        /* Reconnected meanwhile: that listing may miss what changed. */
        rp_seed_job_free(j);
        rp_start_seed(e);
        return;
    case RP_SEED_RETRY: {
        char in[24];
        snprintf(in, sizeof in, "%d", r.retry_s);
        RP_WARN("broker events: the owned-queue listing failed; trying again", "status",
                rp_status_string(j->status), "reason", j->error, "in_seconds", in, NULL);
        rp_seed_job_free(j);
        struct timeval tv = {r.retry_s, 0};
        evtimer_add(e->seed_retry_ev, &tv);
        return;
    }
    case RP_SEED_MERGED:
    default: {
        char n[24], a[24], rm[24];
        snprintf(n, sizeof n, "%zu", r.owned);
        snprintf(a, sizeof a, "%zu", r.added);
        snprintf(rm, sizeof rm, "%zu", r.removed);
        RP_INFO("broker events: owned queues listed", "owned", n, "added", a, "removed", rm, NULL);
        rp_seed_job_free(j);
        return;
    }
    }
}

static void rp_start_seed(rp_events *e) {
    if (!rp_consumers_seed_begin(e->core, e->deps.mono_ms())) return;
    rp_seed_job *j = calloc(1, sizeof *j);
    if (j == NULL) {
        rp_consumers_seed_abort(e->core);
        return;
    }
    j->e = e;
    j->cfg = *e->deps.cfg;
    j->generation = e->generation;
    if (rp_worker_submit(e->policy, rp_seed_work, rp_seed_done, j) != RP_OK) {
        free(j);
        rp_consumers_seed_abort(e->core);
        return;
    }
}

/* ---- events ------------------------------------------------------------------ */

void rp_events_on_event(rp_events *e, const rp_broker_event *ev) {
    if (ev->vhost[0] != '\0' && e->deps.watched != NULL &&
        !e->deps.watched(e->deps.watched_arg, ev->vhost))
        return; /* a vhost reaperd does not watch (broker.vhosts) */
    RP_DEBUG("broker event", "routing_key", ev->routing_key, "queue",
             ev->name[0] ? ev->name : NULL, NULL);
    int64_t now = e->deps.mono_ms();
    rp_arm(e, rp_consumers_on_event(e->core, *e->deps.cfg, ev, now), now);
}

static void rp_on_seed_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_events *e = arg;
    if (e->up) rp_start_seed(e);
}

void rp_events_on_up(rp_events *e) {
    e->up = true;
    e->generation++;
    evtimer_del(e->seed_retry_ev);
    rp_start_seed(e);
}

void rp_events_on_down(rp_events *e) { e->up = false; }

/* ---- life ------------------------------------------------------------------------ */

rp_events *rp_events_new(struct event_base *base, const rp_events_deps *deps) {
    if (base == NULL || deps == NULL || deps->cfg == NULL || *deps->cfg == NULL ||
        deps->stopping == NULL || deps->mono_ms == NULL || deps->wall_ms == NULL ||
        deps->runner.open == NULL || deps->runner.ports == NULL || deps->runner.connect == NULL ||
        deps->runner.pass_options == NULL || deps->runner.list_queues == NULL ||
        deps->runner.last_error == NULL || deps->runner.reconcile == NULL ||
        deps->runner.close == NULL)
        return NULL;
    rp_events *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->deps = *deps;
    if (pthread_mutex_init(&e->recent_mu, NULL) != 0) {
        free(e);
        return NULL;
    }
    e->recent_mu_ready = true;
    rp_consumers_sink sink = {
        .self = e,
        .queue = rp_sink_queue,
        .recent = rp_sink_recent,
        .reconcile = rp_sink_reconcile,
        .pattern_unknown = rp_sink_pattern_unknown,
        .check_skipped = rp_sink_check_skipped,
    };
    e->core = rp_consumers_new(&sink, rp_own_policies);
    e->check_ev = evtimer_new(base, rp_on_check_timer, e);
    e->reconcile_ev = evtimer_new(base, rp_on_reconcile_timer, e);
    e->seed_retry_ev = evtimer_new(base, rp_on_seed_retry, e);
    const rp_runner_port *rp = &e->deps.runner;
    e->pset = rp->open(rp->self, *deps->cfg, false, NULL);
    e->policy = rp_worker_new(base, "policy", NULL, NULL, 0);
    /* Every committed ledger event also goes to the events exchange. */
    e->cset = rp->open(rp->self, *deps->cfg, true, &e->deps.publisher);
    if (e->cset != NULL) e->cports = rp->ports(rp->self, e->cset);
    e->checker = rp_worker_new(base, "events", NULL, e, 0);
    if (e->cset == NULL || e->cports == NULL || e->core == NULL || e->checker == NULL ||
        e->check_ev == NULL || e->reconcile_ev == NULL || e->seed_retry_ev == NULL ||
        e->pset == NULL || e->policy == NULL) {
        rp_events_free(e);
        return NULL;
    }
    return e;
}

void rp_events_stop(rp_events *e) {
    if (e == NULL) return;
    e->closing = true;
    /* The threads first: their jobs use the runner sets. */
    if (e->checker) rp_worker_free(e->checker);
    if (e->policy) rp_worker_free(e->policy);
    e->checker = e->policy = NULL;
    if (e->cset) e->deps.runner.close(e->deps.runner.self, e->cset);
    e->cset = NULL;
    e->cports = NULL;
}

void rp_events_free(rp_events *e) {
    if (e == NULL) return;
    rp_events_stop(e);
    if (e->pset) e->deps.runner.close(e->deps.runner.self, e->pset);
    if (e->check_ev) event_free(e->check_ev);
    if (e->reconcile_ev) event_free(e->reconcile_ev);
    if (e->seed_retry_ev) event_free(e->seed_retry_ev);
    rp_consumers_free(e->core);
    free(e->hooks);
    for (size_t i = 0; i < e->n_recent; i++) {
        free(e->recent[i].vhost);
        free(e->recent[i].name);
    }
    free(e->recent);
    free(e->sweep_copy);
    if (e->recent_mu_ready) pthread_mutex_destroy(&e->recent_mu);
    free(e);
}
