/* Store jobs counted while in flight (rp_store_jobs.h). */
#include "rp_store_jobs.h"

#include <stdlib.h>

typedef struct rp_counted_job {
    rp_store_jobs *s;
    rp_work_fn fn;
    rp_done_fn done;
    void *job;
} rp_counted_job;

static void rp_counted_work(void *ctx, void *arg) {
    RP_UNUSED(ctx);
    rp_counted_job *cj = arg;
    cj->fn(cj->s->ctx, cj->job);
}

static void rp_counted_done(void *arg, bool cancelled) {
    rp_counted_job *cj = arg;
    cj->s->inflight--;
    cj->done(cj->job, cancelled);
    free(cj);
}

static rp_status rp_store_jobs_put(rp_store_jobs *s, bool last, rp_work_fn fn, rp_done_fn done,
                                   void *job) {
    rp_worker *store = *s->sweeper != NULL ? rp_sweeper_store(*s->sweeper) : NULL;
    if (store == NULL || (!last && __atomic_load_n(s->stopping, __ATOMIC_ACQUIRE)))
        return RP_ERR_CLOSED;
    rp_counted_job *cj = malloc(sizeof *cj);
    if (cj == NULL) return RP_ERR_NOMEM;
    *cj = (rp_counted_job){s, fn, done, job};
    rp_status st = rp_worker_submit(store, rp_counted_work, rp_counted_done, cj);
    if (st != RP_OK) {
        free(cj);
        return st;
    }
    s->inflight++;
    return RP_OK;
}

rp_status rp_store_jobs_submit(void *self, rp_work_fn fn, rp_done_fn done, void *job) {
    return rp_store_jobs_put(self, false, fn, done, job);
}

rp_status rp_store_jobs_submit_last(void *self, rp_work_fn fn, rp_done_fn done, void *job) {
    return rp_store_jobs_put(self, true, fn, done, job);
}
