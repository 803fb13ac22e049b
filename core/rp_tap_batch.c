/*
 * The dead-letter tap's decisions (rp_tap_batch.h): the loop's held lists,
 * batches, acks and consumer switch, and the thread's pipelined park.
 */
#include "rp_tap_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_judge.h"
#include "rp_publish.h"
#include "rp_report.h"

/* ---- lists ------------------------------------------------------------------ */

static void rp_list_push(rp_tap_list *l, rp_tap_item *it) {
    it->next = NULL;
    if (l->tail) l->tail->next = it;
    else l->head = it;
    l->tail = it;
    l->n++;
}

static rp_tap_item *rp_list_pop(rp_tap_list *l) {
    rp_tap_item *it = l->head;
    if (it == NULL) return NULL;
    l->head = it->next;
    if (l->head == NULL) l->tail = NULL;
    l->n--;
    it->next = NULL;
    return it;
}

/* Puts the items of front (in order) before those of l. */
static void rp_list_prepend(rp_tap_list *l, rp_tap_list *front) {
    if (front->head == NULL) return;
    front->tail->next = l->head;
    if (l->tail == NULL) l->tail = front->tail;
    l->head = front->head;
    l->n += front->n;
    memset(front, 0, sizeof *front);
}

/* Puts the items of back (in order) after the first *back_n items of l
 * (those that came back before them), and counts them there. */
static void rp_list_put_back(rp_tap_list *l, size_t *back_n, rp_tap_list *back) {
    if (back->head == NULL) return;
    size_t n = back->n;
    if (*back_n == 0 || l->head == NULL) {
        rp_list_prepend(l, back);
    } else {
        rp_tap_item *after = l->head;
        for (size_t k = 1; k < *back_n && after->next; k++) after = after->next;
        back->tail->next = after->next;
        if (after == l->tail) l->tail = back->tail;
        after->next = back->head;
        l->n += back->n;
        memset(back, 0, sizeof *back);
    }
    *back_n += n;
}

static void rp_item_drop(rp_tap_state *s, rp_tap_item *it) {
    if (it == NULL) return;
    s->held_bytes -= it->weight;
    s->ops.drop(s->ops.ctx, it);
}

static void rp_list_clear(rp_tap_state *s, rp_tap_list *l) {
    rp_tap_item *it;
    while ((it = rp_list_pop(l)) != NULL) rp_item_drop(s, it);
}

/* Drops the items of older connections: the broker has them back. */
static void rp_list_drop_stale(rp_tap_state *s, rp_tap_list *l, unsigned gen) {
    rp_tap_list keep = {0};
    rp_tap_item *it;
    while ((it = rp_list_pop(l)) != NULL) {
        if (it->generation == gen) rp_list_push(&keep, it);
        else rp_item_drop(s, it);
    }
    *l = keep;
}

/* ---- the loop's half ------------------------------------------------------- */

void rp_tap_state_init(rp_tap_state *s, const rp_tap_item_ops *ops) {
    memset(s, 0, sizeof *s);
    s->ops = *ops;
}

void rp_tap_state_cleanup(rp_tap_state *s) {
    rp_list_clear(s, &s->waiting);
    rp_list_clear(s, &s->stuck);
}

void rp_tap_state_up(rp_tap_state *s) {
    s->up = true;
    s->gen++;
}

void rp_tap_state_down(rp_tap_state *s) { s->up = false; }

void rp_tap_state_stop(rp_tap_state *s) { s->stopped = true; }

bool rp_tap_state_off(const rp_tap_state *s) { return s->off && s->off_gen == s->gen; }

void rp_tap_state_returned(rp_tap_state *s) { s->returned++; }

void rp_tap_state_hold(rp_tap_state *s, rp_tap_item *it) {
    it->generation = s->gen;
    s->held_bytes += it->weight;
    rp_list_push(&s->waiting, it);
}

int64_t rp_tap_state_gather(rp_tap_state *s, int64_t now_us) {
    if (s->in_flight > 0 || s->waiting.n == 0 || s->waiting.n >= RP_TAP_TXN_MAX ||
        s->last_taken < RP_TAP_GATHER_AFTER || s->paused || s->stopped || !s->up) {
        s->gather_since = 0;
        return 0;
    }
    if (s->gather_since == 0) s->gather_since = now_us;
    int64_t left = s->gather_since + RP_TAP_GATHER_US - now_us;
    if (left > 0) return left;
    s->gather_since = 0;
    return 0;
}

rp_tap_batch *rp_tap_state_take(rp_tap_state *s, bool *nomem) {
    *nomem = false;
    if (s->paused || s->stopped) return NULL;
    /* Only a new connection makes items stale (every item that joins a
     * list after this is of the current one): walk the lists only then,
     * not at every delivery. */
    if (s->kept_gen != s->gen) {
        s->back_n = 0; /* every one that came back was of an older one */
        rp_list_drop_stale(s, &s->waiting, s->gen);
        rp_list_drop_stale(s, &s->stuck, s->gen);
        s->kept_gen = s->gen;
    }
    if (s->in_flight >= RP_TAP_IN_FLIGHT || s->waiting.head == NULL || !s->up) return NULL;
    /* With one out already, the next goes only once it fills a whole
     * transaction: short of that it waits for the one out to come back and
     * gathers meanwhile, so that a storm parks in fewer, fuller
     * transactions (each one a commit, a WAL flush and a wake-up of every
     * thread on the way) while the tap's thread stays busy when the storm
     * is heavy; alone, a delivery goes at once (the light storm's delay). */
    if (s->in_flight > 0 && s->waiting.n < RP_TAP_TXN_MAX) return NULL;
    /* ... and takes whole transactions only: the rest keeps gathering
     * (a batch of 260 would be parked as 250 and 10). */
    size_t most = RP_TAP_BATCH;
    if (s->in_flight > 0 && s->waiting.n < most)
        most = s->waiting.n / RP_TAP_TXN_MAX * RP_TAP_TXN_MAX;
    rp_tap_batch *b = calloc(1, sizeof *b);
    if (b == NULL) {
        *nomem = true;
        return NULL;
    }
    while (b->n < most && s->waiting.head) {
        rp_tap_item *it = rp_list_pop(&s->waiting);
        if (s->back_n > 0) s->back_n--;
        it->result = RP_TAP_PENDING;
        it->skipped = false;
        it->st = RP_OK;
        b->items[b->n++] = it;
    }
    s->flight[s->in_flight++] = b;
    s->in_flight_n += b->n;
    s->last_taken = b->n;
    s->gather_since = 0;
    return b;
}

/* Takes b out of the batches in flight. */
static void rp_tap_land(rp_tap_state *s, const rp_tap_batch *b) {
    size_t f = 0;
    while (f < s->in_flight && s->flight[f] != b) f++;
    if (f == s->in_flight) return;
    s->in_flight_n -= s->flight[f]->n;
    for (; f + 1 < s->in_flight; f++) s->flight[f] = s->flight[f + 1];
    s->flight[--s->in_flight] = NULL;
}

void rp_tap_state_put_back(rp_tap_state *s, rp_tap_batch *b) {
    rp_tap_land(s, b);
    rp_tap_list back = {0};
    for (size_t i = 0; i < b->n; i++) rp_list_push(&back, b->items[i]);
    rp_list_put_back(&s->waiting, &s->back_n, &back);
    free(b);
}

/* The lowest delivery tag still held (waiting, stuck, or in a batch still
 * on the tap's thread) on this connection, or UINT64_MAX. Only the tag and
 * generation of an item in flight are read, which the thread never
 * writes. */
static uint64_t rp_tap_lowest_held(const rp_tap_state *s, unsigned gen) {
    uint64_t low = UINT64_MAX;
    const rp_tap_list *ls[2] = {&s->waiting, &s->stuck};
    for (int k = 0; k < 2; k++)
        for (const rp_tap_item *it = ls[k]->head; it; it = it->next)
            if (it->generation == gen && it->tag < low) low = it->tag;
    for (size_t f = 0; f < s->in_flight; f++)
        for (size_t i = 0; i < s->flight[f]->n; i++) {
            const rp_tap_item *it = s->flight[f]->items[i];
            if (it->generation == gen && it->tag < low) low = it->tag;
        }
    return low;
}

int rp_tap_state_pause(rp_tap_state *s) {
    s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : RP_TAP_BACKOFF_MIN_MS;
    if (s->backoff_ms > RP_TAP_BACKOFF_MAX_MS) s->backoff_ms = RP_TAP_BACKOFF_MAX_MS;
    s->paused = true;
    return s->backoff_ms;
}

void rp_tap_state_retry(rp_tap_state *s) { s->paused = false; }

const rp_tap_settled *rp_tap_state_settle(rp_tap_state *s, rp_tap_batch *b, bool cancelled,
                                          int64_t now_us) {
    rp_tap_settled *out = &s->settled;
    out->multiple = false;
    out->n_acks = out->n_delays = out->n_stuck = out->held = 0;
    out->ignored = out->parked = 0;
    out->first_ignored = out->store_down = out->warn_down = out->resumed = false;
    out->pause_ms = 0;
    rp_tap_land(s, b);
    if (cancelled) {
        for (size_t i = 0; i < b->n; i++) rp_item_drop(s, b->items[i]);
        free(b);
        return out;
    }
    unsigned gen = s->gen;
    bool live = s->up;
    rp_tap_list retry = {0}, done = {0};
    for (size_t i = 0; i < b->n; i++) {
        rp_tap_item *it = b->items[i];
        if (it->result == RP_TAP_DONE) {
            if (!it->skipped && it->outcome == RP_PARKED_NEW) out->parked++;
            out->delays_us[out->n_delays++] = now_us - it->received_us;
            if (it->skipped) {
                if (s->ignored++ == 0) out->first_ignored = true;
                out->ignored++;
            }
        }
        if (!live || it->generation != gen) {
            rp_item_drop(s, it); /* the broker delivers it again */
            continue;
        }
        switch (it->result) {
        case RP_TAP_DONE: rp_list_push(&done, it); break;
        case RP_TAP_RETRY: rp_list_push(&retry, it); break;
        default:
            out->stuck_st[out->n_stuck++] = it->st;
            /* Only its tag and generation are needed until the reconnect
             * that gives it back: its body goes, and its weight with it, so
             * that dead letters stuck on their own never keep the tap from
             * consuming. */
            s->held_bytes -= it->weight;
            it->weight = s->ops.shed(s->ops.ctx, it);
            s->held_bytes += it->weight;
            rp_list_push(&s->stuck, it);
            break;
        }
    }
    out->store_down = retry.n > 0;
    /* Before what came after them, after what came back before them. */
    rp_list_put_back(&s->waiting, &s->back_n, &retry);
    free(b);
    /* Ack what is settled: one multiple ack when nothing held lies below. */
    if (done.n > 0) {
        uint64_t high = done.tail->tag;
        if (high < rp_tap_lowest_held(s, gen)) {
            out->multiple = true;
            out->acks[out->n_acks++] = high;
        } else {
            for (rp_tap_item *it = done.head; it; it = it->next) out->acks[out->n_acks++] = it->tag;
        }
        rp_list_clear(s, &done);
    }
    out->held = s->waiting.n + s->stuck.n;
    if (out->store_down) {
        if (s->paused) return out; /* the other batch in flight found it first */
        out->warn_down = s->backoff_ms == 0;
        out->pause_ms = rp_tap_state_pause(s);
        return out;
    }
    out->resumed = s->backoff_ms != 0;
    s->backoff_ms = 0;
    return out;
}

rp_tap_hold_action rp_tap_state_hold_check(rp_tap_state *s) {
    if (s->stopped || !s->up) return RP_TAP_HOLD_NONE;
    bool off = rp_tap_state_off(s);
    bool over = s->held_bytes > RP_TAP_HOLD_BYTES;
    bool under = s->held_bytes <= RP_TAP_HOLD_BYTES / 2;
    if (off ? !under : !over) return RP_TAP_HOLD_NONE;
    /* A new connection consumed under RP_TAP_CONSUMER_TAG in its setup. */
    if (s->tag_gen != s->gen) snprintf(s->tag, sizeof s->tag, "%s", RP_TAP_CONSUMER_TAG);
    s->tag_gen = s->gen;
    if (!off) return RP_TAP_HOLD_CANCEL;
    /* A tag never used on the connection (rabbitmq-server #5927). */
    snprintf(s->tag, sizeof s->tag, "%s.%lu", RP_TAP_CONSUMER_TAG, ++s->consumes);
    return RP_TAP_HOLD_CONSUME;
}

void rp_tap_state_hold_sent(rp_tap_state *s, rp_tap_hold_action a) {
    if (a == RP_TAP_HOLD_CANCEL) {
        s->off = true;
        s->off_gen = s->gen;
        s->returned = 0;
    } else if (a == RP_TAP_HOLD_CONSUME) {
        s->off = false;
    }
}

size_t rp_tap_state_messages(const rp_tap_state *s) {
    return s->waiting.n + s->stuck.n + s->in_flight_n;
}

bool rp_tap_state_paused(const rp_tap_state *s) { return rp_tap_state_off(s) || s->paused; }

bool rp_tap_owns_tag(const void *bytes, size_t len) {
    size_t n = strlen(RP_TAP_CONSUMER_TAG);
    if (len < n || memcmp(bytes, RP_TAP_CONSUMER_TAG, n) != 0) return false;
    return len == n || ((const char *)bytes)[n] == '.';
}

/* ---- the thread's half ----------------------------------------------------- */

bool rp_tap_is_dead_letter(bool via_default, bool death_headers) {
    return !via_default && death_headers;
}

rp_tap_result rp_tap_result_of(rp_status st) {
    switch (st) {
    case RP_OK: return RP_TAP_DONE;
    case RP_ERR_UNAVAILABLE:
    case RP_ERR_TIMEOUT:
    case RP_ERR_CLOSED:
    case RP_ERR_NOMEM: return RP_TAP_RETRY; /* the rest would fail the same way */
    default: return RP_TAP_STUCK;
    }
}

static bool rp_env_stopping(const rp_tap_park_env *env) {
    return env->stopping != NULL && env->stopping(env->stop_ctx);
}

static void rp_tap_prep_cleanup(const rp_tap_park_env *env, rp_tap_prep *p) {
    env->ex->release(env->ex->ctx, p);
    p->own = NULL;
    rp_dead_letter_cleanup(&p->facts);
    rp_verdict_cleanup(&p->v);
}

/* Examines and judges one delivery. RP_OK with *park false for one that is
 * not a dead letter (acked, not parked). */
static rp_status rp_tap_prepare(const rp_tap_park_env *env, rp_tap_item *it, rp_tap_prep *p,
                                bool *park) {
    memset(p, 0, sizeof *p);
    p->it = it;
    rp_dead_letter_init(&p->facts);
    rp_verdict_init(&p->v);
    *park = false;
    bool death = false;
    rp_status st = env->ex->inspect(env->ex->ctx, it, p, &death);
    if (st != RP_OK) return st;
    if (!rp_tap_is_dead_letter(it->via_default, death)) {
        it->skipped = true;
        return RP_OK;
    }
    st = env->ex->capture(env->ex->ctx, it, p);
    if (st != RP_OK) return st;
    const rp_park_site *site = &env->site;
    st = rp_dead_letter_examine(&p->msg.headers, site->vhost ? site->vhost : "", site->queue,
                                site->dlq_pattern, p->msg.body, &p->facts);
    if (st == RP_OK) st = rp_judge_dead_letter(&p->facts, site->vhost, site->queue, &p->v);
    if (st == RP_OK) *park = true;
    return st;
}

/* One transaction's worth of a batch: its prepared messages and, once
 * sent, the park items whose results the port's recv fills. */
typedef struct rp_tap_chunk {
    rp_tap_prep p[RP_TAP_TXN_MAX];
    rp_park_batch_item items[RP_TAP_TXN_MAX];
    size_t n;
    size_t session;  /* the session it is sent on */
    bool sent;       /* in the session's pipeline, its results not read */
    bool received;   /* read (st is its outcome) */
    rp_status st;    /* the outcome of its send or its receipt */
} rp_tap_chunk;

/* Prepares the next messages of b from *i into c (at most RP_TAP_TXN_MAX,
 * RP_TAP_TXN_BYTES of bodies, headers and properties); messages not to park
 * (not a dead letter, or failing on their own) are settled at once. */
static void rp_tap_fill(const rp_tap_park_env *env, rp_tap_batch *b, size_t *i, rp_tap_chunk *c,
                        bool *down) {
    size_t bytes = 0;
    c->n = 0;
    c->sent = c->received = false;
    c->st = RP_OK;
    for (; *i < b->n && c->n < RP_TAP_TXN_MAX && bytes < RP_TAP_TXN_BYTES; (*i)++) {
        rp_tap_item *it = b->items[*i];
        if (*down || rp_env_stopping(env)) {
            it->result = RP_TAP_RETRY;
            continue;
        }
        bool park = false;
        rp_tap_prep *p = &c->p[c->n];
        it->st = rp_tap_prepare(env, it, p, &park);
        if (it->st != RP_OK || !park) {
            it->result = rp_tap_result_of(it->st);
            if (it->result == RP_TAP_RETRY) *down = true;
            rp_tap_prep_cleanup(env, p);
            continue;
        }
        /* Headers and properties too: they travel with the body. */
        bytes += p->msg.body.len + p->bytes;
        c->items[c->n] = (rp_park_batch_item){env->site.vhost, env->site.queue, &p->msg,
                                              &p->facts, &p->v, {0}};
        c->n++;
    }
}

/* Sends c's transaction, unless there is nothing to park or the tap must
 * not park now. */
static void rp_tap_send(const rp_tap_park_env *env, rp_tap_chunk *c, bool *down) {
    if (c->n == 0) return;
    if (*down || rp_env_stopping(env)) {
        c->st = RP_ERR_UNAVAILABLE; /* held and tried again */
        return;
    }
    c->st = env->batch->send(env->batch->self, c->session, c->items, c->n);
    c->sent = c->st == RP_OK;
    if (rp_tap_result_of(c->st) == RP_TAP_RETRY) *down = true;
}

/* Reads c's results if it was sent and they are not read yet. */
static void rp_tap_receive(const rp_tap_park_env *env, rp_tap_chunk *c, bool *down) {
    if (!c->sent || c->received) return;
    c->st = env->batch->recv(env->batch->self, c->session, c->items, c->n);
    c->received = true;
    if (rp_tap_result_of(c->st) == RP_TAP_RETRY) *down = true;
}

/* Settles c's messages from its outcome (received, or a send that failed)
 * and frees what was prepared. When its transaction failed for a reason of
 * its own (not the store going away), its messages are parked one by one,
 * so that only one that fails alone is held: nothing else may be
 * outstanding on the sessions then. */
static void rp_tap_settle(const rp_tap_park_env *env, rp_tap_batch *b, rp_tap_chunk *c,
                          bool *down) {
    if (c->n == 0) return;
    if (c->st == RP_OK) {
        /* The transaction's events go to the feed together. */
        const rp_publisher_port *pub = &env->ports->publisher;
        if (pub->hold) pub->hold(pub->self, true);
        for (size_t i = 0; i < c->n; i++) {
            rp_tap_item *it = c->p[i].it;
            it->st = RP_OK;
            it->result = RP_TAP_DONE;
            it->outcome = RP_PARKED_ALREADY;
            if (!c->items[i].result.parked) continue;
            it->outcome = RP_PARKED_NEW;
            /* Committed: the event may go out (a failure to publish loses
             * nothing; the ledger is the record). */
            rp_report rep;
            rp_report_init(&rep, false);
            if (rp_publish_event(env->ports, &c->items[i].result.event, &c->p[i].v, &rep) != RP_OK)
                b->unpublished++;
            rp_report_cleanup(&rep);
        }
        if (pub->hold) pub->hold(pub->self, false);
    } else if (rp_tap_result_of(c->st) == RP_TAP_RETRY) {
        *down = true;
        for (size_t i = 0; i < c->n; i++) c->p[i].it->result = RP_TAP_RETRY, c->p[i].it->st = c->st;
    } else {
        for (size_t i = 0; i < c->n; i++) {
            rp_tap_item *it = c->p[i].it;
            if (*down || rp_env_stopping(env)) {
                it->result = RP_TAP_RETRY;
                continue;
            }
            rp_report rep;
            rp_report_init(&rep, false);
            it->st = rp_park_dead_letter(env->ports, &env->site, &c->p[i].msg, false, &rep,
                                         &it->outcome);
            rp_report_cleanup(&rep);
            it->result = rp_tap_result_of(it->st);
            if (it->result == RP_TAP_RETRY) *down = true;
        }
    }
    for (size_t i = 0; i < c->n; i++) rp_tap_prep_cleanup(env, &c->p[i]);
    c->n = 0;
}

/* Reads the oldest outstanding chunk (c[*head], *count outstanding) and
 * settles it. When its transaction failed on its own, reads the others
 * first (its messages are then parked one by one) and settles them all. */
static void rp_tap_retire(const rp_tap_park_env *env, rp_tap_batch *b, rp_tap_chunk *c,
                          size_t *head, size_t *count, bool *down) {
    rp_tap_chunk *old = &c[*head];
    rp_tap_receive(env, old, down);
    if (old->n > 0 && old->st != RP_OK && !*down) {
        for (size_t k = 1; k < *count; k++)
            rp_tap_receive(env, &c[(*head + k) % RP_TAP_DEPTH], down);
        for (size_t k = 0; k < *count; k++)
            rp_tap_settle(env, b, &c[(*head + k) % RP_TAP_DEPTH], down);
        *head = 0;
        *count = 0;
        return;
    }
    rp_tap_settle(env, b, old, down);
    *head = (*head + 1) % RP_TAP_DEPTH;
    (*count)--;
}

struct rp_tap_park_mem {
    rp_tap_chunk c[RP_TAP_DEPTH];
};

rp_tap_park_mem *rp_tap_park_mem_new(void) { return calloc(1, sizeof(rp_tap_park_mem)); }

void rp_tap_park_mem_free(rp_tap_park_mem *m) { free(m); }

void rp_tap_park(const rp_tap_park_env *env, rp_tap_batch *b) {
    /* Every chunk is filled (rp_tap_fill) before it is read: lent memory
     * needs no zeroing between batches. */
    rp_tap_chunk *c = env->mem != NULL ? env->mem->c : calloc(RP_TAP_DEPTH, sizeof *c);
    if (c == NULL) {
        for (size_t i = 0; i < b->n; i++) b->items[i]->result = RP_TAP_RETRY;
        return;
    }
    size_t sessions = env->batch->sessions > 0 ? env->batch->sessions : 1;
    bool down = false;
    size_t head = 0, count = 0, i = 0, next_session = 0;
    while (i < b->n) {
        rp_tap_chunk *cur = &c[(head + count) % RP_TAP_DEPTH];
        /* In turn, so that each session's results are read in the order
         * its transactions were sent (chunks retire in sending order). */
        cur->session = next_session;
        next_session = (next_session + 1) % sessions;
        rp_tap_fill(env, b, &i, cur, &down);
        rp_tap_send(env, cur, &down);
        count++;
        if (count == RP_TAP_DEPTH) rp_tap_retire(env, b, c, &head, &count, &down);
    }
    while (count > 0) rp_tap_retire(env, b, c, &head, &count, &down);
    if (env->mem == NULL) free(c);
}
