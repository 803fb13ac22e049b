/*
 * rp_sweep_vhosts.h - the sweep per watched vhost (issue #19 item 1, step
 * 2): which vhosts a sweep covers, and how one queue listing walks them.
 *
 * The watched vhosts are broker.url's (first) and those of broker.vhosts,
 * each once, in that order. A sweep lists the queues of each watched vhost
 * it holds the turn of (core/rp_sweep_turn.h, one turn per vhost) through
 * GET /api/queues/VHOST, vhost after vhost, as ONE listing of consecutive
 * pages (rp_vhost_pager): the pass judges, backfills and keeps it once for
 * the policy reconcile (core/rp_queue_listing.h) as it does the listing of
 * one vhost, and clears only the broker sightings of the vhosts it listed
 * (rp_pass_options.vhosts).
 *
 * Pure: no I/O. Ownership: a rp_sweep_vhosts owns its strings
 * (rp_sweep_vhosts_cleanup frees them); a pager borrows nothing.
 */
#ifndef RP_SWEEP_VHOSTS_H
#define RP_SWEEP_VHOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_config.h"
#include "rp_status.h"

/* The most vhosts one reaperd sweeps (a turn bit each). */
#define RP_SWEEP_VHOSTS_MAX 64

typedef struct rp_sweep_vhosts {
    char *names[RP_SWEEP_VHOSTS_MAX];
    size_t n;
} rp_sweep_vhosts;

/* The watched vhosts of cfg into *out (zeroed first): broker.url's vhost,
 * then each of broker.vhosts not seen before. RP_ERR_INVALID when the
 * URL's vhost cannot be read (a bad escape) or there are more than
 * RP_SWEEP_VHOSTS_MAX (out then empty); RP_ERR_NOMEM. */
rp_status rp_sweep_vhosts_watched(const rp_config *cfg, rp_sweep_vhosts *out) RP_MUSTCHECK;
/* Whether vhost is one of names[0..n). */
bool rp_sweep_vhosts_has(const char *const *names, size_t n, const char *vhost);
void rp_sweep_vhosts_cleanup(rp_sweep_vhosts *v);

/* One listing of consecutive pages over n vhosts: global page g (from 1)
 * is page `local` (from 1) of vhost `index`. The pass asks pages 1, 2, ...
 * in order; rp_vhost_pager_init before page 1 starts over at the first
 * vhost. */
typedef struct rp_vhost_pager {
    size_t n;     /* vhosts */
    size_t index; /* the vhost being listed */
    size_t base;  /* global pages before its first */
} rp_vhost_pager;

void rp_vhost_pager_init(rp_vhost_pager *p, size_t n);
/* Where global page g is: false when g is 0, a page of a vhost already
 * listed to its end, or past the last vhost. */
bool rp_vhost_pager_map(rp_vhost_pager *p, size_t g, size_t *index, size_t *local);
/* After global page g was read: local_last says it was its vhost's last
 * page, empty that it held no queue. Returns whether it is the listing's
 * last (the last vhost's last page). Otherwise, at its vhost's last page,
 * the listing goes on at the next vhost's first page: global g + 1, or g
 * itself when page g was empty (g is asked again, so that no empty page
 * stands between two vhosts' queues). */
bool rp_vhost_pager_after(rp_vhost_pager *p, size_t g, bool local_last, bool empty);

#endif
