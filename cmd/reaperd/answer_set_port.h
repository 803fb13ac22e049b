/*
 * answer_set_port.h - the answer-set runner's ports (app/rp_answer_sets.h)
 * filled for reaperd: the store side over the pass runner's session
 * (adapters/postgres/rp_pg_answer_set.h), and one gate's answer as a single
 * `answer` request runs it: a replay through the replays part
 * (app/rp_replays.h), a dismiss through the runner's gate port (wrapped
 * with the events feed) on the store thread. It composes two backends
 * (PostgreSQL and the broker's replay channel), hence cmd.
 *
 * Ownership: the wiring borrows runner, replays and metrics (they outlive
 * it); rp_answer_set_wiring_free frees it after the answer-set part.
 */
#ifndef RP_ANSWER_SET_PORT_CMD_H
#define RP_ANSWER_SET_PORT_CMD_H

#include "pass_runner.h"
#include "rp_answer_sets.h"
#include "rp_metrics.h"
#include "rp_replays.h"
#include "worker.h"

typedef struct rp_answer_set_wiring rp_answer_set_wiring;

/* NULL when out of memory. store_job runs a job on the store thread (as
 * rp_answer_sets_deps says). */
rp_answer_set_wiring *rp_answer_set_wiring_new(
    rp_pass_runner *runner, rp_replays *replays, rp_metrics *metrics,
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job),
    void *store_job_self);
/* Fills the ports, the owner (this process's instance id) and the clock of
 * *deps (lease_ms, idle_ms left as they are). */
void rp_answer_set_wiring_deps(rp_answer_set_wiring *w, rp_answer_sets_deps *deps);
void rp_answer_set_wiring_free(rp_answer_set_wiring *w);

#endif
