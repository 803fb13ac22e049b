/* The backfill's read of dead-letter queues (rp_backfill_read.h). */
#include "rp_backfill_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rp_backfill_read {
    rp_backfill_read_deps d;
    bool dry_run;                  /* set before each pass */
    const rp_dl_message *msgs;     /* the last read's, lent by the peek port */
    char note[400];                /* what the last peek lends as its note */
    /* A quorum queue read and not yet recorded: its lock is held, and its
     * record is written once every message of the read is parked (or
     * examined and found unparkable), never when a park failed. */
    struct {
        bool open;
        bool failed;               /* a park of the read failed */
        char *vhost, *queue;
        size_t n;
        int64_t behind;
    } pending;
};

static const char *const RP_NEWS_NAMES[RP_BACKFILL_NEWS_COUNT_] = {
    [RP_BACKFILL_READ_RECORDED] = "read_recorded",
    [RP_BACKFILL_PARK_FAILED] = "park_failed",
    [RP_BACKFILL_RECORD_FAILED] = "record_failed",
    [RP_BACKFILL_UNLOCK_FAILED] = "unlock_failed",
    [RP_BACKFILL_READ_FAILED] = "read_failed",
};

const char *rp_backfill_news_str(rp_backfill_news_kind k) {
    if ((int)k < 0 || k >= RP_BACKFILL_NEWS_COUNT_ || RP_NEWS_NAMES[k] == NULL) return "?";
    return RP_NEWS_NAMES[k];
}

static void rp_news(rp_backfill_read *b, rp_backfill_news_kind kind, const char *vhost,
                    const char *queue, size_t n, int64_t behind, const char *reason) {
    if (b->d.on_news == NULL) return;
    rp_backfill_news news = {kind, vhost, queue, n, behind, reason};
    b->d.on_news(b->d.news_arg, &news);
}

static void rp_unlock(rp_backfill_read *b, const char *vhost, const char *queue) {
    if (b->d.record.unlock(b->d.record.self, vhost, queue) != RP_OK)
        rp_news(b, RP_BACKFILL_UNLOCK_FAILED, vhost, queue, 0, -1, NULL);
}

/* Ends a pending quorum read: its record when every park went through,
 * then its lock. */
static void rp_pending_finish(rp_backfill_read *b) {
    if (!b->pending.open) return;
    const char *vhost = b->pending.vhost, *queue = b->pending.queue;
    if (b->pending.failed) {
        rp_news(b, RP_BACKFILL_PARK_FAILED, vhost, queue, b->pending.n, b->pending.behind, NULL);
    } else if (b->d.record.mark_read(b->d.record.self, vhost, queue, b->pending.n,
                                     b->pending.behind) != RP_OK) {
        rp_news(b, RP_BACKFILL_RECORD_FAILED, vhost, queue, b->pending.n, b->pending.behind,
                NULL);
    } else {
        rp_news(b, RP_BACKFILL_READ_RECORDED, vhost, queue, b->pending.n, b->pending.behind,
                NULL);
    }
    rp_unlock(b, vhost, queue);
    free(b->pending.vhost);
    free(b->pending.queue);
    memset(&b->pending, 0, sizeof b->pending);
}

rp_backfill_read *rp_backfill_read_new(const rp_backfill_read_deps *deps) {
    rp_backfill_read *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    b->d = *deps;
    return b;
}

void rp_backfill_read_free(rp_backfill_read *b) {
    if (b == NULL) return;
    rp_pending_finish(b);
    free(b);
}

void rp_backfill_read_pass_begin(rp_backfill_read *b, bool dry_run) {
    b->dry_run = dry_run;
}

void rp_backfill_read_pass_end(rp_backfill_read *b) {
    rp_pending_finish(b);
    b->msgs = NULL;
    if (b->d.peek.close) b->d.peek.close(b->d.peek.self);
}

/* Tells the pass how many messages this peek leaves unread and why (a
 * negative count, unknown, leaves out->unread as the pass set it: -1). */
static void rp_left_unread(rp_dl_batch *out, int64_t unread, bool at_most,
                           rp_dl_unread_reason why) {
    if (unread < 0) return;
    out->unread = unread;
    out->unread_at_most = at_most;
    out->unread_reason = unread > 0 ? why : RP_DL_UNREAD_NONE;
}

/* Whether the queue may be read by this pass, and whether it is quorum.
 * When it is not read though it holds messages, b->note says why, and
 * out->unread how many it leaves unread (issue #5). */
static rp_status rp_may_read(rp_backfill_read *b, const char *vhost, const char *queue,
                             bool *read, bool *once, rp_dl_batch *out) {
    *read = false;
    *once = true;
    rp_queue_type type = RP_QUEUE_TYPE_UNKNOWN;
    int64_t depth = -1;
    const rp_broker_port *broker = b->d.broker;
    if (broker && broker->get_queue) {
        rp_queue_facts f;
        memset(&f, 0, sizeof f);
        rp_status st = broker->get_queue(broker->self, vhost, queue, &f);
        if (st == RP_ERR_NOT_FOUND) { /* gone since the listing: nothing to read */
            rp_left_unread(out, 0, false, RP_DL_UNREAD_NONE);
            return RP_OK;
        }
        if (st != RP_OK) return st;
        type = f.type;
        if (f.counts_known)
            depth = (f.ready > 0 ? f.ready : 0) + (f.unacked > 0 ? f.unacked : 0);
    }
    char held[64] = "";
    if (depth >= 0) snprintf(held, sizeof held, " (it holds %lld)", (long long)depth);
    if (type == RP_QUEUE_TYPE_STREAM) {
        snprintf(b->note, sizeof b->note,
                 "not read, a stream queue cannot be read by the backfill%s", held);
        rp_left_unread(out, depth, false, RP_DL_UNREAD_NOT_READABLE);
        return RP_OK;
    }
    if (type == RP_QUEUE_TYPE_CLASSIC) {
        *once = false;
        *read = true;
        return RP_OK;
    }
    /* Quorum, or a type the broker does not report: read once, ever. A dry
     * run reads the record too (it writes nothing), so that it reports
     * what a real pass would. A real pass checks it under the queue's lock
     * and keeps the lock until the read is recorded (rp_backfill_read.h). */
    bool locked = false;
    if (!b->dry_run) {
        rp_status lst = b->d.record.lock(b->d.record.self, vhost, queue, &locked);
        if (lst != RP_OK) return lst;
        if (!locked) {
            snprintf(b->note, sizeof b->note,
                     "not read now: another reaperd is reading this quorum dead-letter queue "
                     "(it is read by the backfill once)%s", held);
            return RP_OK;
        }
    }
    bool was = false;
    int64_t unread_then = -1;
    rp_status st = b->d.record.was_read(b->d.record.self, vhost, queue, &was, &unread_then);
    if ((st != RP_OK || was) && locked) rp_unlock(b, vhost, queue);
    if (st != RP_OK) return st;
    if (was) {
        snprintf(b->note, sizeof b->note,
                 "not read again: a quorum dead-letter queue is read by the backfill once (each "
                 "read spends a delivery), and an earlier pass read it; what reaches it since "
                 "comes through the tap%s",
                 held);
        /* Consumers take from the head, so of what lay behind that read no
         * more than the depth now can still be there: an upper bound. */
        int64_t bound = unread_then;
        if (bound > 0 && depth >= 0 && depth < bound) bound = depth;
        rp_left_unread(out, bound, true, RP_DL_UNREAD_READ_ONCE);
        return RP_OK;
    }
    if (b->dry_run) {
        snprintf(b->note, sizeof b->note,
                 "not read by a dry run, each read of a quorum queue spends a delivery%s", held);
        rp_left_unread(out, depth, false, RP_DL_UNREAD_DRY_RUN);
        return RP_OK;
    }
    *read = true;
    return RP_OK;
}

static rp_status rp_peek(void *self, const char *vhost, const char *queue, size_t limit,
                         rp_dl_batch *out) {
    rp_backfill_read *b = self;
    out->messages = NULL;
    out->n = 0;
    if (vhost == NULL || queue == NULL || limit == 0) return RP_ERR_INVALID;
    rp_pending_finish(b); /* the previous queue's read, whatever became of it */
    b->msgs = NULL;
    b->note[0] = '\0';
    bool read = false, once = true;
    rp_status st = rp_may_read(b, vhost, queue, &read, &once, out);
    if (st == RP_OK && !read && b->note[0]) out->note = b->note;
    if (st != RP_OK || !read) return st;
    const rp_dl_message *msgs = NULL;
    size_t n = 0;
    int64_t behind = -1;
    size_t n_read = 0;
    char err[300] = "";
    /* A classic queue is read at every pass, so it is read past the dead
     * letters parked already (issue 14); a quorum queue's one read takes
     * its head as it is. */
    rp_peek_past past = {out->already, out->already_arg, out->read_max};
    bool read_past = !once && out->already != NULL && out->read_max > limit;
    st = b->d.peek.read(b->d.peek.self, vhost, queue, limit, read_past ? &past : NULL, &msgs, &n,
                        &n_read, &behind, err, sizeof err);
    if (st != RP_OK && once) rp_unlock(b, vhost, queue);
    if (st == RP_ERR_NOT_FOUND) {
        rp_left_unread(out, 0, false, RP_DL_UNREAD_NONE);
        return RP_OK;
    }
    if (st != RP_OK) {
        rp_news(b, RP_BACKFILL_READ_FAILED, vhost, queue, 0, -1, err);
        return st;
    }
    if (once) {
        /* Recorded once the parks of these messages are done (the park
         * wrapper below, or the next peek, or the pass's end), under the
         * lock taken above. What lay behind them is kept with the record:
         * later passes surface it. */
        b->pending.vhost = strdup(vhost);
        b->pending.queue = strdup(queue);
        if (b->pending.vhost == NULL || b->pending.queue == NULL) {
            /* Not recorded: read again later. */
            free(b->pending.vhost);
            free(b->pending.queue);
            memset(&b->pending, 0, sizeof b->pending);
            if (b->d.record.unlock(b->d.record.self, vhost, queue) != RP_OK) {
                /* it goes with the session */
            }
            return RP_ERR_NOMEM;
        }
        b->pending.n = n;
        b->pending.behind = behind;
        b->pending.failed = false;
        b->pending.open = true;
    }
    rp_left_unread(out, behind, false, once ? RP_DL_UNREAD_READ_ONCE : RP_DL_UNREAD_PEEK_LIMIT);
    b->msgs = msgs;
    out->messages = msgs;
    out->n = n;
    out->read = n_read;
    return RP_OK;
}

static rp_status rp_is_parked(void *self, const rp_dead_letter *facts, bool *parked) {
    rp_backfill_read *b = self;
    return b->d.store.is_parked(b->d.store.self, facts, parked);
}

static rp_status rp_park(void *self, const char *vhost, const char *queue, const rp_dl_message *msg,
                         const rp_dead_letter *facts, const rp_verdict *v, rp_park_result *out) {
    rp_backfill_read *b = self;
    rp_status st = b->d.store.park(b->d.store.self, vhost, queue, msg, facts, v, out);
    if (b->pending.open && b->pending.n > 0 && b->msgs != NULL && msg >= b->msgs &&
        msg < b->msgs + b->pending.n) {
        if (st != RP_OK) b->pending.failed = true;
        /* The last message of the read: the pass parks them in order. */
        if (msg == b->msgs + b->pending.n - 1) rp_pending_finish(b);
    }
    return st;
}

void rp_backfill_read_port(rp_backfill_read *b, rp_dead_letter_port *out) {
    out->self = b;
    out->peek = rp_peek;
    out->is_parked = rp_is_parked;
    out->park = rp_park;
}
