/*
 * rp_http_console_jobs.h - the browser console's port (rp_http_console.h)
 * run off the loop: an answer or a read is sent as a control request on a
 * worker thread of the console's ("console": a connect and a wait never
 * block the loop, nor the store thread), the feed is read on the store
 * thread. What each does on its backend are the two calls of
 * rp_console_backends, which reaperd fills (the ask over an AMQP
 * connection of its own, logged in as the signed-in user: rp_amqp_ask;
 * the feed: rp_pg_console_feed).
 *
 * Ownership: the wiring owns its worker and the console; the backends'
 * selves, cfg and broker_password are borrowed for its life, own_user is
 * copied. Free it after the HTTP server (rp_http_free): the worker's thread
 * is joined (an ask in flight ends within its time-outs) and every call
 * still waiting is freed. Threads: loop thread.
 */
#ifndef RP_HTTP_CONSOLE_JOBS_H
#define RP_HTTP_CONSOLE_JOBS_H

#include <event2/event.h>

#include "rp_config.h"
#include "rp_http_console.h"
#include "worker.h"

typedef struct rp_console_backends {
    /* The console's worker thread: sends body as user with password (user
     * NULL: reaperd's own), waits at most timeout_ms; RP_OK with *reply
     * (heap, NUL-terminated), else a status and err. */
    rp_status (*ask)(void *self, const char *user, const char *password, const void *body,
                     size_t len, int timeout_ms, char **reply, size_t *reply_len, char *err,
                     size_t n);
    /* The store thread: the newest limit events of the feed as JSON. */
    rp_status (*feed)(void *self, int limit, char **reply, size_t *reply_len);
    void *ask_self, *feed_self;
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    void *store_self;
    const rp_config *const *cfg;        /* in force: http.console* */
    const char *const *broker_password; /* reaperd's own: anonymous reads */
    const char *own_user;               /* broker.url's user; NULL: unknown */
} rp_console_backends;

typedef struct rp_console_wiring rp_console_wiring;

/* NULL when out of memory or the thread cannot start. */
rp_console_wiring *rp_console_wiring_new(struct event_base *base, const rp_console_backends *b);
rp_console *rp_console_wiring_console(rp_console_wiring *w);
/* NULL is fine. */
void rp_console_wiring_free(rp_console_wiring *w);

#endif
