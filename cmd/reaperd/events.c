/*
 * Broker events as they happen (events.h).
 *
 * WHAT THE BROKERS SHOW (checked here on RabbitMQ 3.10.8 and 4.0.5 with a
 * consumer holding 3 unacknowledged deliveries; tests/integration/
 * test_reaperd_events.c asserts what reaper makes of it):
 *  - basic.cancel with the channel left open: consumer.deleted (queue,
 *    vhost, consumer_tag, channel, user_who_performed_action = the user).
 *    The deliveries stay unacknowledged on the open channel with nobody
 *    consuming: this is what "held work whose holder is gone" looks like.
 *    The management API keeps showing consumers 1 for 4 to 6 s (until the
 *    next statistics emission), then consumers 0, unacked 3.
 *  - the channel closed (or its connection killed): the broker requeues the
 *    deliveries (ready 3, unacked 0: nothing is held). 3.10.8 sends
 *    consumer.deleted with user_who_performed_action "rmq-internal", then
 *    channel.closed (pid = that channel) within a millisecond; 4.0.5 sends
 *    NO consumer.deleted at all, only channel.closed (with a consumer_count
 *    header). connection.closed carries the connection's pid, which no
 *    consumer event names, so it is not used: its channels' channel.closed
 *    follow it on both brokers. The management API shows the old counts
 *    (consumers 1, unacked 3) for 3 to 6 s.
 *  - a new queue reports no statistics at all for up to 13 s (seen on
 *    3.10.8): its counts are unknown, never 0 (rp_judge.h counts_known).
 *
 * WHY A CONSUMER COUNT FROM EVENTS. The management API's consumer count
 * lags the cancel by up to a statistics interval, so a check made at once
 * would read "1 consumer" and judge nothing: holder gone could not be
 * judged within a second. The events are not late, so each owned queue
 * keeps the consumers it saw created (channel pid and tag) on top of a base
 * count read from the seed listing; a deletion removes a known consumer, or
 * lowers the base for one that existed before reaper watched. The check at
 * once then uses base + known consumers instead of the lagging statistic.
 * Errors lean towards counting too many (a consumer created while reaper
 * listed can be counted twice), which can only delay a judgement to the
 * check after the statistics emission, never invent one. The count is not
 * used while a channel of the queue closed within the last statistics
 * interval: the requeued deliveries still read as unacknowledged there, so
 * the reading alone decides (as the sweep would) and the check after the
 * emission sees the truth. After each such later check, when no event
 * touched the queue since, the base is set again from the (fresh) reading.
 *
 * DEBOUNCE. The first event for a queue schedules its check RP_EV_NOW_MS
 * later (so the channel.closed that follows a consumer.deleted is seen) and
 * its second check RP_EV_LATE_MS after the latest event (capped at
 * RP_EV_LATE_CAP_MS after the first), so a burst of events costs two
 * checks; all queues due together are checked in one job (on the module's
 * own "events" thread). The statistics
 * were seen to show a change 3.4 to 6.5 s after it, so a later check that
 * reads exactly what the check at once read (no emission since, as far as
 * it can tell), or finds the statistics still absent, is made again one
 * interval later, at most RP_EV_LATE_TRIES times in all.
 */
#include "events.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_internal.h"
#include "events_parse.h"
#include "report_text.h"
#include "rp_log.h"
#include "rp_match.h"
#include "rp_mgmt_policy.h"
#include "rp_pass.h"

#define RP_EV_NOW_MS 150
#define RP_EV_LATE_MS 6500      /* statistics every 5 s, then about 1 s to show */
#define RP_EV_LATE_CAP_MS 20000
#define RP_EV_LATE_TRIES 3
#define RP_EV_RETRY_MS 5000     /* one more statistics interval */
#define RP_EV_STATS_WINDOW_MS 6500
#define RP_EV_BUCKETS 4096
#define RP_EV_RECONCILE_DELAY_MS 1000
#define RP_EV_RECONCILE_GAP_MS 10000
#define RP_EV_RECONCILE_GAP_MAX_MS 300000

static int64_t rp_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t rp_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the inventory ------------------------------------------------------- */

typedef struct rp_consumer {
    char pid[RP_BEV_PID_MAX];
    char tag[RP_BEV_NAME_MAX];
    int64_t added_mono;
    struct rp_consumer *next;
} rp_consumer;

typedef struct rp_owned {
    char *vhost, *name;
    bool dlq;
    int64_t added_mono;
    bool base_known;
    int64_t base;              /* consumers that predate the events seen */
    rp_consumer *live;         /* consumers seen created */
    int64_t n_live;
    int64_t last_event_mono;   /* last consumer or channel event for it */
    int64_t closed_mono;       /* last channel close of one of its consumers */
    bool closed_seen;
    char last_gone_pid[RP_BEV_PID_MAX]; /* channel of the last deleted consumer */
    struct rp_owned *next;
} rp_owned;

/* What one check read of a queue (for comparing two readings). */
typedef struct rp_reading {
    bool read, counts_known, consumers_known;
    int64_t ready, unacked, consumers;
} rp_reading;

static bool rp_reading_same(const rp_reading *a, const rp_reading *b) {
    return a->read && b->read && a->counts_known == b->counts_known &&
           a->consumers_known == b->consumers_known && a->ready == b->ready &&
           a->unacked == b->unacked && a->consumers == b->consumers;
}

typedef struct rp_pending {
    char *vhost, *name;
    int64_t now_due, late_due, first_mono; /* 0: not due */
    int late_tries;
    rp_reading first;  /* what the check at once read (first.read false: none) */
    char trigger[64];
    bool has_ts;
    int64_t event_ts_ms;
} rp_pending;

typedef struct rp_hook {
    rp_events_queue_fn fn;
    void *arg;
} rp_hook;

struct rp_events {
    rp_daemon *d;
    rp_owned *buckets[RP_EV_BUCKETS];
    size_t n_owned;
    rp_pending *pending;
    size_t n_pending, cap_pending;
    struct event *check_ev;
    bool check_in_flight;
    rp_hook *hooks;
    size_t n_hooks;
    /* Seeding and reconciles run on the policy thread, with a management
     * client of their own (an rp_mgmt_broker serves one thread). */
    rp_worker *policy;
    rp_mgmt_broker *pbroker;
    bool seed_in_flight, seed_wanted;
    int64_t seed_started_mono;
    struct event *reconcile_ev;
    bool reconcile_wanted, reconcile_in_flight;
    int64_t reconcile_gap_ms, reconcile_last_end;
    /* queues deleted while a seed is in flight (not to be brought back) */
    char **tomb;
    size_t n_tomb, cap_tomb;
    struct event *seed_retry_ev;
    int seed_retry_s; /* the last wait after a failed listing; 0 after a success */
    /* Checks run on a thread of their own with a store connection and a
     * management client of their own (a runner: pass_runner.h), so that a
     * long sweep on the store thread never delays them. */
    rp_worker *checker;
    rp_pass_runner runner;
    bool runner_ready;
    /* The consumer counts from events that the sweep uses too (see
     * rp_events_wrap_sweep_port): written by the loop, read by the store
     * thread, under recent_mu. */
    pthread_mutex_t recent_mu;
    bool recent_mu_ready;
    struct rp_recent *recent;
    size_t n_recent, cap_recent;
    rp_broker_port sweep_real;
    rp_queue_facts *sweep_copy; /* store thread only */
    size_t cap_sweep_copy;
    bool closing; /* rp_events_free runs: done functions only free their job */
    unsigned long patterns_unmatched; /* policy patterns that hit rp_match.h's limits */
};

static uint32_t rp_hash(const char *vhost, const char *name) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)vhost; *p; p++) h = (h ^ *p) * 16777619u;
    h = (h ^ 0xff) * 16777619u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
    return h % RP_EV_BUCKETS;
}

static rp_owned *rp_find(rp_events *e, const char *vhost, const char *name) {
    for (rp_owned *o = e->buckets[rp_hash(vhost, name)]; o; o = o->next)
        if (strcmp(o->vhost, vhost) == 0 && strcmp(o->name, name) == 0) return o;
    return NULL;
}

static void rp_owned_free(rp_owned *o) {
    while (o->live) {
        rp_consumer *c = o->live;
        o->live = c->next;
        free(c);
    }
    free(o->vhost);
    free(o->name);
    free(o);
}

static rp_owned *rp_add(rp_events *e, const char *vhost, const char *name, bool dlq) {
    rp_owned *o = rp_find(e, vhost, name);
    if (o) return o;
    o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    o->vhost = strdup(vhost);
    o->name = strdup(name);
    if (o->vhost == NULL || o->name == NULL) {
        rp_owned_free(o);
        return NULL;
    }
    o->dlq = dlq;
    o->added_mono = rp_mono_ms();
    uint32_t h = rp_hash(vhost, name);
    o->next = e->buckets[h];
    e->buckets[h] = o;
    e->n_owned++;
    return o;
}

static void rp_remove(rp_events *e, const char *vhost, const char *name) {
    rp_owned **pp = &e->buckets[rp_hash(vhost, name)];
    for (; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->vhost, vhost) == 0 && strcmp((*pp)->name, name) == 0) {
            rp_owned *o = *pp;
            *pp = o->next;
            rp_owned_free(o);
            e->n_owned--;
            return;
        }
    }
}

static void rp_run_hooks(rp_events *e, const char *vhost, const char *name, bool dlq,
                         bool created) {
    for (size_t i = 0; i < e->n_hooks; i++) e->hooks[i].fn(e->hooks[i].arg, vhost, name, dlq, created);
}

rp_status rp_events_add_queue_hook(rp_events *e, rp_events_queue_fn fn, void *arg) {
    if (e == NULL || fn == NULL) return RP_ERR_INVALID;
    rp_hook *h = realloc(e->hooks, (e->n_hooks + 1) * sizeof *h);
    if (h == NULL) return RP_ERR_NOMEM;
    e->hooks = h;
    e->hooks[e->n_hooks++] = (rp_hook){fn, arg};
    return RP_OK;
}

/* Classifies a queue name as the pass does (rp_pass.h). */
static bool rp_classify(const rp_config *cfg, const char *name, bool *dlq) {
    const pcre2_code *owned_re = cfg->reap.owned_queue_pattern.code;
    const pcre2_code *dlq_re = cfg->reap.dead_letter_queue_pattern.code;
    bool owned = false;
    *dlq = false;
    if (rp_match_name(dlq_re, name, dlq) != RP_OK) return false;
    if (rp_match_name(owned_re, name, &owned) != RP_OK) return false;
    if (*dlq && !owned) {
        char *base = NULL;
        if (rp_match_cut(dlq_re, name, &base) == RP_OK &&
            rp_match_name(owned_re, base, &owned) != RP_OK)
            owned = false;
        free(base);
    }
    return owned;
}

static bool rp_recent_close(const rp_owned *o, int64_t t) {
    return o->closed_seen && t - o->closed_mono < RP_EV_STATS_WINDOW_MS;
}

/* ---- the counts the sweep shares -------------------------------------------- */

/* While a queue's consumers changed less than a statistics interval ago
 * (and no channel of it closed meanwhile), the management API's count of
 * it is stale and the events' count is the one to use - in the sweep too:
 * otherwise a sweep right after a cancel reads the stale consumer, finds
 * nothing, and clears the sighting the event check just opened, which the
 * next check opens again. */
typedef struct rp_recent {
    char *vhost, *name;
    int64_t consumers;
    int64_t until_mono;
} rp_recent;

static rp_recent *rp_recent_find(rp_events *e, const char *vhost, const char *name) {
    for (size_t i = 0; i < e->n_recent; i++)
        if (strcmp(e->recent[i].vhost, vhost) == 0 && strcmp(e->recent[i].name, name) == 0)
            return &e->recent[i];
    return NULL;
}

/* Loop: records what o's count is now (or forgets it), and drops what has
 * expired. */
static void rp_recent_note(rp_events *e, const char *vhost, const char *name, bool known,
                           int64_t consumers) {
    int64_t t = rp_mono_ms();
    pthread_mutex_lock(&e->recent_mu);
    for (size_t i = 0; i < e->n_recent;) {
        if (e->recent[i].until_mono <= t ||
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
        r->until_mono = t + RP_EV_STATS_WINDOW_MS;
        if (r->vhost && r->name) {
            e->n_recent++;
        } else {
            free(r->vhost);
            free(r->name);
        }
    }
    pthread_mutex_unlock(&e->recent_mu);
}

/* Store thread: applies the events' counts to facts (a copy). */
static void rp_recent_apply(rp_events *e, rp_queue_facts *q, size_t n) {
    int64_t t = rp_mono_ms();
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
}

/* ---- pending checks ------------------------------------------------------ */

static void rp_arm_check(rp_events *e);

static rp_pending *rp_pending_find(rp_events *e, const char *vhost, const char *name) {
    for (size_t i = 0; i < e->n_pending; i++)
        if (strcmp(e->pending[i].vhost, vhost) == 0 && strcmp(e->pending[i].name, name) == 0)
            return &e->pending[i];
    return NULL;
}

static rp_pending *rp_pending_add(rp_events *e, const char *vhost, const char *name) {
    rp_pending *p = rp_pending_find(e, vhost, name);
    if (p) return p;
    if (e->n_pending == e->cap_pending) {
        size_t cap = e->cap_pending ? e->cap_pending * 2 : 16;
        rp_pending *np = realloc(e->pending, cap * sizeof *np);
        if (np == NULL) return NULL;
        e->pending = np;
        e->cap_pending = cap;
    }
    p = &e->pending[e->n_pending];
    memset(p, 0, sizeof *p);
    p->vhost = strdup(vhost);
    p->name = strdup(name);
    if (p->vhost == NULL || p->name == NULL) {
        free(p->vhost);
        free(p->name);
        return NULL;
    }
    e->n_pending++;
    return p;
}

static void rp_pending_drop(rp_events *e, size_t i) {
    free(e->pending[i].vhost);
    free(e->pending[i].name);
    e->pending[i] = e->pending[--e->n_pending];
}

/* Schedules the two checks of a queue (see DEBOUNCE). */
static void rp_schedule(rp_events *e, const rp_broker_event *ev, const char *vhost,
                        const char *name) {
    rp_pending *p = rp_pending_add(e, vhost, name);
    if (p == NULL) {
        RP_ERROR("out of memory: event check skipped", "queue", name, NULL);
        return;
    }
    int64_t t = rp_mono_ms();
    if (p->now_due == 0) {
        p->now_due = t + RP_EV_NOW_MS;
        p->first.read = false; /* a new round: its check at once reads afresh */
        snprintf(p->trigger, sizeof p->trigger, "%s", ev->routing_key);
        p->has_ts = ev->has_timestamp;
        p->event_ts_ms = ev->timestamp_ms;
    }
    if (p->first_mono == 0 || p->late_due == 0) p->first_mono = t;
    int64_t late = t + RP_EV_LATE_MS, cap = p->first_mono + RP_EV_LATE_CAP_MS;
    p->late_due = late < cap ? late : cap;
    p->late_tries = 0;
    rp_arm_check(e);
}

/* ---- the check (the "events" thread) ---------------------------------------- */

typedef struct rp_check_item {
    char *vhost, *name;
    bool late;
    int late_tries;
    rp_reading first; /* late: what the check at once read */
    bool override;
    int64_t consumers_ev;
    char trigger[64];
    bool has_ts;
    int64_t event_ts_ms;
    /* the reading, filled on the "events" thread */
    rp_status read_status;
    bool read;
    rp_queue_facts got; /* strings not kept */
} rp_check_item;

typedef struct rp_check_job {
    rp_events *e;
    const rp_config *cfg; /* d->cfg when made, on the loop (a reload replaces d->cfg) */
    rp_daemon *d;
    unsigned generation;
    int64_t built_mono;
    rp_check_item *items;
    size_t n;
    rp_report report;
    rp_status status;
    int64_t duration_ms;
    int64_t judged_wall_ms;
} rp_check_job;

static rp_check_item *rp_job_item(rp_check_job *j, const char *vhost, const char *name) {
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(j->items[i].vhost, vhost) == 0 && strcmp(j->items[i].name, name) == 0)
            return &j->items[i];
    return NULL;
}

/* The broker port of a check: the runner's, with the consumer count from
 * the events where the item carries one. The "events" thread. */
static rp_status rp_check_get_queue(void *self, const char *vhost, const char *name,
                                    rp_queue_facts *out) {
    rp_check_job *j = self;
    const rp_broker_port *real = &j->e->runner.ports.broker;
    rp_status st = real->get_queue(real->self, vhost, name, out);
    rp_check_item *it = rp_job_item(j, vhost, name);
    if (it == NULL) return st;
    it->read_status = st;
    it->read = st == RP_OK;
    if (st != RP_OK) return st;
    it->got = *out;
    it->got.vhost = it->got.name = NULL;
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
    const rp_broker_port *real = &j->e->runner.ports.broker;
    return real->exchange_exists(real->self, vhost, name, exists);
}

static rp_status rp_check_exchange_bound(void *self, const char *vhost, const char *name,
                                         const char *const *except, size_t n_except,
                                         bool *bound) {
    rp_check_job *j = self;
    const rp_broker_port *real = &j->e->runner.ports.broker;
    return real->exchange_bound(real->self, vhost, name, except, n_except, bound);
}

static void rp_check_work(void *ctx, void *arg) {
    rp_events *e = ctx;
    rp_check_job *j = arg;
    const rp_config *cfg = j->cfg;
    int64_t t0 = rp_mono_ms();
    char err[256] = "";
    /* A store that is down shows in the report (the sightings cannot be
     * read nor opened); the check itself still runs. */
    if (rp_pg_conn_ensure(e->runner.conn, err, sizeof err) != RP_OK)
        RP_DEBUG("event check: store unreachable", "reason", err, NULL);
    rp_ports ports = e->runner.ports;
    ports.broker.self = j;
    ports.broker.get_queue = rp_check_get_queue;
    ports.broker.list_queues = NULL;
    ports.broker.get_timeout_in_force = NULL;
    ports.broker.exchange_exists =
        e->runner.ports.broker.exchange_exists ? rp_check_exchange_exists : NULL;
    ports.broker.exchange_bound =
        e->runner.ports.broker.exchange_bound ? rp_check_exchange_bound : NULL;
    rp_pass_options opt;
    rp_pass_runner_options(cfg, &opt);
    rp_queue_ref *refs = calloc(j->n ? j->n : 1, sizeof *refs);
    if (refs == NULL || e->runner.ports.broker.get_queue == NULL) {
        free(refs);
        j->status = refs == NULL ? RP_ERR_NOMEM : RP_ERR_INVALID;
        return;
    }
    for (size_t i = 0; i < j->n; i++) refs[i] = (rp_queue_ref){j->items[i].vhost, j->items[i].name};
    rp_report_cleanup(&j->report);
    j->status = rp_pass_queues(&ports, &opt, refs, j->n, &j->report);
    free(refs);
    j->judged_wall_ms = rp_wall_ms();
    j->duration_ms = rp_mono_ms() - t0;
}

static void rp_check_job_free(rp_check_job *j) {
    for (size_t i = 0; i < j->n; i++) {
        free(j->items[i].vhost);
        free(j->items[i].name);
    }
    free(j->items);
    rp_report_cleanup(&j->report);
    free(j);
}

static void rp_i64(char *buf, size_t n, bool known, int64_t v) {
    if (known) snprintf(buf, n, "%" PRId64, v);
    else snprintf(buf, n, "unknown");
}

/* Loop: log what each queue read and what was judged; reschedule later
 * checks that found no statistics; reset bases from fresh readings. */
static void rp_check_done(void *arg, bool cancelled) {
    rp_check_job *j = arg;
    rp_events *e = j->e;
    if (cancelled || e == NULL || e->closing) {
        rp_check_job_free(j);
        return;
    }
    e->check_in_flight = false;
    if (j->status != RP_OK)
        RP_ERROR("event check stopped early", "status", rp_status_string(j->status), NULL);
    for (size_t i = 0; i < j->report.n_notes; i++)
        RP_INFO("event check note", "note", j->report.notes[i], NULL);
    for (size_t i = 0; i < j->n; i++) {
        rp_check_item *it = &j->items[i];
        const rp_queue_facts *g = &it->got;
        char cons[24], ev[24], unacked[24], ready[24], delay[24] = "", judged[48] = "nothing new";
        rp_i64(cons, sizeof cons, it->read && g->consumers_known, g->consumers);
        rp_i64(ev, sizeof ev, it->override, it->consumers_ev);
        rp_i64(unacked, sizeof unacked, it->read && g->counts_known, g->unacked);
        rp_i64(ready, sizeof ready, it->read && g->counts_known, g->ready);
        if (it->has_ts) snprintf(delay, sizeof delay, "%" PRId64, j->judged_wall_ms - it->event_ts_ms);
        for (size_t k = 0; k < j->report.n_verdicts; k++) {
            const rp_verdict *v = &j->report.verdicts[k];
            if (v->queue && strcmp(v->queue, it->name) == 0)
                snprintf(judged, sizeof judged, "%s %s", rp_condition_string(v->condition),
                         rp_action_string(v->action));
        }
        RP_INFO("event check", "queue", it->name, "vhost", it->vhost, "trigger", it->trigger,
                "phase", it->late ? "after statistics" : "at once", "read",
                it->read ? "yes" : (it->read_status == RP_ERR_NOT_FOUND ? "gone" : "no"),
                "consumers_reported", cons, "consumers_from_events", ev, "unacked", unacked,
                "ready", ready, "judged", judged, "event_to_judgement_ms",
                it->has_ts ? delay : NULL, NULL);
        if (j->generation != e->d->broker_generation) continue;
        rp_owned *o = rp_find(e, it->vhost, it->name);
        bool fresh = !rp_reading_same(&(rp_reading){it->read, g->counts_known,
                                                     g->consumers_known, g->ready, g->unacked,
                                                     g->consumers},
                                      &it->first);
        if (it->late && fresh && it->read && g->consumers_known && o &&
            o->last_event_mono < j->built_mono) {
            int64_t base = g->consumers - o->n_live;
            o->base = base < 0 ? 0 : base;
            o->base_known = true;
        }
        rp_reading got = {it->read, g->counts_known, g->consumers_known,
                          g->ready, g->unacked, g->consumers};
        if (!it->late) {
            /* Kept for the later check of the same events. */
            rp_pending *p = rp_pending_find(e, it->vhost, it->name);
            if (p && p->late_due) p->first = got;
            continue;
        }
        bool unmeasured = it->read && (!g->counts_known || !g->consumers_known);
        bool unchanged = rp_reading_same(&got, &it->first);
        if ((unmeasured || unchanged) && it->late_tries + 1 < RP_EV_LATE_TRIES) {
            rp_pending *p = rp_pending_add(e, it->vhost, it->name);
            if (p && p->late_due == 0) {
                p->late_due = rp_mono_ms() + RP_EV_RETRY_MS;
                p->late_tries = it->late_tries + 1;
                p->first = it->first;
                if (p->first_mono == 0) p->first_mono = rp_mono_ms();
                snprintf(p->trigger, sizeof p->trigger, "%s", it->trigger);
            }
        }
    }
    char n[24], ms[24];
    snprintf(n, sizeof n, "%zu", j->n);
    snprintf(ms, sizeof ms, "%" PRId64, j->duration_ms);
    RP_DEBUG("event check finished", "queues", n, "duration_ms", ms, NULL);
    rp_check_job_free(j);
    rp_arm_check(e);
}


static void rp_on_check_timer(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_events *e = arg;
    if (e->check_in_flight || e->n_pending == 0) return;
    int64_t t = rp_mono_ms();
    rp_check_job *j = calloc(1, sizeof *j);
    if (j == NULL || (j->items = calloc(e->n_pending, sizeof *j->items)) == NULL) {
        free(j);
        RP_ERROR("out of memory: event checks delayed", NULL);
        rp_arm_check(e);
        return;
    }
    j->e = e;
    j->d = e->d;
    j->cfg = e->d->cfg;
    j->generation = e->d->broker_generation;
    j->built_mono = t;
    rp_report_init(&j->report, false);
    for (size_t i = 0; i < e->n_pending;) {
        rp_pending *p = &e->pending[i];
        bool now = p->now_due && p->now_due <= t;
        bool late = !now && p->now_due == 0 && p->late_due && p->late_due <= t;
        if (now || late) {
            rp_check_item *it = &j->items[j->n];
            it->vhost = strdup(p->vhost);
            it->name = strdup(p->name);
            if (it->vhost == NULL || it->name == NULL) {
                free(it->vhost);
                free(it->name);
                it->vhost = it->name = NULL;
                i++;
                continue;
            }
            it->late = late;
            it->late_tries = p->late_tries;
            it->first = p->first;
            snprintf(it->trigger, sizeof it->trigger, "%s", p->trigger);
            it->has_ts = p->has_ts && now;
            it->event_ts_ms = p->event_ts_ms;
            const rp_owned *o = rp_find(e, p->vhost, p->name);
            if (o && o->base_known && !rp_recent_close(o, t)) {
                it->override = true;
                it->consumers_ev = o->base + o->n_live;
            }
            j->n++;
            if (now) p->now_due = 0;
            else p->late_due = 0;
        }
        if (p->now_due == 0 && p->late_due == 0) {
            rp_pending_drop(e, i);
            continue;
        }
        i++;
    }
    if (j->n == 0) {
        rp_check_job_free(j);
        rp_arm_check(e);
        return;
    }
    if (__atomic_load_n(&e->d->stopping, __ATOMIC_ACQUIRE) ||
        rp_worker_submit(e->checker, rp_check_work, rp_check_done, j) != RP_OK) {
        rp_check_job_free(j);
        return; /* stopping */
    }
    e->check_in_flight = true;
}

static void rp_arm_check(rp_events *e) {
    if (e->check_in_flight || e->n_pending == 0) return;
    int64_t t = rp_mono_ms(), due = INT64_MAX;
    for (size_t i = 0; i < e->n_pending; i++) {
        const rp_pending *p = &e->pending[i];
        int64_t d = p->now_due ? p->now_due : p->late_due;
        if (d && d < due) due = d;
    }
    if (due == INT64_MAX) return;
    int64_t wait = due > t ? due - t : 0;
    struct timeval tv = {(time_t)(wait / 1000), (suseconds_t)((wait % 1000) * 1000)};
    evtimer_add(e->check_ev, &tv);
}

/* ---- policies (policy thread) ------------------------------------------------ */

typedef struct rp_reconcile_job {
    rp_events *e;
    const rp_config *cfg; /* d->cfg when made, on the loop */
    rp_report report;
    rp_mgmt_policy_stats stats;
    rp_status status;
    int64_t duration_ms;
} rp_reconcile_job;

static void rp_reconcile_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_reconcile_job *j = arg;
    rp_daemon *d = j->e->d;
    int64_t t0 = rp_mono_ms();
    rp_mgmt_policy_options popt;
    rp_broker_policy_options(j->cfg, &d->mgmt_keep, false, &popt);
    memset(&j->stats, 0, sizeof j->stats);
    j->status = rp_mgmt_policy_reconcile(j->e->pbroker, &popt, &j->report, &j->stats);
    j->duration_ms = rp_mono_ms() - t0;
}

static void rp_arm_reconcile(rp_events *e);

static void rp_reconcile_done(void *arg, bool cancelled) {
    rp_reconcile_job *j = arg;
    rp_events *e = j->e;
    if (!cancelled && !e->closing) {
        e->reconcile_in_flight = false;
        e->reconcile_last_end = rp_mono_ms();
        for (size_t i = 0; i < j->report.n_policies; i++) {
            const rp_policy_check *pc = &j->report.policies[i];
            RP_LOG_AT(pc->verified ? RP_LOG_INFO : RP_LOG_WARN, "policy reconciled on event",
                      "policy", pc->name, "verified", pc->verified ? "true" : "false", "detail",
                      pc->detail, NULL);
        }
        for (size_t i = 0; i < j->report.n_notes; i++)
            RP_INFO("policy note", "note", j->report.notes[i], NULL);
        /* Never a tight loop: a broker that refuses, or something that keeps
         * changing the policy back (each reconcile writes again), backs off. */
        if (j->status != RP_OK || j->stats.refused > 0 || j->stats.writes > 0) {
            e->reconcile_gap_ms *= 2;
            if (e->reconcile_gap_ms > RP_EV_RECONCILE_GAP_MAX_MS)
                e->reconcile_gap_ms = RP_EV_RECONCILE_GAP_MAX_MS;
        } else {
            e->reconcile_gap_ms = RP_EV_RECONCILE_GAP_MS;
        }
        char w[24], ms[24];
        snprintf(w, sizeof w, "%u", j->stats.writes);
        snprintf(ms, sizeof ms, "%" PRId64, j->duration_ms);
        RP_INFO("policy reconcile on event finished", "status", rp_status_string(j->status),
                "writes", w, "duration_ms", ms, NULL);
        rp_arm_reconcile(e);
    }
    rp_report_cleanup(&j->report);
    free(j);
}

static void rp_on_reconcile_timer(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_events *e = arg;
    if (!e->reconcile_wanted || e->reconcile_in_flight) return;
    int64_t t = rp_mono_ms();
    if (e->reconcile_last_end && t - e->reconcile_last_end < e->reconcile_gap_ms) {
        rp_arm_reconcile(e);
        return;
    }
    rp_reconcile_job *j = calloc(1, sizeof *j);
    if (j == NULL) return;
    j->e = e;
    j->cfg = e->d->cfg;
    rp_report_init(&j->report, false);
    if (rp_worker_submit(e->policy, rp_reconcile_work, rp_reconcile_done, j) != RP_OK) {
        rp_report_cleanup(&j->report);
        free(j);
        return;
    }
    e->reconcile_wanted = false;
    e->reconcile_in_flight = true;
}

static void rp_arm_reconcile(rp_events *e) {
    if (!e->reconcile_wanted || e->reconcile_in_flight) return;
    int64_t t = rp_mono_ms(), wait = RP_EV_RECONCILE_DELAY_MS;
    if (e->reconcile_last_end) {
        int64_t next = e->reconcile_last_end + e->reconcile_gap_ms - t;
        if (next > wait) wait = next;
    }
    if (evtimer_pending(e->reconcile_ev, NULL)) return; /* debounced: one is coming */
    struct timeval tv = {(time_t)(wait / 1000), (suseconds_t)((wait % 1000) * 1000)};
    evtimer_add(e->reconcile_ev, &tv);
}

static void rp_want_reconcile(rp_events *e, const char *why, const char *name) {
    /* A reconcile writes to the broker: automatic work, so it follows
     * reap.enabled as the sweep (which reconciles too) does. Checks only
     * surface, and run whatever reap.enabled says. */
    if (!e->d->cfg->reap.enabled) {
        RP_DEBUG("policy reconcile not run: reap.enabled is false", "why", why, "name", name, NULL);
        return;
    }
    RP_DEBUG("policy reconcile wanted", "why", why, "name", name, NULL);
    e->reconcile_wanted = true;
    rp_arm_reconcile(e);
}

/* Whether a policy event concerns reaper: its own policies, or a pattern
 * that matches an owned queue of that vhost (a cleared policy has no
 * pattern: any owned queue in the vhost).
 *
 * This runs on the loop, and the pattern is anyone's who may set a policy:
 * it is compiled with rp_match.h's compile bounds and matched under its
 * limits (a catastrophic pattern such as (a+)+$ costs about 2 ms a name
 * instead of half a second). A name whose match hits a limit is no match
 * and no miss: the coverage is unknown, so the scan stops there (one such
 * name is the most it pays) and the event counts as relevant, leaving the
 * decision to the reconcile on the policy thread; said once per process. */
static bool rp_policy_relevant(rp_events *e, const rp_broker_event *ev) {
    if (strcmp(ev->name, RP_MGMT_POLICY_NAME) == 0 ||
        strcmp(ev->name, RP_MGMT_POLICY_CLASSIC_NAME) == 0)
        return true;
    pcre2_code *re = NULL;
    if (ev->has_pattern) {
        int err;
        size_t off;
        re = rp_match_compile_untrusted(ev->pattern, &err, &off);
        if (re == NULL) return true; /* cannot tell: the reconcile can */
    }
    bool hit = false, unknown = false;
    const char *at = NULL;
    for (size_t b = 0; b < RP_EV_BUCKETS && !hit && !unknown; b++) {
        for (const rp_owned *o = e->buckets[b]; o && !hit && !unknown; o = o->next) {
            if (strcmp(o->vhost, ev->vhost) != 0) continue;
            bool m = true;
            if (re && rp_match_name(re, o->name, &m) != RP_OK) {
                unknown = true;
                at = o->name;
            }
            hit = m && !unknown;
        }
    }
    pcre2_code_free(re);
    if (unknown) {
        if (e->patterns_unmatched++ == 0)
            RP_WARN("a policy pattern could not be matched against an owned queue within the "
                    "match limits: its coverage is unknown, left to the policy reconcile; later "
                    "ones are logged at debug level",
                    "policy", ev->name, "vhost", ev->vhost, "queue", at, NULL);
        else
            RP_DEBUG("policy pattern over the match limits: coverage unknown", "policy", ev->name,
                     "vhost", ev->vhost, "queue", at, NULL);
        return true;
    }
    return hit;
}

/* ---- the seed (policy thread) ------------------------------------------------ */

typedef struct rp_seed_item {
    char *vhost, *name;
    bool dlq;
    bool consumers_known;
    int64_t consumers;
} rp_seed_item;

typedef struct rp_seed_job {
    rp_events *e;
    const rp_config *cfg; /* d->cfg when made, on the loop */
    unsigned generation;
    rp_seed_item *items;
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
        rp_status st = rp_mgmt_broker_list(j->e->pbroker, page, "name,vhost,type,consumers", &pg);
        if (st != RP_OK) {
            j->status = st;
            snprintf(j->error, sizeof j->error, "%s", rp_mgmt_broker_last_error(j->e->pbroker));
            return;
        }
        for (size_t i = 0; i < pg.n; i++) {
            const rp_queue_facts *q = &pg.queues[i];
            bool dlq;
            if (!rp_classify(cfg, q->name, &dlq)) continue;
            if (j->n == j->cap) {
                size_t cap = j->cap ? j->cap * 2 : 64;
                rp_seed_item *ni = realloc(j->items, cap * sizeof *ni);
                if (ni == NULL) {
                    j->status = RP_ERR_NOMEM;
                    return;
                }
                j->items = ni;
                j->cap = cap;
            }
            rp_seed_item *it = &j->items[j->n];
            it->vhost = strdup(q->vhost);
            it->name = strdup(q->name);
            if (it->vhost == NULL || it->name == NULL) {
                free(it->vhost);
                free(it->name);
                j->status = RP_ERR_NOMEM;
                return;
            }
            it->dlq = dlq;
            it->consumers_known = q->consumers_known;
            it->consumers = q->consumers;
            j->n++;
        }
        if (pg.last || pg.n == 0) break;
    }
    j->status = RP_OK;
}

static void rp_seed_job_free(rp_seed_job *j) {
    for (size_t i = 0; i < j->n; i++) {
        free(j->items[i].vhost);
        free(j->items[i].name);
    }
    free(j->items);
    free(j);
}

static bool rp_tombed(rp_events *e, const char *vhost, const char *name) {
    for (size_t i = 0; i < e->n_tomb; i += 2)
        if (strcmp(e->tomb[i], vhost) == 0 && strcmp(e->tomb[i + 1], name) == 0) return true;
    return false;
}

static void rp_tomb_clear(rp_events *e) {
    for (size_t i = 0; i < e->n_tomb; i++) free(e->tomb[i]);
    e->n_tomb = 0;
}

static void rp_start_seed(rp_events *e);

static void rp_seed_done(void *arg, bool cancelled) {
    rp_seed_job *j = arg;
    rp_events *e = j->e;
    if (cancelled || e->closing) {
        rp_seed_job_free(j);
        return;
    }
    e->seed_in_flight = false;
    if (j->generation != e->d->broker_generation || e->seed_wanted) {
        /* Reconnected meanwhile: that listing may miss what changed. */
        rp_seed_job_free(j);
        rp_tomb_clear(e);
        rp_start_seed(e);
        return;
    }
    if (j->status != RP_OK) {
        /* Backs off from 5 s to 5 min while the management API fails. */
        e->seed_retry_s = e->seed_retry_s ? e->seed_retry_s * 2 : 5;
        if (e->seed_retry_s > 300) e->seed_retry_s = 300;
        char in[24];
        snprintf(in, sizeof in, "%d", e->seed_retry_s);
        RP_WARN("broker events: the owned-queue listing failed; trying again", "status",
                rp_status_string(j->status), "reason", j->error, "in_seconds", in, NULL);
        rp_seed_job_free(j);
        rp_tomb_clear(e);
        struct timeval tv = {e->seed_retry_s, 0};
        evtimer_add(e->seed_retry_ev, &tv);
        return;
    }
    e->seed_retry_s = 0;
    int64_t started = e->seed_started_mono;
    /* Mark what the listing holds. */
    size_t added = 0;
    for (size_t i = 0; i < j->n; i++) {
        rp_seed_item *it = &j->items[i];
        if (rp_tombed(e, it->vhost, it->name)) continue;
        bool existed = rp_find(e, it->vhost, it->name) != NULL;
        rp_owned *o = rp_add(e, it->vhost, it->name, it->dlq);
        if (o == NULL) continue;
        /* Consumers seen before the listing began are in its count (or
         * gone while reaper was away): only later ones stay known. */
        rp_consumer **cp = &o->live;
        while (*cp) {
            if ((*cp)->added_mono < started) {
                rp_consumer *c = *cp;
                *cp = c->next;
                free(c);
                o->n_live--;
            } else {
                cp = &(*cp)->next;
            }
        }
        o->base_known = it->consumers_known;
        o->base = it->consumers_known ? it->consumers : 0;
        o->added_mono = rp_mono_ms();
        if (!existed) {
            added++;
            rp_run_hooks(e, it->vhost, it->name, it->dlq, true);
        }
    }
    /* What the listing no longer holds (deleted while reaper was away),
     * unless an event brought it in after the listing began. */
    size_t removed = 0;
    for (size_t b = 0; b < RP_EV_BUCKETS; b++) {
        rp_owned *o = e->buckets[b];
        while (o) {
            rp_owned *next = o->next;
            if (o->added_mono < started) {
                char *vhost = strdup(o->vhost), *name = strdup(o->name);
                bool dlq = o->dlq;
                rp_remove(e, o->vhost, o->name);
                if (vhost && name) rp_run_hooks(e, vhost, name, dlq, false);
                free(vhost);
                free(name);
                removed++;
            }
            o = next;
        }
    }
    rp_tomb_clear(e);
    char n[24], a[24], r[24];
    snprintf(n, sizeof n, "%zu", e->n_owned);
    snprintf(a, sizeof a, "%zu", added);
    snprintf(r, sizeof r, "%zu", removed);
    RP_INFO("broker events: owned queues listed", "owned", n, "added", a, "removed", r, NULL);
    rp_seed_job_free(j);
}

static void rp_start_seed(rp_events *e) {
    if (e->seed_in_flight) {
        e->seed_wanted = true;
        return;
    }
    e->seed_wanted = false;
    rp_seed_job *j = calloc(1, sizeof *j);
    if (j == NULL) return;
    j->e = e;
    j->cfg = e->d->cfg;
    j->generation = e->d->broker_generation;
    e->seed_started_mono = rp_mono_ms();
    if (rp_worker_submit(e->policy, rp_seed_work, rp_seed_done, j) != RP_OK) {
        free(j);
        return;
    }
    e->seed_in_flight = true;
}

/* ---- events ------------------------------------------------------------------ */

static void rp_tomb_add(rp_events *e, const char *vhost, const char *name) {
    if (!e->seed_in_flight) return;
    if (e->n_tomb + 2 > e->cap_tomb) {
        size_t cap = e->cap_tomb ? e->cap_tomb * 2 : 16;
        char **t = realloc(e->tomb, cap * sizeof *t);
        if (t == NULL) return;
        e->tomb = t;
        e->cap_tomb = cap;
    }
    char *v = strdup(vhost), *n = strdup(name);
    if (v == NULL || n == NULL) {
        free(v);
        free(n);
        return;
    }
    e->tomb[e->n_tomb++] = v;
    e->tomb[e->n_tomb++] = n;
}

static void rp_on_consumer_created(rp_events *e, const rp_broker_event *ev) {
    rp_owned *o = rp_find(e, ev->vhost, ev->name);
    if (o == NULL) return;
    rp_consumer *c = calloc(1, sizeof *c);
    if (c == NULL) return;
    snprintf(c->pid, sizeof c->pid, "%s", ev->pid);
    snprintf(c->tag, sizeof c->tag, "%s", ev->consumer_tag);
    c->added_mono = rp_mono_ms();
    c->next = o->live;
    o->live = c;
    o->n_live++;
    o->last_event_mono = c->added_mono;
    rp_recent_note(e, o->vhost, o->name, o->base_known && !rp_recent_close(o, c->added_mono),
                   o->base + o->n_live);
}

/* Removes the consumer (pid, tag) from o; false when it was not known. */
static bool rp_forget_consumer(rp_owned *o, const char *pid, const char *tag) {
    for (rp_consumer **cp = &o->live; *cp; cp = &(*cp)->next) {
        if (strcmp((*cp)->pid, pid) == 0 && (tag == NULL || strcmp((*cp)->tag, tag) == 0)) {
            rp_consumer *c = *cp;
            *cp = c->next;
            free(c);
            o->n_live--;
            return true;
        }
    }
    return false;
}

static void rp_on_consumer_deleted(rp_events *e, const rp_broker_event *ev) {
    rp_owned *o = rp_find(e, ev->vhost, ev->name);
    if (o == NULL) return;
    int64_t t = rp_mono_ms();
    if (!rp_forget_consumer(o, ev->pid, ev->consumer_tag) && o->base > 0) o->base--;
    o->last_event_mono = t;
    snprintf(o->last_gone_pid, sizeof o->last_gone_pid, "%s", ev->pid);
    /* 3.10.8 names the broker itself when the consumer died with its
     * channel (whose deliveries are requeued). */
    if (strcmp(ev->user, "rmq-internal") == 0) {
        o->closed_seen = true;
        o->closed_mono = t;
    }
    rp_recent_note(e, o->vhost, o->name, o->base_known && !rp_recent_close(o, t),
                   o->base + o->n_live);
    rp_schedule(e, ev, o->vhost, o->name);
}

/* 4.0.5 says only this when a channel with consumers closes; 3.10.8 says
 * it right after the consumer.deleted of each of them. */
static void rp_on_channel_closed(rp_events *e, const rp_broker_event *ev) {
    int64_t t = rp_mono_ms();
    for (size_t b = 0; b < RP_EV_BUCKETS; b++) {
        for (rp_owned *o = e->buckets[b]; o; o = o->next) {
            bool had = false;
            while (rp_forget_consumer(o, ev->pid, NULL)) had = true;
            if (!had && strcmp(o->last_gone_pid, ev->pid) != 0) continue;
            o->closed_seen = true;
            o->closed_mono = t;
            o->last_event_mono = t;
            rp_recent_note(e, o->vhost, o->name, false, 0);
            rp_schedule(e, ev, o->vhost, o->name);
        }
    }
}

void rp_events_on_message(rp_events *e, const rp_amqp_message *msg) {
    rp_broker_event ev;
    const char *why = NULL;
    if (!rp_broker_event_parse(msg->routing_key, &msg->props, &ev, &why)) {
        RP_DEBUG("broker event ignored", "routing_key", ev.routing_key, "reason", why, NULL);
        return;
    }
    RP_DEBUG("broker event", "routing_key", ev.routing_key, "queue", ev.name[0] ? ev.name : NULL,
             NULL);
    const rp_config *cfg = e->d->cfg;
    bool dlq = false;
    switch (ev.kind) {
    case RP_BEV_QUEUE_CREATED:
        if (!rp_classify(cfg, ev.name, &dlq)) return;
        if (rp_find(e, ev.vhost, ev.name) == NULL) {
            rp_owned *o = rp_add(e, ev.vhost, ev.name, dlq);
            if (o == NULL) return;
            o->base_known = true; /* a new queue has no consumer yet */
            o->base = 0;
            rp_run_hooks(e, ev.vhost, ev.name, dlq, true);
        }
        /* A new owned queue gets its policies verified at once. */
        rp_want_reconcile(e, "owned queue created", ev.name);
        return;
    case RP_BEV_QUEUE_DELETED: {
        rp_owned *o = rp_find(e, ev.vhost, ev.name);
        rp_tomb_add(e, ev.vhost, ev.name);
        if (o == NULL) return;
        dlq = o->dlq;
        rp_remove(e, ev.vhost, ev.name);
        rp_run_hooks(e, ev.vhost, ev.name, dlq, false);
        /* A queue that is gone holds nothing: what was sighted on it
         * clears now. */
        rp_schedule(e, &ev, ev.vhost, ev.name);
        return;
    }
    case RP_BEV_CONSUMER_CREATED:
        rp_on_consumer_created(e, &ev);
        return;
    case RP_BEV_CONSUMER_DELETED:
        rp_on_consumer_deleted(e, &ev);
        return;
    case RP_BEV_CHANNEL_CLOSED:
        rp_on_channel_closed(e, &ev);
        return;
    case RP_BEV_POLICY_SET:
    case RP_BEV_POLICY_CLEARED:
        if (rp_policy_relevant(e, &ev)) {
            rp_want_reconcile(e, ev.routing_key, ev.name);
            /* A policy may name a dead-letter exchange: name NULL says
             * "the owned queues of this vhost changed" (events.h). */
            rp_run_hooks(e, ev.vhost, NULL, false, true);
        }
        return;
    case RP_BEV_BINDING_CREATED:
    case RP_BEV_BINDING_DELETED:
        /* The tap's own bindings are what a reconcile writes: following
         * them would only reconcile again. */
        if (strcmp(ev.name, cfg->broker.tap_queue) == 0) return;
        /* fallthrough */
    case RP_BEV_EXCHANGE_CREATED:
    case RP_BEV_EXCHANGE_DELETED:
        /* A route a dead letter can take may have changed (a dead-letter
         * queue bound after its owned queue was declared, a dead-letter
         * exchange declared late, a binding moved): the tap's bindings are
         * derived again now, not at the next sweep. Name NULL: "the owned
         * queues of this vhost changed" (events.h). */
        rp_run_hooks(e, ev.vhost, NULL, false, true);
        return;
    case RP_BEV_CONNECTION_CLOSED: /* its channels' channel.closed follow */
    case RP_BEV_OTHER:
    default:
        return;
    }
}

static void rp_on_seed_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_events *e = arg;
    if (e->d->broker_up) rp_start_seed(e);
}

void rp_events_on_up(rp_events *e) {
    evtimer_del(e->seed_retry_ev);
    rp_start_seed(e);
}

void rp_events_on_down(rp_events *e) { RP_UNUSED(e); }

/* ---- life ------------------------------------------------------------------------ */

rp_events *rp_events_new(rp_daemon *d) {
    rp_events *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->d = d;
    e->reconcile_gap_ms = RP_EV_RECONCILE_GAP_MS;
    if (pthread_mutex_init(&e->recent_mu, NULL) != 0) {
        free(e);
        return NULL;
    }
    e->recent_mu_ready = true;
    e->check_ev = evtimer_new(d->base, rp_on_check_timer, e);
    e->reconcile_ev = evtimer_new(d->base, rp_on_reconcile_timer, e);
    e->seed_retry_ev = evtimer_new(d->base, rp_on_seed_retry, e);
    e->pbroker = d->mgmt ? rp_mgmt_broker_new(d->mgmt, NULL) : NULL;
    e->policy = rp_worker_new(d->base, "policy", NULL, NULL, 0);
    if (rp_pass_runner_init(&e->runner, d->cfg) == RP_OK) {
        e->runner_ready = true;
        if (d->mgmt == NULL ||
            rp_pass_runner_attach_broker(&e->runner, d->mgmt, &d->mgmt_keep) != RP_OK) {
            rp_events_free(e);
            return NULL;
        }
        /* Every committed ledger event also goes to the events exchange. */
        rp_feed_port(d, &e->runner.ports.publisher);
    }
    e->checker = rp_worker_new(d->base, "events", NULL, e, 0);
    if (!e->runner_ready || e->checker == NULL || e->check_ev == NULL || e->reconcile_ev == NULL || e->seed_retry_ev == NULL ||
        e->pbroker == NULL || e->policy == NULL) {
        rp_events_free(e);
        return NULL;
    }
    return e;
}

void rp_events_stop(rp_events *e) {
    if (e == NULL) return;
    e->closing = true;
    /* The threads first: their jobs use the clients and the runner. */
    if (e->checker) rp_worker_free(e->checker);
    if (e->policy) rp_worker_free(e->policy);
    e->checker = e->policy = NULL;
    if (e->runner_ready) rp_pass_runner_cleanup(&e->runner);
    e->runner_ready = false;
}

void rp_events_free(rp_events *e) {
    if (e == NULL) return;
    rp_events_stop(e);
    rp_mgmt_broker_free(e->pbroker);
    if (e->check_ev) event_free(e->check_ev);
    if (e->reconcile_ev) event_free(e->reconcile_ev);
    if (e->seed_retry_ev) event_free(e->seed_retry_ev);
    for (size_t b = 0; b < RP_EV_BUCKETS; b++) {
        while (e->buckets[b]) {
            rp_owned *o = e->buckets[b];
            e->buckets[b] = o->next;
            rp_owned_free(o);
        }
    }
    while (e->n_pending) rp_pending_drop(e, e->n_pending - 1);
    free(e->pending);
    rp_tomb_clear(e);
    free(e->tomb);
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
