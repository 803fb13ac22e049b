#include "rp_mgmt_parse.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rp_mgmt_page_init(rp_mgmt_page *p) { memset(p, 0, sizeof *p); }

void rp_mgmt_page_cleanup(rp_mgmt_page *p) {
    if (p == NULL) return;
    if (p->root) json_decref(p->root);
    free(p->facts);
    free(p->extra);
    memset(p, 0, sizeof *p);
}

/* Empties the page but keeps its arrays for the next parse. */
static void rp_page_reset(rp_mgmt_page *p) {
    if (p->root) json_decref(p->root);
    p->root = NULL;
    p->n = 0;
    p->page = p->page_count = 0;
}

bool rp_mgmt_json_int(const json_t *v, int64_t *out) {
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d < -9.2e18 || d > 9.2e18 || d != (double)(int64_t)d) return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

static void rp_set_err(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static rp_status rp_grow(rp_mgmt_page *p, size_t want) {
    if (want <= p->cap) return RP_OK;
    size_t cap = p->cap ? p->cap : 64;
    while (cap < want) cap *= 2;
    rp_queue_facts *f = realloc(p->facts, cap * sizeof *f);
    if (f == NULL) return RP_ERR_NOMEM;
    p->facts = f;
    rp_mgmt_queue_extra *e = realloc(p->extra, cap * sizeof *e);
    if (e == NULL) return RP_ERR_NOMEM;
    p->extra = e;
    p->cap = cap;
    return RP_OK;
}

/* An object, or NULL for anything else; *present says whether a non-null
 * value was there at all. */
static const json_t *rp_object_or_null(const json_t *v, bool *present) {
    *present = v != NULL && !json_is_null(v);
    if (json_is_object(v)) return v;
    return NULL;
}

/* A quorum queue's delivery limit and dead-letter exchange, from its
 * arguments (x-delivery-limit, x-dead-letter-exchange) and its effective
 * policy definition (delivery-limit, dead-letter-exchange; operator
 * policies included). The smaller positive limit is the one the broker
 * enforces; zero or a negative value sets none (RabbitMQ 4: negative
 * disables the default). Known only when the effective definition was
 * reported. */
static void rp_delivery_limit(rp_queue_facts *f, rp_mgmt_queue_extra *x) {
    if (f->type != RP_QUEUE_TYPE_QUORUM || !x->effective_known) return;
    const json_t *from[2][2] = {{x->arguments, NULL}, {x->effective, NULL}};
    static const char *const limit_key[2] = {"x-delivery-limit", "delivery-limit"};
    static const char *const dlx_key[2] = {"x-dead-letter-exchange", "dead-letter-exchange"};
    int64_t limit = 0;
    for (int i = 0; i < 2; i++) {
        const json_t *o = from[i][0];
        if (o == NULL) continue;
        int64_t v;
        if (rp_mgmt_json_int(json_object_get(o, limit_key[i]), &v)) {
            x->delivery_limit_set = true;
            if (v > 0 && (limit == 0 || v < limit)) limit = v;
        }
        if (json_is_string(json_object_get(o, dlx_key[i]))) f->dead_letter_exchange = true;
    }
    f->delivery_limit_known = true;
    f->delivery_limit = limit;
}

/* The dead-letter exchange and routing key a queue names (issue 14 item
 * 1), any queue type: the argument wins over the effective policy, as on
 * the broker. A string value only; pointers into the page's JSON. */
static void rp_dead_letter_route(rp_queue_facts *f, const rp_mgmt_queue_extra *x) {
    const json_t *from[2] = {x->arguments, x->effective};
    static const char *const dlx_key[2] = {"x-dead-letter-exchange", "dead-letter-exchange"};
    static const char *const rk_key[2] = {"x-dead-letter-routing-key",
                                          "dead-letter-routing-key"};
    for (int i = 0; i < 2; i++) {
        if (from[i] == NULL) continue;
        if (f->dlx_name == NULL) f->dlx_name = json_string_value(json_object_get(from[i], dlx_key[i]));
        if (f->dlx_routing_key == NULL)
            f->dlx_routing_key = json_string_value(json_object_get(from[i], rk_key[i]));
    }
}

static rp_status rp_item(const json_t *item, rp_queue_facts *f, rp_mgmt_queue_extra *x,
                         char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    memset(x, 0, sizeof *x);
    if (!json_is_object(item)) {
        rp_set_err(err, errlen, "a queue item is not a JSON object");
        return RP_ERR_INVALID;
    }
    f->name = json_string_value(json_object_get(item, "name"));
    f->vhost = json_string_value(json_object_get(item, "vhost"));
    if (f->name == NULL || f->vhost == NULL) {
        rp_set_err(err, errlen, "a queue item has no name or no vhost");
        return RP_ERR_INVALID;
    }
    const char *type = json_string_value(json_object_get(item, "type"));
    f->type = type ? rp_queue_type_parse(type) : RP_QUEUE_TYPE_UNKNOWN;

    int64_t ready = 0, unacked = 0;
    bool have_ready = rp_mgmt_json_int(json_object_get(item, "messages_ready"), &ready);
    bool have_unacked = rp_mgmt_json_int(json_object_get(item, "messages_unacknowledged"), &unacked);
    x->counts_known = have_ready && have_unacked;
    f->counts_known = x->counts_known;
    f->ready = x->counts_known ? ready : 0;
    f->unacked = x->counts_known ? unacked : 0;

    /* Issue 18 item 3: the cumulative publish and ack counters. The broker
     * leaves message_stats out until the queue saw a message, and a counter
     * out until it first moved: both read 0 then. A message_stats that is
     * not an object (or a counter that is not a count) says nothing. */
    json_t *ms = json_object_get(item, "message_stats");
    f->stats_known = f->counts_known && (ms == NULL || json_is_object(ms));
    if (f->stats_known && ms != NULL) {
        json_t *pub = json_object_get(ms, "publish"), *ack = json_object_get(ms, "ack");
        if ((pub != NULL && !rp_mgmt_json_int(pub, &f->published_total)) ||
            (ack != NULL && !rp_mgmt_json_int(ack, &f->acked_total)))
            f->stats_known = false;
        if (f->published_total < 0 || f->acked_total < 0) f->stats_known = false;
    }
    if (!f->stats_known) f->published_total = f->acked_total = 0;

    int64_t consumers = 0;
    f->consumers_known = rp_mgmt_json_int(json_object_get(item, "consumers"), &consumers);
    f->consumers = f->consumers_known ? consumers : 0;

    int64_t ts = 0;
    f->head_timestamp_known = rp_mgmt_json_int(json_object_get(item, "head_message_timestamp"), &ts);
    f->head_timestamp = f->head_timestamp_known ? ts : 0;

    json_t *pol = json_object_get(item, "policy");
    x->policy_known = pol != NULL;
    x->policy = json_string_value(pol);
    if (x->policy && x->policy[0] == '\0') x->policy = NULL;
    x->operator_policy = json_string_value(json_object_get(item, "operator_policy"));
    if (x->operator_policy && x->operator_policy[0] == '\0') x->operator_policy = NULL;

    bool present = false;
    json_t *eff = json_object_get(item, "effective_policy_definition");
    x->effective = rp_object_or_null(eff, &present);
    /* An empty definition may come as [] (Erlang's empty list): known. */
    x->effective_known = x->effective != NULL || (json_is_array(eff) && json_array_size(eff) == 0);
    json_t *args = json_object_get(item, "arguments");
    x->arguments = rp_object_or_null(args, &present);
    rp_delivery_limit(f, x);
    rp_dead_letter_route(f, x);
    return RP_OK;
}

static json_t *rp_load(const char *body, size_t len, char *err, size_t errlen) {
    if (body == NULL) {
        rp_set_err(err, errlen, "no body");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (root == NULL && err && errlen)
        snprintf(err, errlen, "the answer is not JSON (line %d: %s)", je.line, je.text);
    return root;
}

rp_status rp_mgmt_parse_page(const char *body, size_t len, rp_mgmt_page *p, char *err,
                             size_t errlen) {
    rp_page_reset(p);
    json_t *root = rp_load(body, len, err, errlen);
    if (root == NULL) return RP_ERR_INVALID;
    p->root = root;
    json_t *items = json_object_get(root, "items");
    int64_t page = 0, count = 0;
    if (!json_is_array(items) || !rp_mgmt_json_int(json_object_get(root, "page"), &page) ||
        !rp_mgmt_json_int(json_object_get(root, "page_count"), &count) || page < 0 || count < 0) {
        rp_set_err(err, errlen, "the answer is not a page of queues (items, page, page_count)");
        rp_page_reset(p);
        return RP_ERR_INVALID;
    }
    p->page = (size_t)page;
    p->page_count = (size_t)count;
    size_t n = json_array_size(items);
    rp_status st = rp_grow(p, n);
    if (st != RP_OK) {
        rp_page_reset(p);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        st = rp_item(json_array_get(items, i), &p->facts[i], &p->extra[i], err, errlen);
        if (st != RP_OK) {
            rp_page_reset(p);
            return st;
        }
    }
    p->n = n;
    return RP_OK;
}

rp_status rp_mgmt_parse_queue(const char *body, size_t len, rp_mgmt_page *p, char *err,
                              size_t errlen) {
    rp_page_reset(p);
    json_t *root = rp_load(body, len, err, errlen);
    if (root == NULL) return RP_ERR_INVALID;
    p->root = root;
    rp_status st = rp_grow(p, 1);
    if (st == RP_OK) st = rp_item(root, &p->facts[0], &p->extra[0], err, errlen);
    if (st != RP_OK) {
        rp_page_reset(p);
        return st;
    }
    p->n = 1;
    p->page = p->page_count = 1;
    return RP_OK;
}

/* ---- errors ---------------------------------------------------------------- */

static const struct {
    const char *entity;
    char c;
} rp_entities[] = {{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&#39;", '\''},
                   {"&#x27;", '\''}, {"&apos;", '\''}};

char *rp_mgmt_error_reason(const char *body, size_t len, char *buf, size_t cap) {
    if (buf == NULL || cap == 0) return buf;
    buf[0] = '\0';
    json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *src = NULL;
    if (json_is_object(root)) {
        src = json_string_value(json_object_get(root, "reason"));
        if (src == NULL || *src == '\0') src = json_string_value(json_object_get(root, "error"));
    }
    if (src == NULL || *src == '\0') src = "(no reason given)";
    size_t o = 0;
    for (const char *s = src; *s && o + 1 < cap;) {
        bool done = false;
        if (*s == '&') {
            for (size_t i = 0; i < RP_ARRAY_LEN(rp_entities); i++) {
                size_t el = strlen(rp_entities[i].entity);
                if (strncmp(s, rp_entities[i].entity, el) == 0) {
                    buf[o++] = rp_entities[i].c;
                    s += el;
                    done = true;
                    break;
                }
            }
        }
        if (done) continue;
        unsigned char c = (unsigned char)*s++;
        buf[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    buf[o] = '\0';
    /* Trim and squeeze the spaces the newlines left. */
    size_t w = 0;
    for (size_t r = 0; r < o; r++) {
        if (buf[r] == ' ' && (w == 0 || buf[w - 1] == ' ')) continue;
        buf[w++] = buf[r];
    }
    while (w > 0 && buf[w - 1] == ' ') w--;
    buf[w] = '\0';
    /* A reason of nothing but control characters and spaces leaves
     * nothing to print (found by fuzz_mgmt_parse): say that none was given. */
    if (w == 0) snprintf(buf, cap, "%s", "(no reason given)");
    if (root) json_decref(root);
    return buf;
}

bool rp_mgmt_is_error(const char *body, size_t len, const char *error_code) {
    json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *e = json_is_object(root) ? json_string_value(json_object_get(root, "error")) : NULL;
    bool is = e != NULL && error_code != NULL && strcmp(e, error_code) == 0;
    if (root) json_decref(root);
    return is;
}

/* ---- versions -------------------------------------------------------------- */

bool rp_mgmt_version_parse(const char *s, rp_mgmt_version *out) {
    memset(out, 0, sizeof *out);
    if (s == NULL || !isdigit((unsigned char)s[0])) return false;
    snprintf(out->text, sizeof out->text, "%s", s);
    int parts[3] = {0, 0, 0};
    const char *p = s;
    for (int i = 0; i < 3; i++) {
        if (!isdigit((unsigned char)*p)) break;
        long v = 0;
        while (isdigit((unsigned char)*p)) {
            if (v < 100000) v = v * 10 + (*p - '0');
            p++;
        }
        parts[i] = (int)v;
        if (*p != '.') break;
        p++;
    }
    out->major = parts[0];
    out->minor = parts[1];
    out->patch = parts[2];
    return true;
}

rp_status rp_mgmt_parse_overview_version(const char *body, size_t len, rp_mgmt_version *out) {
    memset(out, 0, sizeof *out);
    json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *v = NULL;
    if (json_is_object(root)) {
        v = json_string_value(json_object_get(root, "rabbitmq_version"));
        if (v == NULL) v = json_string_value(json_object_get(root, "product_version"));
    }
    bool ok = rp_mgmt_version_parse(v, out);
    if (root) json_decref(root);
    return ok ? RP_OK : RP_ERR_INVALID;
}

bool rp_mgmt_version_at_least(const rp_mgmt_version *v, int major, int minor) {
    return v->major > major || (v->major == major && v->minor >= minor);
}

/* ---- the effective configuration ------------------------------------------ */

/* Finds {consumer_timeout,VALUE} inside the top-level {rabbit,[...]}
 * element of an io_lib "~p" rendering. */
rp_status rp_mgmt_parse_effective_timeout(const char *text, bool *found, bool *enabled,
                                          int64_t *ms) {
    *found = *enabled = false;
    *ms = 0;
    if (text == NULL) return RP_ERR_INVALID;
    const char *sec = NULL;
    for (const char *p = text; (p = strstr(p, "{rabbit,")) != NULL; p++) {
        /* Top level: the first element after "[", or after a newline and
         * one space. */
        if ((p > text && p[-1] == '[') || (p >= text + 2 && p[-1] == ' ' && p[-2] == '\n')) {
            sec = p;
            break;
        }
    }
    if (sec == NULL) return RP_ERR_INVALID;
    const char *end = strstr(sec + 1, "\n {");
    const char *key = strstr(sec, "{consumer_timeout,");
    if (key == NULL || (end != NULL && key > end)) return RP_OK; /* not set: none */
    *found = true;
    const char *v = key + strlen("{consumer_timeout,");
    while (*v == ' ' || *v == '\n') v++;
    if (*v >= '0' && *v <= '9') {
        char *stop = NULL;
        long long n = strtoll(v, &stop, 10);
        if (stop == NULL || *stop != '}' || n <= 0) return RP_ERR_INVALID;
        *enabled = true;
        *ms = (int64_t)n;
        return RP_OK;
    }
    /* undefined, infinity, false: the broker-wide timeout is off. */
    return RP_OK;
}
