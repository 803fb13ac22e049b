/*
 * rp_store_jobs.h - jobs for the store thread (the sweeper's worker),
 * counted while in flight so that a stop waits for them (app/rp_signals.h
 * looks at the count). A job is refused with RP_ERR_CLOSED once stopping
 * is set or when the store thread is gone.
 *
 * Ownership: the struct is the caller's (embedded, zeroed, then the three
 * fields set); *sweeper and *stopping are borrowed for its life. Threads:
 * submit on the loop thread; fn runs on the store thread as fn(ctx, job),
 * done on the loop.
 */
#ifndef RP_STORE_JOBS_H
#define RP_STORE_JOBS_H

#include <stdbool.h>

#include "rp_status.h"
#include "rp_sweeper.h"
#include "worker.h"

typedef struct rp_store_jobs {
    struct rp_sweeper *const *sweeper; /* its store thread (NULL: none yet) */
    const bool *stopping;              /* atomic access */
    void *ctx;                         /* what fn gets as its ctx */
    unsigned inflight;                 /* submitted and not yet done */
} rp_store_jobs;

/* self is an rp_store_jobs (the shape of every part's store_job hook). A
 * returned error: done is never called. */
rp_status rp_store_jobs_submit(void *self, rp_work_fn fn, rp_done_fn done, void *job) RP_MUSTCHECK;
/* The same, taken while stopping too (until the store thread is gone): for
 * the work a stop itself does, e.g. an answer set's lease let go
 * (rp_answer_sets_stop). Counted, so the stop's grace waits for it. */
rp_status rp_store_jobs_submit_last(void *self, rp_work_fn fn, rp_done_fn done,
                                    void *job) RP_MUSTCHECK;

#endif
