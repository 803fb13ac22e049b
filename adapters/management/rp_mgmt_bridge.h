/*
 * rp_mgmt_bridge.h - a synchronous facade over rp_mgmt_http for threads
 * other than the loop's (the store thread, where a pass runs with
 * synchronous ports).
 *
 * rp_mgmt_bridge_call() copies the request onto a thread-safe queue, wakes
 * the loop (event_active on the bridge's event), and waits on a condition
 * variable until the loop has the answer, the time-out (the request's own
 * plus a margin) passes, or the bridge is closed. The loop starts the HTTP
 * request; its callback stores the answer and wakes the caller.
 *
 * SHUTDOWN. rp_mgmt_bridge_close() (any thread) refuses new calls and
 * releases every waiting caller at once with RP_ERR_CLOSED; a request they
 * left in flight is finished (and forgotten) by the loop. The daemon closes
 * the bridge BEFORE it joins the thread that calls it: a caller waiting on a
 * loop that no longer turns would otherwise wait out its whole time-out.
 *
 * Threads: rp_mgmt_bridge_new and rp_mgmt_bridge_free on the loop thread
 * (or on the thread that owns the event_base while no loop runs it);
 * rp_mgmt_bridge_call from any other thread (from the loop thread it would
 * wait for itself: refused with RP_ERR_INVALID); rp_mgmt_bridge_close and
 * rp_mgmt_bridge_http_count from any thread. The event_base must be made
 * after evthread_use_pthreads().
 *
 * Ownership: the bridge takes the HTTP client given to rp_mgmt_bridge_new
 * (also when it fails) and frees it with itself. A response is owned by the
 * caller: rp_mgmt_response_cleanup(). rp_mgmt_bridge_free() may be called
 * only when no thread is inside rp_mgmt_bridge_call() any more.
 */
#ifndef RP_MGMT_BRIDGE_H
#define RP_MGMT_BRIDGE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_mgmt_http.h"
#include "rp_status.h"

typedef struct rp_mgmt_response {
    long http_status;   /* 0 when no response arrived */
    char *body;         /* heap, NUL-terminated; NULL when no response */
    size_t body_len;
    char error[384];    /* scrubbed reason of a failure; "" on RP_OK */
} rp_mgmt_response;

void rp_mgmt_response_init(rp_mgmt_response *r);
void rp_mgmt_response_cleanup(rp_mgmt_response *r);

typedef struct rp_mgmt_bridge rp_mgmt_bridge;

/* NULL when allocation fails (http is freed then too). */
rp_mgmt_bridge *rp_mgmt_bridge_new(struct event_base *base, rp_mgmt_http *http);

/* Runs one request on the loop and waits for it. *out is initialised here
 * and holds the answer on RP_OK (any HTTP status); clean it up whatever
 * the call returns. Returns the rp_mgmt_http_result status (RP_OK,
 * RP_ERR_UNAVAILABLE, RP_ERR_TIMEOUT, RP_ERR_TOO_LARGE...), or
 * RP_ERR_CLOSED when the bridge is (or gets) closed, RP_ERR_TIMEOUT when the
 * loop did not answer within timeout_ms plus a margin, RP_ERR_INVALID from
 * the loop thread or for bad arguments, RP_ERR_NOMEM. */
rp_status rp_mgmt_bridge_call(rp_mgmt_bridge *b, rp_http_method method, const char *path,
                              const char *body, size_t body_len, long timeout_ms,
                              rp_mgmt_response *out) RP_MUSTCHECK;

/* The same with one extra request header (rp_mgmt_http_request_with). */
rp_status rp_mgmt_bridge_call_with(rp_mgmt_bridge *b, rp_http_method method, const char *path,
                                   const char *body, size_t body_len, const char *header,
                                   long timeout_ms, rp_mgmt_response *out) RP_MUSTCHECK;

/* Scrubs buf with the client's password (rp_mgmt_http_scrub). Any thread. */
char *rp_mgmt_bridge_scrub(const rp_mgmt_bridge *b, char *buf, size_t cap);

/* Requests of this method the bridge has started on the loop. Any thread. */
unsigned long rp_mgmt_bridge_count(rp_mgmt_bridge *b, rp_http_method method);

/* Refuses further calls and releases waiting callers. Idempotent. */
void rp_mgmt_bridge_close(rp_mgmt_bridge *b);

/* Closes, then frees the HTTP client (requests in flight end) and the
 * bridge. */
void rp_mgmt_bridge_free(rp_mgmt_bridge *b);

#endif
