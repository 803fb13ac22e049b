/* The sweep's queue listing kept for the policy reconcile
 * (rp_queue_listing.h). */
#include "rp_queue_listing.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_match.h"
#include "rp_pass_policy.h"

const char *const RP_QUEUE_LISTING_KEYS[RP_QUEUE_LISTING_N_KEYS] = {
    "consumer-timeout", "delivery-limit", "dead-letter-exchange"};

#define RP_NONE UINT32_MAX

enum {
    RP_LQ_POLICY_KNOWN = 1,
    RP_LQ_EFFECTIVE_KNOWN = 2,
    RP_LQ_DLX_ARGUMENT = 4,
};
enum { RP_LK_PRESENT = 1, RP_LK_INT = 2, RP_LK_STRING = 4 };

/* One kept queue: strings as offsets into the arena (RP_NONE: NULL). */
typedef struct rp_lq {
    uint32_t vhost, name, policy, operator_policy;
    uint8_t type, flags;
    uint8_t key_flags[RP_QUEUE_LISTING_N_KEYS];
    int64_t value[RP_QUEUE_LISTING_N_KEYS];
} rp_lq;

struct rp_queue_listing {
    const pcre2_code *owned;
    pcre2_match_data *md;
    pcre2_match_context *mc;
    size_t max_bytes;
    rp_queue_listing_state state;
    size_t seen;
    rp_lq *q;
    size_t n, cap;
    char *arena;
    size_t used, cap_arena;
    /* The previous queue's strings, stored once when they repeat. */
    uint32_t last_vhost, last_policy, last_operator;
    /* What rp_queue_listing_page lends. */
    rp_policy_queue page[RP_QUEUE_LISTING_PAGE];
    rp_policy_key keys[RP_QUEUE_LISTING_PAGE * RP_QUEUE_LISTING_N_KEYS];
};

const char *rp_queue_listing_state_string(rp_queue_listing_state s) {
    switch (s) {
    case RP_QUEUE_LISTING_EMPTY: return "empty";
    case RP_QUEUE_LISTING_KEEPING: return "keeping";
    case RP_QUEUE_LISTING_WHOLE: return "whole";
    case RP_QUEUE_LISTING_PARTIAL: return "partial";
    case RP_QUEUE_LISTING_UNTOLD: return "untold";
    case RP_QUEUE_LISTING_TOO_LARGE: return "too large";
    case RP_QUEUE_LISTING_NOMEM: return "out of memory";
    }
    return "unknown";
}

rp_queue_listing *rp_queue_listing_new(const pcre2_code *owned, size_t max_bytes) {
    if (owned == NULL) return NULL;
    rp_queue_listing *l = calloc(1, sizeof *l);
    if (l == NULL) return NULL;
    l->owned = owned;
    l->max_bytes = max_bytes ? max_bytes : RP_QUEUE_LISTING_MAX_BYTES;
    l->md = pcre2_match_data_create(1, NULL);
    l->mc = rp_match_context_new();
    if (l->md == NULL || l->mc == NULL) {
        rp_queue_listing_free(l);
        return NULL;
    }
    return l;
}

static void rp_drop(rp_queue_listing *l, rp_queue_listing_state why) {
    free(l->q);
    free(l->arena);
    l->q = NULL;
    l->arena = NULL;
    l->n = l->cap = l->used = l->cap_arena = 0;
    l->state = why;
}

void rp_queue_listing_free(rp_queue_listing *l) {
    if (l == NULL) return;
    free(l->q);
    free(l->arena);
    pcre2_match_data_free(l->md);
    pcre2_match_context_free(l->mc);
    free(l);
}

void rp_queue_listing_begin(rp_queue_listing *l) {
    if (l == NULL) return;
    rp_drop(l, RP_QUEUE_LISTING_KEEPING);
    l->seen = 0;
    l->last_vhost = l->last_policy = l->last_operator = RP_NONE;
}

static size_t rp_held(const rp_queue_listing *l) {
    return l->cap * sizeof *l->q + l->cap_arena;
}

/* Grows *p (elements of size each) to hold need, within the bound. */
static bool rp_grow(rp_queue_listing *l, void **p, size_t *cap, size_t need, size_t each) {
    if (need <= *cap) return true;
    size_t want = *cap ? *cap : 64;
    while (want < need) want *= 2;
    if (rp_held(l) + (want - *cap) * each > l->max_bytes) {
        /* The last step may fit where doubling does not. */
        want = need;
        if (rp_held(l) + (want - *cap) * each > l->max_bytes) {
            rp_drop(l, RP_QUEUE_LISTING_TOO_LARGE);
            return false;
        }
    }
    void *g = realloc(*p, want * each);
    if (g == NULL) {
        rp_drop(l, RP_QUEUE_LISTING_NOMEM);
        return false;
    }
    *p = g;
    *cap = want;
    return true;
}

/* s into the arena (RP_NONE for NULL; *last reused when equal). */
static bool rp_store(rp_queue_listing *l, const char *s, uint32_t *last, uint32_t *out) {
    if (s == NULL) {
        *out = RP_NONE;
        return true;
    }
    if (last != NULL && *last != RP_NONE && strcmp(l->arena + *last, s) == 0) {
        *out = *last;
        return true;
    }
    size_t n = strlen(s) + 1;
    if (l->used + n >= RP_NONE) {
        rp_drop(l, RP_QUEUE_LISTING_TOO_LARGE);
        return false;
    }
    void *a = l->arena;
    if (!rp_grow(l, &a, &l->cap_arena, l->used + n, 1)) return false;
    l->arena = a;
    memcpy(l->arena + l->used, s, n);
    *out = (uint32_t)l->used;
    l->used += n;
    if (last != NULL) *last = *out;
    return true;
}

static bool rp_is_ours(const char *policy) {
    return policy != NULL && (strcmp(policy, RP_PASS_POLICY_NAME) == 0 ||
                              strcmp(policy, RP_PASS_POLICY_CLASSIC_NAME) == 0);
}

/* Whether the policy can look at q: an owned name (a match that hits the
 * limits counts as owned: keeping more is safe), or reaper's policy. */
static bool rp_wanted(rp_queue_listing *l, const rp_policy_queue *q) {
    if (rp_is_ours(q->policy)) return true;
    int rc = pcre2_match(l->owned, (PCRE2_SPTR)q->name, PCRE2_ZERO_TERMINATED, 0, 0, l->md, l->mc);
    return rc != PCRE2_ERROR_NOMATCH;
}

static bool rp_keep(rp_queue_listing *l, const rp_policy_queue *q) {
    void *p = l->q;
    if (!rp_grow(l, &p, &l->cap, l->n + 1, sizeof *l->q)) return false;
    l->q = p;
    rp_lq r;
    memset(&r, 0, sizeof r);
    if (!rp_store(l, q->vhost, &l->last_vhost, &r.vhost) || !rp_store(l, q->name, NULL, &r.name) ||
        !rp_store(l, q->policy, &l->last_policy, &r.policy) ||
        !rp_store(l, q->operator_policy, &l->last_operator, &r.operator_policy))
        return false;
    r.type = (uint8_t)q->type;
    r.flags = (uint8_t)((q->policy_known ? RP_LQ_POLICY_KNOWN : 0) |
                        (q->effective_known ? RP_LQ_EFFECTIVE_KNOWN : 0) |
                        (q->dlx_argument ? RP_LQ_DLX_ARGUMENT : 0));
    for (size_t i = 0; i < q->n_effective; i++) {
        const rp_policy_key *k = &q->effective[i];
        for (size_t j = 0; j < RP_QUEUE_LISTING_N_KEYS; j++) {
            if (k->key == NULL || strcmp(k->key, RP_QUEUE_LISTING_KEYS[j]) != 0) continue;
            /* The first one listed, as rp_pass_policy's key lookup. */
            if (r.key_flags[j] & RP_LK_PRESENT) break;
            r.key_flags[j] = (uint8_t)(RP_LK_PRESENT | (k->is_int ? RP_LK_INT : 0) |
                                       (k->is_string ? RP_LK_STRING : 0));
            r.value[j] = k->is_int ? k->value : 0;
            break;
        }
    }
    l->q[l->n++] = r;
    return true;
}

void rp_queue_listing_add(rp_queue_listing *l, const rp_policy_queue *queues, size_t n) {
    if (l == NULL || l->state != RP_QUEUE_LISTING_KEEPING) return;
    if (queues == NULL && n > 0) {
        rp_drop(l, RP_QUEUE_LISTING_UNTOLD);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        l->seen++;
        const rp_policy_queue *q = &queues[i];
        if (q->vhost == NULL || q->name == NULL || !rp_wanted(l, q)) continue;
        if (!rp_keep(l, q)) return; /* dropped */
    }
}

void rp_queue_listing_end(rp_queue_listing *l, bool whole) {
    if (l == NULL || l->state != RP_QUEUE_LISTING_KEEPING) return;
    if (whole) l->state = RP_QUEUE_LISTING_WHOLE;
    else rp_drop(l, RP_QUEUE_LISTING_PARTIAL);
}

rp_queue_listing_state rp_queue_listing_get_state(const rp_queue_listing *l) {
    return l ? l->state : RP_QUEUE_LISTING_EMPTY;
}

bool rp_queue_listing_usable(const rp_queue_listing *l) {
    return l != NULL && l->state == RP_QUEUE_LISTING_WHOLE;
}

size_t rp_queue_listing_seen(const rp_queue_listing *l) { return l ? l->seen : 0; }
size_t rp_queue_listing_kept(const rp_queue_listing *l) { return l ? l->n : 0; }
size_t rp_queue_listing_bytes(const rp_queue_listing *l) { return l ? rp_held(l) : 0; }

static const char *rp_str(const rp_queue_listing *l, uint32_t off) {
    return off == RP_NONE ? NULL : l->arena + off;
}

rp_status rp_queue_listing_page(rp_queue_listing *l, size_t page, rp_policy_queue_page *out) {
    memset(out, 0, sizeof *out);
    if (!rp_queue_listing_usable(l) || page == 0) return RP_ERR_INVALID;
    size_t from = (page - 1) * RP_QUEUE_LISTING_PAGE;
    size_t n = from < l->n ? l->n - from : 0;
    if (n > RP_QUEUE_LISTING_PAGE) n = RP_QUEUE_LISTING_PAGE;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        const rp_lq *r = &l->q[from + i];
        rp_policy_queue *q = &l->page[i];
        memset(q, 0, sizeof *q);
        q->vhost = rp_str(l, r->vhost);
        q->name = rp_str(l, r->name);
        q->type = (rp_queue_type)r->type;
        q->policy_known = r->flags & RP_LQ_POLICY_KNOWN;
        q->policy = rp_str(l, r->policy);
        q->operator_policy = rp_str(l, r->operator_policy);
        q->effective_known = r->flags & RP_LQ_EFFECTIVE_KNOWN;
        q->dlx_argument = r->flags & RP_LQ_DLX_ARGUMENT;
        q->effective = &l->keys[used];
        for (size_t j = 0; j < RP_QUEUE_LISTING_N_KEYS; j++) {
            if (!(r->key_flags[j] & RP_LK_PRESENT)) continue;
            rp_policy_key *k = &l->keys[used++];
            k->key = (char *)RP_QUEUE_LISTING_KEYS[j];
            k->is_int = r->key_flags[j] & RP_LK_INT;
            k->is_string = r->key_flags[j] & RP_LK_STRING;
            k->value = r->value[j];
            q->n_effective++;
        }
    }
    out->queues = l->page;
    out->n = n;
    out->last = from + n >= l->n;
    return RP_OK;
}
