#include "rp_mgmt_broker.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_clock.h"
#include "rp_match.h"
#include "rp_mgmt_channels.h"
#include "rp_sweep_vhosts.h"

#define RP_BROKER_DEFAULT_TIMEOUT_MS 10000L
#define RP_QUEUE_COLUMNS                                                                    \
    "name,vhost,type,messages_ready,messages_unacknowledged,consumers,head_message_timestamp," \
    "policy,operator_policy,effective_policy_definition,arguments,message_stats.publish,"     \
    "message_stats.ack"

struct rp_mgmt_broker {
    rp_mgmt_bridge *bridge;
    long timeout_ms;
    size_t page_size;
    bool assume_default_timeout;
    bool version_known;
    rp_mgmt_version version;
    rp_mgmt_page page;   /* what list_queues / get_queue lent last */
    char origin[256];    /* what get_timeout_in_force lent last */
    int wide;            /* rp_wide_state of the broker-wide consumer_timeout */
    int64_t wide_ms;
    int64_t wide_at;     /* monotonic ms of the last read */
    char wide_why[160];
    char last_error[512];
    rp_mgmt_channels *channels; /* what list_channels lent last (rp_mgmt_channels.c) */
    /* The vhosts listed (rp_mgmt_broker_set_vhosts; borrowed), none: every
     * vhost. */
    const char *const *vhosts;
    size_t n_vhosts;
    rp_vhost_pager pager;

    /* What consumer_connections lent last (issue 18 item 4). */
    char **conns;
    size_t n_conns;

    /* The policy fields of b->page (rp_mgmt_broker_page_policy), lent with it. */
    rp_policy_queue *pq;
    size_t cap_pq;
    rp_policy_key *pkeys; /* their effective definitions' keys, lent from b->page */
    size_t cap_pkeys;
};

rp_mgmt_broker *rp_mgmt_broker_new(rp_mgmt_bridge *bridge, const rp_mgmt_broker_options *o) {
    if (bridge == NULL) return NULL;
    rp_mgmt_broker *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    b->bridge = bridge;
    b->timeout_ms = (o && o->request_timeout_ms > 0) ? o->request_timeout_ms
                                                     : RP_BROKER_DEFAULT_TIMEOUT_MS;
    b->page_size = (o && o->page_size > 0 && o->page_size <= RP_MGMT_PAGE_SIZE_MAX)
                       ? o->page_size
                       : RP_MGMT_PAGE_SIZE_MAX;
    b->assume_default_timeout = o && o->assume_default_consumer_timeout;
    rp_mgmt_page_init(&b->page);
    return b;
}

void rp_mgmt_broker_free(rp_mgmt_broker *b) {
    if (b == NULL) return;
    rp_mgmt_page_cleanup(&b->page);
    rp_mgmt_channels_free(b->channels);

    rp_mgmt_names_free(b->conns, b->n_conns);
    free(b->pq);
    free(b->pkeys);
    free(b);
}

const char *rp_mgmt_broker_last_error(const rp_mgmt_broker *b) { return b->last_error; }
rp_mgmt_bridge *rp_mgmt_broker_bridge(rp_mgmt_broker *b) { return b->bridge; }
rp_mgmt_channels **rp__mgmt_broker_channels_slot(rp_mgmt_broker *b) { return &b->channels; }

const rp_mgmt_queue_extra *rp_mgmt_broker_page_extra(const rp_mgmt_broker *b) {
    return b->page.n ? b->page.extra : NULL;
}

char *rp_mgmt_url_encode(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1);
    if (out == NULL) return NULL;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}

static void rp_fail(rp_mgmt_broker *b, const char *fmt, ...) RP_PRINTF(2, 3);
static void rp_fail(rp_mgmt_broker *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->last_error, sizeof b->last_error, fmt, ap);
    va_end(ap);
    rp_mgmt_bridge_scrub(b->bridge, b->last_error, sizeof b->last_error);
}

static rp_status rp_request(rp_mgmt_broker *b, rp_http_method m, const char *path,
                            const char *body, size_t body_len, const char *header,
                            rp_mgmt_response *out);

rp_status rp_mgmt_broker_request(rp_mgmt_broker *b, rp_http_method m, const char *path,
                                 const char *body, size_t body_len, rp_mgmt_response *out) {
    return rp_request(b, m, path, body, body_len, NULL, out);
}

static rp_status rp_request(rp_mgmt_broker *b, rp_http_method m, const char *path,
                            const char *body, size_t body_len, const char *header,
                            rp_mgmt_response *out) {
    b->last_error[0] = '\0';
    rp_status st = rp_mgmt_bridge_call_with(b->bridge, m, path, body, body_len, header,
                                            b->timeout_ms, out);
    if (st != RP_OK) {
        b->version_known = false;
        b->wide = 0;
        const char *why = out->error[0] ? out->error : rp_status_string(st);
        switch (st) {
        case RP_ERR_NOMEM:
        case RP_ERR_TOO_LARGE:
        case RP_ERR_INVALID:
            rp_fail(b, "management API request failed: %s", why);
            return st;
        default: /* no connection, a time-out, the bridge closed */
            rp_fail(b, "management API unreachable: %s", why);
            return RP_ERR_UNAVAILABLE;
        }
    }
    long code = out->http_status;
    if (code >= 200 && code < 300) return RP_OK;
    char reason[300];
    rp_mgmt_error_reason(out->body, out->body_len, reason, sizeof reason);
    rp_fail(b, "%s %s: HTTP %ld: %s", rp_http_method_string(m), path, code, reason);
    if (code == 401 || code == 403) return RP_ERR_FORBIDDEN;
    if (code == 404) return RP_ERR_NOT_FOUND;
    if (code >= 500) {
        b->version_known = false;
        return RP_ERR_UNAVAILABLE;
    }
    return RP_ERR_INTERNAL;
}

rp_status rp_mgmt_broker_version(rp_mgmt_broker *b, rp_mgmt_version *out) {
    if (b->version_known) {
        *out = b->version;
        return RP_OK;
    }
    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, "/api/overview", NULL, 0, &r);
    if (st == RP_OK) {
        st = rp_mgmt_parse_overview_version(r.body, r.body_len, &b->version);
        if (st != RP_OK) {
            rp_fail(b, "GET /api/overview: no rabbitmq_version in the answer");
            st = RP_ERR_INTERNAL;
        }
    }
    rp_mgmt_response_cleanup(&r);
    if (st != RP_OK) return st == RP_ERR_NOT_FOUND ? RP_ERR_INTERNAL : st;
    b->version_known = true;
    *out = b->version;
    return RP_OK;
}

/* ---- the port ------------------------------------------------------------------ */

static void rp_default_limits(rp_mgmt_broker *b);

/* Page `page` of GET /api/queues, or of GET /api/queues/{vhost} when
 * vhost (URL-encoded) is not NULL: a vhost that does not exist (404) has
 * no queue, an empty last page. */
static rp_status rp_list_path(rp_mgmt_broker *b, size_t page, const char *columns,
                              const char *vhost, rp_queue_page *out) {
    memset(out, 0, sizeof *out);
    if (page < 1) return RP_ERR_INVALID;
    char path[1400];
    snprintf(path, sizeof path, "/api/queues%s%s?page=%zu&page_size=%zu&columns=%s",
             vhost ? "/" : "", vhost ? vhost : "", page, b->page_size, columns);
    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
    if (st == RP_ERR_NOT_FOUND && vhost != NULL) {
        rp_mgmt_response_cleanup(&r);
        rp_mgmt_page_cleanup(&b->page);
        b->last_error[0] = '\0';
        out->last = true;
        return RP_OK;
    }
    if (st == RP_ERR_INTERNAL && r.http_status == 400 &&
        rp_mgmt_is_error(r.body, r.body_len, "page_out_of_range")) {
        /* Past the last page (the listing shrank, or the caller went on). */
        rp_mgmt_response_cleanup(&r);
        rp_mgmt_page_cleanup(&b->page);
        b->last_error[0] = '\0';
        out->last = true;
        return RP_OK;
    }
    if (st == RP_ERR_NOT_FOUND) st = RP_ERR_INTERNAL;
    if (st != RP_OK) {
        rp_mgmt_response_cleanup(&r);
        return st;
    }
    char err[200] = "";
    st = rp_mgmt_parse_page(r.body, r.body_len, &b->page, err, sizeof err);
    rp_mgmt_response_cleanup(&r);
    if (st != RP_OK) {
        rp_fail(b, "GET /api/queues page %zu: %s", page, err);
        return st == RP_ERR_NOMEM ? st : RP_ERR_INTERNAL;
    }
    rp_default_limits(b);
    out->queues = b->page.n ? b->page.facts : NULL;
    out->n = b->page.n;
    out->last = page >= b->page.page_count;
    return RP_OK;
}

void rp_mgmt_broker_set_vhosts(rp_mgmt_broker *b, const char *const *vhosts, size_t n) {
    b->vhosts = n > 0 ? vhosts : NULL;
    b->n_vhosts = n > 0 ? n : 0;
    rp_vhost_pager_init(&b->pager, b->n_vhosts);
}

void rp_mgmt_broker_get_vhosts(const rp_mgmt_broker *b, const char *const **vhosts, size_t *n) {
    *vhosts = b->vhosts;
    *n = b->n_vhosts;
}

/* Page `page` of the listing: every vhost's queues, or those of the
 * vhosts set, one vhost after the other (core/rp_sweep_vhosts.h). */
static rp_status rp_list_page(rp_mgmt_broker *b, size_t page, const char *columns,
                              rp_queue_page *out) {
    if (b->n_vhosts == 0) return rp_list_path(b, page, columns, NULL, out);
    memset(out, 0, sizeof *out);
    if (page == 1) rp_vhost_pager_init(&b->pager, b->n_vhosts);
    for (;;) {
        size_t index = 0, local = 0;
        if (!rp_vhost_pager_map(&b->pager, page, &index, &local)) {
            rp_mgmt_page_cleanup(&b->page);
            out->last = true;
            return page < 1 ? RP_ERR_INVALID : RP_OK;
        }
        char *ev = rp_mgmt_url_encode(b->vhosts[index]);
        if (ev == NULL) return RP_ERR_NOMEM;
        rp_status st = rp_list_path(b, local, columns, ev, out);
        free(ev);
        if (st != RP_OK) return st;
        bool empty = out->n == 0;
        bool last = rp_vhost_pager_after(&b->pager, page, out->last, empty);
        /* An empty vhost gives its place to the next one's first page (an
         * empty page ends the pass's listing). */
        if (empty && !last) continue;
        out->last = last;
        return RP_OK;
    }
}

/* RabbitMQ 4 gives a quorum queue with no delivery limit set a limit of
 * 20 (a negative one disables it): filled in on the facts of b->page. A
 * version that cannot be read leaves those limits unknown. */
static void rp_default_limits(rp_mgmt_broker *b) {
    bool need = false;
    for (size_t i = 0; i < b->page.n; i++)
        if (b->page.facts[i].delivery_limit_known && !b->page.extra[i].delivery_limit_set)
            need = true;
    if (!need) return;
    rp_mgmt_version v;
    bool known = rp_mgmt_broker_version(b, &v) == RP_OK;
    for (size_t i = 0; i < b->page.n; i++) {
        rp_queue_facts *f = &b->page.facts[i];
        if (!f->delivery_limit_known || b->page.extra[i].delivery_limit_set) continue;
        if (!known) f->delivery_limit_known = false;
        else if (rp_mgmt_version_at_least(&v, 4, 0)) f->delivery_limit = 20;
    }
}

rp_status rp_mgmt_broker_page_policy(rp_mgmt_broker *b, const rp_policy_queue **out) {
    *out = NULL;
    const rp_mgmt_queue_extra *extra = rp_mgmt_broker_page_extra(b);
    size_t n = b->page.n, n_keys = 0;
    for (size_t i = 0; extra && i < n; i++)
        n_keys += json_is_object(extra[i].effective) ? json_object_size(extra[i].effective) : 0;
    if (n > b->cap_pq) {
        rp_policy_queue *q = realloc(b->pq, n * sizeof *q);
        if (q == NULL) return RP_ERR_NOMEM;
        b->pq = q;
        b->cap_pq = n;
    }
    if (n_keys > b->cap_pkeys) {
        rp_policy_key *k = realloc(b->pkeys, n_keys * sizeof *k);
        if (k == NULL) return RP_ERR_NOMEM;
        b->pkeys = k;
        b->cap_pkeys = n_keys;
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        rp_policy_queue *q = &b->pq[i];
        memset(q, 0, sizeof *q);
        q->vhost = b->page.facts[i].vhost;
        q->name = b->page.facts[i].name;
        q->type = b->page.facts[i].type;
        if (extra == NULL) continue;
        const rp_mgmt_queue_extra *x = &extra[i];
        q->policy_known = x->policy_known;
        q->policy = x->policy;
        q->operator_policy = x->operator_policy;
        q->effective_known = x->effective_known;
        q->dlx_argument =
            x->arguments && json_is_string(json_object_get(x->arguments, "x-dead-letter-exchange"));
        q->effective = b->pkeys ? b->pkeys + used : NULL;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)x->effective, key, val) {
            rp_policy_key *k = &b->pkeys[used++];
            int64_t iv = 0;
            k->key = (char *)key;
            k->is_int = rp_mgmt_json_int(val, &iv);
            k->value = k->is_int ? iv : 0;
            k->is_string = json_is_string(val);
            q->n_effective++;
        }
    }
    *out = n ? b->pq : NULL;
    return RP_OK;
}

static rp_status rp_port_list_queues(void *self, size_t page, rp_queue_page *out) {
    rp_mgmt_broker *b = self;
    rp_status st = rp_list_page(b, page, RP_QUEUE_COLUMNS, out);
    if (st != RP_OK || out->n == 0) return st;
    /* The columns hold every policy field: lent for the policy reconcile's
     * reuse of the sweep's listing. Without memory for them the page
     * carries none (the reconcile then lists the broker itself). */
    const rp_policy_queue *pq = NULL;
    if (rp_mgmt_broker_page_policy(b, &pq) == RP_OK) out->policy = pq;
    return RP_OK;
}

rp_status rp_mgmt_broker_list(rp_mgmt_broker *b, size_t page, const char *columns,
                              rp_queue_page *out) {
    return rp_list_page(b, page, columns ? columns : RP_QUEUE_COLUMNS, out);
}

/* Reads one queue into b->page (a page of one). */
static rp_status rp_read_queue(rp_mgmt_broker *b, const char *vhost, const char *name) {
    if (vhost == NULL || name == NULL) return RP_ERR_INVALID;
    char *ev = rp_mgmt_url_encode(vhost), *en = rp_mgmt_url_encode(name);
    size_t plen = (ev ? strlen(ev) : 0) + (en ? strlen(en) : 0) + sizeof RP_QUEUE_COLUMNS + 40;
    char *path = malloc(plen);
    if (ev == NULL || en == NULL || path == NULL) {
        free(ev);
        free(en);
        free(path);
        return RP_ERR_NOMEM;
    }
    snprintf(path, plen, "/api/queues/%s/%s?columns=%s", ev, en, RP_QUEUE_COLUMNS);
    free(ev);
    free(en);
    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
    free(path);
    if (st == RP_OK) {
        char err[200] = "";
        st = rp_mgmt_parse_queue(r.body, r.body_len, &b->page, err, sizeof err);
        if (st != RP_OK) {
            rp_fail(b, "GET queue %s on vhost %s: %s", name, vhost, err);
            if (st != RP_ERR_NOMEM) st = RP_ERR_INTERNAL;
        }
    }
    rp_mgmt_response_cleanup(&r);
    return st;
}

static rp_status rp_port_get_queue(void *self, const char *vhost, const char *name,
                                   rp_queue_facts *out) {
    rp_mgmt_broker *b = self;
    memset(out, 0, sizeof *out);
    rp_status st = rp_read_queue(b, vhost, name);
    if (st != RP_OK) return st;
    rp_default_limits(b);
    *out = b->page.facts[0];
    return RP_OK;
}

/* "/api/exchanges/{vhost}/{name}{tail}", both encoded; NULL when out of
 * memory. Freed by the caller. */
static char *rp_exchange_path(const char *vhost, const char *name, const char *tail) {
    char *ev = rp_mgmt_url_encode(vhost), *en = rp_mgmt_url_encode(name);
    size_t plen = (ev ? strlen(ev) : 0) + (en ? strlen(en) : 0) + strlen(tail) + 20;
    char *path = ev && en ? malloc(plen) : NULL;
    if (path) snprintf(path, plen, "/api/exchanges/%s/%s%s", ev, en, tail);
    free(ev);
    free(en);
    return path;
}

/* GET /api/exchanges/{vhost}/{name}: 200 exists, 404 does not. Leaves
 * b->page alone. The default exchange ("") always exists. */
static rp_status rp_port_exchange_exists(void *self, const char *vhost, const char *name,
                                         bool *exists) {
    rp_mgmt_broker *b = self;
    *exists = false;
    if (vhost == NULL || name == NULL) return RP_ERR_INVALID;
    if (name[0] == '\0') {
        *exists = true;
        return RP_OK;
    }
    char *path = rp_exchange_path(vhost, name, "?columns=name");
    rp_status st = path ? RP_OK : RP_ERR_NOMEM;
    if (st == RP_OK) {
        rp_mgmt_response r;
        st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
        rp_mgmt_response_cleanup(&r);
        if (st == RP_OK) *exists = true;
        if (st == RP_ERR_NOT_FOUND) st = RP_OK;
    }
    free(path);
    return st;
}

/* GET /api/exchanges/{vhost}/{name}/bindings/source: whether any binding
 * (to a queue or an exchange) has the exchange as its source, other than
 * one to a queue named in except. 404: RP_ERR_NOT_FOUND. Leaves b->page
 * alone. */
static rp_status rp_port_exchange_bound(void *self, const char *vhost, const char *name,
                                        const char *const *except, size_t n_except,
                                        bool *bound) {
    rp_mgmt_broker *b = self;
    *bound = false;
    if (vhost == NULL || name == NULL || (n_except > 0 && except == NULL)) return RP_ERR_INVALID;
    char *path = rp_exchange_path(vhost, name, "/bindings/source");
    rp_status st = path ? RP_OK : RP_ERR_NOMEM;
    if (st == RP_OK) {
        rp_mgmt_response r;
        st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
        json_t *arr = NULL;
        if (st == RP_OK) {
            arr = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
            if (!json_is_array(arr)) st = RP_ERR_INTERNAL;
        }
        size_t i;
        json_t *bd;
        if (st == RP_OK) json_array_foreach(arr, i, bd) {
                const char *dtype = json_string_value(json_object_get(bd, "destination_type"));
                const char *dest = json_string_value(json_object_get(bd, "destination"));
                bool own = false;
                for (size_t k = 0; k < n_except && dtype && dest; k++)
                    if (except[k] && strcmp(dtype, "queue") == 0 && strcmp(dest, except[k]) == 0)
                        own = true;
                if (!own) {
                    *bound = true;
                    break;
                }
            }
        json_decref(arr);
        rp_mgmt_response_cleanup(&r);
    }
    free(path);
    return st;
}

/* The consumer-timeout value of a JSON object key, when a positive integer. */
static bool rp_timeout_key(const json_t *obj, const char *key, int64_t *ms) {
    if (obj == NULL) return false;
    return rp_mgmt_json_int(json_object_get(obj, key), ms) && *ms > 0;
}

/* The broker-wide consumer_timeout, from GET /api/config/effective (the
 * node's effective application environment as an Erlang term in text;
 * RabbitMQ 4.0.5 has it, administrators only; 3.10.8 answers 404). Only
 * the one number is taken from the body, which is then wiped: it holds
 * other settings, some of them secret. */
typedef enum rp_wide_state {
    RP_WIDE_UNREAD = 0,
    RP_WIDE_VALUE,       /* value_ms */
    RP_WIDE_OFF,         /* no consumer_timeout in the rabbit application */
    RP_WIDE_NOT_EXPOSED, /* no endpoint, or not allowed, or not understood */
} rp_wide_state;

static void rp_wipe(char *p, size_t n) {
    volatile char *v = p;
    while (n--) *v++ = 0;
}

#define RP_WIDE_CACHE_MS 60000

static rp_status rp_read_wide(rp_mgmt_broker *b) {
    if (b->wide != RP_WIDE_UNREAD && rp_clock_mono_ms() - b->wide_at < RP_WIDE_CACHE_MS) return RP_OK;
    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, "/api/config/effective", NULL, 0, &r);
    if (st == RP_OK) {
        bool found, enabled;
        int64_t ms;
        if (rp_mgmt_parse_effective_timeout(r.body, &found, &enabled, &ms) != RP_OK) {
            b->wide = RP_WIDE_NOT_EXPOSED;
            snprintf(b->wide_why, sizeof b->wide_why, "GET /api/config/effective was not understood");
        } else if (enabled) {
            b->wide = RP_WIDE_VALUE;
            b->wide_ms = ms;
        } else {
            b->wide = RP_WIDE_OFF;
        }
    } else if (st == RP_ERR_NOT_FOUND || st == RP_ERR_FORBIDDEN || st == RP_ERR_INTERNAL) {
        b->wide = RP_WIDE_NOT_EXPOSED;
        /* 3.10.8 answers 404 to a request that accepts anything and 406
         * to ours: no such endpoint either way. */
        if (st == RP_ERR_NOT_FOUND || r.http_status == 406)
            snprintf(b->wide_why, sizeof b->wide_why, "RabbitMQ %s has no /api/config/effective",
                     b->version.text);
        else if (st == RP_ERR_FORBIDDEN)
            snprintf(b->wide_why, sizeof b->wide_why,
                     "GET /api/config/effective was refused: it needs the administrator tag");
        else
            snprintf(b->wide_why, sizeof b->wide_why, "GET /api/config/effective answered HTTP %ld",
                     r.http_status);
        b->last_error[0] = '\0';
        st = RP_OK;
    }
    if (r.body) rp_wipe(r.body, r.body_len);
    rp_mgmt_response_cleanup(&r);
    if (st != RP_OK) return st;
    b->wide_at = rp_clock_mono_ms();
    return RP_OK;
}

rp_status rp_mgmt_broker_wide_timeout(rp_mgmt_broker *b, rp_wide_timeout_state *state,
                                      int64_t *value_ms, const char **why) {
    *state = RP_WIDE_TIMEOUT_UNREADABLE;
    *value_ms = 0;
    *why = "";
    b->wide = RP_WIDE_UNREAD; /* read now, not from the cache */
    rp_status st = rp_read_wide(b);
    if (st != RP_OK) return st;
    if (b->wide == RP_WIDE_VALUE) {
        *state = RP_WIDE_TIMEOUT_VALUE;
        *value_ms = b->wide_ms;
    } else if (b->wide == RP_WIDE_OFF) {
        *state = RP_WIDE_TIMEOUT_OFF;
    }
    *why = b->wide_why;
    return RP_OK;
}

static rp_status rp_port_get_timeout(void *self, const char *vhost, const char *name,
                                     rp_timeout_in_force *out) {
    rp_mgmt_broker *b = self;
    memset(out, 0, sizeof *out);
    rp_mgmt_version v;
    rp_status st = rp_mgmt_broker_version(b, &v);
    if (st != RP_OK) return st;
    st = rp_read_queue(b, vhost, name);
    if (st != RP_OK) return st;
    const rp_queue_facts *f = &b->page.facts[0];
    const rp_mgmt_queue_extra *x = &b->page.extra[0];
    out->origin = b->origin;

    if (rp_mgmt_version_at_least(&v, 4, 3) && f->type != RP_QUEUE_TYPE_QUORUM) {
        snprintf(b->origin, sizeof b->origin,
                 "RabbitMQ %s enforces consumer timeouts on quorum queues only; this is a %s "
                 "queue",
                 v.text, rp_queue_type_string(f->type));
        return RP_OK;
    }
    if (rp_mgmt_version_at_least(&v, 3, 12)) {
        int64_t pol = 0, arg = 0;
        bool has_pol = rp_timeout_key(x->effective, "consumer-timeout", &pol);
        bool has_arg = rp_timeout_key(x->arguments, "x-consumer-timeout", &arg);
        if (has_pol || has_arg) {
            out->in_force = true;
            out->value_known = true;
            if (has_pol && (!has_arg || pol <= arg)) {
                out->value_ms = pol;
                snprintf(b->origin, sizeof b->origin,
                         "effective policy definition (policy %s%s%s)",
                         x->policy ? x->policy : "none",
                         x->operator_policy ? ", operator policy " : "",
                         x->operator_policy ? x->operator_policy : "");
            } else {
                out->value_ms = arg;
                snprintf(b->origin, sizeof b->origin, "queue argument x-consumer-timeout");
            }
            return RP_OK;
        }
        if (!x->effective_known) {
            /* The statistics that carry the policy are not in yet: no
             * claim either way (a policy may set a longer timeout). */
            out->in_force = true;
            snprintf(b->origin, sizeof b->origin,
                     "not known yet: the queue's effective policy is not reported yet (it may "
                     "set consumer-timeout; else the broker-wide consumer_timeout applies)");
            return RP_OK;
        }
    }
    /* No policy key or argument: the broker-wide setting. */
    st = rp_read_wide(b);
    if (st != RP_OK) return st;
    switch (b->wide) {
    case RP_WIDE_VALUE:
        out->in_force = true;
        out->value_known = true;
        out->value_ms = b->wide_ms;
        snprintf(b->origin, sizeof b->origin,
                 "broker-wide consumer_timeout (read from /api/config/effective)");
        return RP_OK;
    case RP_WIDE_OFF:
        snprintf(b->origin, sizeof b->origin,
                 "broker-wide consumer_timeout is not set (read from /api/config/effective)");
        return RP_OK;
    default:
        break;
    }
    /* Not readable: in force unless an operator turned it off. */
    out->in_force = true;
    if (b->assume_default_timeout) {
        out->value_known = true;
        out->value_ms = RP_MGMT_DEFAULT_CONSUMER_TIMEOUT_MS;
        snprintf(b->origin, sizeof b->origin,
                 "broker-wide consumer_timeout, assumed at RabbitMQ's default of %d ms (%s)",
                 RP_MGMT_DEFAULT_CONSUMER_TIMEOUT_MS, b->wide_why);
    } else {
        snprintf(b->origin, sizeof b->origin,
                 "broker-wide consumer_timeout, value not readable (%s; RabbitMQ's default is "
                 "%d ms)",
                 b->wide_why, RP_MGMT_DEFAULT_CONSUMER_TIMEOUT_MS);
    }
    return RP_OK;
}

/* ---- the restart-loop breaker (issue 18 item 4) -------------------------------- */

static rp_status rp_port_consumer_connections(void *self, const char *vhost, const char *name,
                                              rp_name_list *out) {
    rp_mgmt_broker *b = self;
    out->names = NULL;
    out->n = 0;
    rp_mgmt_names_free(b->conns, b->n_conns);
    b->conns = NULL;
    b->n_conns = 0;
    if (vhost == NULL || name == NULL) return RP_ERR_INVALID;
    char *ev = rp_mgmt_url_encode(vhost), *en = rp_mgmt_url_encode(name);
    size_t plen = (ev ? strlen(ev) : 0) + (en ? strlen(en) : 0) + 64;
    char *path = ev && en ? malloc(plen) : NULL;
    if (path) snprintf(path, plen, "/api/queues/%s/%s?columns=consumer_details", ev, en);
    free(ev);
    free(en);
    if (path == NULL) return RP_ERR_NOMEM;
    rp_mgmt_response r;
    rp_status st = rp_request(b, RP_HTTP_GET, path, NULL, 0, NULL, &r);
    free(path);
    if (st == RP_OK) {
        st = rp_mgmt_parse_consumer_connections(r.body, r.body_len, &b->conns, &b->n_conns);
        if (st != RP_OK && st != RP_ERR_NOMEM) {
            rp_fail(b, "GET queue %s on vhost %s: no consumer_details in the answer", name,
                    vhost);
            st = RP_ERR_INTERNAL;
        }
    }
    rp_mgmt_response_cleanup(&r);
    if (st != RP_OK) return st;
    out->names = (const char *const *)b->conns;
    out->n = b->n_conns;
    return RP_OK;
}

static rp_status rp_port_close_connection(void *self, const char *name, const char *reason) {
    rp_mgmt_broker *b = self;
    if (name == NULL) return RP_ERR_INVALID;
    char *en = rp_mgmt_url_encode(name);
    size_t plen = (en ? strlen(en) : 0) + 32;
    char *path = en ? malloc(plen) : NULL;
    if (path) snprintf(path, plen, "/api/connections/%s", en);
    free(en);
    if (path == NULL) return RP_ERR_NOMEM;
    /* The reason travels in the X-Reason header: one line, no CR or LF. */
    char header[400];
    snprintf(header, sizeof header, "X-Reason: %s", reason ? reason : "closed by reaper");
    for (char *c = header; *c; c++)
        if (*c == '\r' || *c == '\n') *c = ' ';
    rp_mgmt_response r;
    rp_status st = rp_request(b, RP_HTTP_DELETE, path, NULL, 0, header, &r);
    free(path);
    rp_mgmt_response_cleanup(&r);
    return st;
}

void rp_mgmt_broker_port(rp_mgmt_broker *b, rp_broker_port *out) {
    out->self = b;
    out->list_queues = rp_port_list_queues;
    out->get_queue = rp_port_get_queue;
    out->get_timeout_in_force = rp_port_get_timeout;
    out->exchange_exists = rp_port_exchange_exists;
    out->exchange_bound = rp_port_exchange_bound;
    out->list_channels = rp_mgmt_broker_list_channels;

    out->consumer_connections = rp_port_consumer_connections;
    out->close_connection = rp_port_close_connection;
}

/* ---- the inventory seed ------------------------------------------------------- */

rp_status rp_mgmt_broker_each_owned(rp_mgmt_broker *b, const pcre2_code *owned_pattern,
                                    const pcre2_code *dead_letter_pattern, rp_mgmt_owned_fn fn,
                                    void *arg, size_t *n_owned) {
    if (n_owned) *n_owned = 0;
    if (b == NULL || owned_pattern == NULL || dead_letter_pattern == NULL || fn == NULL)
        return RP_ERR_INVALID;
    for (size_t page = 1;; page++) {
        rp_queue_page pg;
        rp_status st = rp_list_page(b, page, "name,vhost,type", &pg);
        if (st != RP_OK) return st;
        for (size_t i = 0; i < pg.n; i++) {
            const rp_queue_facts *q = &pg.queues[i];
            bool dlq = false, owned = false;
            rp_status mst = rp_match_name(dead_letter_pattern, q->name, &dlq);
            if (mst == RP_OK) mst = rp_match_name(owned_pattern, q->name, &owned);
            if (mst == RP_OK && dlq && !owned) {
                char *base = NULL;
                mst = rp_match_cut(dead_letter_pattern, q->name, &base);
                if (mst == RP_OK) mst = rp_match_name(owned_pattern, base, &owned);
                free(base);
            }
            if (mst == RP_ERR_NOMEM) return mst;
            if (mst != RP_OK || !owned) continue; /* what cannot be classified is not owned */
            if (n_owned) (*n_owned)++;
            if (!fn(arg, q->vhost, q->name, q->type, dlq)) return RP_OK;
        }
        if (pg.last) return RP_OK;
    }
}
