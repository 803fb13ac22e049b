/* Answering a gate with replay (rp_replays.h). */
#include "rp_replays.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_log.h"
#include "rp_replay.h"

struct rp_replays {
    struct event_base *base;
    rp_replays_deps deps;
    bool stopped;
    /* Gates whose replay is in flight (loop thread). */
    int64_t *replaying;
    size_t n_replaying, cap_replaying;
    /* Replays waiting for the store thread, batched (loop thread): while
     * one batch of prepares (or settles) is out, the next ones wait here
     * and go together, so that a bulk answer pays one commit a batch. */
    struct rp_replay_job *prep_head, *prep_tail;
    struct rp_replay_job *settle_head, *settle_tail;
    bool prep_out, settle_out;
    /* The batch out on the store thread, one of each at most. */
    struct rp_replay_batch {
        struct rp_replays *d;
        struct rp_replay_job *head;
        size_t n;
    } prep_batch, settle_batch;
};

typedef struct rp_replay_job {
    rp_replays *d;
    int64_t gate;
    char *by;
    char *by_note;             /* the request's `by`, kept as the ledger's note */
    rp_replay_done_fn done;
    void *arg;
    /* Filled on the store thread. */
    rp_replay_result res;
    char message[600];
    char note[600];            /* what was left out of the publish, and why */
    bool settled_early;        /* answered already: nothing to send */
    bool claimed;              /* this process's claim is on the gate */
    char *queue;               /* the destination */
    char *vhost;               /* its vhost; NULL: broker.url's */
    uint8_t *body;
    size_t body_len;
    rp_replay_msg *msg;        /* the restored properties */
    struct rp_replay_job *next; /* in a wait queue or a batch */
} rp_replay_job;

/* The most replays one batched store job takes. */
#define RP_REPLAYS_BATCH 100

typedef struct rp_replay_batch rp_replay_batch;

/* ---- the in-flight set (loop thread) -------------------------------------- */

static bool rp_inflight_has(const rp_replays *d, int64_t gate) {
    for (size_t i = 0; i < d->n_replaying; i++)
        if (d->replaying[i] == gate) return true;
    return false;
}

static bool rp_inflight_add(rp_replays *d, int64_t gate) {
    if (d->n_replaying == d->cap_replaying) {
        size_t cap = d->cap_replaying ? d->cap_replaying * 2 : 8;
        int64_t *g = realloc(d->replaying, cap * sizeof *g);
        if (g == NULL) return false;
        d->replaying = g;
        d->cap_replaying = cap;
    }
    d->replaying[d->n_replaying++] = gate;
    return true;
}

static void rp_inflight_remove(rp_replays *d, int64_t gate) {
    for (size_t i = 0; i < d->n_replaying; i++)
        if (d->replaying[i] == gate) {
            d->replaying[i] = d->replaying[--d->n_replaying];
            return;
        }
}

bool rp_replays_busy(const rp_replays *d, int64_t gate) { return rp_inflight_has(d, gate); }

rp_replays *rp_replays_new(struct event_base *base, const rp_replays_deps *deps) {
    rp_replays *d = calloc(1, sizeof *d);
    if (d == NULL) return NULL;
    d->base = base;
    d->deps = *deps;
    return d;
}

void rp_replays_stop(rp_replays *d) {
    if (d) d->stopped = true;
}

void rp_replays_free(rp_replays *d) {
    if (d == NULL) return;
    free(d->replaying);
    free(d);
}

static rp_status rp_store_job(rp_replays *d, rp_work_fn fn, rp_done_fn done, void *job) {
    if (d->stopped) return RP_ERR_CLOSED;
    return d->deps.store_job(d->deps.store_job_self, fn, done, job);
}

/* ---- the end ------------------------------------------------------------- */

static void rp_job_free(rp_replay_job *j) {
    const rp_replay_publish_port *p = &j->d->deps.publish;
    p->msg_free(p->self, j->msg);
    free(j->by);
    free(j->by_note);
    free(j->queue);
    free(j->vhost);
    free(j->body);
    free(j);
}

static void rp_finish(rp_replay_job *j) {
    rp_inflight_remove(j->d, j->gate);
    if (j->res.message == NULL && j->message[0]) j->res.message = j->message;
    if (j->res.st == RP_OK && j->note[0]) j->res.note = j->note;
    j->done(j->arg, &j->res);
    rp_job_free(j);
}

static void rp_fail(rp_replay_job *j, rp_status st, const char *fmt, ...) RP_PRINTF(3, 4);
static void rp_fail(rp_replay_job *j, rp_status st, const char *fmt, ...) {
    j->res.st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->message, sizeof j->message, fmt, ap);
    va_end(ap);
    j->res.message = j->message;
}

/* ---- 1. store thread: read and decide ------------------------------------ */

/* Store thread: the rest of the decision, with the gate locked and open
 * (rp_replay_check), then the properties restored and what the broker
 * would refuse left out (rp_replay_strip_decide). */
static void rp_prepare_decide(rp_replays *d, rp_replay_job *j, rp_replay_row *row) {
    const rp_replay_store_port *s = &d->deps.store;
    const rp_replay_publish_port *p = &d->deps.publish;
    const rp_config *cfg = s->config(s->self);
    char kept_why[256];
    const char *const own[] = {cfg->broker.control_queue, cfg->broker.tap_queue};
    rp_replay_facts f = {
        .kind = row->kind,
        .has_dead_letter = row->has_dead_letter,
        .not_replayable = row->has_dead_letter && p->kept_refusal(p->self,
                                                                  row->properties_json,
                                                                  kept_why, sizeof kept_why)
                              ? kept_why
                              : NULL,
        .origin_queue = row->origin_queue,
        .stored_whole = !row->body_truncated && row->headers_json != NULL,
        .owned = cfg->reap.owned_queue_pattern.code,
        .own_queues = own,
        .n_own = RP_ARRAY_LEN(own),
        .vhost = row->vhost,
        .vhost_is_ours = row->vhost != NULL && p->vhost_is_ours(p->self, row->vhost),
    };
    rp_status st = rp_replay_check(&f, &j->queue, j->message, sizeof j->message);
    if (st != RP_OK) {
        j->res.st = st;
        j->res.message = j->message;
        return;
    }
    if (row->vhost != NULL && (j->vhost = strdup(row->vhost)) == NULL) {
        rp_fail(j, RP_ERR_INTERNAL, "out of memory");
        return;
    }
    char perr[200];
    st = p->msg_restore(p->self, j->msg, row->properties_json, row->headers_json, perr,
                        sizeof perr);
    if (st != RP_OK) {
        j->res.st = rp_replay_restore_refusal(st, perr, j->message, sizeof j->message);
        j->res.message = j->message;
        return;
    }
    rp_bytes user_id, expiration;
    p->msg_peek(p->self, j->msg, &user_id, &expiration);
    char own_user[256];
    bool have_own = p->own_user(p->self, own_user, sizeof own_user);
    p->msg_strip(p->self, j->msg, rp_replay_strip_decide(user_id, expiration,
                                                         have_own ? own_user : NULL, j->note,
                                                         sizeof j->note));
    j->body = row->body;
    j->body_len = row->body_len;
    row->body = NULL;
    j->res.st = RP_OK;
}

static bool rp_prepare_row(rp_replays *d, rp_replay_job *j, rp_replay_row *rowp);

static void rp_prepare_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_replay_job *j = arg;
    rp_replays *d = j->d;
    const rp_replay_store_port *s = &d->deps.store;
    if (s->ready(s->self) != RP_OK) {
        rp_fail(j, RP_ERR_UNAVAILABLE, "the store is unreachable");
        return;
    }
    /* 1. Lock the gate and read it and its claim (rp_replay_port.h). */
    rp_replay_row row;
    rp_status st = s->lock(s->self, j->gate, j->by, &row);
    if (st == RP_ERR_NOT_FOUND) {
        rp_fail(j, st, "no such gate");
        return;
    }
    if (st != RP_OK) {
        rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                "reading the gate failed");
        return;
    }
    if (rp_prepare_row(d, j, &row)) {
        /* 2. Claim it (the gate is "replaying" from the commit on), or
         * leave it as it was. */
        rp_time_ms at = 0;
        st = s->claim(s->self, j->gate, &at);
        if (st == RP_OK) {
            j->claimed = true;
        } else {
            rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                    "claiming the gate for the replay failed; nothing was sent");
        }
    } else if (row.answered || row.claim != RP_GATE_CLAIM_NONE) {
        /* The lock ended the transaction (rp_replay_port.h). */
    } else if (s->abandon(s->self) != RP_OK) {
        /* The session was closed: the lock went with it. */
    }
    rp_replay_row_cleanup(&row);
}

/* Store thread: what the locked row of j's gate says (answered already,
 * busy, taken over, refused, or go ahead); true: go ahead, claim it. */
static bool rp_prepare_row(rp_replays *d, rp_replay_job *j, rp_replay_row *rowp) {
    rp_replay_state state = rp_replay_state_of(rowp->answered, rowp->claim);
    if (state == RP_REPLAY_STATE_ANSWERED) {
        j->settled_early = true;
        j->res.st = RP_OK;
        j->res.answer.outcome = RP_OUTCOME_ALREADY_ANSWERED;
        j->res.answer.choice = rowp->answer;
        j->res.answer.kind = rowp->kind;
    } else if (state == RP_REPLAY_STATE_BUSY || state == RP_REPLAY_STATE_TAKEN_OVER) {
        if (state == RP_REPLAY_STATE_TAKEN_OVER) {
            /* Taken over and committed by the store port's lock. */
            char gate[24], at[24];
            snprintf(gate, sizeof gate, "%" PRId64, j->gate);
            snprintf(at, sizeof at, "%" PRId64, (int64_t)rowp->claimed_at);
            RP_WARN("a stale replay claim on a gate was taken over: its message may have been "
                    "published once already, so it was not published again", "gate", gate,
                    "claimed_by", rowp->claimed_by, "claimed_at_ms", at, "choice", "replay", NULL);
            snprintf(j->res.answer.claimed_by, sizeof j->res.answer.claimed_by, "%s",
                     rowp->claimed_by);
            j->res.answer.claimed_at = rowp->claimed_at;
        }
        j->res.st = rp_replay_state_refusal(state, j->gate, rowp->claimed_by, rowp->claimed_at,
                                            j->message, sizeof j->message);
        j->res.message = j->message;
        j->res.answer.claim = rowp->claim;
    } else {
        rp_prepare_decide(d, j, rowp);
        return j->res.st == RP_OK;
    }
    return false;
}

/* ---- store thread: release a claim after a publish that delivered nothing */

static void rp_release_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_replay_job *j = arg;
    const rp_replay_store_port *s = &j->d->deps.store;
    bool released = false;
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    if (s->ready(s->self) != RP_OK || s->release(s->self, j->gate, &released) != RP_OK)
        RP_WARN("a replay's claim on its gate could not be released; it goes stale after "
                "control.replay_claim_seconds", "gate", gate, NULL);
    else if (released)
        j->claimed = false;
}

static void rp_release_done(void *arg, bool cancelled) {
    rp_replay_job *j = arg;
    if (cancelled) j->res.cancelled = true;
    rp_finish(j);
}

/* Loop: releases the claim (store thread), then finishes. */
static void rp_release_then_finish(rp_replay_job *j) {
    if (j->claimed &&
        rp_store_job(j->d, rp_release_work, rp_release_done, j) == RP_OK)
        return;
    rp_finish(j);
}

/* ---- 3. store thread: settle --------------------------------------------- */

/* A test hook (docs/DEVELOPING.md): a pause between the confirm and the
 * settle, so that a test can kill reaperd there. */
static void rp_test_pause(void) {
    const char *pause = getenv("RP_TEST_PAUSE_AFTER_REPLAY_PUBLISH_MS");
    if (pause != NULL) {
        long ms = strtol(pause, NULL, 10);
        if (ms > 0 && ms <= 600000) {
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0) {}
        }
    }
}

static void rp_settle_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_replay_job *j = arg;
    const rp_replay_store_port *s = &j->d->deps.store;
    rp_test_pause();
    rp_status st = s->ready(s->self);
    if (st == RP_OK) /* fenced on this process's claim (rp_replay_port.h) */
        st = s->settle(s->self, j->gate, j->by, j->by_note, &j->res.answer);
    if (st != RP_OK) {
        j->res.st = rp_replay_settle_refusal(st, j->gate, j->queue, j->res.answer.claimed_by,
                                             j->res.answer.claimed_at, j->message,
                                             sizeof j->message);
        j->res.message = j->message;
    } else {
        j->claimed = false;
    }
}

static void rp_settle_done(void *arg, bool cancelled) {
    rp_replay_job *j = arg;
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    if (cancelled) {
        RP_ERROR("a replay was published but reaperd stopped before settling its gate", "gate",
                 gate, "queue", j->queue, NULL);
        j->res.cancelled = true;
    } else if (j->res.st != RP_OK) {
        RP_ERROR("a replay was published but its gate could not be settled", "gate", gate,
                 "queue", j->queue, NULL);
    } else {
        if (j->res.answer.outcome == RP_OUTCOME_ALREADY_ANSWERED)
            RP_WARN("a replay was published, and the gate had been answered meanwhile", "gate",
                    gate, "queue", j->queue, NULL);
        else
            RP_INFO("dead letter replayed", "gate", gate, "queue", j->queue, NULL);
    }
    rp_finish(j);
}

static void rp_prepare_done(void *arg, bool cancelled);

/* ---- batches: many replays in one store job ------------------------------ */

static void rp_queue_push(rp_replay_job **head, rp_replay_job **tail, rp_replay_job *j) {
    j->next = NULL;
    if (*tail != NULL) (*tail)->next = j;
    else *head = j;
    *tail = j;
}

/* Moves up to RP_REPLAYS_BATCH jobs from the queue into b. */
static void rp_batch_fill(rp_replays *d, rp_replay_batch *b, rp_replay_job **head,
                          rp_replay_job **tail) {
    b->d = d;
    b->head = *head;
    b->n = 0;
    rp_replay_job *last = NULL;
    while (*head != NULL && b->n < RP_REPLAYS_BATCH) {
        last = *head;
        *head = last->next;
        b->n++;
    }
    if (last != NULL) last->next = NULL;
    if (*head == NULL) *tail = NULL;
}

/* Store thread: the batch's locks in one transaction, their claims in its
 * commit; each gate decided as rp_prepare_work decides it. */
static void rp_prepare_many_work(void *ctx, void *arg) {
    rp_replay_batch *b = arg;
    rp_replays *d = b->d;
    const rp_replay_store_port *s = &d->deps.store;
    size_t n = b->n;
    if (n == 1 || s->lock_many == NULL || s->claim_many == NULL) {
        for (rp_replay_job *j = b->head; j != NULL; j = j->next) rp_prepare_work(ctx, j);
        return;
    }
    if (s->ready(s->self) != RP_OK) {
        for (rp_replay_job *j = b->head; j != NULL; j = j->next)
            rp_fail(j, RP_ERR_UNAVAILABLE, "the store is unreachable");
        return;
    }
    int64_t *gates = calloc(n, sizeof *gates), *claim_ids = calloc(n, sizeof *claim_ids);
    const char **by = calloc(n, sizeof *by);
    rp_replay_row *rows = calloc(n, sizeof *rows);
    rp_status *sts = calloc(n, sizeof *sts);
    rp_time_ms *at = calloc(n, sizeof *at);
    bool *claimed = calloc(n, sizeof *claimed), *go = calloc(n, sizeof *go);
    if (gates == NULL || claim_ids == NULL || by == NULL || rows == NULL || sts == NULL ||
        at == NULL || claimed == NULL || go == NULL) {
        for (rp_replay_job *j = b->head; j != NULL; j = j->next)
            rp_fail(j, RP_ERR_INTERNAL, "out of memory");
        goto out;
    }
    size_t i = 0;
    for (rp_replay_job *j = b->head; j != NULL; j = j->next, i++) {
        gates[i] = j->gate;
        by[i] = j->by;
    }
    rp_status st = s->lock_many(s->self, gates, n, by, rows, sts);
    if (st != RP_OK) {
        for (rp_replay_job *j = b->head; j != NULL; j = j->next)
            rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                    "reading the gate failed");
        goto out;
    }
    size_t m = 0;
    i = 0;
    for (rp_replay_job *j = b->head; j != NULL; j = j->next, i++) {
        if (sts[i] == RP_ERR_NOT_FOUND) rp_fail(j, sts[i], "no such gate");
        else if (sts[i] != RP_OK) rp_fail(j, RP_ERR_INTERNAL, "reading the gate failed");
        else if (rp_prepare_row(d, j, &rows[i])) {
            go[i] = true;
            claim_ids[m++] = j->gate;
        }
    }
    /* Ends the transaction: the claims (and the stale claims taken over)
     * committed, or nothing. */
    st = s->claim_many(s->self, claim_ids, m, at, claimed);
    size_t k = 0;
    i = 0;
    for (rp_replay_job *j = b->head; j != NULL; j = j->next, i++) {
        if (!go[i]) continue;
        if (st == RP_OK && claimed[k]) j->claimed = true;
        else
            rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                    "claiming the gate for the replay failed; nothing was sent");
        k++;
    }
out:
    if (rows != NULL)
        for (i = 0; i < n; i++) rp_replay_row_cleanup(&rows[i]);
    free(gates);
    free(claim_ids);
    free(by);
    free(rows);
    free(sts);
    free(at);
    free(claimed);
    free(go);
}

static void rp_prep_kick(rp_replays *d);

/* Takes a batch's jobs out of it and hands each to fn (a job's own done). */
static void rp_batch_each(rp_replay_batch *b, void (*fn)(void *job, bool cancelled),
                          bool cancelled) {
    rp_replay_job *j = b->head;
    b->head = NULL;
    while (j != NULL) {
        rp_replay_job *next = j->next;
        j->next = NULL;
        fn(j, cancelled);
        j = next;
    }
}

static void rp_prepare_many_done(void *arg, bool cancelled) {
    rp_replay_batch *b = arg;
    rp_replays *d = b->d;
    rp_batch_each(b, rp_prepare_done, cancelled);
    d->prep_out = false;
    rp_prep_kick(d);
}

/* A prepare the store thread did not take (stopping): ends as cancelled. */
static void rp_prepare_not_run(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    rp_replay_job *j = job;
    j->res.cancelled = true;
    rp_finish(j);
}

/* Loop: sends the waiting prepares as one batch unless one is out; a batch
 * the store thread does not take (stopping) ends as cancelled. */
static void rp_prep_kick(rp_replays *d) {
    while (!d->prep_out && d->prep_head != NULL) {
        rp_batch_fill(d, &d->prep_batch, &d->prep_head, &d->prep_tail);
        d->prep_out = true;
        if (rp_store_job(d, rp_prepare_many_work, rp_prepare_many_done, &d->prep_batch) == RP_OK)
            return;
        d->prep_out = false;
        rp_batch_each(&d->prep_batch, rp_prepare_not_run, true);
    }
}

/* Store thread: the batch's settles in one transaction; each as
 * rp_settle_work settles it. */
static void rp_settle_many_work(void *ctx, void *arg) {
    rp_replay_batch *b = arg;
    const rp_replay_store_port *s = &b->d->deps.store;
    size_t n = b->n;
    if (n == 1 || s->settle_many == NULL) {
        for (rp_replay_job *j = b->head; j != NULL; j = j->next) rp_settle_work(ctx, j);
        return;
    }
    rp_test_pause();
    int64_t *gates = calloc(n, sizeof *gates);
    const char **by = calloc(n, sizeof *by), **note = calloc(n, sizeof *note);
    rp_answer_result *out = calloc(n, sizeof *out);
    rp_status *sts = calloc(n, sizeof *sts);
    rp_status st = RP_ERR_INTERNAL;
    if (gates != NULL && by != NULL && note != NULL && out != NULL && sts != NULL) {
        size_t i = 0;
        for (rp_replay_job *j = b->head; j != NULL; j = j->next, i++) {
            gates[i] = j->gate;
            by[i] = j->by;
            note[i] = j->by_note;
        }
        st = s->ready(s->self);
        /* fenced on this process's claims (rp_replay_port.h) */
        if (st == RP_OK) st = s->settle_many(s->self, gates, n, by, note, out, sts);
    }
    size_t i = 0;
    for (rp_replay_job *j = b->head; j != NULL; j = j->next, i++) {
        rp_status jst = st == RP_OK ? sts[i] : st;
        if (st == RP_OK) j->res.answer = out[i];
        if (jst != RP_OK) {
            j->res.st = rp_replay_settle_refusal(jst, j->gate, j->queue,
                                                 j->res.answer.claimed_by,
                                                 j->res.answer.claimed_at, j->message,
                                                 sizeof j->message);
            j->res.message = j->message;
        } else {
            j->claimed = false;
        }
    }
    free(gates);
    free(by);
    free(note);
    free(out);
    free(sts);
}

static void rp_settle_kick(rp_replays *d);

static void rp_settle_many_done(void *arg, bool cancelled) {
    rp_replay_batch *b = arg;
    rp_replays *d = b->d;
    rp_batch_each(b, rp_settle_done, cancelled);
    d->settle_out = false;
    rp_settle_kick(d);
}

/* Loop: a confirmed publish whose settle the store thread will not run
 * (stopping): said so, the claim kept if it cannot be released. */
static void rp_settle_not_run(rp_replay_job *j) {
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    rp_fail(j, RP_ERR_UNAVAILABLE,
            "the message was published to %s and confirmed, but reaperd is shutting down "
            "and did not settle the gate", j->queue);
    RP_WARN("replay not settled", "gate", gate, "queue", j->queue, NULL);
    rp_release_then_finish(j);
}

static void rp_settle_not_run_job(void *job, bool cancelled) {
    RP_UNUSED(cancelled);
    rp_settle_not_run(job);
}

static void rp_settle_kick(rp_replays *d) {
    while (!d->settle_out && d->settle_head != NULL) {
        rp_batch_fill(d, &d->settle_batch, &d->settle_head, &d->settle_tail);
        d->settle_out = true;
        if (rp_store_job(d, rp_settle_many_work, rp_settle_many_done, &d->settle_batch) ==
            RP_OK)
            return;
        d->settle_out = false;
        rp_batch_each(&d->settle_batch, rp_settle_not_run_job, true);
    }
}

/* Loop: a confirmed publish's settle, with the others waiting. */
static void rp_settle_enqueue(rp_replay_job *j) {
    rp_queue_push(&j->d->settle_head, &j->d->settle_tail, j);
    rp_settle_kick(j->d);
}

/* ---- 2. loop: publish ------------------------------------------------------ */

static void rp_published(void *arg, rp_replay_publish outcome, const char *name,
                         const char *refusal) {
    rp_replay_job *j = arg;
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    rp_status st = RP_ERR_INTERNAL;
    switch (rp_replay_after_publish(outcome, j->queue,
                                    outcome == RP_REPLAY_PUBLISH_REFUSED ? refusal : NULL, &st,
                                    j->message, sizeof j->message)) {
    case RP_REPLAY_NEXT_SETTLE:
        if (!j->d->stopped) {
            rp_settle_enqueue(j);
            return;
        }
        rp_settle_not_run(j);
        return;
    case RP_REPLAY_NEXT_CANCEL:
        RP_WARN("replay dropped: reaperd is stopping", "gate", gate, "queue", j->queue, NULL);
        j->res.cancelled = true;
        rp_finish(j);
        return;
    case RP_REPLAY_NEXT_KEEP_CLAIM:
        /* It may have been delivered: the claim stays (rp_gate.h). */
        j->res.st = st;
        j->res.away = outcome == RP_REPLAY_PUBLISH_LOST;
        j->res.message = j->message;
        RP_WARN("replay not confirmed", "gate", gate, "queue", j->queue, "outcome",
                name, NULL);
        rp_finish(j);
        return;
    case RP_REPLAY_NEXT_RELEASE:
    default:
        j->res.st = st;
        j->res.message = j->message;
        break;
    }
    RP_WARN("replay not confirmed", "gate", gate, "queue", j->queue, "outcome",
            name, NULL);
    /* Nothing was delivered: the claim goes. */
    rp_release_then_finish(j);
}

static void rp_prepare_done(void *arg, bool cancelled) {
    rp_replay_job *j = arg;
    const rp_replay_publish_port *p = &j->d->deps.publish;
    if (cancelled) {
        j->res.cancelled = true;
        rp_finish(j);
        return;
    }
    if (j->res.st != RP_OK || j->settled_early) {
        rp_finish(j);
        return;
    }
    rp_status st = p->publish(p->self, j->msg, j->vhost, j->queue,
                              (rp_bytes){j->body, j->body_len}, rp_published, j);
    if (st == RP_ERR_UNAVAILABLE) {
        rp_fail(j, RP_ERR_UNAVAILABLE,
                "the broker is not connected; nothing was sent and the gate stays open");
        j->res.away = true;
        rp_release_then_finish(j);
    } else if (st != RP_OK) {
        rp_fail(j, RP_ERR_INTERNAL, "out of memory");
        rp_release_then_finish(j);
    }
}

rp_status rp_replays_start(rp_replays *d, int64_t gate, const char *by, const char *note,
                           rp_replay_done_fn done, void *arg) {
    if (rp_inflight_has(d, gate)) return RP_ERR_CONFLICT;
    if (d->stopped) return RP_ERR_CLOSED;
    rp_replay_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    const rp_replay_publish_port *p = &d->deps.publish;
    j->d = d;
    j->gate = gate;
    j->done = done;
    j->arg = arg;
    j->res.st = RP_ERR_INTERNAL;
    if ((j->msg = p->msg_new(p->self)) == NULL || (by && (j->by = strdup(by)) == NULL) ||
        (note && (j->by_note = strdup(note)) == NULL) || !rp_inflight_add(d, gate)) {
        rp_job_free(j);
        return RP_ERR_NOMEM;
    }
    if (d->prep_out) {
        /* A batch is out: this one goes with the next (rp_prep_kick). */
        rp_queue_push(&d->prep_head, &d->prep_tail, j);
        return RP_OK;
    }
    rp_queue_push(&d->prep_head, &d->prep_tail, j);
    rp_batch_fill(d, &d->prep_batch, &d->prep_head, &d->prep_tail);
    d->prep_out = true;
    rp_status st = rp_store_job(d, rp_prepare_many_work, rp_prepare_many_done, &d->prep_batch);
    if (st != RP_OK) {
        d->prep_out = false;
        d->prep_batch.head = NULL;
        rp_inflight_remove(d, gate);
        rp_job_free(j);
    }
    return st;
}
