/*
 * rp_mgmt_http.h - an HTTP client for the RabbitMQ management API that runs
 * on a libevent loop through libcurl's multi SOCKET interface: curl tells us
 * which sockets to watch (one event per socket) and when to wake it (one
 * timer), and every transfer advances only inside curl_multi_socket_action
 * called from those events. No call here ever blocks the loop thread.
 *
 * Requests are GET, PUT or DELETE with an optional JSON body, each with its
 * own time-out, a bounded response (a body over max_response_bytes is
 * refused and the request fails with RP_ERR_TOO_LARGE), basic auth given to
 * curl as CURLOPT_USERNAME/CURLOPT_PASSWORD (never inside the URL), the
 * broker.tls options, and no redirects (so the credentials never travel to
 * another host).
 *
 * CALLBACKS. rp_mgmt_http_request() either returns an error (and the
 * callback is never called) or returns RP_OK and the callback is called
 * exactly once, later, from the loop: with the response, with a failure, or
 * with RP_ERR_CLOSED when the client is freed first. A callback may start
 * new requests; it must not call rp_mgmt_http_free().
 *
 * ERRORS. Every error text this client makes is scrubbed: it never holds the
 * password (an occurrence is replaced by "********") nor an Authorization
 * header, and the base URL is refused at creation when it carries user
 * information, so no URL can leak one either.
 *
 * Threads: every function is for the loop thread only, except
 * rp_mgmt_http_scrub() and rp_mgmt_http_method_string(), which are pure. The
 * client makes no thread of its own.
 *
 * Ownership: rp_mgmt_http_new() copies the params (the password is wiped
 * when freed). A request copies its path and body. A result is lent to the
 * callback for the call; the callback may take the body (set r->body to NULL
 * after keeping the pointer; it is then the callback's to free()).
 */
#ifndef RP_MGMT_HTTP_H
#define RP_MGMT_HTTP_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_status.h"

/* The largest response body accepted unless the params say otherwise. */
#define RP_MGMT_HTTP_DEFAULT_MAX_RESPONSE ((size_t)16 * 1024 * 1024)

typedef enum rp_http_method {
    RP_HTTP_GET = 0,
    RP_HTTP_PUT,
    RP_HTTP_DELETE,
    RP_HTTP_POST, /* the tap's bindings (rp_mgmt_dlx.c) */
    RP_HTTP_METHOD_COUNT_
} rp_http_method;

/* "GET", "PUT", "DELETE", "POST"; "?" outside the enum. Static. */
const char *rp_http_method_string(rp_http_method m);

typedef struct rp_mgmt_http_params {
    const char *base_url;   /* http[s]://host:port[/prefix], no user information; or a host
                               list http://h1:p1,h2:p2[/prefix] (rp_hostlist.h), tried in turn */
    const char *user;       /* NULL or "": no authentication */
    const char *password;   /* may be NULL */
    const char *ca_file, *cert_file, *key_file; /* TLS; NULL or "": unset */
    bool verify_peer;       /* also verifies the host name */
    size_t max_response_bytes; /* 0: RP_MGMT_HTTP_DEFAULT_MAX_RESPONSE */
    long connect_timeout_ms;   /* 0: 5000 */
} rp_mgmt_http_params;

typedef struct rp_mgmt_http_result {
    /* RP_OK: an HTTP response arrived (whatever its status code).
     * RP_ERR_UNAVAILABLE: no connection, TLS failure, connection lost...
     * RP_ERR_TIMEOUT: the request's time-out passed.
     * RP_ERR_TOO_LARGE: the body was over the limit (refused).
     * RP_ERR_CLOSED: the client was freed first.
     * RP_ERR_INTERNAL: an unexpected libcurl failure. */
    rp_status status;
    long http_status;   /* 0 without a response */
    char *body;         /* NUL-terminated (body_len bytes before it); never NULL on RP_OK */
    size_t body_len;
    const char *error;  /* scrubbed, "method path: reason"; "" on RP_OK */
} rp_mgmt_http_result;

typedef void (*rp_mgmt_http_cb)(void *arg, rp_mgmt_http_result *r);

typedef struct rp_mgmt_http rp_mgmt_http;

/* Returns NULL with *err set to a static reason (it never quotes the URL)
 * when the base URL is not http(s)://, carries user information, or
 * allocation or libcurl set-up fails. */
rp_mgmt_http *rp_mgmt_http_new(struct event_base *base, const rp_mgmt_http_params *params,
                               const char **err);

/* Starts one request: method, path (from the root of the base URL, e.g.
 * "/api/overview", already URL-encoded), an optional body of body_len bytes
 * (sent as application/json; NULL for none) and a time-out for the whole
 * exchange (timeout_ms > 0). RP_ERR_INVALID for bad arguments, RP_ERR_NOMEM,
 * RP_ERR_INTERNAL when libcurl refuses the handle, RP_ERR_CLOSED while the
 * client is being freed; then cb is never called. */
rp_status rp_mgmt_http_request(rp_mgmt_http *h, rp_http_method method, const char *path,
                               const char *body, size_t body_len, long timeout_ms,
                               rp_mgmt_http_cb cb, void *arg) RP_MUSTCHECK;

/* The same with one extra request header ("Name: value", e.g. the
 * management API's "X-Reason: ..." on a DELETE of a connection); NULL: none.
 * RP_ERR_INVALID for a header that is not one line of that shape. */
rp_status rp_mgmt_http_request_with(rp_mgmt_http *h, rp_http_method method, const char *path,
                                    const char *body, size_t body_len, const char *header,
                                    long timeout_ms, rp_mgmt_http_cb cb, void *arg) RP_MUSTCHECK;

/* Requests started so far with this method (tests count writes with it). */
unsigned long rp_mgmt_http_count(const rp_mgmt_http *h, rp_http_method method);
/* Requests in flight. */
size_t rp_mgmt_http_pending(const rp_mgmt_http *h);

/* Replaces every occurrence of the client's password in buf (in place,
 * NUL-terminated, cut to cap) with "********". Safe from any thread (the
 * password is fixed once made). Returns buf. */
char *rp_mgmt_http_scrub(const rp_mgmt_http *h, char *buf, size_t cap);

/* Fails every request still in flight with RP_ERR_CLOSED (their callbacks
 * run now, on this thread), then frees the client. Not from a callback. */
void rp_mgmt_http_free(rp_mgmt_http *h);

#endif
