/* The browser console on the HTTP listener (rp_http_console.h). */
#include "rp_http_console.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_console.h"
#include "rp_clock.h"
#include "rp_control.h"
#include "rp_log.h"
#include "rp_login_limit.h"
#include "rp_proto.h"

/* A control request from the page is small (the limit of the listener's
 * body is larger than any request the page builds). */
#define RP_CONSOLE_BODY_MAX 4096

typedef enum rp_console_stage {
    RP_STAGE_ASK = 0,   /* a control request, its reply to the browser */
    RP_STAGE_FEED_WHO,  /* a status request (as the user), before the feed */
    RP_STAGE_FEED_READ, /* the store's read */
} rp_console_stage;

typedef struct rp_console_req {
    rp_console_call call; /* first: done gets &call */
    rp_console *k;        /* NULL once detached */
    struct evhttp_request *req; /* NULL once detached */
    struct rp_console_req *prev, *next;
    rp_console_stage stage;
    bool signed_in;
    char *status_reply;   /* the feed's status reply (heap) */
    char *body;
    char user[256];
    char password[256];
    char peer[RP_LOGIN_LIMIT_KEY_MAX]; /* the client's address: the login brake's key */
} rp_console_req;

struct rp_console {
    rp_console_port port;
    rp_console_req *inflight;
    unsigned n_inflight;
    rp_login_limit logins; /* refused sign-ins per client address */
};

rp_console *rp_console_new(const rp_console_port *port) {
    rp_console *k = calloc(1, sizeof *k);
    if (k) {
        k->port = *port;
        rp_login_limit_init(&k->logins);
    }
    return k;
}

/* The client's address as text ("" when unknown). */
static void rp_console_peer(struct evhttp_request *req, char *out, size_t cap) {
    out[0] = '\0';
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (conn == NULL) return;
    char *host = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(conn, &host, &port);
    if (host != NULL) snprintf(out, cap, "%s", host);
}

static bool rp_console_on(const rp_console *k) {
    return k != NULL && k->port.cfg != NULL && *k->port.cfg != NULL && (*k->port.cfg)->http.console;
}

bool rp_console_serves(const rp_console *k, const char *path) {
    if (!rp_console_on(k)) return false;
    return strcmp(path, "/console") == 0 || strncmp(path, "/console/", 9) == 0;
}

static void rp_console_reply(struct evhttp_request *req, int code, const char *reason,
                             const char *ctype, const char *body, size_t len) {
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    /* Only the console's own script and style run; nothing inline, nothing
     * from elsewhere, no framing: a dead letter's bytes cannot become code
     * even if a bug let one into the page as markup. */
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'none'; script-src 'self'; style-src 'self'; "
                      "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                      "form-action 'none'; frame-ancestors 'none'");
    if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) evbuffer_add(b, body, len);
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

/* {"console_error": message} with code. message is the console's own
 * sentence or the port's err (never a password). */
static void rp_console_error(struct evhttp_request *req, int code, const char *reason,
                             const char *message) {
    char body[700];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"console_error\":\"");
    for (const char *p = message; *p && o + 8 < sizeof body; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            body[o++] = '\\';
            body[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(body + o, sizeof body - o, "\\u%04x", c);
        } else {
            body[o++] = (char)c;
        }
    }
    o += (size_t)snprintf(body + o, sizeof body - o, "\"}");
    rp_console_reply(req, code, reason, "application/json", body, o < sizeof body ? o : 0);
}

static void rp_console_req_free(rp_console_req *r) {
    if (r->k) {
        if (r->prev) r->prev->next = r->next;
        else r->k->inflight = r->next;
        if (r->next) r->next->prev = r->prev;
        r->k->n_inflight--;
    }
    free(r->call.reply);
    free(r->status_reply);
    free(r->body);
    memset(r->password, 0, sizeof r->password);
    free(r);
}

static rp_console_req *rp_console_req_new(rp_console *k, struct evhttp_request *req) {
    rp_console_req *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->k = k;
    r->req = req;
    r->next = k->inflight;
    if (k->inflight) k->inflight->prev = r;
    k->inflight = r;
    k->n_inflight++;
    return r;
}

/* The port's failure as an HTTP answer. */
static void rp_console_failed(rp_console_req *r) {
    const rp_console_call *c = &r->call;
    /* A password the broker refused counts against the client's address. */
    if (c->st == RP_ERR_FORBIDDEN && r->signed_in && r->k != NULL)
        rp_login_limit_refused(&r->k->logins, r->peer, rp_clock_mono_ms());
    if (c->st == RP_ERR_FORBIDDEN)
        rp_console_error(r->req, 401, "Unauthorized",
                         r->signed_in ? "the broker refused this user and password"
                                      : "the broker refused reaperd's own login");
    else if (c->st == RP_ERR_TIMEOUT)
        rp_console_error(r->req, 504, "Gateway Timeout", c->err);
    else
        rp_console_error(r->req, 502, "Bad Gateway", c->err[0] ? c->err : rp_status_string(c->st));
}

static rp_status rp_console_start(rp_console_req *r);

static void rp_console_done(rp_console_call *call, bool cancelled) {
    rp_console_req *r = (rp_console_req *)call;
    if (cancelled || r->req == NULL) {
        rp_console_req_free(r);
        return;
    }
    if (call->st != RP_OK) {
        rp_console_failed(r);
        rp_console_req_free(r);
        return;
    }
    if (r->stage == RP_STAGE_FEED_WHO) {
        /* The user logged in and reaperd answered: the feed is theirs. */
        r->status_reply = call->reply;
        call->reply = NULL;
        r->stage = RP_STAGE_FEED_READ;
        if (rp_console_start(r) != RP_OK) {
            rp_console_error(r->req, 503, "Service Unavailable", "reaperd is stopping");
            rp_console_req_free(r);
        }
        return;
    }
    if (r->stage == RP_STAGE_FEED_READ) {
        struct evbuffer *b = evbuffer_new();
        if (b == NULL) {
            rp_console_error(r->req, 500, "Internal Server Error", "out of memory");
        } else {
            evbuffer_add_printf(b, "{\"status\":%s,\"feed\":%s}",
                                r->status_reply ? r->status_reply : "null", call->reply);
            size_t n = evbuffer_get_length(b);
            char *text = (char *)evbuffer_pullup(b, (ev_ssize_t)n);
            rp_console_reply(r->req, 200, "OK", "application/json", text ? text : "", text ? n : 0);
            evbuffer_free(b);
        }
        rp_console_req_free(r);
        return;
    }
    rp_console_reply(r->req, 200, "OK", "application/json", call->reply, call->reply_len);
    rp_console_req_free(r);
}

/* Hands r's current stage to the port. */
static rp_status rp_console_start(rp_console_req *r) {
    rp_console_call *c = &r->call;
    free(c->reply);
    c->reply = NULL;
    c->reply_len = 0;
    c->st = RP_OK;
    c->err[0] = '\0';
    c->user = r->signed_in ? r->user : NULL;
    c->password = r->signed_in ? r->password : NULL;
    const rp_console_port *p = &r->k->port;
    if (r->stage == RP_STAGE_FEED_READ) return p->feed(p->self, c, rp_console_done);
    if (r->stage == RP_STAGE_FEED_WHO) {
        static const char status[] = "{\"v\":1,\"op\":\"status\"}";
        c->body = status;
        c->len = sizeof status - 1;
    } else {
        c->body = r->body;
    }
    return p->ask(p->self, c, rp_console_done);
}

static void rp_console_api(rp_console *k, struct evhttp_request *req, bool feed) {
    const rp_config *cfg = *k->port.cfg;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (feed ? cmd != EVHTTP_REQ_GET : cmd != EVHTTP_REQ_POST) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", feed ? "GET" : "POST");
        rp_console_error(req, 405, "Method Not Allowed", feed ? "use GET" : "use POST");
        return;
    }
    if (k->n_inflight >= RP_CONSOLE_INFLIGHT_MAX) {
        rp_console_error(req, 503, "Service Unavailable", "the console is busy; try again");
        return;
    }
    const char *auth =
        evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    char user[256], password[256];
    bool signed_in = false;
    if (auth != NULL) {
        signed_in = rp_console_basic_parse(auth, user, sizeof user, password, sizeof password);
        if (!signed_in) {
            rp_console_error(req, 401, "Unauthorized",
                             "the Authorization header is not HTTP Basic user:password");
            return;
        }
    }
    char peer[RP_LOGIN_LIMIT_KEY_MAX];
    rp_console_peer(req, peer, sizeof peer);
    /* Too many refused sign-ins from this address: the broker is not asked
     * (it would tell a guesser which password is right), right or wrong. */
    int64_t wait_ms = signed_in ? rp_login_limit_wait_ms(&k->logins, peer, rp_clock_mono_ms()) : 0;
    if (wait_ms > 0) {
        memset(password, 0, sizeof password);
        char after[24];
        snprintf(after, sizeof after, "%lld", (long long)((wait_ms + 999) / 1000));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", after);
        rp_console_error(req, 429, "Too Many Requests",
                         "too many refused sign-ins from this address; try again later");
        return;
    }
    char *body = NULL;
    size_t body_len = 0;
    const char *op = "status"; /* the feed: a read */
    rp_request parsed;
    rp_request_init(&parsed);
    if (!feed) {
        const char *ct =
            evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
        /* JSON only: a form another site posts cannot be one. */
        if (ct == NULL || strncmp(ct, "application/json", 16) != 0) {
            memset(password, 0, sizeof password);
            rp_console_error(req, 415, "Unsupported Media Type", "send application/json");
            return;
        }
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        body = n <= RP_CONSOLE_BODY_MAX ? malloc(n + 1) : NULL;
        if (body == NULL) {
            memset(password, 0, sizeof password);
            rp_console_error(req, n > RP_CONSOLE_BODY_MAX ? 413 : 500,
                             n > RP_CONSOLE_BODY_MAX ? "Payload Too Large" : "Internal Server Error",
                             n > RP_CONSOLE_BODY_MAX ? "the request is too large" : "out of memory");
            return;
        }
        evbuffer_copyout(in, body, n);
        body[n] = '\0';
        body_len = n;
        rp_proto_error perr;
        rp_proto_error_init(&perr);
        static const char json[] = "application/json";
        rp_status st = rp_request_decode((rp_bytes){(const uint8_t *)body, n},
                                         (rp_bytes){(const uint8_t *)json, sizeof json - 1},
                                         &parsed, &perr);
        if (st != RP_OK && st != RP_ERR_UNKNOWN_OP) {
            memset(password, 0, sizeof password);
            free(body);
            rp_console_error(req, 400, "Bad Request", perr.message);
            return;
        }
        op = st == RP_OK ? rp_op_string(parsed.op) : NULL;
    }
    rp_console_access a = rp_console_decide(op, signed_in, cfg->http.console_read_anonymous);
    rp_request_cleanup(&parsed);
    if (a == RP_CONSOLE_SIGN_IN || a == RP_CONSOLE_NOT_OFFERED) {
        memset(password, 0, sizeof password);
        free(body);
        rp_console_error(req, a == RP_CONSOLE_SIGN_IN ? 401 : 403,
                         a == RP_CONSOLE_SIGN_IN ? "Unauthorized" : "Forbidden",
                         rp_console_access_string(a));
        return;
    }
    rp_control_rules rules = {.allowed_users = &cfg->control.allowed_users,
                              .own_user = k->port.own_user};
    if (a == RP_CONSOLE_AS_USER && k->port.own_user != NULL &&
        !rp_control_user_allowed(&rules, user)) {
        memset(password, 0, sizeof password);
        free(body);
        rp_console_error(req, 403, "Forbidden",
                         "this broker user is not in control.allowed_users: reaperd takes no "
                         "request from it");
        return;
    }
    rp_console_req *r = rp_console_req_new(k, req);
    if (r == NULL) {
        memset(password, 0, sizeof password);
        free(body);
        rp_console_error(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    r->signed_in = a == RP_CONSOLE_AS_USER;
    memcpy(r->peer, peer, sizeof peer);
    if (r->signed_in) {
        memcpy(r->user, user, sizeof user);
        memcpy(r->password, password, sizeof password);
    }
    memset(password, 0, sizeof password);
    r->body = body;
    r->call.len = body_len;
    /* The feed: first a status request as the signed-in user (the broker
     * checks the password, reaperd the user) or, for an anonymous read, as
     * reaperd's own; then the store's read. */
    r->stage = feed ? RP_STAGE_FEED_WHO : RP_STAGE_ASK;
    if (rp_console_start(r) != RP_OK) {
        rp_console_error(req, 503, "Service Unavailable", "reaperd is stopping");
        rp_console_req_free(r);
    }
}

void rp_console_handle(rp_console *k, struct evhttp_request *req, const char *path) {
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (strcmp(path, "/console/api/ask") == 0) {
        rp_console_api(k, req, false);
        return;
    }
    if (strcmp(path, "/console/api/feed") == 0) {
        rp_console_api(k, req, true);
        return;
    }
    const char *text = NULL, *ctype = NULL;
    if (strcmp(path, "/console") == 0 || strcmp(path, "/console/") == 0) {
        text = rp_console_html;
        ctype = "text/html; charset=utf-8";
    } else if (strcmp(path, "/console/app.js") == 0) {
        text = rp_console_js;
        ctype = "text/javascript; charset=utf-8";
    } else if (strcmp(path, "/console/app.css") == 0) {
        text = rp_console_css;
        ctype = "text/css; charset=utf-8";
    }
    if (text == NULL) {
        rp_console_error(req, 404, "Not Found", "no such console path");
        return;
    }
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        rp_console_error(req, 405, "Method Not Allowed", "use GET");
        return;
    }
    rp_console_reply(req, 200, "OK", ctype, text, strlen(text));
}

void rp_console_detach(rp_console *k) {
    if (k == NULL) return;
    for (rp_console_req *r = k->inflight, *next; r != NULL; r = next) {
        next = r->next;
        r->k = NULL;
        r->req = NULL;
        r->prev = r->next = NULL;
    }
    k->inflight = NULL;
    k->n_inflight = 0;
}

void rp_console_free(rp_console *k) {
    rp_console_detach(k);
    free(k);
}
