/*
 * http_client.h - the HTTP client of the HTTP adapter's unit tests
 * (test_http, test_http_console): one request over a fresh TCP connection
 * to 127.0.0.1, HTTP/1.0, the whole answer read until the server closes.
 *
 * Ownership: the answer goes into the caller's buffer; nothing is kept.
 */
#ifndef RP_TEST_HTTP_CLIENT_H
#define RP_TEST_HTTP_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_http.h"

struct event_base;

/* An rp_http on base listening on 127.0.0.1 (a free port) with metrics and
 * hooks; fails the test, saying why, when it cannot be made. */
rp_http *http_client_server(struct event_base *base, rp_metrics *metrics,
                            const rp_http_hooks *hooks);
/* Runs event_base_dispatch(base) on a thread of its own (*thread). */
void http_client_loop_start(struct event_base *base, pthread_t *thread);
/* Breaks base's loop and joins its thread. */
void http_client_loop_stop(struct event_base *base, pthread_t thread);

/* The port an rp_http listens on (from rp_http_bound). */
unsigned http_client_port(const rp_http *h);
/* Sends "METHOD PATH HTTP/1.0", Host, then headers (NULL: none; each line
 * ending \r\n), a Content-Length of body when with_length (0 for NULL),
 * and body; reads the whole answer into buf (cap bytes, NUL-terminated;
 * 5 s of silence ends it). Returns the status code, -1 when nothing
 * answered (no connection, or no status line). */
int http_client_request(unsigned port, const char *method, const char *path, const char *headers,
                        const char *body, bool with_length, char *buf, size_t cap);
/* The body of an answer (after the blank line), "" when none. */
const char *http_client_body(const char *answer);

#endif
