/*
 * rp_queue_listing.h - the sweep's queue listing, kept for the policy
 * reconcile (issue 19 item 5: a sweep reads ONE paginated listing). The
 * pass (rp_pass.h, rp_pass_options.keep_listing) hands every page it lists
 * to a listing; the policy reconcile that follows the pass
 * (rp_pass_policy.h, rp_pass_policy_options.listing) reads its vhost scan
 * and its first queue check from it instead of listing the broker twice
 * more. Later polls of the check (the statistics lag after a write) still
 * read the broker.
 *
 * WHAT IS KEPT. The policy fields of rp_policy_queue (rp_policy_port.h) of
 * every queue the policy can look at: a queue whose name the owned pattern
 * matches (the policy pattern selects only such names), or that carries
 * one of reaper's policies (an owned dead-letter queue carrying one is
 * reported). Other queues are counted, not kept. Of a queue's effective
 * policy definition only the keys the reconcile reads are kept
 * (RP_QUEUE_LISTING_KEYS: its wanted keys and dead-letter-exchange).
 * Strings live in one arena; a vhost, policy or operator policy equal to
 * the previous queue's is stored once (the broker lists by vhost).
 *
 * WHEN IT CAN BE USED (rp_queue_listing_usable): only a listing read to its
 * last page, every page with the policy fields (an adapter that cannot
 * tell gives none), within max_bytes. Past max_bytes everything kept is
 * dropped at once and the reconcile lists the broker itself, as before:
 * memory stays bounded whatever the fleet.
 *
 * Threads: one at a time (the pass's). Ownership: the listing borrows the
 * owned pattern for its life; it copies what it keeps. A page it lends
 * (rp_queue_listing_page) is valid until the next call on the listing.
 * Core: no I/O, no log.
 */
#ifndef RP_QUEUE_LISTING_H
#define RP_QUEUE_LISTING_H

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_policy_port.h"
#include "rp_status.h"

/* The default bound on what one listing keeps (records and strings). */
#define RP_QUEUE_LISTING_MAX_BYTES ((size_t)16 << 20)
/* The queues rp_queue_listing_page lends at a time. */
#define RP_QUEUE_LISTING_PAGE 500
/* The effective-definition keys kept, in this order. */
#define RP_QUEUE_LISTING_N_KEYS 3
extern const char *const RP_QUEUE_LISTING_KEYS[RP_QUEUE_LISTING_N_KEYS];

typedef enum rp_queue_listing_state {
    RP_QUEUE_LISTING_EMPTY = 0, /* nothing begun */
    RP_QUEUE_LISTING_KEEPING,   /* pages coming */
    RP_QUEUE_LISTING_WHOLE,     /* read to its last page: usable */
    RP_QUEUE_LISTING_PARTIAL,   /* the listing stopped before its last page */
    RP_QUEUE_LISTING_UNTOLD,    /* a page came without the policy fields */
    RP_QUEUE_LISTING_TOO_LARGE, /* past max_bytes: dropped */
    RP_QUEUE_LISTING_NOMEM,     /* an allocation failed: dropped */
} rp_queue_listing_state;

const char *rp_queue_listing_state_string(rp_queue_listing_state s);

typedef struct rp_queue_listing rp_queue_listing;

/* A listing keeping queues that `owned` matches (or that carry reaper's
 * policy), at most max_bytes (0: RP_QUEUE_LISTING_MAX_BYTES). NULL when out
 * of memory or owned is NULL. */
rp_queue_listing *rp_queue_listing_new(const pcre2_code *owned, size_t max_bytes);
void rp_queue_listing_free(rp_queue_listing *l);

/* Forgets what was kept and starts a listing (state KEEPING). */
void rp_queue_listing_begin(rp_queue_listing *l);
/* One page: queues[0..n) with their policy fields, or queues NULL when the
 * adapter gave none (the listing then cannot be used). Ignored unless
 * KEEPING. Never fails: a listing that cannot keep a page is dropped. */
void rp_queue_listing_add(rp_queue_listing *l, const rp_policy_queue *queues, size_t n);
/* The listing ended: whole (its last page was added) or not. */
void rp_queue_listing_end(rp_queue_listing *l, bool whole);

rp_queue_listing_state rp_queue_listing_get_state(const rp_queue_listing *l);
/* Whether the reconcile may read it: WHOLE. NULL: false. */
bool rp_queue_listing_usable(const rp_queue_listing *l);
/* Queues listed, queues kept, bytes held. */
size_t rp_queue_listing_seen(const rp_queue_listing *l);
size_t rp_queue_listing_kept(const rp_queue_listing *l);
size_t rp_queue_listing_bytes(const rp_queue_listing *l);

/* Page `page` (from 1) of the kept queues, RP_QUEUE_LISTING_PAGE at a
 * time, as the policy port's list_queues lends them (dlx_argument and the
 * kept effective keys included). RP_ERR_INVALID when not usable. */
rp_status rp_queue_listing_page(rp_queue_listing *l, size_t page,
                                rp_policy_queue_page *out) RP_MUSTCHECK;

#endif
