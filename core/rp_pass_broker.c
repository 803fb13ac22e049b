/* The broker half of a pass: list, classify and judge every queue, then
 * backfill owned dead-letter queues (rp_pass.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_match.h"
#include "rp_object.h"
#include "rp_park.h"
#include "rp_pass_internal.h"
#include "rp_queue_listing.h"

static bool rp_is_own_queue(const rp__pass *p, const char *name) {
    for (size_t i = 0; i < RP_ARRAY_LEN(p->opt->own_queues); i++)
        if (p->opt->own_queues[i] && strcmp(p->opt->own_queues[i], name) == 0) return true;
    return false;
}

/* Sets q->is_dead_letter_queue and q->owned from the configured patterns.
 * A name a pattern cannot be matched against (rp_match_find) counts as not
 * matched, with a note: reaper leaves alone what it cannot classify.
 * Reaper's own queues (control, tap) are neither, and reapers_own: not
 * work to judge, not dead letters to backfill. Every other queue is a work
 * queue, owned or foreign (issue 18 item 5). */
static rp_status rp_classify_as(const rp__pass *p, rp_queue_facts *q, bool *unmatched) {
    bool dlq = false, owned = false;
    *unmatched = false;
    if (rp_is_own_queue(p, q->name)) {
        q->is_dead_letter_queue = false;
        q->owned = false;
        q->reapers_own = true;
        return RP_OK;
    }
    q->reapers_own = false;
    rp_status mst = rp_match_name(p->opt->dead_letter_queue_pattern, q->name, &dlq);
    if (mst == RP_OK) mst = rp_match_name(p->opt->owned_queue_pattern, q->name, &owned);
    if (mst == RP_OK && dlq && !owned) {
        char *base = NULL;
        rp_status st = rp_match_cut(p->opt->dead_letter_queue_pattern, q->name, &base);
        if (st != RP_OK) return st;
        mst = rp_match_name(p->opt->owned_queue_pattern, base, &owned);
        free(base);
    }
    if (mst == RP_ERR_NOMEM) return mst;
    if (mst != RP_OK) {
        dlq = owned = false;
        *unmatched = true;
    }
    q->is_dead_letter_queue = dlq;
    q->owned = owned;
    return RP_OK;
}

static rp_status rp_classify(rp__pass *p, rp_queue_facts *q) {
    bool unmatched = false;
    rp_status st = rp_classify_as(p, q, &unmatched);
    if (st == RP_OK && unmatched)
        st = rp__pass_note(p, "queue %s on vhost %s: its name could not be matched against the "
                              "patterns; left alone",
                           q->name ? q->name : "?", q->vhost ? q->vhost : "?");
    return st;
}

static rp_status rp_note_queue(rp__pass *p, const rp_queue_facts *q, rp_queue_note note) {
    switch (note) {
    case RP_QUEUE_NOTE_QUORUM_NO_AGE:
        return rp__pass_note(p, "queue %s on vhost %s: stale ready not judged, a quorum queue "
                                "reports no head message age",
                             q->name, q->vhost);
    case RP_QUEUE_NOTE_NO_HEAD_TIMESTAMP:
        return rp__pass_note(p, "queue %s on vhost %s: stale ready not judged, its head "
                                "message carries no timestamp",
                             q->name, q->vhost);
    case RP_QUEUE_NOTE_CONSUMERS_UNKNOWN:
        return rp__pass_note(p, "queue %s on vhost %s: holder gone and stale ready not judged, "
                                "the broker does not report its consumer count (yet)",
                             q->name, q->vhost);
    case RP_QUEUE_NOTE_COUNTS_UNKNOWN:
        return rp__pass_note(p, "queue %s on vhost %s: not judged, the broker does not report "
                                "its message counts (yet); what was sighted on it stays open",
                             q->name, q->vhost);
    case RP_QUEUE_NOTE_NONE:
    default:
        return RP_OK;
    }
}

/* Marks a queue's sightings as neither to be cleared by this pass: what
 * was sighted on it could not be judged again (rp__pass.kept). */
static rp_status rp_keep_queue(rp__pass *p, const char *vhost, const char *name) {
    char *subject = NULL;
    rp_status st = rp_object_queue(vhost, name, &subject);
    if (st == RP_OK) st = rp__strs_add(&p->kept, subject);
    free(subject);
    return st;
}

static rp_status rp_add_target(rp__pass *p, const rp_queue_facts *q) {
    if (p->n_targets == p->cap_targets) {
        size_t cap = p->cap_targets ? p->cap_targets * 2 : 8;
        rp__target *t = realloc(p->targets, cap * sizeof *t);
        if (t == NULL) return RP_ERR_NOMEM;
        p->targets = t;
        p->cap_targets = cap;
    }
    rp__target *t = &p->targets[p->n_targets];
    t->vhost = strdup(q->vhost);
    t->queue = strdup(q->name);
    t->depth = rp__sat_add(rp__nonneg(q->ready), rp__nonneg(q->unacked));
    if (t->vhost == NULL || t->queue == NULL) {
        free(t->vhost);
        free(t->queue);
        return RP_ERR_NOMEM;
    }
    p->n_targets++;
    return RP_OK;
}

/* For rp_pass_routes.c and rp_pass_stalled.c (rp_pass_internal.h). */
rp_status rp__pass_classify(rp__pass *p, rp_queue_facts *q) { return rp_classify(p, q); }

rp_status rp__pass_classify_quiet(const rp__pass *p, rp_queue_facts *q) {
    bool unmatched = false;
    return rp_classify_as(p, q, &unmatched);
}

bool rp__pass_is_own_queue(const rp__pass *p, const char *name) { return rp_is_own_queue(p, name); }

rp_status rp__pass_keep_queue(rp__pass *p, const char *vhost, const char *name) {
    return rp_keep_queue(p, vhost, name);
}

rp_status rp__pass_add_target(rp__pass *p, const rp_queue_facts *q) { return rp_add_target(p, q); }

bool rp__pass_has_target(const rp__pass *p, const char *vhost, const char *name) {
    for (size_t i = 0; i < p->n_targets; i++)
        if (strcmp(p->targets[i].vhost, vhost) == 0 && strcmp(p->targets[i].queue, name) == 0)
            return true;
    return false;
}

rp_status rp__pass_judge_queue(rp__pass *p, const rp_queue_facts *listed, bool backfill) {
    return rp__pass_judge_sampled(p, listed, backfill, NULL);
}

rp_status rp__pass_judge_sampled(rp__pass *p, const rp_queue_facts *listed, bool backfill,
                                 const rp__sampled *pre) {
    if (listed->vhost == NULL || listed->name == NULL)
        return rp__pass_note(p, "a queue without a name or vhost was listed; left alone");
    rp_queue_facts q = *listed;
    rp_status st = rp_classify(p, &q);
    if (st != RP_OK) return st;
    rp_queue_judgement j;
    st = rp_judge_queue(&q, &p->opt->thresholds, p->now, &j);
    if (st == RP_OK) st = rp_note_queue(p, &q, j.note);
    if (st == RP_OK && j.unmeasured) {
        char *subject = NULL;
        st = rp_object_queue(q.vhost, q.name, &subject);
        if (st == RP_OK) st = rp__strs_add(&p->kept, subject);
        free(subject);
    }
    if (st == RP_OK && j.backfill && backfill) st = rp_add_target(p, &q);
    /* An owned dead-letter queue whose messages are not read here (a
     * targeted check does no backfill) keeps its sighting: only a backfill
     * can tell whether what it could not read is still there. */
    if (st == RP_OK && j.backfill && !backfill) st = rp_keep_queue(p, q.vhost, q.name);
    /* An owned work queue may yet turn out to be where another owned
     * queue's dead letters go (a route through the default exchange names
     * it, maybe on a later page): its verdict waits for the whole listing
     * (rp__pass_release_held), so that the listing order cannot make a
     * dead-letter queue be judged as a work queue. A foreign work queue
     * (issue 18 item 5) waits likewise: an owned queue's route may name it. */
    if (st == RP_OK && j.verdict.condition != RP_COND_NONE)
        st = !q.is_dead_letter_queue ? rp__pass_hold(p, q.vhost, q.name, &j.verdict)
                                     : rp__pass_surface(p, &j.verdict);
    rp_queue_judgement_cleanup(&j);
    if (st == RP_OK) st = rp__pass_add_route(p, &q);
    /* More ready than declared (issue 18, WAITING_DEPTH) is its own
     * sighting, beside whatever else holds; held like the queue's other
     * verdicts, since the queue may turn out to be a dead-letter target. */
    if (st == RP_OK) {
        rp_verdict v;
        st = rp_judge_queue_depth(&q, &p->opt->thresholds, &v);
        if (st == RP_OK && v.condition != RP_COND_NONE) st = rp__pass_hold(p, q.vhost, q.name, &v);
        rp_verdict_cleanup(&v);
    }
    /* Intake above drain over the window (issue 18 item 3, DIVERGENT). */
    if (st == RP_OK) st = rp__pass_divergent_queue(p, &q, pre);
    /* A limit at which the broker would drop a message (no dead-letter
     * exchange) is its own sighting, beside whatever else holds. */
    if (st == RP_OK) {
        rp_verdict v;
        st = rp_judge_delivery_limit_drop(&q, &v);
        if (st == RP_OK && v.condition != RP_COND_NONE) st = rp__pass_surface(p, &v);
        rp_verdict_cleanup(&v);
    }
    return st;
}

static rp_status rp_list_pages(rp__pass *p, rp_queue_listing *keep) {
    const rp_broker_port *b = &p->ports->broker;
    for (size_t page = 1;; page++) {
        if (p->opt->should_stop && p->opt->should_stop(p->opt->stop_arg)) {
            p->broker_whole = false;
            return rp__pass_note(p, "broker: the listing stopped early (shutting down)");
        }
        rp_queue_page pg = {0};
        rp_status lst = b->list_queues(b->self, page, &pg);
        if (lst != RP_OK) {
            p->broker_whole = false;
            return rp__pass_unreadable(p, RP_SOURCE_BROKER, "listing queues", lst);
        }
        /* Kept before judging: the page is lent until the port's next
         * call, and judging a queue may call the port. */
        rp_queue_listing_add(keep, pg.policy, pg.n);
        /* The page's owned queues' counters in one store call (issue 19
         * item 5), then each queue judged with its own. */
        rp__sampled *pre = NULL;
        rp_status st = rp__pass_divergent_page(p, pg.queues, pg.n, &pre);
        for (size_t i = 0; i < pg.n && st == RP_OK; i++)
            st = rp__pass_judge_sampled(p, &pg.queues[i], true, pre ? &pre[i] : NULL);
        free(pre);
        if (st != RP_OK) return st;
        /* An empty page ends the listing even when the adapter forgot to say
         * so, so that a broken adapter cannot keep the pass going forever. */
        if (pg.last || pg.n == 0) {
            rp_queue_listing_end(keep, true);
            return RP_OK;
        }
    }
}

static rp_status rp_list_and_judge(rp__pass *p) {
    rp_queue_listing *keep = p->opt->keep_listing;
    rp_queue_listing_begin(keep);
    rp_status st = rp_list_pages(p, keep);
    rp_queue_listing_end(keep, false); /* a listing not read to its end (no-op when whole) */
    return st;
}

/* Surfaces what the backfill of t could not read (issue #5), once per
 * sighting like every surfaced condition; a later backfill that finds
 * nothing unread clears it (rp__pass_clear). An unknown count keeps the
 * sighting as it is. */
static rp_status rp_surface_unread(rp__pass *p, const rp__target *t, const rp_dl_batch *b) {
    if (b->unread < 0) return rp_keep_queue(p, t->vhost, t->queue);
    if (b->unread == 0) return RP_OK;
    rp_verdict v;
    rp_status st = rp_judge_dead_letter_unread(t->vhost, t->queue, b->unread, b->unread_at_most,
                                               b->unread_reason, p->opt->dead_letter_peek_limit,
                                               &v);
    if (st == RP_ERR_INVALID) { /* a port that gave no reason: said, and kept */
        rp_verdict_cleanup(&v);
        st = rp__pass_note(p, "dead-letter queue %s on vhost %s: %lld message(s) were not read, "
                              "for a reason the pass was not told",
                           t->queue, t->vhost, (long long)b->unread);
        if (st == RP_OK) st = rp_keep_queue(p, t->vhost, t->queue);
        return st;
    }
    if (st != RP_OK) return st;
    return rp__pass_surface(p, &v);
}

/* What the backfill's already() asks about. */
typedef struct rp__past {
    const rp__pass *p;
    const rp_park_site *site;
} rp__past;

/* Whether a park of m would park nothing (its death is parked, or covered
 * by its identity's open gate): the backfill reads past it. A message that
 * cannot be examined, or a store that cannot answer, is not passed over:
 * the park then says what is wrong with it. */
static bool rp_backfill_already(void *arg, const rp_dl_message *m) {
    const rp__past *x = arg;
    const rp_dead_letter_port *d = &x->p->ports->dead_letters;
    if (d->is_parked == NULL || m == NULL) return false;
    rp_dead_letter facts;
    bool parked = false;
    rp_status st = rp_dead_letter_examine(&m->headers, x->site->vhost, x->site->queue,
                                          x->site->dlq_pattern, m->body, &facts);
    if (st == RP_OK) st = d->is_parked(d->self, &facts, &parked);
    rp_dead_letter_cleanup(&facts);
    return st == RP_OK && parked;
}

static rp_status rp_backfill(rp__pass *p, const rp__target *t) {
    const rp_dead_letter_port *d = &p->ports->dead_letters;
    size_t limit = p->opt->dead_letter_peek_limit;
    rp_park_site site = {t->vhost, t->queue, p->opt->dead_letter_queue_pattern};
    rp__past past = {p, &site};
    rp_dl_batch batch = {0};
    batch.unread = -1; /* unknown until the port says */
    batch.already = rp_backfill_already;
    batch.already_arg = &past;
    batch.read_max = limit + RP_BACKFILL_PASS_OVER_MAX;
    if (d->peek == NULL) { /* no way to read a queue: surface that, never crash */
        rp_status st = rp_keep_queue(p, t->vhost, t->queue);
        if (st != RP_OK) return st;
        return rp__pass_note(p, "dead-letter queue %s on vhost %s: not examined, this pass "
                                "cannot read dead-letter queues",
                             t->queue, t->vhost);
    }
    rp_status pst = d->peek(d->self, t->vhost, t->queue, limit, &batch);
    if (pst != RP_OK) {
        rp_status st = rp_keep_queue(p, t->vhost, t->queue);
        if (st != RP_OK) return st;
        return rp__pass_unreadable(p, RP_SOURCE_BROKER, "peeking at a dead-letter queue", pst);
    }
    if (batch.note != NULL) {
        rp_status nst = rp__pass_note(p, "dead-letter queue %s on vhost %s: %s", t->queue,
                                      t->vhost, batch.note);
        if (nst != RP_OK) return nst;
    }
    for (size_t i = 0; i < batch.n && i < limit; i++) {
        rp_park_outcome outcome;
        rp_status st = rp_park_dead_letter(p->ports, &site, &batch.messages[i], p->opt->dry_run,
                                           p->report, &outcome);
        if (st == RP_ERR_NOMEM) return st;
        if (st == RP_ERR_INVALID || st == RP_ERR_INTERNAL) {
            st = rp__pass_note(p, "a dead letter on queue %s on vhost %s could not be examined: %s",
                               t->queue, t->vhost, rp_status_string(st));
            if (st != RP_OK) return st;
            continue;
        }
        if (st != RP_OK) { /* the park port failed: the store is not usable now */
            rp_status kst = rp_keep_queue(p, t->vhost, t->queue);
            if (kst != RP_OK) return kst;
            return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "parking a dead letter", st);
        }
    }
    size_t read = batch.read > batch.n ? batch.read : batch.n;
    if (batch.n >= limit && t->depth > (int64_t)read) {
        rp_status st = rp__pass_note(p, "dead-letter queue %s on vhost %s: the first %zu messages "
                                        "were examined (%zu parked before, then "
                                        "dead_letter_peek_limit %zu); the ones behind them were "
                                        "not examined by this pass",
                                     t->queue, t->vhost, read, read - batch.n, limit);
        if (st != RP_OK) return st;
    }
    return rp_surface_unread(p, t, &batch);
}

rp_status rp__pass_broker(rp__pass *p) {
    if (p->opt->project != NULL) {
        p->broker_ran = false;
        return rp__pass_note(p, "broker: not inspected, the pass was narrowed to project %s",
                             p->opt->project);
    }
    /* A reaper without broker inspection (a store-only pass) judges no
     * broker condition, so it must clear none either. */
    if (p->ports->broker.list_queues == NULL) {
        p->broker_ran = false;
        return rp__pass_note(p, "broker: not inspected, no broker inspection is configured for "
                                "this pass");
    }
    p->broker_ran = true;
    rp_status st = rp_list_and_judge(p);
    if (st == RP_OK) st = rp__pass_wedged_broker(p);
    if (st == RP_OK) st = rp__pass_release_held(p);
    if (st == RP_OK) st = rp__pass_routes(p, true);
    size_t i = 0;
    for (; i < p->n_targets && st == RP_OK; i++) {
        if (p->opt->should_stop && p->opt->should_stop(p->opt->stop_arg)) break;
        st = rp_backfill(p, &p->targets[i]);
    }
    /* Queues a stop left unread keep their sightings. */
    for (; i < p->n_targets && st == RP_OK; i++)
        st = rp_keep_queue(p, p->targets[i].vhost, p->targets[i].queue);
    /* Channels holding unacknowledged messages (issue 18 item 1). */
    if (st == RP_OK) st = rp__pass_stalled_broker(p);
    return st;
}
