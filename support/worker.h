/*
 * worker.h - one thread that runs blocking work for the loop, in order.
 *
 * reaperd's PostgreSQL work (and, later, a whole pass) runs here so that the
 * loop thread keeps answering heartbeats, control requests and /healthz
 * while a long reap runs. The loop submits jobs; each job's work function
 * runs on the worker thread, then its done function runs on the loop thread.
 * The worker can also post a function to the loop on its own (state
 * changes). An idle function runs on the worker every idle_ms when no job is
 * waiting (reconnects, pings).
 *
 * Ownership: a job pointer belongs to the caller; it must stay valid until
 * its done function runs (which may free it). If rp_worker_submit returns an
 * error, neither function is ever called. rp_worker_free stops taking jobs,
 * lets the running one finish, runs the done functions of everything posted
 * so far on the calling (loop) thread, joins, frees; jobs not yet started
 * get their done function with cancelled set.
 *
 * Threads: rp_worker_new/submit/free on the loop thread; rp_worker_post from
 * the worker thread. The event_base must be made after
 * evthread_use_pthreads().
 */
#ifndef RP_WORKER_H
#define RP_WORKER_H

#include <event2/event.h>
#include <stdbool.h>

#include "rp_common.h"
#include "rp_status.h"

typedef struct rp_worker rp_worker;

typedef void (*rp_work_fn)(void *ctx, void *job);
typedef void (*rp_done_fn)(void *job, bool cancelled);
typedef void (*rp_idle_fn)(rp_worker *w, void *ctx);

rp_worker *rp_worker_new(struct event_base *base, const char *name, rp_idle_fn idle,
                         void *ctx, int idle_ms);
rp_status rp_worker_submit(rp_worker *w, rp_work_fn work, rp_done_fn done,
                           void *job) RP_MUSTCHECK;
/* From the worker thread: run done(job, false) on the loop thread. */
rp_status rp_worker_post(rp_worker *w, rp_done_fn done, void *job) RP_MUSTCHECK;
void rp_worker_free(rp_worker *w);

#endif
