/*
 * rp_http_console.h - the browser console (http.console: true) on reaperd's
 * HTTP listener (rp_http.h), on the loop:
 *   GET  /console                the page (HTML; its script and style below)
 *   GET  /console/app.js         the script (console/, embedded as rp_http_console_page.c at build time)
 *   GET  /console/app.css        the style
 *   POST /console/api/ask        a control request (JSON, proto/SCHEMA.md)
 *                                sent to reaperd's control queue as the
 *                                signed-in broker user; the reply as is
 *   GET  /console/api/feed       the open sightings, the recent ledger
 *                                events and the status reply
 * Who may send what is core's (core/rp_console.h): the console offers
 * gates, gate and status (reads) and answer; a read goes without a sign-in
 * only with http.console_read_anonymous (as reaperd's own broker user), an
 * answer always needs one. The sign-in is HTTP Basic with a broker user and
 * password on every call; the page sets the header itself and the console
 * never asks the browser for credentials (no WWW-Authenticate), so the
 * browser keeps none that another site could make it send. The broker
 * checks the password: a refused login is 401. A signed-in user that
 * control.allowed_users does not admit is refused 403 at once (reaperd
 * would send them no reply: the page would wait out the time-out); the
 * control queue's own admission still decides.
 *
 * Nothing here blocks: a call is handed to the port (a worker thread opens
 * the AMQP connection, the store thread reads the feed) and answered on the
 * loop when it is done; at most RP_CONSOLE_INFLIGHT_MAX at once (503
 * after). Passwords are never logged and are wiped when a call ends.
 *
 * Ownership: a call belongs to the console from rp_console_port.ask/feed
 * to its done; the port's pointers are borrowed for the console's life.
 * Threads: loop thread, except a call's fields that the port fills off the
 * loop between the hand-off and done.
 */
#ifndef RP_HTTP_CONSOLE_H
#define RP_HTTP_CONSOLE_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_config.h"
#include "rp_status.h"

#define RP_CONSOLE_INFLIGHT_MAX 32

typedef struct rp_console_call {
    /* In: who (user NULL: reaperd's own broker user and password) and,
     * for ask, the request body (JSON). */
    const char *user;
    const char *password;
    const char *body;
    size_t len;
    /* Out, set by the port before done: RP_OK with the reply (heap,
     * NUL-terminated; the console frees it), else a status and err
     * (RP_ERR_FORBIDDEN: the login was refused; RP_ERR_TIMEOUT: no reply). */
    rp_status st;
    char *reply;
    size_t reply_len;
    char err[300];
} rp_console_call;

typedef void (*rp_console_done_fn)(rp_console_call *call, bool cancelled);

typedef struct rp_console_port {
    /* Sends call->body as call->user off the loop, then done on the loop.
     * An error: done is never called. */
    rp_status (*ask)(void *self, rp_console_call *call, rp_console_done_fn done);
    /* Reads the feed (rp_pg_console.h) off the loop, then done. */
    rp_status (*feed)(void *self, rp_console_call *call, rp_console_done_fn done);
    /* The configuration in force (http.console, http.console_read_anonymous
     * are read on every request). */
    const rp_config *const *cfg;
    /* reaperd's own broker user (broker.url's), for the early
     * control.allowed_users check; NULL: unknown (no early check). */
    const char *own_user;
    void *self;
} rp_console_port;

typedef struct rp_console rp_console;

/* NULL when out of memory. */
rp_console *rp_console_new(const rp_console_port *port);
/* Whether the console answers this path (it is on and path is under
 * /console); then rp_console_handle answers the request. */
bool rp_console_serves(const rp_console *k, const char *path);
void rp_console_handle(rp_console *k, struct evhttp_request *req, const char *path);
/* Forgets every request waiting for its call (before the HTTP server is
 * freed); the calls' done still come and free them. Idempotent. */
void rp_console_detach(rp_console *k);
/* After detach; NULL is fine. Calls still in flight free themselves. */
void rp_console_free(rp_console *k);

/* The embedded files (console/, embedded as rp_http_console_page.c at build time). */
extern const char rp_console_html[];
extern const char rp_console_js[];
extern const char rp_console_css[];

#endif
