#include "rp_mgmt_bridge.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How much longer than its own time-out a caller waits for the loop: the
 * HTTP time-out normally ends the request first. */
#define RP_BRIDGE_MARGIN_MS 2000L

/* One call between a caller and the loop. Until `taken` it is on the queue
 * and the caller may unlink and free it; once taken the loop owns it until
 * the HTTP callback, which either hands the answer to a waiting caller
 * (done) or, when the caller has left (abandoned), frees it. */
typedef struct rp_bridge_call {
    struct rp_mgmt_bridge *b;
    rp_http_method method;
    char *path;
    char *body;
    size_t body_len;
    char *header; /* one extra request header, or NULL */
    long timeout_ms;
    bool taken, done, abandoned;
    rp_status status;
    rp_mgmt_response resp;
    struct rp_bridge_call *next;
} rp_bridge_call;

struct rp_mgmt_bridge {
    struct event_base *base;
    rp_mgmt_http *http;
    struct event *post_ev;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    rp_bridge_call *head, *tail; /* posted, not yet taken by the loop */
    bool closed;
    bool loop_known;
    pthread_t loop_thread;
    unsigned long counts[RP_HTTP_METHOD_COUNT_]; /* under mu */
};

void rp_mgmt_response_init(rp_mgmt_response *r) { memset(r, 0, sizeof *r); }

void rp_mgmt_response_cleanup(rp_mgmt_response *r) {
    if (r == NULL) return;
    free(r->body);
    memset(r, 0, sizeof *r);
}

static void rp_call_free(rp_bridge_call *c) {
    if (c == NULL) return;
    free(c->path);
    free(c->body);
    free(c->header);
    rp_mgmt_response_cleanup(&c->resp);
    free(c);
}

/* ---- the loop side ------------------------------------------------------------ */

/* Finishes a taken call, under the lock: to its caller, or freed when the
 * caller has left. */
static void rp_call_complete_locked(rp_mgmt_bridge *b, rp_bridge_call *c) {
    if (c->abandoned) {
        rp_call_free(c);
        return;
    }
    c->done = true;
    pthread_cond_broadcast(&b->cv);
}

static void rp_bridge_on_http(void *arg, rp_mgmt_http_result *r) {
    rp_bridge_call *c = arg;
    rp_mgmt_bridge *b = c->b;
    pthread_mutex_lock(&b->mu);
    c->status = r->status;
    c->resp.http_status = r->http_status;
    if (r->status == RP_OK) {
        c->resp.body = r->body; /* taken from the result */
        c->resp.body_len = r->body_len;
        r->body = NULL;
    } else {
        snprintf(c->resp.error, sizeof c->resp.error, "%s", r->error ? r->error : "");
    }
    rp_call_complete_locked(b, c);
    pthread_mutex_unlock(&b->mu);
}

/* The loop's side of a post: takes every queued call and starts it. */
static void rp_bridge_on_post(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_mgmt_bridge *b = arg;
    pthread_mutex_lock(&b->mu);
    b->loop_thread = pthread_self();
    b->loop_known = true;
    rp_bridge_call *list = b->head;
    b->head = b->tail = NULL;
    for (rp_bridge_call *c = list; c; c = c->next) c->taken = true;
    pthread_mutex_unlock(&b->mu);
    while (list) {
        rp_bridge_call *c = list;
        list = c->next;
        c->next = NULL;
        rp_status st = rp_mgmt_http_request_with(b->http, c->method, c->path, c->body,
                                                 c->body_len, c->header, c->timeout_ms,
                                                 rp_bridge_on_http, c);
        pthread_mutex_lock(&b->mu);
        if (st == RP_OK) {
            b->counts[c->method]++;
        } else {
            /* Refused at once: the HTTP callback will never run for it. */
            c->status = st;
            snprintf(c->resp.error, sizeof c->resp.error, "%s %s: %s",
                     rp_http_method_string(c->method), c->path,
                     st == RP_ERR_CLOSED ? "the HTTP client is closing" : rp_status_string(st));
            rp_mgmt_http_scrub(b->http, c->resp.error, sizeof c->resp.error);
            rp_call_complete_locked(b, c);
        }
        pthread_mutex_unlock(&b->mu);
    }
}

rp_mgmt_bridge *rp_mgmt_bridge_new(struct event_base *base, rp_mgmt_http *http) {
    rp_mgmt_bridge *b = calloc(1, sizeof *b);
    if (b == NULL || base == NULL || http == NULL) {
        free(b);
        rp_mgmt_http_free(http);
        return NULL;
    }
    b->base = base;
    b->http = http;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, &ca);
    pthread_condattr_destroy(&ca);
    b->post_ev = event_new(base, -1, 0, rp_bridge_on_post, b);
    if (b->post_ev == NULL) {
        rp_mgmt_bridge_free(b);
        return NULL;
    }
    return b;
}

/* ---- the caller side ---------------------------------------------------------- */

static void rp_deadline(struct timespec *ts, long ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Takes a call that is still queued (not taken) off the queue. */
static void rp_unqueue_locked(rp_mgmt_bridge *b, rp_bridge_call *c) {
    rp_bridge_call *prev = NULL;
    for (rp_bridge_call *it = b->head; it; prev = it, it = it->next) {
        if (it != c) continue;
        if (prev) prev->next = it->next;
        else b->head = it->next;
        if (b->tail == it) b->tail = prev;
        it->next = NULL;
        return;
    }
}

rp_status rp_mgmt_bridge_call(rp_mgmt_bridge *b, rp_http_method method, const char *path,
                              const char *body, size_t body_len, long timeout_ms,
                              rp_mgmt_response *out) {
    return rp_mgmt_bridge_call_with(b, method, path, body, body_len, NULL, timeout_ms, out);
}

rp_status rp_mgmt_bridge_call_with(rp_mgmt_bridge *b, rp_http_method method, const char *path,
                                   const char *body, size_t body_len, const char *header,
                                   long timeout_ms, rp_mgmt_response *out) {
    if (out) rp_mgmt_response_init(out);
    if (b == NULL || out == NULL || path == NULL || path[0] != '/' || timeout_ms <= 0 ||
        (int)method < 0 || method >= RP_HTTP_METHOD_COUNT_ || (body == NULL && body_len != 0))
        return RP_ERR_INVALID;
    rp_bridge_call *c = calloc(1, sizeof *c);
    if (c == NULL) return RP_ERR_NOMEM;
    c->b = b;
    c->method = method;
    c->timeout_ms = timeout_ms;
    c->path = strdup(path);
    if (body) {
        c->body = malloc(body_len + 1);
        if (c->body) {
            memcpy(c->body, body, body_len);
            c->body[body_len] = '\0';
        }
        c->body_len = body_len;
    }
    if (header) c->header = strdup(header);
    if (c->path == NULL || (body && c->body == NULL) || (header && c->header == NULL)) {
        rp_call_free(c);
        return RP_ERR_NOMEM;
    }

    pthread_mutex_lock(&b->mu);
    if (b->loop_known && pthread_equal(b->loop_thread, pthread_self())) {
        pthread_mutex_unlock(&b->mu);
        rp_call_free(c);
        snprintf(out->error, sizeof out->error, "the loop thread cannot wait for itself");
        return RP_ERR_INVALID;
    }
    if (b->closed) {
        pthread_mutex_unlock(&b->mu);
        rp_call_free(c);
        snprintf(out->error, sizeof out->error, "%s %s: the management client is closed",
                 rp_http_method_string(method), path);
        return RP_ERR_CLOSED;
    }
    if (b->tail) b->tail->next = c;
    else b->head = c;
    b->tail = c;
    pthread_mutex_unlock(&b->mu);
    event_active(b->post_ev, 0, 0);

    struct timespec until;
    rp_deadline(&until, timeout_ms + RP_BRIDGE_MARGIN_MS);
    pthread_mutex_lock(&b->mu);
    bool timed_out = false;
    while (!c->done && !b->closed && !timed_out) {
        int rc = pthread_cond_timedwait(&b->cv, &b->mu, &until);
        if (rc == ETIMEDOUT) timed_out = true;
    }
    rp_status st;
    if (c->done) {
        st = c->status;
        *out = c->resp;
        memset(&c->resp, 0, sizeof c->resp);
        rp_call_free(c);
    } else {
        st = b->closed ? RP_ERR_CLOSED : RP_ERR_TIMEOUT;
        snprintf(out->error, sizeof out->error, "%s %s: %s", rp_http_method_string(method), path,
                 b->closed ? "the management client was closed while waiting"
                           : "the event loop did not answer in time");
        if (c->taken) {
            c->abandoned = true; /* the loop frees it when the request ends */
        } else {
            rp_unqueue_locked(b, c);
            rp_call_free(c);
        }
    }
    pthread_mutex_unlock(&b->mu);
    rp_mgmt_bridge_scrub(b, out->error, sizeof out->error);
    return st;
}

char *rp_mgmt_bridge_scrub(const rp_mgmt_bridge *b, char *buf, size_t cap) {
    return rp_mgmt_http_scrub(b ? b->http : NULL, buf, cap);
}

unsigned long rp_mgmt_bridge_count(rp_mgmt_bridge *b, rp_http_method method) {
    if (b == NULL || (int)method < 0 || method >= RP_HTTP_METHOD_COUNT_) return 0;
    pthread_mutex_lock(&b->mu);
    unsigned long n = b->counts[method];
    pthread_mutex_unlock(&b->mu);
    return n;
}

void rp_mgmt_bridge_close(rp_mgmt_bridge *b) {
    if (b == NULL) return;
    pthread_mutex_lock(&b->mu);
    b->closed = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void rp_mgmt_bridge_free(rp_mgmt_bridge *b) {
    if (b == NULL) return;
    rp_mgmt_bridge_close(b);
    /* No caller is left (the rule of rp_mgmt_bridge_free), so whatever is
     * still queued was abandoned: free it. */
    pthread_mutex_lock(&b->mu);
    rp_bridge_call *list = b->head;
    b->head = b->tail = NULL;
    pthread_mutex_unlock(&b->mu);
    while (list) {
        rp_bridge_call *next = list->next;
        rp_call_free(list);
        list = next;
    }
    /* Requests in flight end with RP_ERR_CLOSED; their calls are abandoned
     * and freed by rp_bridge_on_http. */
    rp_mgmt_http_free(b->http);
    if (b->post_ev) event_free(b->post_ev);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}
