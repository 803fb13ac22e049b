/* The dead-letter port with the backfill's peek (peek_port.h). */
#include "peek_port.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"
#include "rp_pg_replay.h"

rp_status rp_peek_port_init(rp_peek_port *pp, const rp_config *cfg, const char *password,
                            rp_pg_store *store, const rp_broker_port *broker) {
    memset(pp, 0, sizeof *pp);
    rp_amqp_params ap = {
        .url = cfg->broker.url,
        .password = password,
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
    pp->amqp = rp_amqp_peek_new(&ap);
    if (pp->amqp == NULL) return RP_ERR_NOMEM;
    rp_amqp_peek_set_header_cap(pp->amqp, (size_t)cfg->broker.tap_header_cap_bytes);
    pp->store = store;
    pp->broker = broker;
    rp_pg_dead_letter_port(store, &pp->pg);
    return RP_OK;
}

/* Ends a pending quorum read: its record when every park went through,
 * then its lock. */
static void rp_pending_finish(rp_peek_port *pp) {
    if (!pp->pending.open) return;
    const char *vhost = pp->pending.vhost, *queue = pp->pending.queue;
    char num[24], left[24];
    snprintf(num, sizeof num, "%zu", pp->pending.n);
    snprintf(left, sizeof left, "%lld", (long long)pp->pending.behind);
    if (pp->pending.failed) {
        RP_WARN("backfill: a park of a quorum dead-letter queue's read failed; the read is not "
                "recorded, so a later pass reads the queue again", "queue", queue, "vhost",
                vhost, "messages", num, NULL);
    } else if (rp_pg_backfill_mark_read(pp->store, vhost, queue, pp->pending.n,
                                        pp->pending.behind) != RP_OK) {
        RP_WARN("backfill: the read of a quorum dead-letter queue could not be recorded; a later "
                "pass reads it again", "queue", queue, "vhost", vhost, NULL);
    } else {
        RP_INFO("backfill: quorum dead-letter queue read once", "queue", queue, "vhost", vhost,
                "messages", num, "behind", left, NULL);
    }
    if (rp_pg_backfill_unlock(pp->store, vhost, queue) != RP_OK)
        RP_WARN("backfill: a queue's lock could not be released (it goes with the session)",
                "queue", queue, "vhost", vhost, NULL);
    free(pp->pending.vhost);
    free(pp->pending.queue);
    memset(&pp->pending, 0, sizeof pp->pending);
}

void rp_peek_port_cleanup(rp_peek_port *pp) {
    rp_pending_finish(pp);
    rp_amqp_peek_free(pp->amqp);
    free(pp->msgs);
    free(pp->handles);
    memset(pp, 0, sizeof *pp);
}

void rp_peek_port_pass_over(rp_peek_port *pp) {
    rp_pending_finish(pp);
    if (pp->amqp) rp_amqp_peek_close(pp->amqp);
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
 * When it is not read though it holds messages, pp->note says why, and
 * out->unread how many it leaves unread (issue #5). */
static rp_status rp_may_read(rp_peek_port *pp, const char *vhost, const char *queue, bool *read,
                             bool *once, rp_dl_batch *out) {
    *read = false;
    *once = true;
    rp_queue_type type = RP_QUEUE_TYPE_UNKNOWN;
    int64_t depth = -1;
    if (pp->broker && pp->broker->get_queue) {
        rp_queue_facts f;
        memset(&f, 0, sizeof f);
        rp_status st = pp->broker->get_queue(pp->broker->self, vhost, queue, &f);
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
        snprintf(pp->note, sizeof pp->note,
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
     * and keeps the lock until the read is recorded (peek_port.h). */
    bool locked = false;
    if (!pp->dry_run) {
        rp_status lst = rp_pg_backfill_lock(pp->store, vhost, queue, &locked);
        if (lst != RP_OK) return lst;
        if (!locked) {
            snprintf(pp->note, sizeof pp->note,
                     "not read now: another reaperd is reading this quorum dead-letter queue "
                     "(it is read by the backfill once)%s", held);
            return RP_OK;
        }
    }
    bool was = false;
    int64_t unread_then = -1;
    rp_status st = rp_pg_backfill_was_read(pp->store, vhost, queue, &was, &unread_then);
    if ((st != RP_OK || was) && locked &&
        rp_pg_backfill_unlock(pp->store, vhost, queue) != RP_OK)
        RP_WARN("backfill: a queue's lock could not be released (it goes with the session)",
                "queue", queue, "vhost", vhost, NULL);
    if (st != RP_OK) return st;
    if (was) {
        snprintf(pp->note, sizeof pp->note,
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
    if (pp->dry_run) {
        snprintf(pp->note, sizeof pp->note,
                 "not read by a dry run, each read of a quorum queue spends a delivery%s", held);
        rp_left_unread(out, depth, false, RP_DL_UNREAD_DRY_RUN);
        return RP_OK;
    }
    *read = true;
    return RP_OK;
}

/* The pass's already() asked of one message the peek read (its handle is
 * not made yet: already() reads only the headers and the body). */
static bool rp_pass_over(void *arg, const rp_amqp_peeked *m) {
    const rp_dl_batch *out = arg;
    rp_dl_message msg = {
        .headers = m->headers,
        .body = m->body,
        .body_truncated = m->headers_json == NULL || m->headers_dropped,
        .handle = NULL,
    };
    return out->already(out->already_arg, &msg);
}

static rp_status rp_peek(void *self, const char *vhost, const char *queue, size_t limit,
                         rp_dl_batch *out) {
    rp_peek_port *pp = self;
    out->messages = NULL;
    out->n = 0;
    if (vhost == NULL || queue == NULL || limit == 0) return RP_ERR_INVALID;
    rp_pending_finish(pp); /* the previous queue's read, whatever became of it */
    pp->note[0] = '\0';
    bool read = false, once = true;
    rp_status st = rp_may_read(pp, vhost, queue, &read, &once, out);
    if (st == RP_OK && !read && pp->note[0]) out->note = pp->note;
    if (st != RP_OK || !read) return st;
    const rp_amqp_peeked *items = NULL;
    size_t n = 0;
    int64_t behind = -1;
    size_t n_read = 0;
    char err[300] = "";
    /* A classic queue is read at every pass, so it is read past the dead
     * letters parked already (issue 14); a quorum queue's one read takes
     * its head as it is. */
    rp_amqp_peek_past past = {rp_pass_over, out, out->read_max};
    bool read_past = !once && out->already != NULL && out->read_max > limit;
    st = rp_amqp_peek_read_past(pp->amqp, vhost, queue, limit, read_past ? &past : NULL, &items,
                                &n, &n_read, &behind, err, sizeof err);
    if (st != RP_OK && once && rp_pg_backfill_unlock(pp->store, vhost, queue) != RP_OK)
        RP_WARN("backfill: a queue's lock could not be released (it goes with the session)",
                "queue", queue, "vhost", vhost, NULL);
    if (st == RP_ERR_NOT_FOUND) {
        rp_left_unread(out, 0, false, RP_DL_UNREAD_NONE);
        return RP_OK;
    }
    if (st != RP_OK) {
        RP_WARN("backfill: cannot read a dead-letter queue", "queue", queue, "vhost", vhost,
                "reason", err, NULL);
        return st;
    }
    if (once) {
        /* Recorded once the parks of these messages are done (the park
         * wrapper below, or the next peek, or the pass's end), under the
         * lock taken above. What lay behind them is kept with the record:
         * later passes surface it. */
        pp->pending.vhost = strdup(vhost);
        pp->pending.queue = strdup(queue);
        pp->pending.n = n;
        pp->pending.behind = behind;
        pp->pending.failed = false;
        pp->pending.open = true;
        if (pp->pending.vhost == NULL || pp->pending.queue == NULL) {
            pp->pending.failed = true; /* not recorded: read again later */
            free(pp->pending.vhost);
            free(pp->pending.queue);
            pp->pending.vhost = NULL;
            pp->pending.queue = NULL;
            pp->pending.open = false;
            if (rp_pg_backfill_unlock(pp->store, vhost, queue) != RP_OK) {
                /* it goes with the session */
            }
            return RP_ERR_NOMEM;
        }
    }
    rp_left_unread(out, behind, false, once ? RP_DL_UNREAD_READ_ONCE : RP_DL_UNREAD_PEEK_LIMIT);
    if (n > pp->cap) {
        rp_dl_message *m = realloc(pp->msgs, n * sizeof *m);
        if (m == NULL) return RP_ERR_NOMEM;
        pp->msgs = m;
        rp_pg_dl_handle *h = realloc(pp->handles, n * sizeof *h);
        if (h == NULL) return RP_ERR_NOMEM;
        pp->handles = h;
        pp->cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        pp->handles[i].headers_json = items[i].headers_json;
        pp->handles[i].properties_json = items[i].properties_json;
        pp->msgs[i].headers = items[i].headers;
        pp->msgs[i].body = items[i].body;
        /* Properties that could not be kept whole: stored as truncated so
         * that it is never replayed with properties other than its own. */
        pp->msgs[i].body_truncated = items[i].headers_json == NULL || items[i].headers_dropped;
        pp->msgs[i].handle = &pp->handles[i];
    }
    out->messages = pp->msgs;
    out->n = n;
    out->read = n_read;
    return RP_OK;
}

static rp_status rp_is_parked(void *self, const rp_dead_letter *facts, bool *parked) {
    rp_peek_port *pp = self;
    return pp->pg.is_parked(pp->pg.self, facts, parked);
}

static rp_status rp_park(void *self, const char *vhost, const char *queue, const rp_dl_message *msg,
                         const rp_dead_letter *facts, const rp_verdict *v, rp_park_result *out) {
    rp_peek_port *pp = self;
    rp_status st = pp->pg.park(pp->pg.self, vhost, queue, msg, facts, v, out);
    if (pp->pending.open && pp->pending.n > 0 && msg >= pp->msgs &&
        msg < pp->msgs + pp->pending.n) {
        if (st != RP_OK) pp->pending.failed = true;
        /* The last message of the read: the pass parks them in order. */
        if (msg == pp->msgs + pp->pending.n - 1) rp_pending_finish(pp);
    }
    return st;
}

void rp_peek_port_fill(rp_peek_port *pp, rp_dead_letter_port *out) {
    out->self = pp;
    out->peek = rp_peek;
    out->is_parked = rp_is_parked;
    out->park = rp_park;
}
