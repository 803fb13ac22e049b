/*
 * console_port.h - the browser console's port (adapters/http/
 * rp_http_console.h) filled from two backends, which is why it is composed
 * here: an answer or a read is sent as a control request over an AMQP
 * connection of its own, logged in as the signed-in user
 * (adapters/rabbitmq/rp_amqp_ask.h), on a worker thread of the console's
 * ("console": a connect and a wait never block the loop, nor the store
 * thread); the feed is read on the store thread (adapters/postgres/
 * rp_pg_console.h).
 *
 * Ownership: the wiring owns its worker and the console; cfg, boot_cfg,
 * broker_password, the store job's self and the runner are borrowed for
 * its life. Free it after the HTTP server (rp_http_free): the worker's
 * thread is joined (an ask in flight ends within its time-outs) and every
 * call still waiting is freed. Threads: loop thread.
 */
#ifndef RP_CONSOLE_PORT_H
#define RP_CONSOLE_PORT_H

#include <event2/event.h>

#include "ports.h"
#include "rp_config.h"
#include "rp_http_console.h"
#include "worker.h"

typedef struct rp_console_wiring rp_console_wiring;

typedef struct rp_console_wiring_deps {
    struct event_base *base;
    const rp_config *const *cfg; /* in force: http.console* */
    const rp_config *boot_cfg;   /* broker.* (restart-only: read off the loop) */
    const char *const *broker_password; /* reaperd's own: anonymous reads */
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    void *store_self;
    rp_pass_runner *runner;      /* store thread: the feed's read */
} rp_console_wiring_deps;

/* NULL when out of memory or the thread cannot start. */
rp_console_wiring *rp_console_wiring_new(const rp_console_wiring_deps *deps);
rp_console *rp_console_wiring_console(rp_console_wiring *w);
/* NULL is fine. */
void rp_console_wiring_free(rp_console_wiring *w);

#endif
