/* The runner of answer sets (rp_answer_sets.h). */
#include "rp_answer_sets.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_log.h"

/* The results one step may record: a batch's and those of the answers
 * still in flight from the batch before. */
#define RP_AS_RESULTS_MAX (RP_ANSWER_SETS_BATCH_MAX + RP_ANSWER_SETS_IN_FLIGHT)

/* What the part is waiting for. */
typedef enum rp_as_phase {
    RP_AS_IDLE = 0, /* no set: the idle timer looks again */
    RP_AS_STORE,    /* a store job (take, step, finish) is out */
    RP_AS_RUN,      /* answering the batch in hand */
} rp_as_phase;

typedef enum rp_as_job_kind {
    RP_AS_TAKE = 0,
    RP_AS_STEP,
    RP_AS_FINISH,
    RP_AS_RELEASE, /* a stop's: the results in hand recorded, the lease cleared */
} rp_as_job_kind;

/* One answer's result, kept until the next step records it. */
typedef struct rp_as_result {
    int64_t gate;
    bool answered;
    char outcome[32];
    char *message; /* heap or NULL */
} rp_as_result;

struct rp_answer_sets {
    struct event_base *base;
    rp_answer_sets_deps deps;
    char owner[160];
    struct event *timer;
    bool stopped;
    bool release_wanted;    /* stopped with a set in hand: let it go */
    rp_as_phase phase;
    bool poked;

    /* The set in hand (held: its id is not 0). */
    rp_answer_set_row set;
    rp_answer_pace pace;
    int64_t after;          /* the highest id of the batches read so far */
    bool later_seen;        /* a gate was busy: look again from the start */
    bool stopping;          /* a refusal that would repeat */
    bool pausing;           /* the broker away: start nothing until the next look */
    bool paused;            /* said so in the log (once a pause) */
    char stop_reason[512];
    /* The ids in hand: what is left of the batch before and the batch read
     * after it (the next batch is read when half of one is started, and
     * the pace goes on meanwhile: prefetching). */
    int64_t ids[2 * RP_ANSWER_SETS_BATCH_MAX];
    size_t n_ids, next_id;
    bool prefetching;       /* a step out while the ids in hand are answered */
    bool exhausted;         /* the last step read no id above after */
    size_t in_flight;
    /* Results not yet recorded: a step records the first n_marks of them
     * (those there when it went out); the answers that end meanwhile are
     * kept behind them for the next step. */
    rp_as_result results[RP_AS_RESULTS_MAX];
    size_t n_results;

    /* The store job out (one at a time), filled on the store thread. */
    rp_as_job_kind job;
    rp_status job_st;
    bool job_found;
    rp_answer_set_row job_row;
    int64_t job_ids[RP_ANSWER_SETS_BATCH_MAX];
    size_t job_max;         /* the most ids the step reads (set on the loop) */
    size_t job_n;
    rp_answer_set_mark marks[RP_AS_RESULTS_MAX];
    size_t n_marks;
    rp_answer_set_state finish_state;
};

typedef struct rp_as_answer {
    rp_answer_sets *a;
    int64_t set;
    int64_t gate;
} rp_as_answer;

static void rp_as_arm(rp_answer_sets *a, int64_t ms) {
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(a->timer, &tv);
}

static void rp_as_results_clear(rp_answer_sets *a) {
    for (size_t i = 0; i < a->n_results; i++) free(a->results[i].message);
    a->n_results = 0;
}

/* Drops the first n results (recorded by a step), keeping the rest. */
static void rp_as_results_drop(rp_answer_sets *a, size_t n) {
    if (n > a->n_results) n = a->n_results;
    for (size_t i = 0; i < n; i++) free(a->results[i].message);
    memmove(a->results, a->results + n, (a->n_results - n) * sizeof a->results[0]);
    a->n_results -= n;
}

static void rp_as_log_set(const char *msg, const rp_answer_set_row *s, const char *reason) {
    char id[24], total[24], answered[24], failed[24];
    snprintf(id, sizeof id, "%" PRId64, s->id);
    snprintf(total, sizeof total, "%" PRId64, s->total);
    snprintf(answered, sizeof answered, "%" PRId64, s->answered);
    snprintf(failed, sizeof failed, "%" PRId64, s->failed);
    RP_INFO(msg, "answer_set", id, "choice", rp_choice_string(s->choice), "state",
            rp_answer_set_state_string(s->state), "total", total, "answered", answered, "failed",
            failed, "reason", reason, NULL);
}

/* ---- the store side -------------------------------------------------------- */

static void rp_as_work(void *ctx, void *arg) {
    (void)ctx;
    rp_answer_sets *a = arg;
    const rp_answer_set_port *p = &a->deps.port;
    switch (a->job) {
    case RP_AS_TAKE:
        a->job_st = p->take(p->self, a->owner, a->deps.lease_ms, &a->job_row, &a->job_found);
        break;
    case RP_AS_STEP:
        a->job_st = p->step(p->self, a->set.id, a->owner, a->deps.lease_ms, a->marks, a->n_marks,
                            a->after, a->job_ids, a->job_max, &a->job_n, &a->job_row);
        break;
    case RP_AS_FINISH:
        a->job_st = p->finish(p->self, a->set.id, a->owner, a->finish_state,
                              a->stop_reason[0] != '\0' ? a->stop_reason : NULL);
        break;
    case RP_AS_RELEASE:
        /* The results in hand first (fenced: a set taken over meanwhile
         * records nothing and is not ours to let go). */
        a->job_st = RP_OK;
        if (a->n_marks > 0)
            a->job_st = p->step(p->self, a->set.id, a->owner, a->deps.lease_ms, a->marks,
                                a->n_marks, a->after, a->job_ids, 0, &a->job_n, &a->job_row);
        if (a->job_st == RP_OK)
            a->job_st = p->finish(p->self, a->set.id, a->owner, RP_ANSWER_SET_RUNNING, NULL);
        break;
    }
}

static void rp_as_done(void *arg, bool cancelled);

static void rp_as_submit(rp_answer_sets *a, rp_as_job_kind kind) {
    a->job = kind;
    a->job_st = RP_OK;
    a->job_found = false;
    a->job_n = 0;
    a->phase = RP_AS_STORE;
    if (kind == RP_AS_STEP || kind == RP_AS_RELEASE) {
        /* About two seconds' worth, and room beside the ids in hand. */
        size_t batch = (size_t)a->set.rate * 2, left = a->n_ids - a->next_id;
        if (batch < 20) batch = 20;
        if (batch > RP_ANSWER_SETS_BATCH_MAX) batch = RP_ANSWER_SETS_BATCH_MAX;
        if (batch > RP_ARRAY_LEN(a->ids) - left) batch = RP_ARRAY_LEN(a->ids) - left;
        a->job_max = kind == RP_AS_RELEASE ? 0 : batch;
        a->n_marks = a->n_results;
        for (size_t i = 0; i < a->n_results; i++)
            a->marks[i] = (rp_answer_set_mark){a->results[i].gate, a->results[i].answered,
                                               a->results[i].answered ? a->results[i].outcome
                                                                      : NULL,
                                               a->results[i].message};
    }
    rp_status (*submit)(void *, rp_work_fn, rp_done_fn, void *) =
        kind == RP_AS_RELEASE && a->deps.store_job_last != NULL ? a->deps.store_job_last
                                                                : a->deps.store_job;
    if (submit(a->deps.store_job_self, rp_as_work, rp_as_done, a) != RP_OK) {
        /* No store thread (stopping, or not yet): the set in hand is left
         * to its lease; looked for again later unless stopped. */
        rp_as_results_clear(a);
        memset(&a->set, 0, sizeof a->set);
        a->n_ids = a->next_id = 0;
        a->stopping = a->pausing = a->paused = false;
        a->prefetching = a->exhausted = false;
        a->phase = RP_AS_IDLE;
        if (!a->stopped) rp_as_arm(a, a->deps.idle_ms);
    }
}

static void rp_as_drop(rp_answer_sets *a) {
    rp_as_results_clear(a);
    memset(&a->set, 0, sizeof a->set);
    a->n_ids = a->next_id = 0;
    a->stopping = a->pausing = a->paused = false;
    a->prefetching = a->exhausted = false;
    a->later_seen = false;
    a->stop_reason[0] = '\0';
    a->phase = RP_AS_IDLE;
    if (!a->stopped) rp_as_arm(a, a->poked ? 0 : a->deps.idle_ms);
    a->poked = false;
}

static void rp_as_dispatch(rp_answer_sets *a);

static void rp_as_step_done(rp_answer_sets *a) {
    a->prefetching = false;
    if (a->job_st == RP_ERR_CONFLICT) {
        /* Taken over by another runner (this one's lease ran out). */
        rp_as_log_set("answer set taken over by another runner", &a->set, NULL);
        rp_as_drop(a);
        return;
    }
    if (a->job_st != RP_OK) {
        /* The store is away: the results stay for the next step. */
        char why[64];
        snprintf(why, sizeof why, "%s", rp_status_string(a->job_st));
        rp_as_log_set("answer set step failed; trying again", &a->set, why);
        a->phase = RP_AS_RUN;
        a->n_ids = a->next_id = 0;
        rp_as_arm(a, a->deps.idle_ms);
        return;
    }
    rp_as_results_drop(a, a->n_marks);
    int rate = a->set.rate;
    a->set = a->job_row;
    if (a->set.rate != rate) rp_answer_pace_init(&a->pace, a->set.rate);
    if (a->set.state != RP_ANSWER_SET_RUNNING) {
        /* Cancelled (or ended elsewhere): let it go. */
        rp_as_log_set("answer set ended", &a->set, a->set.stop_reason);
        a->finish_state = RP_ANSWER_SET_RUNNING; /* clears the lease, keeps its state */
        rp_as_submit(a, RP_AS_FINISH);
        return;
    }
    /* Answers still in flight, or ended during the step: recorded before
     * the set stops, pauses or is done (a step as soon as the last is in). */
    bool unrecorded = a->in_flight > 0 || a->n_results > 0;
    if (a->stopping || a->pausing) {
        a->phase = RP_AS_RUN;
        a->n_ids = a->next_id = 0;
        if (unrecorded) {
            if (a->in_flight == 0) rp_as_submit(a, RP_AS_STEP);
            return;
        }
        if (a->stopping) {
            a->finish_state = RP_ANSWER_SET_STOPPED;
            a->set.state = RP_ANSWER_SET_STOPPED;
            rp_as_log_set("answer set stopped", &a->set, a->stop_reason);
            rp_as_submit(a, RP_AS_FINISH);
            return;
        }
        /* Paused: its pending gates tried again from the first a little
         * later (the next look renews the lease). */
        if (!a->paused) rp_as_log_set("answer set paused: the broker is away", &a->set, NULL);
        a->paused = true;
        a->pausing = false;
        a->after = 0;
        a->exhausted = false;
        rp_as_arm(a, a->deps.idle_ms);
        return;
    }
    /* What is left of the ids in hand, then the batch read. */
    size_t left = a->n_ids - a->next_id;
    memmove(a->ids, a->ids + a->next_id, left * sizeof a->ids[0]);
    memcpy(a->ids + left, a->job_ids, a->job_n * sizeof a->ids[0]);
    a->n_ids = left + a->job_n;
    a->next_id = 0;
    a->exhausted = a->job_n == 0;
    if (a->job_n > 0) a->after = a->job_ids[a->job_n - 1];
    if (a->n_ids > 0) {
        /* answering goes on */
    } else if (unrecorded) {
        a->phase = RP_AS_RUN;
        if (a->in_flight == 0) rp_as_submit(a, RP_AS_STEP);
        return;
    } else if (a->set.pending > 0 && a->after > 0) {
        /* Busy gates left behind: from the start again, a little later. */
        a->after = 0;
        a->exhausted = false;
        a->phase = RP_AS_RUN;
        rp_as_arm(a, a->deps.idle_ms);
        return;
    } else {
        a->finish_state = RP_ANSWER_SET_DONE;
        a->set.state = RP_ANSWER_SET_DONE;
        rp_as_log_set("answer set done", &a->set, NULL);
        rp_as_submit(a, RP_AS_FINISH);
        return;
    }
    a->phase = RP_AS_RUN;
    rp_as_dispatch(a);
}

/* Stopped: the job that came back says whether a set is still held here;
 * if so it is let go (rp_answer_sets_stop). */
static void rp_as_done_stopped(rp_answer_sets *a) {
    switch (a->job) {
    case RP_AS_TAKE:
        if (a->job_st != RP_OK || !a->job_found) return;
        a->set = a->job_row; /* taken just now: let go at once */
        break;
    case RP_AS_STEP:
        if (a->job_st == RP_ERR_CONFLICT) return; /* taken over: not ours */
        if (a->job_st == RP_OK) rp_as_results_drop(a, a->n_marks);
        break;
    case RP_AS_FINISH: return; /* ended or let go already */
    case RP_AS_RELEASE:
        if (a->job_st == RP_OK) rp_as_log_set("answer set let go: reaperd is stopping", &a->set,
                                              NULL);
        else
            rp_as_log_set("answer set not let go; another runner takes it when its lease ends",
                          &a->set, rp_status_string(a->job_st));
        return;
    }
    if (a->release_wanted && a->set.id != 0) {
        a->release_wanted = false;
        rp_as_submit(a, RP_AS_RELEASE);
    }
}

static void rp_as_done(void *arg, bool cancelled) {
    rp_answer_sets *a = arg;
    a->phase = RP_AS_IDLE;
    if (cancelled) {
        a->stopped = true;
        return;
    }
    if (a->stopped) {
        rp_as_done_stopped(a);
        return;
    }
    switch (a->job) {
    case RP_AS_TAKE:
        if (a->job_st != RP_OK || !a->job_found) {
            rp_as_drop(a);
            return;
        }
        a->set = a->job_row;
        rp_answer_pace_init(&a->pace, a->set.rate);
        a->after = 0;
        rp_as_log_set("answer set taken", &a->set, NULL);
        rp_as_submit(a, RP_AS_STEP);
        return;
    case RP_AS_STEP: rp_as_step_done(a); return;
    case RP_AS_FINISH:
        /* Over, or let go: look for the next one. */
        a->poked = true;
        rp_as_drop(a);
        return;
    case RP_AS_RELEASE: return; /* (only once stopped: rp_as_done_stopped) */
    }
}

/* ---- the answers ------------------------------------------------------------ */

static void rp_as_answered(void *arg, rp_status st, bool away, const char *outcome,
                           const char *message) {
    rp_as_answer *j = arg;
    rp_answer_sets *a = j->a;
    int64_t gate = j->gate, set = j->set;
    free(j);
    a->in_flight--;
    if (a->stopped || set != a->set.id) return;
    rp_answer_item_verdict v = rp_answer_item_judge_away(st, away);
    if (v == RP_ANSWER_ITEM_LATER) {
        a->later_seen = true;
    } else if (v == RP_ANSWER_ITEM_PAUSE) {
        /* The gate stays pending: tried again when the set resumes. */
        a->pausing = true;
    } else if (v == RP_ANSWER_ITEM_STOP) {
        if (!a->stopping) {
            a->stopping = true;
            rp_answer_set_stop_text(a->stop_reason, sizeof a->stop_reason, gate, st, message);
        }
    } else if (a->n_results < RP_AS_RESULTS_MAX) {
        /* (Never full: at most a batch and the answers in flight. Were it,
         * the gate would stay pending and be found answered later.) */
        if (v == RP_ANSWER_ITEM_ANSWERED) a->paused = false;
        rp_as_result *r = &a->results[a->n_results++];
        r->gate = gate;
        r->answered = v == RP_ANSWER_ITEM_ANSWERED;
        snprintf(r->outcome, sizeof r->outcome, "%s", outcome != NULL ? outcome : "");
        r->message = message != NULL && !r->answered ? strdup(message) : NULL;
    }
    rp_as_dispatch(a);
}

/* Starts what the pace allows; steps when the batch is over. */
static void rp_as_dispatch(rp_answer_sets *a) {
    if (a->stopped || !(a->phase == RP_AS_RUN || a->prefetching)) return;
    while (!a->stopping && !a->pausing && a->next_id < a->n_ids &&
           a->in_flight < RP_ANSWER_SETS_IN_FLIGHT) {
        int64_t now = a->deps.now_ms();
        int64_t wait = rp_answer_pace_wait_ms(&a->pace, now);
        if (wait > 0) {
            if (!evtimer_pending(a->timer, NULL)) rp_as_arm(a, wait);
            return;
        }
        rp_as_answer *j = malloc(sizeof *j);
        if (j == NULL) {
            rp_as_arm(a, a->deps.idle_ms);
            return;
        }
        *j = (rp_as_answer){a, a->set.id, a->ids[a->next_id]};
        rp_status st = a->deps.answer(a->deps.answer_self, j->gate, a->set.choice,
                                      a->set.requested_by, a->set.note[0] ? a->set.note : NULL,
                                      rp_as_answered, j);
        if (st == RP_ERR_BUSY) {
            /* This process answers that gate already (a single answer's
             * replay): tried again after the rest. */
            free(j);
            a->later_seen = true;
            a->next_id++;
            continue;
        }
        if (st != RP_OK) {
            free(j);
            if (st == RP_ERR_CLOSED) {
                a->stopped = true;
                return;
            }
            /* Not sent: the broker is away, say. The same for every gate. */
            a->stopping = true;
            rp_answer_set_stop_text(a->stop_reason, sizeof a->stop_reason, a->ids[a->next_id],
                                    st, NULL);
            break;
        }
        a->next_id++;
        a->in_flight++;
        rp_answer_pace_took(&a->pace, now);
    }
    if (a->phase != RP_AS_RUN) return; /* a step is out (prefetching) */
    if (a->in_flight == 0 && (a->stopping || a->pausing || a->next_id >= a->n_ids)) {
        rp_as_submit(a, RP_AS_STEP);
    } else if (!a->stopping && !a->pausing && !a->exhausted && a->n_ids > 0 &&
               a->n_ids - a->next_id <= a->n_ids / 2) {
        /* Half the ids in hand started: the next batch is read (and the
         * results so far recorded) while the rest are answered at the
         * pace, so that the pace never waits for the store. */
        a->prefetching = true;
        rp_as_submit(a, RP_AS_STEP);
    }
}

static void rp_as_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    rp_answer_sets *a = arg;
    if (a->stopped) return;
    switch (a->phase) {
    case RP_AS_IDLE: rp_as_submit(a, RP_AS_TAKE); break;
    case RP_AS_RUN:
        if (a->n_ids == 0 || (a->next_id >= a->n_ids && a->in_flight == 0)) rp_as_submit(a, RP_AS_STEP);
        else rp_as_dispatch(a);
        break;
    case RP_AS_STORE:
        if (a->prefetching) rp_as_dispatch(a);
        break;
    }
}

rp_answer_sets *rp_answer_sets_new(struct event_base *base, const rp_answer_sets_deps *deps) {
    rp_answer_sets *a = calloc(1, sizeof *a);
    if (a == NULL) return NULL;
    a->base = base;
    a->deps = *deps;
    if (a->deps.lease_ms <= 0) a->deps.lease_ms = 15000;
    if (a->deps.idle_ms <= 0) a->deps.idle_ms = 1000;
    snprintf(a->owner, sizeof a->owner, "%s", deps->owner != NULL ? deps->owner : "?");
    a->deps.owner = a->owner;
    if ((a->timer = evtimer_new(base, rp_as_timer, a)) == NULL) {
        free(a);
        return NULL;
    }
    rp_as_arm(a, 0);
    return a;
}

void rp_answer_sets_poke(rp_answer_sets *a) {
    if (a == NULL || a->stopped) return;
    if (a->phase == RP_AS_IDLE) rp_as_arm(a, 0);
    else a->poked = true;
}

void rp_answer_sets_stop(rp_answer_sets *a) {
    if (a == NULL || a->stopped) return;
    a->stopped = true;
    evtimer_del(a->timer);
    if (a->phase == RP_AS_STORE || a->prefetching) {
        /* A job is out: the set (if one is still held when it is back)
         * is let go then (rp_as_done_stopped). */
        a->release_wanted = true;
        return;
    }
    if (a->set.id != 0) rp_as_submit(a, RP_AS_RELEASE);
}

void rp_answer_sets_free(rp_answer_sets *a) {
    if (a == NULL) return;
    event_free(a->timer);
    rp_as_results_clear(a);
    free(a);
}
