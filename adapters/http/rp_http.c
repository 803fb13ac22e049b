/* reaperd's HTTP endpoints on the loop (rp_http.h). */
#include "rp_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rp_http_console.h"
#include "rp_http_prom.h"
#include "rp_log.h"

/* A scrape is small and fast: a slow or idle client is cut off. */
#define RP_HTTP_TIMEOUT_S 10
#define RP_HTTP_MAX_HEADERS 8192
#define RP_HTTP_MAX_BODY 8192

struct rp_http {
    struct evhttp *http;
    rp_metrics *metrics;
    rp_http_hooks hooks;
    char bound[80];
};

static void rp_reply_text(struct evhttp_request *req, int code, const char *reason,
                          const char *ctype, const char *body, size_t len) {
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) evbuffer_add(b, body, len);
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

static void rp_on_request(struct evhttp_request *req, void *arg) {
    rp_http *h = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (path == NULL) path = "";
    if (rp_console_serves(h->hooks.console, path)) {
        rp_console_handle(h->hooks.console, req, path);
        return;
    }
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        /* Read only: a method other than GET and HEAD is refused with 405
         * and the methods that work (evhttp's own refusal says 501). */
        static const char na[] = "method not allowed; use GET or HEAD\n";
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        rp_reply_text(req, 405, "Method Not Allowed", "text/plain; charset=utf-8", na,
                      sizeof na - 1);
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        if (h->hooks.refresh) h->hooks.refresh(h->hooks.arg);
        char *text = NULL;
        size_t len = 0;
        if (rp_metrics_render(h->metrics, &text, &len) != RP_OK) {
            RP_ERROR("out of memory rendering /metrics", NULL);
            evhttp_send_error(req, HTTP_INTERNAL, NULL);
            return;
        }
        rp_reply_text(req, HTTP_OK, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len);
        free(text);
    } else if (strcmp(path, "/healthz") == 0) {
        rp_reply_text(req, HTTP_OK, "OK", "text/plain; charset=utf-8", "ok\n", 3);
    } else if (strcmp(path, "/readyz") == 0) {
        char why[160] = "";
        bool ready = h->hooks.ready == NULL || h->hooks.ready(h->hooks.arg, why, sizeof why);
        if (ready) {
            rp_reply_text(req, HTTP_OK, "OK", "text/plain; charset=utf-8", "ready\n", 6);
        } else {
            char body[200];
            int n = snprintf(body, sizeof body, "not ready: %s\n", why);
            if (n < 0) n = 0;
            if ((size_t)n >= sizeof body) n = (int)sizeof body - 1;
            rp_reply_text(req, 503, "Service Unavailable", "text/plain; charset=utf-8", body,
                          (size_t)n);
        }
    } else {
        static const char nf[] = "not found; try /metrics, /healthz or /readyz\n";
        rp_reply_text(req, HTTP_NOTFOUND, "Not Found", "text/plain; charset=utf-8", nf,
                      sizeof nf - 1);
    }
}

/* Splits host:port, [v6]:port or :port (the configuration checked the
 * shape; this checks again). host gets "" for :port. */
static bool rp_split_listen(const char *listen, char *host, size_t hcap, unsigned *port) {
    const char *p;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - listen - 1) >= hcap) return false;
        memcpy(host, listen + 1, (size_t)(close - listen - 1));
        host[close - listen - 1] = '\0';
        p = close + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (colon == NULL || (size_t)(colon - listen) >= hcap) return false;
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
        p = colon + 1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (*p == '\0' || *end != '\0' || errno != 0 || v > 65535) return false;
    *port = (unsigned)v;
    return true;
}

static void rp_format_bound(evutil_socket_t fd, char *buf, size_t cap) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
            port = ntohs(a->sin6_port);
            snprintf(buf, cap, "[%s]:%u", ip, port);
            return;
        }
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
    }
    snprintf(buf, cap, "%s:%u", ip, port);
}

rp_http *rp_http_new(struct event_base *base, const char *listen, rp_metrics *metrics,
                     const rp_http_hooks *hooks, char *err, size_t errlen) {
    char host[256];
    unsigned port = 0;
    if (listen == NULL || !rp_split_listen(listen, host, sizeof host, &port)) {
        snprintf(err, errlen, "not host:port");
        return NULL;
    }
    rp_http *h = calloc(1, sizeof *h);
    if (h == NULL || (h->http = evhttp_new(base)) == NULL) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->metrics = metrics;
    if (hooks) h->hooks = *hooks;
    /* Every method reaches rp_on_request, which answers 405 to all but GET
     * and HEAD (CONNECT and TRACE are left to evhttp's 501). */
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_timeout(h->http, RP_HTTP_TIMEOUT_S);
    evhttp_set_max_headers_size(h->http, RP_HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(h->http, RP_HTTP_MAX_BODY);
    evhttp_set_gencb(h->http, rp_on_request, h);
    errno = 0;
    struct evhttp_bound_socket *s =
        evhttp_bind_socket_with_handle(h->http, host[0] ? host : "0.0.0.0", (ev_uint16_t)port);
    if (s == NULL) {
        int e = errno;
        snprintf(err, errlen, "cannot listen on %s: %s", listen,
                 e ? strerror(e) : "the address cannot be resolved or bound");
        evhttp_free(h->http);
        free(h);
        return NULL;
    }
    rp_format_bound(evhttp_bound_socket_get_fd(s), h->bound, sizeof h->bound);
    return h;
}

const char *rp_http_bound(const rp_http *h) { return h->bound; }

void rp_http_stop(rp_http *h) {
    if (h == NULL || h->http == NULL) return;
    /* The console's calls in flight answer nobody once the server is gone. */
    rp_console_detach(h->hooks.console);
    evhttp_free(h->http);
    h->http = NULL;
}

void rp_http_free(rp_http *h) {
    if (h == NULL) return;
    rp_http_stop(h);
    free(h);
}
