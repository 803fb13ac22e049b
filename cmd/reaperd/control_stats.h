/*
 * control_stats.h - the control op `stats` (proto/SCHEMA.md section 4;
 * core/rp_stats.h): on the store thread, core collects the rows through
 * the store's stats port (adapters/postgres/rp_pg_stats.h) and the
 * runner's broker port (the management API's queue listing); then, on the
 * loop, the reply or the refusal. control.c only routes the op here.
 *
 * Ownership: rp_ctl_stats holds the rows until rp_ctl_stats_cleanup; the
 * runner and the user are borrowed for each call.
 */
#ifndef RP_CTL_STATS_H
#define RP_CTL_STATS_H

#include "pass_runner.h"
#include "rp_proto.h"
#include "rp_stats.h"

typedef struct rp_ctl_stats {
    rp_status st; /* the collect's status */
    rp_stats stats;
} rp_ctl_stats;

/* Zeroing (calloc) is a valid initial state too. */
void rp_ctl_stats_init(rp_ctl_stats *s);
void rp_ctl_stats_cleanup(rp_ctl_stats *s);

/* Store thread: collects the rows at wall-clock time now (Unix ms) with
 * the runner's configuration, store and broker port. The status lands in
 * s->st. */
void rp_ctl_stats_run(rp_pass_runner *r, rp_time_ms now, rp_ctl_stats *s);

/* Loop: the reply of a run. RP_OK: *buf holds the encoded result (est the
 * encoder's status, handled as control.c handles every encode) and a line
 * is logged. Otherwise the op failed: the status is its error code and msg
 * (n bytes) the sentence to answer with; *buf is untouched. */
rp_status rp_ctl_stats_reply(const rp_ctl_stats *s, const char *user, rp_encoding enc,
                             rp_proto_buf *buf, rp_status *est, char *msg, size_t n);

#endif
