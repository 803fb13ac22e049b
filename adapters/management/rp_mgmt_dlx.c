/* The dead-letter tap's bindings through the management API
 * (rp_mgmt_dlx.h). */
#include "rp_mgmt_dlx.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_match.h"

#define RP_DLX_PAGE_SIZE 500

/* A set of exchange names (small: one per dead-letter exchange). */
typedef struct rp_names {
    char **v;
    size_t n, cap;
} rp_names;

static bool rp_names_has(const rp_names *s, const char *x) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0) return true;
    return false;
}

static rp_status rp_names_add(rp_names *s, const char *x) {
    if (rp_names_has(s, x)) return RP_OK;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **v = realloc(s->v, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n] = strdup(x);
    if (s->v[s->n] == NULL) return RP_ERR_NOMEM;
    s->n++;
    return RP_OK;
}

static void rp_names_cleanup(rp_names *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static bool rp_skipped(const rp_mgmt_dlx_options *o, const char *name) {
    if (o->tap_queue && strcmp(name, o->tap_queue) == 0) return true;
    for (size_t i = 0; i < o->n_skip; i++)
        if (o->skip[i] && strcmp(o->skip[i], name) == 0) return true;
    return false;
}

/* GET path and parse the answer as JSON into *out (caller decrefs). */
static rp_status rp_get_json(rp_mgmt_broker *b, const char *path, json_t **out) {
    *out = NULL;
    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
    if (st == RP_OK) {
        *out = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
        if (*out == NULL) st = RP_ERR_INTERNAL;
    }
    if (st == RP_ERR_INTERNAL && r.http_status == 400 &&
        rp_mgmt_is_error(r.body, r.body_len, "page_out_of_range")) {
        st = RP_OK; /* an empty listing */
        *out = json_pack("{s:[], s:i}", "items", "page_count", 0);
        if (*out == NULL) st = RP_ERR_NOMEM;
    }
    rp_mgmt_response_cleanup(&r);
    return st;
}

/* The vhost's policies (GET /api/policies/{vhost}): the queue listing
 * shows a new queue's policy only after the broker's next statistics
 * emission, so the policy in force is worked out here the way the broker
 * does: the matching policy of the highest priority that applies to the
 * queue's type. */
typedef struct rp_pol {
    pcre2_code *re;
    const char *apply_to;
    int64_t priority;
    const char *dlx; /* its dead-letter-exchange, or NULL */
} rp_pol;

typedef struct rp_pols {
    rp_pol *v;
    size_t n;
    json_t *keep;
} rp_pols;

static void rp_pols_cleanup(rp_pols *p) {
    for (size_t i = 0; i < p->n; i++) pcre2_code_free(p->v[i].re);
    free(p->v);
    json_decref(p->keep);
    memset(p, 0, sizeof *p);
}

static rp_status rp_read_policies(rp_mgmt_broker *b, const char *vh, rp_pols *p) {
    char path[512];
    snprintf(path, sizeof path, "/api/policies/%s", vh);
    rp_status st = rp_get_json(b, path, &p->keep);
    if (st == RP_ERR_NOT_FOUND) return RP_OK;
    if (st != RP_OK) return st;
    if (!json_is_array(p->keep)) return RP_ERR_INTERNAL;
    size_t n = json_array_size(p->keep);
    p->v = n ? calloc(n, sizeof *p->v) : NULL;
    if (n && p->v == NULL) return RP_ERR_NOMEM;
    size_t i;
    json_t *pol;
    json_array_foreach(p->keep, i, pol) {
        const char *pattern = json_string_value(json_object_get(pol, "pattern"));
        const char *apply = json_string_value(json_object_get(pol, "apply-to"));
        json_t *prio = json_object_get(pol, "priority");
        if (pattern == NULL) continue;
        int errcode;
        PCRE2_SIZE erroff;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &errcode,
                                       &erroff, NULL);
        if (re == NULL) continue; /* the broker could not match it either */
        rp_pol *x = &p->v[p->n++];
        x->re = re;
        x->apply_to = apply ? apply : "all";
        x->priority = json_is_integer(prio) ? json_integer_value(prio) : 0;
        x->dlx = json_string_value(
            json_object_get(json_object_get(pol, "definition"), "dead-letter-exchange"));
    }
    return RP_OK;
}

static bool rp_applies(const char *apply_to, const char *type) {
    if (strcmp(apply_to, "all") == 0 || strcmp(apply_to, "queues") == 0) return true;
    if (type == NULL) return false;
    if (strcmp(apply_to, "classic_queues") == 0) return strcmp(type, "classic") == 0;
    if (strcmp(apply_to, "quorum_queues") == 0) return strcmp(type, "quorum") == 0;
    if (strcmp(apply_to, "streams") == 0) return strcmp(type, "stream") == 0;
    return false;
}

/* The dead-letter exchanges of the policies in force on a queue (all of
 * the highest priority that match, when several tie), into from[]. */
static size_t rp_policy_dlx(const rp_pols *p, const char *name, const char *type,
                            const char **from, size_t cap) {
    bool any = false;
    int64_t best = 0;
    for (size_t i = 0; i < p->n; i++) {
        bool m = false;
        if (!rp_applies(p->v[i].apply_to, type) ||
            rp_match_name(p->v[i].re, name, &m) != RP_OK || !m)
            continue;
        if (!any || p->v[i].priority > best) best = p->v[i].priority;
        any = true;
    }
    size_t n = 0;
    for (size_t i = 0; any && i < p->n && n < cap; i++) {
        bool m = false;
        if (p->v[i].priority != best || p->v[i].dlx == NULL ||
            !rp_applies(p->v[i].apply_to, type) ||
            rp_match_name(p->v[i].re, name, &m) != RP_OK || !m)
            continue;
        from[n++] = p->v[i].dlx;
    }
    return n;
}

static rp_status rp_note_dlx(const rp_mgmt_dlx_options *o, const rp_pols *pols, json_t *q,
                             rp_names *dlx, rp_mgmt_dlx_stats *s) {
    const char *name = json_string_value(json_object_get(q, "name"));
    if (name == NULL || rp_skipped(o, name)) return RP_OK;
    bool owned = false;
    if (rp_match_name(o->owned_pattern, name, &owned) != RP_OK || !owned) return RP_OK;
    s->owned++;
    const char *from[6] = {
        json_string_value(json_object_get(json_object_get(q, "arguments"),
                                          "x-dead-letter-exchange")),
        json_string_value(json_object_get(json_object_get(q, "effective_policy_definition"),
                                          "dead-letter-exchange")),
    };
    size_t nf = 2 + rp_policy_dlx(pols, name, json_string_value(json_object_get(q, "type")),
                                  from + 2, 4);
    bool any = false, unbindable = false;
    for (size_t i = 0; i < nf; i++) {
        if (from[i] == NULL) continue;
        any = true;
        if (from[i][0] == '\0') {
            unbindable = true;
            continue;
        }
        rp_status st = rp_names_add(dlx, from[i]);
        if (st != RP_OK) return st;
    }
    if (any) s->with_dlx++;
    if (unbindable && s->unbindable < RP_MGMT_DLX_NAMED)
        snprintf(s->unbindable_names[s->unbindable], sizeof s->unbindable_names[0], "%s", name);
    if (unbindable) s->unbindable++;
    return RP_OK;
}

/* Step 1: the dead-letter exchanges of the owned queues. */
static rp_status rp_read_dlx(rp_mgmt_broker *b, const rp_mgmt_dlx_options *o, const char *vh,
                             rp_names *dlx, rp_mgmt_dlx_stats *s) {
    rp_pols pols = {0};
    rp_status st = rp_read_policies(b, vh, &pols);
    for (size_t page = 1; st == RP_OK; page++) {
        char path[512];
        snprintf(path, sizeof path,
                 "/api/queues/%s?page=%zu&page_size=%d&columns=name,type,arguments,"
                 "effective_policy_definition",
                 vh, page, RP_DLX_PAGE_SIZE);
        json_t *root = NULL;
        st = rp_get_json(b, path, &root);
        if (st != RP_OK) break;
        json_t *items = json_object_get(root, "items");
        json_int_t count = json_integer_value(json_object_get(root, "page_count"));
        if (!json_is_array(items)) st = RP_ERR_INTERNAL;
        size_t i;
        json_t *q;
        json_array_foreach(items, i, q) {
            st = rp_note_dlx(o, &pols, q, dlx, s);
            if (st != RP_OK) break;
        }
        json_decref(root);
        if (st != RP_OK || (json_int_t)page >= count) break;
    }
    rp_pols_cleanup(&pols);
    return st;
}

/* A wanted binding: source exchange, routing key, arguments. */
typedef struct rp_bind {
    const char *source;
    const char *key;
    json_t *args;
    bool seen; /* the tap has it already */
} rp_bind;

typedef struct rp_binds {
    rp_bind *v;
    size_t n, cap;
    json_t *keep; /* owns the JSON the entries point into */
} rp_binds;

static bool rp_args_equal(json_t *a, json_t *b) {
    bool ea = a == NULL || (json_is_object(a) && json_object_size(a) == 0);
    bool eb = b == NULL || (json_is_object(b) && json_object_size(b) == 0);
    if (ea || eb) return ea && eb;
    return json_equal(a, b);
}

static rp_bind *rp_binds_find(rp_binds *w, const char *src, const char *key, json_t *args) {
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->v[i].source, src) == 0 && strcmp(w->v[i].key, key) == 0 &&
            rp_args_equal(w->v[i].args, args))
            return &w->v[i];
    return NULL;
}

static rp_status rp_binds_add(rp_binds *w, const char *src, const char *key, json_t *args) {
    if (rp_binds_find(w, src, key, args)) return RP_OK;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        rp_bind *v = realloc(w->v, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        w->v = v;
        w->cap = cap;
    }
    w->v[w->n++] = (rp_bind){src, key, args, false};
    return RP_OK;
}

/* The most exchanges followed from the dead-letter exchanges (a bound on
 * a hostile or runaway topology; past it the rest is not followed). */
#define RP_DLX_MAX_EXCHANGES 1024

/* Step 2: the routes of one dead-letter exchange to queues. An
 * exchange-to-exchange binding from it joins the exchange at its other end
 * to the set walked (xs, deduplicated: cycles end), so that routes at any
 * depth are followed: a dead letter that goes X -> E -> queue reaches the
 * tap through the tap's copy of E's binding to that queue. */
static rp_status rp_read_routes(rp_mgmt_broker *b, const rp_mgmt_dlx_options *o, const char *vh,
                                const char *x, rp_binds *w, rp_names *xs) {
    char *xe = rp_mgmt_url_encode(x);
    if (xe == NULL) return RP_ERR_NOMEM;
    char path[1024];
    snprintf(path, sizeof path, "/api/exchanges/%s/%s/bindings/source", vh, xe);
    free(xe);
    json_t *arr = NULL;
    rp_status st = rp_get_json(b, path, &arr);
    if (st == RP_ERR_NOT_FOUND) return RP_OK; /* the exchange is gone: nothing routes */
    if (st != RP_OK) return st;
    if (json_array_append_new(w->keep, arr) != 0) {
        json_decref(arr);
        return RP_ERR_NOMEM;
    }
    if (!json_is_array(arr)) return RP_ERR_INTERNAL;
    size_t i;
    json_t *bd;
    json_array_foreach(arr, i, bd) {
        const char *dtype = json_string_value(json_object_get(bd, "destination_type"));
        const char *dest = json_string_value(json_object_get(bd, "destination"));
        const char *key = json_string_value(json_object_get(bd, "routing_key"));
        if (dtype != NULL && dest != NULL && dest[0] != '\0' && strcmp(dtype, "exchange") == 0) {
            if (xs->n < RP_DLX_MAX_EXCHANGES) {
                st = rp_names_add(xs, dest);
                if (st != RP_OK) return st;
            }
            continue;
        }
        if (dtype == NULL || dest == NULL || key == NULL || strcmp(dtype, "queue") != 0 ||
            strcmp(dest, o->tap_queue) == 0)
            continue;
        st = rp_binds_add(w, x, key, json_object_get(bd, "arguments"));
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

static rp_status rp_write(rp_mgmt_broker *b, rp_http_method m, const char *path, json_t *body,
                          rp_mgmt_dlx_stats *s) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && text == NULL) return RP_ERR_NOMEM;
    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, m, path, text, text ? strlen(text) : 0, &r);
    rp_mgmt_response_cleanup(&r);
    free(text);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) s->failed++;
    return RP_OK;
}

rp_status rp_mgmt_dlx_reconcile(rp_mgmt_broker *b, const rp_mgmt_dlx_options *o,
                                rp_mgmt_dlx_stats *stats) {
    rp_mgmt_dlx_stats s = {0};
    if (stats) *stats = s;
    if (b == NULL || o == NULL || o->vhost == NULL || o->tap_queue == NULL ||
        o->owned_pattern == NULL)
        return RP_ERR_INVALID;
    rp_names dlx = {0};
    rp_binds want = {0};
    json_t *have = NULL;
    char *vh = rp_mgmt_url_encode(o->vhost);
    char *tq = rp_mgmt_url_encode(o->tap_queue);
    want.keep = json_array();
    rp_status st = vh && tq && want.keep ? RP_OK : RP_ERR_NOMEM;
    if (st == RP_OK) st = rp_read_dlx(b, o, vh, &dlx, &s);
    /* dlx grows as exchange-to-exchange bindings are found. */
    for (size_t i = 0; st == RP_OK && i < dlx.n; i++)
        st = rp_read_routes(b, o, vh, dlx.v[i], &want, &dlx);
    s.exchanges = dlx.n;
    s.wanted = want.n;
    char path[2048];
    if (st == RP_OK) {
        snprintf(path, sizeof path, "/api/queues/%s/%s/bindings", vh, tq);
        st = rp_get_json(b, path, &have);
        if (st == RP_ERR_NOT_FOUND) {
            /* Not declared yet (the connection declares it): nothing to
             * bind to; the reconcile at the connection's start does it. */
            s.tap_missing = true;
            st = RP_OK;
            have = json_array();
            if (have == NULL) st = RP_ERR_NOMEM;
        }
        if (st == RP_OK && !json_is_array(have)) st = RP_ERR_INTERNAL;
    }
    if (s.tap_missing) want.n = 0; /* write nothing */
    /* Remove what is no longer wanted; mark what is there. */
    size_t i;
    json_t *bd;
    if (st == RP_OK) {
        json_array_foreach(have, i, bd) {
            const char *src = json_string_value(json_object_get(bd, "source"));
            const char *key = json_string_value(json_object_get(bd, "routing_key"));
            const char *pk = json_string_value(json_object_get(bd, "properties_key"));
            if (src == NULL || key == NULL || src[0] == '\0') continue; /* the default exchange */
            rp_bind *w = rp_binds_find(&want, src, key, json_object_get(bd, "arguments"));
            if (w) {
                w->seen = true;
                continue;
            }
            if (pk == NULL) continue;
            s.removed++;
            if (o->dry_run) continue;
            char *xe = rp_mgmt_url_encode(src), *pke = rp_mgmt_url_encode(pk);
            if (xe && pke) {
                snprintf(path, sizeof path, "/api/bindings/%s/e/%s/q/%s/%s", vh, xe, tq, pke);
                st = rp_write(b, RP_HTTP_DELETE, path, NULL, &s);
            } else {
                st = RP_ERR_NOMEM;
            }
            free(xe);
            free(pke);
            if (st != RP_OK) break;
        }
    }
    for (size_t k = 0; st == RP_OK && k < want.n; k++) {
        if (want.v[k].seen) continue;
        s.added++;
        if (o->dry_run) continue;
        char *xe = rp_mgmt_url_encode(want.v[k].source);
        json_t *args = json_is_object(want.v[k].args) ? json_incref(want.v[k].args)
                                                      : json_object();
        json_t *body = json_pack("{s:s, s:o}", "routing_key", want.v[k].key, "arguments", args);
        if (xe && body) {
            snprintf(path, sizeof path, "/api/bindings/%s/e/%s/q/%s", vh, xe, tq);
            st = rp_write(b, RP_HTTP_POST, path, body, &s);
        } else {
            st = RP_ERR_NOMEM;
        }
        free(xe);
        json_decref(body);
    }
    json_decref(have);
    json_decref(want.keep);
    free(want.v);
    rp_names_cleanup(&dlx);
    free(vh);
    free(tq);
    if (stats) *stats = s;
    return st;
}

/* ---- the tap's bind port ---------------------------------------------------------- */

static rp_status rp_dlx_tap_reconcile(void *self, const rp_config *cfg, const char *vhost,
                                      rp_tap_bind_stats *out, const char **reason) {
    rp_mgmt_broker *b = self;
    const char *skip[] = {cfg->broker.control_queue};
    rp_mgmt_dlx_options o = {
        .vhost = vhost,
        .tap_queue = cfg->broker.tap_queue,
        .owned_pattern = cfg->reap.owned_queue_pattern.code,
        .skip = skip,
        .n_skip = 1,
    };
    rp_mgmt_dlx_stats s;
    memset(&s, 0, sizeof s);
    rp_status st = rp_mgmt_dlx_reconcile(b, &o, &s);
    *out = (rp_tap_bind_stats){.exchanges = s.exchanges,
                               .added = s.added,
                               .removed = s.removed,
                               .failed = s.failed,
                               .unbindable = s.unbindable,
                               .tap_missing = s.tap_missing};
    *reason = rp_mgmt_broker_last_error(b);
    return st;
}

void rp_mgmt_dlx_tap_bind_port(rp_mgmt_broker *b, rp_tap_bind_port *out) {
    *out = (rp_tap_bind_port){.self = b, .reconcile = rp_dlx_tap_reconcile};
}
