/*
 * rp_http.h - reaperd's HTTP endpoints (CONTRACT section 7), libevent's evhttp
 * on the daemon's loop:
 *   GET /metrics  the Prometheus text format (rp_http_prom.h)
 *   GET /healthz  200 while the loop runs (the loop answers it)
 *   GET /readyz   200 only while the broker and the store are connected
 *                 and the tap is bound (daemon's ready hook), else 503
 *                 naming what is missing
 *   /console...   the browser console while http.console is on
 *                 (rp_http_console.h; the one place POST is taken)
 * Anything else is 404; a method other than GET or HEAD is refused with
 * 405. A scrape renders from the metrics' atomics on the loop: it never
 * waits on the store thread, the database or the broker.
 *
 * http.listen is host:port, [v6]:port or :port (every IPv4 address); port
 * 0 binds a free port, which rp_http_bound() gives (and the daemon logs).
 *
 * The part's narrow ports: the registry it renders and two hooks (refresh
 * before a scrape, ready for /readyz); it calls nothing else of the daemon.
 *
 * Ownership: rp_http_new borrows base, metrics and the hooks' arg for the
 * server's life; rp_http_stop closes the listening socket and every
 * connection (nothing is served after it; rp_http_bound still answers);
 * rp_http_free stops it when still running and frees it.
 * Threads: loop thread only.
 */
#ifndef RP_HTTP_H
#define RP_HTTP_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_metrics.h"
#include "rp_status.h"

typedef struct rp_http_hooks {
    /* Called on the loop before /metrics renders (to copy loop-side state
     * into the registry). May be NULL. */
    void (*refresh)(void *arg);
    /* Whether the daemon is ready; fills why (e.g. "broker down") when not. */
    bool (*ready)(void *arg, char *why, size_t cap);
    void *arg;
    /* The browser console (rp_http_console.h), served under /console while
     * http.console is on; NULL: none. Borrowed; rp_http_stop detaches it. */
    struct rp_console *console;
} rp_http_hooks;

typedef struct rp_http rp_http;

/* Binds listen and starts serving. NULL with a reason in err (the address
 * cannot be parsed or bound, or out of memory). */
rp_http *rp_http_new(struct event_base *base, const char *listen, rp_metrics *metrics,
                     const rp_http_hooks *hooks, char *err, size_t errlen);
/* The bound address ("127.0.0.1:41234", "[::1]:9464"). */
const char *rp_http_bound(const rp_http *h);
/* Stops serving (idempotent; NULL is fine). */
void rp_http_stop(rp_http *h);
void rp_http_free(rp_http *h);

#endif
