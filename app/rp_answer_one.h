/*
 * rp_answer_one.h - the answer-set runner's ports (app/rp_answer_sets.h,
 * issue #20 item 3) over the control part's store port
 * (core/rp_control_port.h) and the replays part: the store side is the
 * store port's answer-set port, and one gate's answer runs as a single
 * `answer` request runs it: a replay through the replays part
 * (app/rp_replays.h), a dismiss through the store port's gate port on the
 * store thread (the claim time set first, the answer counted in the
 * metrics when it was not already answered).
 *
 * Ownership: borrows store (with its self), replays and metrics for its
 * life; free it after the answer-set part. Threads: the loop thread; the
 * port's calls as rp_answer_sets.h says.
 */
#ifndef RP_ANSWER_ONE_H
#define RP_ANSWER_ONE_H

#include "rp_answer_sets.h"
#include "rp_control_port.h"
#include "rp_metrics.h"
#include "rp_replays.h"

typedef struct rp_answer_one rp_answer_one;

/* NULL when out of memory. store_job runs a job on the store thread (as
 * rp_answer_sets_deps says). */
rp_answer_one *rp_answer_one_new(const rp_control_store_port *store, rp_replays *replays,
                                 rp_metrics *metrics,
                                 rp_status (*store_job)(void *self, rp_work_fn fn,
                                                        rp_done_fn done, void *job),
                                 void *store_job_self);
/* Fills the ports, the owner (the store's claimer) and the clock of *deps
 * (lease_ms, idle_ms left as they are). */
void rp_answer_one_deps(rp_answer_one *w, rp_answer_sets_deps *deps);
void rp_answer_one_free(rp_answer_one *w); /* NULL: nothing */

#endif
