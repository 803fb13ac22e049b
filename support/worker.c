#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct rp_job {
    rp_work_fn work;
    rp_done_fn done;
    void *job;
    struct rp_job *next;
} rp_job;

struct rp_worker {
    struct event_base *base;
    char name[32];
    rp_idle_fn idle;
    void *ctx;
    int idle_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    rp_job *todo_head, *todo_tail; /* loop -> worker */
    rp_job *done_head, *done_tail; /* worker -> loop */
    struct event *done_ev;
};

static void rp_push(rp_job **head, rp_job **tail, rp_job *j) {
    j->next = NULL;
    if (*tail) (*tail)->next = j;
    else *head = j;
    *tail = j;
}

static rp_job *rp_pop(rp_job **head, rp_job **tail) {
    rp_job *j = *head;
    if (j) {
        *head = j->next;
        if (*head == NULL) *tail = NULL;
    }
    return j;
}

/* Runs on the loop: every finished job's done function, in order. */
static void rp_worker_on_done(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    rp_job *list = w->done_head;
    w->done_head = w->done_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    while (list) {
        rp_job *next = list->next;
        if (list->done) list->done(list->job, false);
        free(list);
        list = next;
    }
}

rp_status rp_worker_post(rp_worker *w, rp_done_fn done, void *job) {
    rp_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    j->done = done;
    j->job = job;
    pthread_mutex_lock(&w->mu);
    rp_push(&w->done_head, &w->done_tail, j);
    pthread_mutex_unlock(&w->mu);
    event_active(w->done_ev, 0, 0);
    return RP_OK;
}

static void *rp_worker_main(void *arg) {
    rp_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->stopping) break;
        rp_job *j = rp_pop(&w->todo_head, &w->todo_tail);
        if (j == NULL) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += w->idle_ms / 1000;
            until.tv_nsec += (long)(w->idle_ms % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            int rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
            if (rc == ETIMEDOUT && !w->stopping && w->todo_head == NULL && w->idle) {
                pthread_mutex_unlock(&w->mu);
                w->idle(w, w->ctx);
                pthread_mutex_lock(&w->mu);
            }
            continue;
        }
        pthread_mutex_unlock(&w->mu);
        if (j->work) j->work(w->ctx, j->job);
        pthread_mutex_lock(&w->mu);
        rp_push(&w->done_head, &w->done_tail, j);
        event_active(w->done_ev, 0, 0);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

rp_worker *rp_worker_new(struct event_base *base, const char *name, rp_idle_fn idle,
                         void *ctx, int idle_ms) {
    rp_worker *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->base = base;
    strncpy(w->name, name ? name : "worker", sizeof w->name - 1);
    w->idle = idle;
    w->ctx = ctx;
    w->idle_ms = idle_ms > 0 ? idle_ms : 1000;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->done_ev = event_new(base, -1, 0, rp_worker_on_done, w);
    if (w->done_ev == NULL || pthread_create(&w->thread, NULL, rp_worker_main, w) != 0) {
        if (w->done_ev) event_free(w->done_ev);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return NULL;
    }
    return w;
}

rp_status rp_worker_submit(rp_worker *w, rp_work_fn work, rp_done_fn done, void *job) {
    rp_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    j->work = work;
    j->done = done;
    j->job = job;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        free(j);
        return RP_ERR_CLOSED;
    }
    rp_push(&w->todo_head, &w->todo_tail, j);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return RP_OK;
}

void rp_worker_free(rp_worker *w) {
    if (w == NULL) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    rp_worker_on_done(-1, 0, w);
    rp_job *j;
    while ((j = rp_pop(&w->todo_head, &w->todo_tail)) != NULL) {
        if (j->done) j->done(j->job, true);
        free(j);
    }
    event_free(w->done_ev);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
