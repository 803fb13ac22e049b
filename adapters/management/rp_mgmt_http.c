#include "rp_mgmt_http.h"
#include "rp_hostlist.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RP_HTTP_DEFAULT_CONNECT_TIMEOUT_MS 5000L
#define RP_HTTP_MASK "********"

/* One socket curl asked us to watch, with its one event. A socket curl is
 * done with is not freed inside curl's callback (which runs inside
 * curl_multi_socket_action, possibly from that very socket's event): it is
 * parked on the graveyard and freed once the action returns. */
typedef struct rp_http_sock {
    struct rp_mgmt_http *h;
    curl_socket_t fd;
    struct event *ev;
    struct rp_http_sock *next_dead;
} rp_http_sock;

typedef struct rp_http_req {
    struct rp_mgmt_http *h;
    CURL *easy;
    struct curl_slist *headers;
    rp_http_method method;
    char *path;          /* for error texts */
    size_t host;         /* the index in the host list this attempt went to */
    size_t tries;        /* hosts tried after the first (a host list) */
    char *body;          /* the request body (curl reads it from here) */
    char *data;          /* the response, NUL-terminated */
    size_t len, cap;
    bool too_large;
    char errbuf[CURL_ERROR_SIZE];
    rp_mgmt_http_cb cb;
    void *arg;
    struct rp_http_req *prev, *next;
} rp_http_req;

struct rp_mgmt_http {
    struct event_base *base;
    CURLM *multi;
    struct event *timer_ev;
    char *base_url; /* as given, without a trailing slash */
    /* base_url's host list (rp_hostlist.h), one base URL per host; a
     * request goes to hosts[cur] and, when that host cannot be reached,
     * to the next ones in turn; cur then follows the host that answered. */
    char *hosts[RP_HOSTLIST_MAX];
    size_t n_hosts, cur;
    char *user, *password;
    char *ca_file, *cert_file, *key_file;
    bool verify_peer;
    size_t max_response;
    long connect_timeout_ms;
    rp_http_req *reqs; /* in flight */
    size_t n_reqs;
    rp_http_sock *graveyard;
    bool in_callback;
    bool closing; /* being freed: no new request */
    unsigned long counts[RP_HTTP_METHOD_COUNT_];
};

static const char *const rp_method_names[RP_HTTP_METHOD_COUNT_] = {"GET", "PUT", "DELETE", "POST"};

const char *rp_http_method_string(rp_http_method m) {
    if ((int)m < 0 || m >= RP_HTTP_METHOD_COUNT_) return "?";
    return rp_method_names[m];
}

/* ---- set-up ---------------------------------------------------------------- */

static pthread_once_t rp_curl_once = PTHREAD_ONCE_INIT;
static CURLcode rp_curl_init_rc = CURLE_FAILED_INIT;

static void rp_curl_global_init(void) { rp_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static char *rp_dup_or_null(const char *s) { return (s && *s) ? strdup(s) : NULL; }

static void rp_wipe_free(char *s) {
    if (s == NULL) return;
    volatile char *p = s;
    while (*p) *p++ = '\0';
    free(s);
}

/* A base URL is http:// or https://, then an authority without '@'. */
static const char *rp_check_base_url(const char *url) {
    if (url == NULL || *url == '\0') return "the management URL is empty";
    const char *rest;
    if (strncmp(url, "http://", 7) == 0) rest = url + 7;
    else if (strncmp(url, "https://", 8) == 0) rest = url + 8;
    else return "the management URL must start with http:// or https://";
    size_t auth = strcspn(rest, "/?#");
    if (auth == 0) return "the management URL names no host";
    if (memchr(rest, '@', auth) != NULL)
        return "the management URL must not carry user information (the user and password "
               "are given apart)";
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) return "the management URL holds a space or control character";
    return NULL;
}

static void rp_http_on_timer(evutil_socket_t fd, short what, void *arg);
static int rp_http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp);
static int rp_http_timer_cb(CURLM *multi, long timeout_ms, void *userp);

rp_mgmt_http *rp_mgmt_http_new(struct event_base *base, const rp_mgmt_http_params *p,
                               const char **err) {
    static const char *dummy;
    if (err == NULL) err = &dummy;
    if (base == NULL || p == NULL) {
        *err = "no event loop or parameters";
        return NULL;
    }
    const char *bad = rp_check_base_url(p->base_url);
    if (bad) {
        *err = bad;
        return NULL;
    }
    pthread_once(&rp_curl_once, rp_curl_global_init);
    if (rp_curl_init_rc != CURLE_OK) {
        *err = "libcurl could not be initialised";
        return NULL;
    }
    rp_mgmt_http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        *err = "out of memory";
        return NULL;
    }
    h->base = base;
    h->base_url = strdup(p->base_url);
    h->user = rp_dup_or_null(p->user);
    h->password = strdup(p->password ? p->password : "");
    h->ca_file = rp_dup_or_null(p->ca_file);
    h->cert_file = rp_dup_or_null(p->cert_file);
    h->key_file = rp_dup_or_null(p->key_file);
    h->verify_peer = p->verify_peer;
    h->max_response = p->max_response_bytes ? p->max_response_bytes : RP_MGMT_HTTP_DEFAULT_MAX_RESPONSE;
    h->connect_timeout_ms = p->connect_timeout_ms > 0 ? p->connect_timeout_ms
                                                      : RP_HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
    h->multi = curl_multi_init();
    h->timer_ev = evtimer_new(base, rp_http_on_timer, h);
    if (h->base_url == NULL || h->password == NULL || (p->user && *p->user && !h->user) ||
        (p->ca_file && *p->ca_file && !h->ca_file) || (p->cert_file && *p->cert_file && !h->cert_file) ||
        (p->key_file && *p->key_file && !h->key_file) || h->multi == NULL || h->timer_ev == NULL) {
        *err = "out of memory";
        rp_mgmt_http_free(h);
        return NULL;
    }
    size_t n = strlen(h->base_url);
    while (n > 0 && h->base_url[n - 1] == '/') h->base_url[--n] = '\0';
    size_t count = rp_hostlist_count(h->base_url);
    if (count > RP_HOSTLIST_MAX) {
        *err = "the management URL names more than 16 hosts";
        rp_mgmt_http_free(h);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        h->hosts[i] = malloc(n + 1);
        if (h->hosts[i] == NULL) {
            *err = "out of memory";
            rp_mgmt_http_free(h);
            return NULL;
        }
        h->n_hosts = i + 1;
        if (!rp_hostlist_pick(h->base_url, i, h->hosts[i], n + 1) ||
            rp_check_base_url(h->hosts[i]) != NULL || strchr(h->hosts[i], ',') != NULL) {
            *err = "the management URL has an empty host in its host list";
            rp_mgmt_http_free(h);
            return NULL;
        }
    }
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, rp_http_socket_cb);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, rp_http_timer_cb);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    return h;
}

unsigned long rp_mgmt_http_count(const rp_mgmt_http *h, rp_http_method method) {
    if ((int)method < 0 || method >= RP_HTTP_METHOD_COUNT_) return 0;
    return h->counts[method];
}

size_t rp_mgmt_http_pending(const rp_mgmt_http *h) { return h->n_reqs; }

char *rp_mgmt_http_scrub(const rp_mgmt_http *h, char *buf, size_t cap) {
    if (buf == NULL || cap == 0) return buf;
    buf[cap - 1] = '\0';
    if (h == NULL || h->password == NULL || h->password[0] == '\0') return buf;
    size_t plen = strlen(h->password), mlen = strlen(RP_HTTP_MASK);
    char *at = buf;
    while ((at = strstr(at, h->password)) != NULL) {
        size_t tail = strlen(at + plen);
        size_t keep = (size_t)(at - buf) + mlen;
        if (keep >= cap) { /* no room even for the mask: cut here */
            *at = '\0';
            break;
        }
        if (keep + tail >= cap) tail = cap - 1 - keep;
        memmove(at + mlen, at + plen, tail);
        at[mlen + tail] = '\0';
        memcpy(at, RP_HTTP_MASK, mlen);
        at += mlen;
    }
    return buf;
}

/* ---- the loop side ---------------------------------------------------------- */

static void rp_http_bury_dead(rp_mgmt_http *h) {
    while (h->graveyard) {
        rp_http_sock *s = h->graveyard;
        h->graveyard = s->next_dead;
        event_free(s->ev);
        free(s);
    }
}

static void rp_http_unlink(rp_mgmt_http *h, rp_http_req *r) {
    if (r->prev) r->prev->next = r->next;
    else h->reqs = r->next;
    if (r->next) r->next->prev = r->prev;
    r->prev = r->next = NULL;
    h->n_reqs--;
}

static void rp_http_req_free(rp_http_req *r) {
    if (r == NULL) return;
    if (r->easy) curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    free(r->path);
    free(r->body);
    free(r->data);
    free(r);
}

static rp_status rp_http_map_curl(CURLcode rc) {
    switch (rc) {
    case CURLE_OK:
        return RP_OK;
    case CURLE_OPERATION_TIMEDOUT:
        return RP_ERR_TIMEOUT;
    case CURLE_FILESIZE_EXCEEDED:
        return RP_ERR_TOO_LARGE;
    case CURLE_OUT_OF_MEMORY:
        return RP_ERR_NOMEM;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return RP_ERR_UNAVAILABLE;
    default:
        return RP_ERR_INTERNAL;
    }
}

/* Calls the request's callback once and frees it. The request is already
 * out of the multi handle and the list. */
static void rp_http_finish(rp_mgmt_http *h, rp_http_req *r, rp_status st, long http_status,
                           const char *reason) {
    char err[512] = "";
    if (st != RP_OK) {
        snprintf(err, sizeof err, "%s %s: %s", rp_http_method_string(r->method), r->path,
                 reason && *reason ? reason : rp_status_string(st));
        rp_mgmt_http_scrub(h, err, sizeof err);
    }
    rp_mgmt_http_result res = {
        .status = st,
        .http_status = st == RP_OK ? http_status : 0,
        .body = NULL,
        .body_len = 0,
        .error = err,
    };
    if (st == RP_OK) {
        if (r->data == NULL) r->data = calloc(1, 1);
        if (r->data == NULL) {
            res.status = RP_ERR_NOMEM;
            res.http_status = 0;
            snprintf(err, sizeof err, "%s %s: out of memory", rp_http_method_string(r->method),
                     r->path);
            rp_mgmt_http_scrub(h, err, sizeof err);
        } else {
            res.body = r->data;
            res.body_len = r->len;
        }
    }
    bool was = h->in_callback;
    h->in_callback = true;
    r->cb(r->arg, &res);
    h->in_callback = was;
    if (res.status == RP_OK && res.body == NULL) r->data = NULL; /* the callback took it */
    rp_http_req_free(r);
}

/* With a host list: a request whose host could not be reached goes again
 * to the next host of the list, each host once. Only when the request
 * cannot have reached the broker (no connection was made), or for a GET,
 * which is safe to repeat. True: sent again (it is back in the list). */
static bool rp_http_next_host(rp_mgmt_http *h, rp_http_req *r, CURLcode rc) {
    if (h->n_hosts <= 1 || h->closing || r->too_large || r->tries + 1 >= h->n_hosts) return false;
    curl_off_t connected = 0;
    curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME_T, &connected);
    bool unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
                  (rc == CURLE_OPERATION_TIMEDOUT && connected == 0);
    bool safe = r->method == RP_HTTP_GET && rp_http_map_curl(rc) == RP_ERR_UNAVAILABLE;
    if (!unsent && !safe) return false;
    size_t next = (r->host + 1) % h->n_hosts;
    size_t ulen = strlen(h->hosts[next]) + strlen(r->path) + 1;
    char *url = malloc(ulen);
    if (url == NULL) return false;
    snprintf(url, ulen, "%s%s", h->hosts[next], r->path);
    bool ok = curl_easy_setopt(r->easy, CURLOPT_URL, url) == CURLE_OK;
    free(url);
    if (!ok) return false;
    r->tries++;
    r->host = next;
    h->cur = next;
    r->len = 0;
    if (r->data) r->data[0] = '\0';
    r->errbuf[0] = '\0';
    r->next = h->reqs;
    r->prev = NULL;
    if (h->reqs) h->reqs->prev = r;
    h->reqs = r;
    h->n_reqs++;
    if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK) {
        rp_http_unlink(h, r);
        return false;
    }
    return true;
}

static void rp_http_check_done(rp_mgmt_http *h) {
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *easy = msg->easy_handle;
        CURLcode rc = msg->data.result;
        rp_http_req *r = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(h->multi, easy);
        if (r == NULL) continue;
        rp_http_unlink(h, r);
        if (rp_http_next_host(h, r, rc)) continue;
        if (rc == CURLE_OK && h->n_hosts > 1) h->cur = r->host; /* it answered: stay */
        long code = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        rp_status st = rp_http_map_curl(rc);
        char reason[CURL_ERROR_SIZE + 64];
        if (r->too_large) {
            st = RP_ERR_TOO_LARGE;
            snprintf(reason, sizeof reason, "the response is larger than %zu bytes: refused",
                     h->max_response);
        } else if (rc == CURLE_FILESIZE_EXCEEDED) {
            snprintf(reason, sizeof reason, "the response is larger than %zu bytes: refused",
                     h->max_response);
        } else if (rc != CURLE_OK) {
            snprintf(reason, sizeof reason, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
        } else {
            reason[0] = '\0';
        }
        rp_http_finish(h, r, st, code, reason);
    }
}

/* After every curl_multi_socket_action: hand out finished transfers, then
 * free the sockets curl let go of during the action. */
static void rp_http_after_action(rp_mgmt_http *h) {
    rp_http_check_done(h);
    rp_http_bury_dead(h);
}

static void rp_http_on_socket(evutil_socket_t fd, short what, void *arg) {
    rp_http_sock *s = arg;
    rp_mgmt_http *h = s->h;
    int flags = 0;
    if (what & EV_READ) flags |= CURL_CSELECT_IN;
    if (what & EV_WRITE) flags |= CURL_CSELECT_OUT;
    int running = 0;
    curl_multi_socket_action(h->multi, (curl_socket_t)fd, flags, &running);
    rp_http_after_action(h);
}

static void rp_http_on_timer(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_mgmt_http *h = arg;
    int running = 0;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    rp_http_after_action(h);
}

/* CURLMOPT_SOCKETFUNCTION: watch s as curl says, one event per socket. */
static int rp_http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp) {
    RP_UNUSED(easy);
    rp_mgmt_http *h = userp;
    rp_http_sock *sock = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (sock) {
            event_del(sock->ev);
            curl_multi_assign(h->multi, s, NULL);
            sock->next_dead = h->graveyard;
            h->graveyard = sock;
        }
        return 0;
    }
    if (sock == NULL) {
        sock = calloc(1, sizeof *sock);
        if (sock == NULL) return -1;
        sock->h = h;
        sock->fd = s;
        sock->ev = event_new(h->base, s, 0, rp_http_on_socket, sock);
        if (sock->ev == NULL) {
            free(sock);
            return -1;
        }
        curl_multi_assign(h->multi, s, sock);
    }
    short flags = EV_PERSIST;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) flags |= EV_READ;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) flags |= EV_WRITE;
    event_del(sock->ev);
    if (event_assign(sock->ev, h->base, s, flags, rp_http_on_socket, sock) != 0 ||
        event_add(sock->ev, NULL) != 0)
        return -1;
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: one timer, re-armed as curl says (-1: stop). A
 * zero time-out fires on the next loop turn, never inside this call. */
static int rp_http_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
    RP_UNUSED(multi);
    rp_mgmt_http *h = userp;
    if (timeout_ms < 0) {
        evtimer_del(h->timer_ev);
        return 0;
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    return evtimer_add(h->timer_ev, &tv) == 0 ? 0 : -1;
}

static size_t rp_http_on_data(char *ptr, size_t size, size_t nmemb, void *userdata) {
    rp_http_req *r = userdata;
    size_t n = size * nmemb;
    size_t max = r->h->max_response;
    if (r->too_large || n > max - r->len) {
        r->too_large = true;
        return 0; /* refuse: curl fails the transfer with CURLE_WRITE_ERROR */
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 16384;
        while (cap < r->len + n + 1) cap *= 2;
        if (cap > max + 1) cap = max + 1;
        char *d = realloc(r->data, cap);
        if (d == NULL) return 0;
        r->data = d;
        r->cap = cap;
    }
    memcpy(r->data + r->len, ptr, n);
    r->len += n;
    r->data[r->len] = '\0';
    return n;
}

static bool rp_setopt_ok(CURLcode rc) { return rc == CURLE_OK; }

rp_status rp_mgmt_http_request(rp_mgmt_http *h, rp_http_method method, const char *path,
                               const char *body, size_t body_len, long timeout_ms,
                               rp_mgmt_http_cb cb, void *arg) {
    return rp_mgmt_http_request_with(h, method, path, body, body_len, NULL, timeout_ms, cb, arg);
}

/* Whether header is one "Name: value" line fit to send (no CR, LF or NUL
 * inside, a name of token characters). */
static bool rp_header_ok(const char *header) {
    const char *colon = strchr(header, ':');
    if (colon == NULL || colon == header) return false;
    for (const char *c = header; c < colon; c++)
        if (!(isalnum((unsigned char)*c) || *c == '-')) return false;
    for (const char *c = header; *c; c++)
        if (*c == '\r' || *c == '\n') return false;
    return true;
}

rp_status rp_mgmt_http_request_with(rp_mgmt_http *h, rp_http_method method, const char *path,
                                    const char *body, size_t body_len, const char *header,
                                    long timeout_ms, rp_mgmt_http_cb cb, void *arg) {
    if (h == NULL || path == NULL || path[0] != '/' || cb == NULL || timeout_ms <= 0 ||
        (int)method < 0 || method >= RP_HTTP_METHOD_COUNT_ || (body == NULL && body_len != 0) ||
        (header != NULL && !rp_header_ok(header)))
        return RP_ERR_INVALID;
    if (h->closing) return RP_ERR_CLOSED;
    rp_http_req *r = calloc(1, sizeof *r);
    if (r == NULL) return RP_ERR_NOMEM;
    r->h = h;
    r->method = method;
    r->cb = cb;
    r->arg = arg;
    r->path = strdup(path);
    r->host = h->cur;
    size_t ulen = strlen(h->base_url) + strlen(path) + 1;
    char *url = malloc(ulen);
    if (body) {
        r->body = malloc(body_len + 1);
        if (r->body) {
            memcpy(r->body, body, body_len);
            r->body[body_len] = '\0';
        }
    }
    r->easy = curl_easy_init();
    if (r->path == NULL || url == NULL || (body && r->body == NULL) || r->easy == NULL) {
        free(url);
        rp_http_req_free(r);
        return RP_ERR_NOMEM;
    }
    snprintf(url, ulen, "%s%s", h->n_hosts > 1 ? h->hosts[r->host] : h->base_url, path);
    /* JSON first; text/plain for the one endpoint that has nothing else
     * (/api/config/effective answers 406 to a JSON-only Accept). */
    r->headers = curl_slist_append(NULL, "Accept: application/json, text/plain;q=0.5");
    if (r->headers && body) {
        struct curl_slist *more = curl_slist_append(r->headers, "Content-Type: application/json");
        if (more) r->headers = more;
        else {
            curl_slist_free_all(r->headers);
            r->headers = NULL;
        }
    }
    if (r->headers) {
        struct curl_slist *more = curl_slist_append(r->headers, "Expect:");
        if (more) r->headers = more;
    }
    if (r->headers && header) {
        struct curl_slist *more = curl_slist_append(r->headers, header);
        if (more) r->headers = more;
        else {
            curl_slist_free_all(r->headers);
            r->headers = NULL;
        }
    }
    if (r->headers == NULL) {
        free(url);
        rp_http_req_free(r);
        return RP_ERR_NOMEM;
    }
    CURL *e = r->easy;
    bool ok = rp_setopt_ok(curl_easy_setopt(e, CURLOPT_URL, url));
    free(url); /* curl keeps its own copy */
#if LIBCURL_VERSION_NUM >= 0x075500
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https"));
#else
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)));
#endif
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                                             h->connect_timeout_ms < timeout_ms ? h->connect_timeout_ms
                                                                                : timeout_ms));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rp_http_on_data));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_WRITEDATA, r));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_response));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_USERAGENT, "reaper"));
    if (h->user) {
        ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC));
        ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_USERNAME, h->user));
        ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_PASSWORD, h->password));
    }
    if (h->ca_file) ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file));
    if (h->cert_file) ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_SSLCERT, h->cert_file));
    if (h->key_file) ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_SSLKEY, h->key_file));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, h->verify_peer ? 1L : 0L));
    ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, h->verify_peer ? 2L : 0L));
    switch (method) {
    case RP_HTTP_GET:
        ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_HTTPGET, 1L));
        break;
    case RP_HTTP_PUT:
    case RP_HTTP_DELETE:
    case RP_HTTP_POST:
        ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rp_http_method_string(method)));
        if (r->body) {
            ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len));
            ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body));
        } else if (method == RP_HTTP_PUT || method == RP_HTTP_POST) {
            ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0));
            ok = ok && rp_setopt_ok(curl_easy_setopt(e, CURLOPT_POSTFIELDS, ""));
        }
        break;
    default:
        ok = false;
        break;
    }
    if (!ok) {
        rp_http_req_free(r);
        return RP_ERR_INTERNAL;
    }
    /* Linked before the add: the add may call the timer callback (which
     * only arms the timer), never the request's callback. */
    r->next = h->reqs;
    if (h->reqs) h->reqs->prev = r;
    h->reqs = r;
    h->n_reqs++;
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
        rp_http_unlink(h, r);
        rp_http_req_free(r);
        return RP_ERR_INTERNAL;
    }
    h->counts[method]++;
    return RP_OK;
}

void rp_mgmt_http_free(rp_mgmt_http *h) {
    if (h == NULL) return;
    /* Freeing from one of our own callbacks would pull the request out from
     * under the code that called it. */
    if (h->in_callback) abort();
    h->closing = true;
    while (h->reqs) {
        rp_http_req *r = h->reqs;
        if (h->multi) curl_multi_remove_handle(h->multi, r->easy);
        rp_http_unlink(h, r);
        rp_http_finish(h, r, RP_ERR_CLOSED, 0, "the HTTP client was closed first");
    }
    if (h->multi) curl_multi_cleanup(h->multi);
    rp_http_bury_dead(h);
    if (h->timer_ev) event_free(h->timer_ev);
    free(h->base_url);
    for (size_t i = 0; i < h->n_hosts; i++) free(h->hosts[i]);
    free(h->user);
    rp_wipe_free(h->password);
    free(h->ca_file);
    free(h->cert_file);
    free(h->key_file);
    free(h);
}
