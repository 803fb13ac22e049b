/* One gate's answer for the answer-set runner (rp_answer_one.h). */
#include "rp_answer_one.h"

#include <stdlib.h>
#include <string.h>

#include "rp_clock.h"
#include "rp_control.h"

struct rp_answer_one {
    const rp_control_store_port *store;
    rp_replays *replays;
    rp_metrics *metrics;
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    void *store_job_self;
};

/* One gate's answer in flight. */
typedef struct rp_ao_job {
    rp_answer_one *w;
    int64_t gate;
    rp_choice choice;
    char *by, *note;
    rp_answer_one_done_fn done;
    void *arg;
    rp_status st;
    rp_answer_result res;
} rp_ao_job;

static void rp_ao_job_free(rp_ao_job *j) {
    free(j->by);
    free(j->note);
    free(j);
}

static void rp_ao_replayed(void *arg, const rp_replay_result *r) {
    rp_ao_job *j = arg;
    if (r->cancelled) j->done(j->arg, RP_ERR_CLOSED, false, NULL, "reaperd is shutting down");
    else if (r->st != RP_OK) j->done(j->arg, r->st, r->away, NULL, r->message);
    else j->done(j->arg, RP_OK, false, rp_outcome_string(r->answer.outcome), NULL);
    rp_ao_job_free(j);
}

/* Store thread: a dismiss, as a single answer runs it. */
static void rp_ao_dismiss_work(void *ctx, void *arg) {
    (void)ctx;
    rp_ao_job *j = arg;
    const rp_control_store_port *s = j->w->store;
    if (s->ready(s->self) != RP_OK) {
        j->st = RP_ERR_UNAVAILABLE;
        return;
    }
    s->set_claim_seconds(s->self, s->config(s->self)->control.replay_claim_seconds);
    const rp_gate_port *g = s->gates(s->self);
    j->st = g->answer(g->self, j->gate, j->choice, j->by, j->note, &j->res);
}

static void rp_ao_dismiss_done(void *arg, bool cancelled) {
    rp_ao_job *j = arg;
    if (cancelled) {
        j->done(j->arg, RP_ERR_CLOSED, false, NULL, "reaperd is shutting down");
    } else if (j->st != RP_OK) {
        j->done(j->arg, j->st, false, NULL, rp_control_answer_refusal(j->st));
    } else {
        if (j->res.outcome != RP_OUTCOME_ALREADY_ANSWERED)
            rp_metrics_gate_answered(j->w->metrics, j->res.kind, j->res.choice);
        j->done(j->arg, RP_OK, false, rp_outcome_string(j->res.outcome), NULL);
    }
    rp_ao_job_free(j);
}

static rp_status rp_ao_answer(void *self, int64_t gate, rp_choice choice, const char *by,
                              const char *note, rp_answer_one_done_fn done, void *arg) {
    rp_answer_one *w = self;
    if (choice == RP_CHOICE_REPLAY && rp_replays_busy(w->replays, gate)) return RP_ERR_BUSY;
    rp_ao_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    *j = (rp_ao_job){.w = w, .gate = gate, .choice = choice, .done = done, .arg = arg};
    if ((by != NULL && (j->by = strdup(by)) == NULL) ||
        (note != NULL && (j->note = strdup(note)) == NULL)) {
        rp_ao_job_free(j);
        return RP_ERR_NOMEM;
    }
    rp_status st;
    if (choice == RP_CHOICE_REPLAY) {
        st = rp_replays_start(w->replays, gate, j->by, j->note, rp_ao_replayed, j);
        if (st == RP_ERR_CONFLICT) st = RP_ERR_BUSY;
    } else {
        st = w->store_job(w->store_job_self, rp_ao_dismiss_work, rp_ao_dismiss_done, j);
    }
    if (st != RP_OK) rp_ao_job_free(j);
    return st;
}

rp_answer_one *rp_answer_one_new(const rp_control_store_port *store, rp_replays *replays,
                                 rp_metrics *metrics,
                                 rp_status (*store_job)(void *self, rp_work_fn fn,
                                                        rp_done_fn done, void *job),
                                 void *store_job_self) {
    rp_answer_one *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    *w = (rp_answer_one){store, replays, metrics, store_job, store_job_self};
    return w;
}

void rp_answer_one_deps(rp_answer_one *w, rp_answer_sets_deps *deps) {
    w->store->answer_sets(w->store->self, &deps->port);
    deps->store_job = w->store_job;
    deps->store_job_self = w->store_job_self;
    deps->answer = rp_ao_answer;
    deps->answer_self = w;
    deps->now_ms = rp_clock_mono_ms;
    deps->owner = w->store->claimer(w->store->self);
}

void rp_answer_one_free(rp_answer_one *w) { free(w); }
