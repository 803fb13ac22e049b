/* Issue 18 item 1, the broker half of STALLED: the per-channel memory of
 * ack counts across passes and the judge (rp_stalled_broker.h). */
#include "rp_stalled_broker.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"

const char *rp_hold_state_string(rp_hold_state s) {
    switch (s) {
    case RP_HOLD_NONE: return "NONE";
    case RP_HOLD_MOVING: return "MOVING";
    case RP_HOLD_UNSURE: return "UNSURE";
    case RP_HOLD_STALLED: return "STALLED";
    case RP_HOLD_COUNT_: break;
    }
    return "unknown";
}

rp_hold_state rp_judge_channel_hold(int64_t unacked, int64_t held_ms, bool since_known,
                                    int64_t ceiling_seconds) {
    if (unacked <= 0) return RP_HOLD_NONE;
    if (held_ms >= 0 && held_ms >= rp__s_to_ms(ceiling_seconds)) return RP_HOLD_STALLED;
    return since_known ? RP_HOLD_MOVING : RP_HOLD_UNSURE;
}

/* One remembered channel. */
typedef struct rp__chan {
    char *name;
    int64_t acked_total;
    rp_time_ms since;
    bool since_known;
    size_t idx; /* during an update: its index in the list */
} rp__chan;

struct rp_stall_memory {
    rp__chan *v; /* sorted by name */
    size_t n;
    /* Whether the last update was a complete sample (rp_stall_memory_forget
     * undoes it): a channel that was not in it was not holding then. */
    bool has_sample;
};

rp_stall_memory *rp_stall_memory_new(void) { return calloc(1, sizeof(rp_stall_memory)); }

static void rp_chans_free(rp__chan *v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i].name);
    free(v);
}

void rp_stall_memory_free(rp_stall_memory *m) {
    if (m == NULL) return;
    rp_chans_free(m->v, m->n);
    free(m);
}

size_t rp_stall_memory_size(const rp_stall_memory *m) { return m ? m->n : 0; }

void rp_stall_memory_forget(rp_stall_memory *m) {
    if (m != NULL) m->has_sample = false;
}

static int rp_cmp_name(const void *a, const void *b) {
    const rp__chan *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0) return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static const rp__chan *rp_find(const rp_stall_memory *m, const char *name) {
    if (m->n == 0) return NULL;
    rp__chan probe = {.name = (char *)name};
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->v[mid].name, probe.name);
        if (c == 0) return &m->v[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

rp_status rp_stall_memory_update(rp_stall_memory *m, const rp_channel_list *list, rp_time_ms now,
                                 int64_t ceiling_seconds, rp_channel_hold *holds) {
    if (m == NULL || list == NULL || (list->n > 0 && (list->channels == NULL || holds == NULL)))
        return RP_ERR_INVALID;
    for (size_t i = 0; i < list->n; i++)
        if (list->channels[i].channel == NULL) return RP_ERR_INVALID;
    rp__chan *nv = list->n ? calloc(list->n, sizeof *nv) : NULL;
    if (list->n && nv == NULL) return RP_ERR_NOMEM;
    size_t nn = 0;
    for (size_t i = 0; i < list->n; i++) {
        const rp_channel_sample *c = &list->channels[i];
        rp_channel_hold *h = &holds[i];
        memset(h, 0, sizeof *h);
        h->since = now;
        h->since_known = true;
        if (c->unacked <= 0) continue; /* not holding: forgotten */
        const rp__chan *old = rp_find(m, c->channel);
        if (old != NULL && old->acked_total == c->acked_total) {
            /* Unmoved: the hold goes on (a clock that stepped back never
             * makes it longer). */
            h->since = old->since < now ? old->since : now;
            h->since_known = old->since_known;
        } else if (old == NULL && !m->has_sample) {
            /* Already holding at the first complete sample that shows it:
             * how long before, this memory cannot say. */
            h->since_known = false;
        }
        /* Else it acked since the last sample, or it was not holding then:
         * the hold starts now. */
        h->held_ms = rp__sat_sub(now, h->since);
        h->state = rp_judge_channel_hold(c->unacked, h->held_ms, h->since_known,
                                         ceiling_seconds);
        nv[nn].name = strdup(c->channel);
        if (nv[nn].name == NULL) {
            rp_chans_free(nv, nn);
            return RP_ERR_NOMEM;
        }
        nv[nn].acked_total = c->acked_total;
        nv[nn].since = h->since;
        nv[nn].since_known = h->since_known;
        nv[nn].idx = i;
        nn++;
    }
    /* A channel listed twice counts once: the first, whose hold the later
     * ones take. */
    if (nn > 1) qsort(nv, nn, sizeof *nv, rp_cmp_name);
    size_t w = 0;
    for (size_t r = 0; r < nn; r++) {
        if (w > 0 && strcmp(nv[w - 1].name, nv[r].name) == 0) {
            holds[nv[r].idx] = holds[nv[w - 1].idx];
            free(nv[r].name);
            continue;
        }
        nv[w++] = nv[r];
    }
    rp_chans_free(m->v, m->n);
    m->v = nv;
    m->n = w;
    m->has_sample = true;
    return RP_OK;
}

static const char *rp_or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

rp_status rp_judge_stalled_channel(const rp_channel_sample *c, const char *queue,
                                   const rp_channel_hold *h, const rp_thresholds *t,
                                   rp_verdict *out) {
    rp_verdict_init(out);
    if (c == NULL || queue == NULL || h == NULL || t == NULL || c->vhost == NULL ||
        c->channel == NULL)
        return RP_ERR_INVALID;
    if (h->state != RP_HOLD_STALLED) return RP_OK;
    rp__judged j = {
        .condition = RP_COND_STALLED,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = rp__judge_seconds(h->held_ms),
        .threshold = t->held_ceiling_seconds,
        .unit = "seconds",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_queue(c->vhost, queue, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "channel %s of connection %s (user %s) holds %" PRId64
                        " unacknowledged message(s) while consuming from queue %s on vhost %s, "
                        "and its ack count (%" PRId64 ") has not moved for %.3f s%s, at or past "
                        "reap.held_ceiling_seconds (%" PRId64
                        " s): surfaced, nothing moved; its connection is alive, so the broker "
                        "keeps the messages with it (closing that connection returns them to "
                        "the queue)",
                        c->channel, rp_or(c->connection, "?"), rp_or(c->user, "?"), c->unacked,
                        queue, c->vhost, c->acked_total, rp__judge_seconds(h->held_ms),
                        h->since_known ? "" : " (at least: reaper first saw it holding then)",
                        t->held_ceiling_seconds);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, queue, NULL, detail);
}
