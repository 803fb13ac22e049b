/* The browser console's port run off the loop (rp_http_console_jobs.h). */
#include "rp_http_console_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A reply comes within a pass's time at most: reaperd answers the reads
 * the console sends from the store thread. A user control.allowed_users
 * refuses gets no reply: this is how long the page waits to say so. */
#define RP_CONSOLE_ASK_TIMEOUT_MS 8000
#define RP_CONSOLE_EVENTS 50

struct rp_console_wiring {
    rp_console_backends deps;
    rp_worker *worker;
    rp_console *console;
    char own_user[256]; /* broker.url's user */
};

typedef struct rp_console_job {
    rp_console_wiring *w;
    rp_console_call *call;
    rp_console_done_fn done;
    char password[256]; /* reaperd's own, copied for an anonymous read */
} rp_console_job;

static void rp_console_job_free(rp_console_job *j) {
    memset(j->password, 0, sizeof j->password);
    free(j);
}

static void rp_console_job_done(void *arg, bool cancelled) {
    rp_console_job *j = arg;
    j->done(j->call, cancelled);
    rp_console_job_free(j);
}

/* Worker thread: the connect, the publish, the wait. */
static void rp_console_ask_work(void *ctx, void *arg) {
    (void)ctx;
    rp_console_job *j = arg;
    rp_console_call *c = j->call;
    const rp_console_backends *b = &j->w->deps;
    c->st = b->ask(b->ask_self, c->user, c->user ? c->password : j->password, c->body, c->len,
                   RP_CONSOLE_ASK_TIMEOUT_MS, &c->reply, &c->reply_len, c->err, sizeof c->err);
}

static rp_status rp_console_ask(void *self, rp_console_call *call, rp_console_done_fn done) {
    rp_console_wiring *w = self;
    rp_console_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    *j = (rp_console_job){.w = w, .call = call, .done = done};
    const char *own = *w->deps.broker_password;
    if (call->user == NULL && own != NULL) snprintf(j->password, sizeof j->password, "%s", own);
    rp_status st = rp_worker_submit(w->worker, rp_console_ask_work, rp_console_job_done, j);
    if (st != RP_OK) rp_console_job_free(j);
    return st;
}

/* Store thread: the one read. */
static void rp_console_feed_work(void *ctx, void *arg) {
    (void)ctx;
    rp_console_job *j = arg;
    rp_console_call *c = j->call;
    c->st = j->w->deps.feed(j->w->deps.feed_self, RP_CONSOLE_EVENTS, &c->reply, &c->reply_len);
    if (c->st != RP_OK)
        snprintf(c->err, sizeof c->err, "%s", c->st == RP_ERR_UNAVAILABLE
                                                  ? "the store is unreachable"
                                                  : "reading the store failed");
}

static rp_status rp_console_feed(void *self, rp_console_call *call, rp_console_done_fn done) {
    rp_console_wiring *w = self;
    rp_console_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    *j = (rp_console_job){.w = w, .call = call, .done = done};
    rp_status st = w->deps.store_job(w->deps.store_self, rp_console_feed_work,
                                     rp_console_job_done, j);
    if (st != RP_OK) rp_console_job_free(j);
    return st;
}

rp_console_wiring *rp_console_wiring_new(struct event_base *base, const rp_console_backends *deps) {
    rp_console_wiring *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->deps = *deps;
    w->worker = rp_worker_new(base, "console", NULL, NULL, 0);
    bool known = deps->own_user != NULL;
    if (known) snprintf(w->own_user, sizeof w->own_user, "%s", deps->own_user);
    rp_console_port port = {.ask = rp_console_ask,
                            .feed = rp_console_feed,
                            .cfg = deps->cfg,
                            .own_user = known ? w->own_user : NULL,
                            .self = w};
    w->console = w->worker ? rp_console_new(&port) : NULL;
    if (w->console == NULL) {
        rp_console_wiring_free(w);
        return NULL;
    }
    return w;
}

rp_console *rp_console_wiring_console(rp_console_wiring *w) { return w->console; }

void rp_console_wiring_free(rp_console_wiring *w) {
    if (w == NULL) return;
    /* Detached first: the calls the worker still gives back answer nobody. */
    rp_console_detach(w->console);
    rp_worker_free(w->worker);
    rp_console_free(w->console);
    free(w);
}
