/*
 * Decisions from broker events (rp_consumers.h).
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
 * DEBOUNCE. The first event for a queue schedules its check RP_CONSUMERS_NOW_MS
 * later (so the channel.closed that follows a consumer.deleted is seen) and
 * its second check RP_CONSUMERS_LATE_MS after the latest event (capped at
 * RP_CONSUMERS_LATE_CAP_MS after the first), so a burst of events costs two
 * checks; all queues due together are checked in one job (the caller runs
 * it: rp_consumers_take_due). The statistics
 * were seen to show a change 3.4 to 6.5 s after it, so a later check that
 * reads exactly what the check at once read (no emission since, as far as
 * it can tell), or finds the statistics still absent, is made again one
 * interval later, at most RP_CONSUMERS_LATE_TRIES times in all.
 */
#include "rp_consumers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_match.h"

#define RP_CS_BUCKETS 4096

/* ---- the inventory ------------------------------------------------------- */

typedef struct rp_consumer {
    char pid[RP_BEV_PID_MAX];
    char tag[RP_BEV_NAME_MAX];
    int64_t added_ms;
    struct rp_consumer *next;
} rp_consumer;

typedef struct rp_owned {
    char *vhost, *name;
    bool dlq;
    int64_t added_ms;
    bool base_known;
    int64_t base;             /* consumers that predate the events seen */
    rp_consumer *live;        /* consumers seen created */
    int64_t n_live;
    int64_t last_event_ms;    /* last consumer or channel event for it */
    int64_t closed_ms;        /* last channel close of one of its consumers */
    bool closed_seen;
    char last_gone_pid[RP_BEV_PID_MAX]; /* channel of the last deleted consumer */
    struct rp_owned *next;
} rp_owned;

static bool rp_reading_same(const rp_consumers_reading *a, const rp_consumers_reading *b) {
    return a->read && b->read && a->counts_known == b->counts_known &&
           a->consumers_known == b->consumers_known && a->ready == b->ready &&
           a->unacked == b->unacked && a->consumers == b->consumers;
}

typedef struct rp_pending {
    char *vhost, *name;
    int64_t now_due, late_due, first_ms; /* 0: not due */
    int late_tries;
    rp_consumers_reading first; /* what the check at once read (first.read false: none) */
    char trigger[64];
    bool has_ts;
    int64_t event_ts_ms;
} rp_pending;

struct rp_consumers {
    rp_consumers_sink sink;
    const char *const *own_policies;
    rp_owned *buckets[RP_CS_BUCKETS];
    size_t n_owned;
    rp_pending *pending;
    size_t n_pending, cap_pending;
    bool check_in_flight;
    bool seed_in_flight, seed_wanted;
    int64_t seed_started_ms;
    int seed_retry_s; /* the last wait after a failed listing; 0 after a success */
    /* queues deleted while a seed is in flight (not to be brought back) */
    char **tomb;
    size_t n_tomb, cap_tomb;
    bool reconcile_wanted, reconcile_in_flight, reconcile_armed, reconcile_ended;
    int64_t reconcile_gap_ms, reconcile_last_end;
    unsigned long patterns_unmatched; /* policy patterns that hit rp_match.h's limits */
};

static uint32_t rp_hash(const char *vhost, const char *name) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)vhost; *p; p++) h = (h ^ *p) * 16777619u;
    h = (h ^ 0xff) * 16777619u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
    return h % RP_CS_BUCKETS;
}

static rp_owned *rp_find(const rp_consumers *c, const char *vhost, const char *name) {
    for (rp_owned *o = c->buckets[rp_hash(vhost, name)]; o; o = o->next)
        if (strcmp(o->vhost, vhost) == 0 && strcmp(o->name, name) == 0) return o;
    return NULL;
}

static void rp_owned_free(rp_owned *o) {
    while (o->live) {
        rp_consumer *k = o->live;
        o->live = k->next;
        free(k);
    }
    free(o->vhost);
    free(o->name);
    free(o);
}

static rp_owned *rp_add(rp_consumers *c, const char *vhost, const char *name, bool dlq,
                        int64_t now) {
    rp_owned *o = rp_find(c, vhost, name);
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
    o->added_ms = now;
    uint32_t h = rp_hash(vhost, name);
    o->next = c->buckets[h];
    c->buckets[h] = o;
    c->n_owned++;
    return o;
}

static void rp_remove(rp_consumers *c, const char *vhost, const char *name) {
    rp_owned **pp = &c->buckets[rp_hash(vhost, name)];
    for (; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->vhost, vhost) == 0 && strcmp((*pp)->name, name) == 0) {
            rp_owned *o = *pp;
            *pp = o->next;
            rp_owned_free(o);
            c->n_owned--;
            return;
        }
    }
}

static void rp_note_queue(rp_consumers *c, const char *vhost, const char *name, bool dlq,
                          bool created) {
    if (c->sink.queue) c->sink.queue(c->sink.self, vhost, name, dlq, created);
}

static void rp_note_recent(rp_consumers *c, const rp_owned *o, bool known, int64_t now) {
    if (c->sink.recent)
        c->sink.recent(c->sink.self, o->vhost, o->name, known, known ? o->base + o->n_live : 0,
                       now, now + RP_CONSUMERS_STATS_WINDOW_MS);
}

bool rp_consumers_classify(const rp_config *cfg, const char *name, bool *dlq) {
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
    return o->closed_seen && t - o->closed_ms < RP_CONSUMERS_STATS_WINDOW_MS;
}

size_t rp_consumers_owned(const rp_consumers *c) { return c->n_owned; }

bool rp_consumers_is_owned(const rp_consumers *c, const char *vhost, const char *name) {
    return rp_find(c, vhost, name) != NULL;
}

bool rp_consumers_count(const rp_consumers *c, const char *vhost, const char *name, int64_t now,
                        int64_t *consumers) {
    const rp_owned *o = rp_find(c, vhost, name);
    if (o == NULL || !o->base_known || rp_recent_close(o, now)) return false;
    *consumers = o->base + o->n_live;
    return true;
}

/* ---- life ------------------------------------------------------------------ */

rp_consumers *rp_consumers_new(const rp_consumers_sink *sink, const char *const *own_policies) {
    rp_consumers *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    if (sink) c->sink = *sink;
    c->own_policies = own_policies;
    c->reconcile_gap_ms = RP_CONSUMERS_RECONCILE_GAP_MS;
    return c;
}

static void rp_pending_drop(rp_consumers *c, size_t i) {
    free(c->pending[i].vhost);
    free(c->pending[i].name);
    c->pending[i] = c->pending[--c->n_pending];
}

static void rp_tomb_clear(rp_consumers *c) {
    for (size_t i = 0; i < c->n_tomb; i++) free(c->tomb[i]);
    c->n_tomb = 0;
}

void rp_consumers_free(rp_consumers *c) {
    if (c == NULL) return;
    for (size_t b = 0; b < RP_CS_BUCKETS; b++) {
        while (c->buckets[b]) {
            rp_owned *o = c->buckets[b];
            c->buckets[b] = o->next;
            rp_owned_free(o);
        }
    }
    while (c->n_pending) rp_pending_drop(c, c->n_pending - 1);
    free(c->pending);
    rp_tomb_clear(c);
    free(c->tomb);
    free(c);
}

/* ---- pending checks ------------------------------------------------------ */

static rp_pending *rp_pending_find(rp_consumers *c, const char *vhost, const char *name) {
    for (size_t i = 0; i < c->n_pending; i++)
        if (strcmp(c->pending[i].vhost, vhost) == 0 && strcmp(c->pending[i].name, name) == 0)
            return &c->pending[i];
    return NULL;
}

static rp_pending *rp_pending_add(rp_consumers *c, const char *vhost, const char *name) {
    rp_pending *p = rp_pending_find(c, vhost, name);
    if (p) return p;
    if (c->n_pending == c->cap_pending) {
        size_t cap = c->cap_pending ? c->cap_pending * 2 : 16;
        rp_pending *np = realloc(c->pending, cap * sizeof *np);
        if (np == NULL) return NULL;
        c->pending = np;
        c->cap_pending = cap;
    }
    p = &c->pending[c->n_pending];
    memset(p, 0, sizeof *p);
    p->vhost = strdup(vhost);
    p->name = strdup(name);
    if (p->vhost == NULL || p->name == NULL) {
        free(p->vhost);
        free(p->name);
        return NULL;
    }
    c->n_pending++;
    return p;
}

/* When the check timer should fire next (0: no check to arm). */
static int64_t rp_check_at(const rp_consumers *c) {
    if (c->check_in_flight || c->n_pending == 0) return 0;
    int64_t due = INT64_MAX;
    for (size_t i = 0; i < c->n_pending; i++) {
        const rp_pending *p = &c->pending[i];
        int64_t d = p->now_due ? p->now_due : p->late_due;
        if (d && d < due) due = d;
    }
    return due == INT64_MAX ? 0 : due;
}

int64_t rp_consumers_check_at(const rp_consumers *c) { return rp_check_at(c); }

/* Schedules the two checks of a queue (see DEBOUNCE). */
static void rp_schedule(rp_consumers *c, const rp_broker_event *ev, const char *vhost,
                        const char *name, int64_t t) {
    rp_pending *p = rp_pending_add(c, vhost, name);
    if (p == NULL) {
        if (c->sink.check_skipped) c->sink.check_skipped(c->sink.self, name);
        return;
    }
    if (p->now_due == 0) {
        p->now_due = t + RP_CONSUMERS_NOW_MS;
        p->first.read = false; /* a new round: its check at once reads afresh */
        snprintf(p->trigger, sizeof p->trigger, "%s", ev->routing_key);
        p->has_ts = ev->has_timestamp;
        p->event_ts_ms = ev->timestamp_ms;
    }
    if (p->first_ms == 0 || p->late_due == 0) p->first_ms = t;
    int64_t late = t + RP_CONSUMERS_LATE_MS, cap = p->first_ms + RP_CONSUMERS_LATE_CAP_MS;
    p->late_due = late < cap ? late : cap;
    p->late_tries = 0;
}

/* ---- policies ---------------------------------------------------------------- */

static int64_t rp_arm_reconcile(rp_consumers *c, int64_t t) {
    if (!c->reconcile_wanted || c->reconcile_in_flight) return 0;
    int64_t wait = RP_CONSUMERS_RECONCILE_DELAY_MS;
    if (c->reconcile_ended) {
        int64_t next = c->reconcile_last_end + c->reconcile_gap_ms - t;
        if (next > wait) wait = next;
    }
    if (c->reconcile_armed) return 0; /* debounced: one is coming */
    c->reconcile_armed = true;
    return t + wait;
}

static int64_t rp_want_reconcile(rp_consumers *c, const rp_config *cfg, const char *why,
                                 const char *name, int64_t t) {
    /* A reconcile writes to the broker: automatic work, so it follows
     * reap.enabled as the sweep (which reconciles too) does. Checks only
     * surface, and run whatever reap.enabled says. */
    if (!cfg->reap.enabled) {
        if (c->sink.reconcile) c->sink.reconcile(c->sink.self, false, why, name);
        return 0;
    }
    if (c->sink.reconcile) c->sink.reconcile(c->sink.self, true, why, name);
    c->reconcile_wanted = true;
    return rp_arm_reconcile(c, t);
}

static bool rp_own_policy(const rp_consumers *c, const char *name) {
    for (const char *const *p = c->own_policies; p && *p; p++)
        if (strcmp(*p, name) == 0) return true;
    return false;
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
 * decision to the reconcile; the sink hears it (first: once per object). */
static bool rp_policy_relevant(rp_consumers *c, const rp_broker_event *ev) {
    if (rp_own_policy(c, ev->name)) return true;
    pcre2_code *re = NULL;
    if (ev->has_pattern) {
        int err;
        size_t off;
        re = rp_match_compile_untrusted(ev->pattern, &err, &off);
        if (re == NULL) return true; /* cannot tell: the reconcile can */
    }
    bool hit = false, unknown = false;
    const char *at = NULL;
    for (size_t b = 0; b < RP_CS_BUCKETS && !hit && !unknown; b++) {
        for (const rp_owned *o = c->buckets[b]; o && !hit && !unknown; o = o->next) {
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
        bool first = c->patterns_unmatched++ == 0;
        if (c->sink.pattern_unknown)
            c->sink.pattern_unknown(c->sink.self, first, ev->name, ev->vhost, at);
        return true;
    }
    return hit;
}

bool rp_consumers_reconcile_fire(rp_consumers *c, int64_t now, rp_consumers_due *due) {
    *due = (rp_consumers_due){0, 0};
    c->reconcile_armed = false;
    if (!c->reconcile_wanted || c->reconcile_in_flight) return false;
    if (c->reconcile_ended && now - c->reconcile_last_end < c->reconcile_gap_ms) {
        due->reconcile_at = rp_arm_reconcile(c, now);
        return false;
    }
    c->reconcile_wanted = false;
    c->reconcile_in_flight = true;
    return true;
}

void rp_consumers_reconcile_abort(rp_consumers *c) {
    c->reconcile_in_flight = false;
    c->reconcile_wanted = true;
}

rp_consumers_due rp_consumers_reconcile_done(rp_consumers *c, bool backoff, int64_t now) {
    c->reconcile_in_flight = false;
    c->reconcile_ended = true;
    c->reconcile_last_end = now;
    /* Never a tight loop: a broker that refuses, or something that keeps
     * changing the policy back (each reconcile writes again), backs off. */
    if (backoff) {
        c->reconcile_gap_ms *= 2;
        if (c->reconcile_gap_ms > RP_CONSUMERS_RECONCILE_GAP_MAX_MS)
            c->reconcile_gap_ms = RP_CONSUMERS_RECONCILE_GAP_MAX_MS;
    } else {
        c->reconcile_gap_ms = RP_CONSUMERS_RECONCILE_GAP_MS;
    }
    return (rp_consumers_due){0, rp_arm_reconcile(c, now)};
}

/* ---- events ------------------------------------------------------------------ */

static void rp_tomb_add(rp_consumers *c, const char *vhost, const char *name) {
    if (!c->seed_in_flight) return;
    if (c->n_tomb + 2 > c->cap_tomb) {
        size_t cap = c->cap_tomb ? c->cap_tomb * 2 : 16;
        char **t = realloc(c->tomb, cap * sizeof *t);
        if (t == NULL) return;
        c->tomb = t;
        c->cap_tomb = cap;
    }
    char *v = strdup(vhost), *n = strdup(name);
    if (v == NULL || n == NULL) {
        free(v);
        free(n);
        return;
    }
    c->tomb[c->n_tomb++] = v;
    c->tomb[c->n_tomb++] = n;
}

static bool rp_tombed(const rp_consumers *c, const char *vhost, const char *name) {
    for (size_t i = 0; i < c->n_tomb; i += 2)
        if (strcmp(c->tomb[i], vhost) == 0 && strcmp(c->tomb[i + 1], name) == 0) return true;
    return false;
}

static void rp_on_consumer_created(rp_consumers *c, const rp_broker_event *ev, int64_t t) {
    rp_owned *o = rp_find(c, ev->vhost, ev->name);
    if (o == NULL) return;
    rp_consumer *k = calloc(1, sizeof *k);
    if (k == NULL) return;
    snprintf(k->pid, sizeof k->pid, "%s", ev->pid);
    snprintf(k->tag, sizeof k->tag, "%s", ev->consumer_tag);
    k->added_ms = t;
    k->next = o->live;
    o->live = k;
    o->n_live++;
    o->last_event_ms = t;
    rp_note_recent(c, o, o->base_known && !rp_recent_close(o, t), t);
}

/* Removes the consumer (pid, tag) from o; false when it was not known. */
static bool rp_forget_consumer(rp_owned *o, const char *pid, const char *tag) {
    for (rp_consumer **cp = &o->live; *cp; cp = &(*cp)->next) {
        if (strcmp((*cp)->pid, pid) == 0 && (tag == NULL || strcmp((*cp)->tag, tag) == 0)) {
            rp_consumer *k = *cp;
            *cp = k->next;
            free(k);
            o->n_live--;
            return true;
        }
    }
    return false;
}

static void rp_on_consumer_deleted(rp_consumers *c, const rp_broker_event *ev, int64_t t) {
    rp_owned *o = rp_find(c, ev->vhost, ev->name);
    if (o == NULL) return;
    if (!rp_forget_consumer(o, ev->pid, ev->consumer_tag) && o->base > 0) o->base--;
    o->last_event_ms = t;
    snprintf(o->last_gone_pid, sizeof o->last_gone_pid, "%s", ev->pid);
    /* 3.10.8 names the broker itself when the consumer died with its
     * channel (whose deliveries are requeued). */
    if (strcmp(ev->user, "rmq-internal") == 0) {
        o->closed_seen = true;
        o->closed_ms = t;
    }
    rp_note_recent(c, o, o->base_known && !rp_recent_close(o, t), t);
    rp_schedule(c, ev, o->vhost, o->name, t);
}

/* 4.0.5 says only this when a channel with consumers closes; 3.10.8 says
 * it right after the consumer.deleted of each of them. */
static void rp_on_channel_closed(rp_consumers *c, const rp_broker_event *ev, int64_t t) {
    for (size_t b = 0; b < RP_CS_BUCKETS; b++) {
        for (rp_owned *o = c->buckets[b]; o; o = o->next) {
            bool had = false;
            while (rp_forget_consumer(o, ev->pid, NULL)) had = true;
            if (!had && strcmp(o->last_gone_pid, ev->pid) != 0) continue;
            o->closed_seen = true;
            o->closed_ms = t;
            o->last_event_ms = t;
            rp_note_recent(c, o, false, t);
            rp_schedule(c, ev, o->vhost, o->name, t);
        }
    }
}

rp_consumers_due rp_consumers_on_event(rp_consumers *c, const rp_config *cfg,
                                       const rp_broker_event *ev, int64_t now) {
    rp_consumers_due due = {0, 0};
    bool dlq = false;
    switch (ev->kind) {
    case RP_BEV_QUEUE_CREATED:
        if (!rp_consumers_classify(cfg, ev->name, &dlq)) return due;
        if (rp_find(c, ev->vhost, ev->name) == NULL) {
            rp_owned *o = rp_add(c, ev->vhost, ev->name, dlq, now);
            if (o == NULL) return due;
            o->base_known = true; /* a new queue has no consumer yet */
            o->base = 0;
            rp_note_queue(c, ev->vhost, ev->name, dlq, true);
        }
        /* A new owned queue gets its policies verified at once. */
        due.reconcile_at = rp_want_reconcile(c, cfg, "owned queue created", ev->name, now);
        return due;
    case RP_BEV_QUEUE_DELETED: {
        rp_owned *o = rp_find(c, ev->vhost, ev->name);
        rp_tomb_add(c, ev->vhost, ev->name);
        if (o == NULL) return due;
        dlq = o->dlq;
        rp_remove(c, ev->vhost, ev->name);
        rp_note_queue(c, ev->vhost, ev->name, dlq, false);
        /* A queue that is gone holds nothing: what was sighted on it
         * clears now. */
        rp_schedule(c, ev, ev->vhost, ev->name, now);
        due.check_at = rp_check_at(c);
        return due;
    }
    case RP_BEV_CONSUMER_CREATED:
        rp_on_consumer_created(c, ev, now);
        return due;
    case RP_BEV_CONSUMER_DELETED:
        rp_on_consumer_deleted(c, ev, now);
        due.check_at = rp_check_at(c);
        return due;
    case RP_BEV_CHANNEL_CLOSED:
        rp_on_channel_closed(c, ev, now);
        due.check_at = rp_check_at(c);
        return due;
    case RP_BEV_POLICY_SET:
    case RP_BEV_POLICY_CLEARED:
        if (rp_policy_relevant(c, ev)) {
            due.reconcile_at = rp_want_reconcile(c, cfg, ev->routing_key, ev->name, now);
            /* A policy may name a dead-letter exchange: name NULL says
             * "the owned queues of this vhost changed". */
            rp_note_queue(c, ev->vhost, NULL, false, true);
        }
        return due;
    case RP_BEV_BINDING_CREATED:
    case RP_BEV_BINDING_DELETED:
        /* The tap's own bindings are what a reconcile writes: following
         * them would only reconcile again. */
        if (cfg->broker.tap_queue && strcmp(ev->name, cfg->broker.tap_queue) == 0) return due;
        /* fallthrough */
    case RP_BEV_EXCHANGE_CREATED:
    case RP_BEV_EXCHANGE_DELETED:
        /* A route a dead letter can take may have changed (a dead-letter
         * queue bound after its owned queue was declared, a dead-letter
         * exchange declared late, a binding moved): the tap's bindings are
         * derived again now, not at the next sweep. Name NULL: "the owned
         * queues of this vhost changed". */
        rp_note_queue(c, ev->vhost, NULL, false, true);
        return due;
    case RP_BEV_CONNECTION_CLOSED: /* its channels' channel.closed follow */
    case RP_BEV_OTHER:
    default:
        return due;
    }
}

/* ---- the seed ---------------------------------------------------------------- */

bool rp_consumers_seed_begin(rp_consumers *c, int64_t now) {
    if (c->seed_in_flight) {
        c->seed_wanted = true;
        return false;
    }
    c->seed_wanted = false;
    c->seed_started_ms = now;
    c->seed_in_flight = true;
    return true;
}

void rp_consumers_seed_abort(rp_consumers *c) { c->seed_in_flight = false; }

rp_consumers_seed_result rp_consumers_seed_done(rp_consumers *c, bool stale, rp_status status,
                                                const rp_consumers_seed_item *items, size_t n,
                                                int64_t now) {
    rp_consumers_seed_result res = {RP_SEED_MERGED, 0, 0, 0, 0};
    c->seed_in_flight = false;
    if (stale || c->seed_wanted) {
        /* Reconnected meanwhile: that listing may miss what changed. */
        rp_tomb_clear(c);
        res.outcome = RP_SEED_AGAIN;
        return res;
    }
    if (status != RP_OK) {
        /* Backs off from 5 s to 5 min while the listing fails. */
        c->seed_retry_s = c->seed_retry_s ? c->seed_retry_s * 2 : RP_CONSUMERS_SEED_RETRY_FIRST_S;
        if (c->seed_retry_s > RP_CONSUMERS_SEED_RETRY_MAX_S)
            c->seed_retry_s = RP_CONSUMERS_SEED_RETRY_MAX_S;
        rp_tomb_clear(c);
        res.outcome = RP_SEED_RETRY;
        res.retry_s = c->seed_retry_s;
        return res;
    }
    c->seed_retry_s = 0;
    int64_t started = c->seed_started_ms;
    /* Mark what the listing holds. */
    for (size_t i = 0; i < n; i++) {
        const rp_consumers_seed_item *it = &items[i];
        if (rp_tombed(c, it->vhost, it->name)) continue;
        bool existed = rp_find(c, it->vhost, it->name) != NULL;
        rp_owned *o = rp_add(c, it->vhost, it->name, it->dlq, now);
        if (o == NULL) continue;
        /* Consumers seen before the listing began are in its count (or
         * gone while reaper was away): only later ones stay known. */
        rp_consumer **cp = &o->live;
        while (*cp) {
            if ((*cp)->added_ms < started) {
                rp_consumer *k = *cp;
                *cp = k->next;
                free(k);
                o->n_live--;
            } else {
                cp = &(*cp)->next;
            }
        }
        o->base_known = it->consumers_known;
        o->base = it->consumers_known ? it->consumers : 0;
        o->added_ms = now;
        if (!existed) {
            res.added++;
            rp_note_queue(c, it->vhost, it->name, it->dlq, true);
        }
    }
    /* What the listing no longer holds (deleted while reaper was away),
     * unless an event brought it in after the listing began. */
    for (size_t b = 0; b < RP_CS_BUCKETS; b++) {
        rp_owned *o = c->buckets[b];
        while (o) {
            rp_owned *next = o->next;
            if (o->added_ms < started) {
                char *vhost = strdup(o->vhost), *name = strdup(o->name);
                bool dlq = o->dlq;
                rp_remove(c, o->vhost, o->name);
                if (vhost && name) rp_note_queue(c, vhost, name, dlq, false);
                free(vhost);
                free(name);
                res.removed++;
            }
            o = next;
        }
    }
    rp_tomb_clear(c);
    res.owned = c->n_owned;
    return res;
}

/* ---- checks ------------------------------------------------------------------ */

void rp_consumers_batch_cleanup(rp_consumers_batch *b) {
    for (size_t i = 0; i < b->n; i++) {
        free(b->items[i].vhost);
        free(b->items[i].name);
    }
    free(b->items);
    b->items = NULL;
    b->n = 0;
}

rp_status rp_consumers_take_due(rp_consumers *c, int64_t now, rp_consumers_batch *out,
                                rp_consumers_due *due) {
    *out = (rp_consumers_batch){NULL, 0, now};
    *due = (rp_consumers_due){0, 0};
    if (c->check_in_flight || c->n_pending == 0) return RP_OK;
    out->items = calloc(c->n_pending, sizeof *out->items);
    if (out->items == NULL) {
        due->check_at = rp_check_at(c);
        return RP_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->n_pending;) {
        rp_pending *p = &c->pending[i];
        bool at_once = p->now_due && p->now_due <= now;
        bool late = !at_once && p->now_due == 0 && p->late_due && p->late_due <= now;
        if (at_once || late) {
            rp_consumers_check *it = &out->items[out->n];
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
            it->has_ts = p->has_ts && at_once;
            it->event_ts_ms = p->event_ts_ms;
            it->override = rp_consumers_count(c, p->vhost, p->name, now, &it->consumers_ev);
            out->n++;
            if (at_once) p->now_due = 0;
            else p->late_due = 0;
        }
        if (p->now_due == 0 && p->late_due == 0) {
            rp_pending_drop(c, i);
            continue;
        }
        i++;
    }
    if (out->n == 0) {
        rp_consumers_batch_cleanup(out);
        due->check_at = rp_check_at(c);
        return RP_OK;
    }
    c->check_in_flight = true;
    return RP_OK;
}

void rp_consumers_check_abort(rp_consumers *c) { c->check_in_flight = false; }

rp_consumers_due rp_consumers_check_done(rp_consumers *c, const rp_consumers_batch *b, bool stale,
                                         int64_t now) {
    c->check_in_flight = false;
    for (size_t i = 0; i < b->n && !stale; i++) {
        const rp_consumers_check *it = &b->items[i];
        const rp_consumers_reading *got = &it->got;
        rp_owned *o = rp_find(c, it->vhost, it->name);
        bool fresh = !rp_reading_same(got, &it->first);
        if (it->late && fresh && got->read && got->consumers_known && o &&
            o->last_event_ms < b->built_ms) {
            int64_t base = got->consumers - o->n_live;
            o->base = base < 0 ? 0 : base;
            o->base_known = true;
        }
        if (!it->late) {
            /* Kept for the later check of the same events. */
            rp_pending *p = rp_pending_find(c, it->vhost, it->name);
            if (p && p->late_due) p->first = *got;
            continue;
        }
        bool unmeasured = got->read && (!got->counts_known || !got->consumers_known);
        bool unchanged = rp_reading_same(got, &it->first);
        if ((unmeasured || unchanged) && it->late_tries + 1 < RP_CONSUMERS_LATE_TRIES) {
            rp_pending *p = rp_pending_add(c, it->vhost, it->name);
            if (p && p->late_due == 0) {
                p->late_due = now + RP_CONSUMERS_RETRY_MS;
                p->late_tries = it->late_tries + 1;
                p->first = it->first;
                if (p->first_ms == 0) p->first_ms = now;
                snprintf(p->trigger, sizeof p->trigger, "%s", it->trigger);
            }
        }
    }
    return (rp_consumers_due){rp_check_at(c), 0};
}
