/* The broker port's list_channels over the management API
 * (rp_mgmt_channels.h). */
#include "rp_mgmt_channels.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One holding channel, its strings and queues owned here. */
typedef struct rp__mchan {
    char *vhost, *connection, *channel, *user;
    int64_t unacked, acked;
    char **queues;
    size_t nq, capq;
} rp__mchan;

struct rp_mgmt_channels {
    rp__mchan *v;
    size_t n, cap;
    bool sorted;
    rp_channel_sample *view; /* what rp_mgmt_channels_view lends */
};

rp_mgmt_channels *rp_mgmt_channels_new(void) { return calloc(1, sizeof(rp_mgmt_channels)); }

void rp_mgmt_channels_free(rp_mgmt_channels *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < c->n; i++) {
        rp__mchan *m = &c->v[i];
        free(m->vhost);
        free(m->connection);
        free(m->channel);
        free(m->user);
        for (size_t q = 0; q < m->nq; q++) free(m->queues[q]);
        free(m->queues);
    }
    free(c->v);
    free(c->view);
    free(c);
}

static char *rp_dup(const char *s) { return s ? strdup(s) : NULL; }

bool rp_mgmt_sees_every_channel(const char *body, size_t len) {
    json_t *root = json_loadb(body ? body : "", len, 0, NULL);
    if (root == NULL) return false;
    bool yes = false;
    json_t *tags = json_object_get(root, "tags");
    if (json_is_array(tags)) {
        size_t i;
        json_t *t;
        json_array_foreach(tags, i, t) {
            const char *s = json_string_value(t);
            if (s && (strcmp(s, "administrator") == 0 || strcmp(s, "monitoring") == 0)) yes = true;
        }
    } else if (json_is_string(tags)) {
        const char *s = json_string_value(tags);
        size_t n = strlen(s);
        for (size_t a = 0; a <= n && !yes;) {
            size_t b = a;
            while (b < n && s[b] != ',') b++;
            size_t w = b - a;
            while (w > 0 && s[a] == ' ') a++, w--;
            while (w > 0 && s[a + w - 1] == ' ') w--;
            if ((w == 13 && strncmp(s + a, "administrator", 13) == 0) ||
                (w == 10 && strncmp(s + a, "monitoring", 10) == 0))
                yes = true;
            a = b + 1;
        }
    }
    json_decref(root);
    return yes;
}

static int64_t rp_int(const json_t *o, const char *key, bool *known) {
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) {
        if (known) *known = true;
        return json_integer_value(v);
    }
    if (json_is_real(v)) {
        if (known) *known = true;
        return (int64_t)json_real_value(v);
    }
    if (known) *known = false;
    return 0;
}

static rp_status rp_add_chan(rp_mgmt_channels *c, const json_t *it) {
    bool known = false;
    int64_t unacked = rp_int(it, "messages_unacknowledged", &known);
    const char *name = json_string_value(json_object_get(it, "name"));
    if (!known || unacked <= 0 || name == NULL) return RP_OK; /* not holding (or not reported yet) */
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        rp__mchan *v = realloc(c->v, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        c->v = v;
        c->cap = cap;
    }
    rp__mchan *m = &c->v[c->n];
    memset(m, 0, sizeof *m);
    const char *vhost = json_string_value(json_object_get(it, "vhost"));
    const char *user = json_string_value(json_object_get(it, "user"));
    const char *conn =
        json_string_value(json_object_get(json_object_get(it, "connection_details"), "name"));
    m->vhost = rp_dup(vhost ? vhost : "/");
    m->channel = rp_dup(name);
    m->connection = rp_dup(conn);
    m->user = rp_dup(user);
    m->unacked = unacked;
    m->acked = rp_int(json_object_get(it, "message_stats"), "ack", NULL);
    if (m->vhost == NULL || m->channel == NULL || (conn && m->connection == NULL) ||
        (user && m->user == NULL)) {
        free(m->vhost);
        free(m->channel);
        free(m->connection);
        free(m->user);
        return RP_ERR_NOMEM;
    }
    c->n++;
    c->sorted = false;
    return RP_OK;
}

rp_status rp_mgmt_channels_add_page(rp_mgmt_channels *c, const char *body, size_t len,
                                    size_t *page_count, char *err, size_t cap) {
    *page_count = 0;
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", len, 0, &je);
    if (root == NULL) {
        snprintf(err, cap, "not JSON: %s", je.text);
        return RP_ERR_INTERNAL;
    }
    json_t *items = root;
    *page_count = 1;
    if (json_is_object(root)) {
        items = json_object_get(root, "items");
        bool known = false;
        int64_t pc = rp_int(root, "page_count", &known);
        *page_count = known && pc > 0 ? (size_t)pc : 0;
    }
    if (!json_is_array(items)) {
        snprintf(err, cap, "no list of channels in the answer");
        json_decref(root);
        return RP_ERR_INTERNAL;
    }
    rp_status st = RP_OK;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        if (st == RP_OK && json_is_object(it)) st = rp_add_chan(c, it);
    }
    json_decref(root);
    return st;
}

static int rp_cmp_chan(const void *a, const void *b) {
    const rp__mchan *x = a, *y = b;
    return strcmp(x->channel, y->channel);
}

static rp__mchan *rp_find_chan(rp_mgmt_channels *c, const char *name) {
    if (!c->sorted) {
        if (c->n > 1) qsort(c->v, c->n, sizeof *c->v, rp_cmp_chan);
        c->sorted = true;
    }
    rp__mchan probe = {.channel = (char *)name};
    return c->n ? bsearch(&probe, c->v, c->n, sizeof *c->v, rp_cmp_chan) : NULL;
}

static rp_status rp_add_queue(rp__mchan *m, const char *queue) {
    for (size_t i = 0; i < m->nq; i++)
        if (strcmp(m->queues[i], queue) == 0) return RP_OK;
    if (m->nq == m->capq) {
        size_t cap = m->capq ? m->capq * 2 : 4;
        char **q = realloc(m->queues, cap * sizeof *q);
        if (q == NULL) return RP_ERR_NOMEM;
        m->queues = q;
        m->capq = cap;
    }
    m->queues[m->nq] = strdup(queue);
    if (m->queues[m->nq] == NULL) return RP_ERR_NOMEM;
    m->nq++;
    return RP_OK;
}

rp_status rp_mgmt_channels_add_consumers(rp_mgmt_channels *c, const char *body, size_t len,
                                         char *err, size_t cap) {
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", len, 0, &je);
    if (root == NULL) {
        snprintf(err, cap, "not JSON: %s", je.text);
        return RP_ERR_INTERNAL;
    }
    json_t *items = json_is_object(root) ? json_object_get(root, "items") : root;
    if (!json_is_array(items)) {
        snprintf(err, cap, "no list of consumers in the answer");
        json_decref(root);
        return RP_ERR_INTERNAL;
    }
    rp_status st = RP_OK;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        if (st != RP_OK) break;
        const json_t *q = json_object_get(it, "queue");
        const char *queue = json_string_value(json_object_get(q, "name"));
        const char *vhost = json_string_value(json_object_get(q, "vhost"));
        const char *ch =
            json_string_value(json_object_get(json_object_get(it, "channel_details"), "name"));
        if (queue == NULL || ch == NULL) continue;
        rp__mchan *m = rp_find_chan(c, ch);
        /* A channel's consumers are on its own vhost. */
        if (m == NULL || (vhost && strcmp(vhost, m->vhost) != 0)) continue;
        st = rp_add_queue(m, queue);
    }
    json_decref(root);
    return st;
}

void rp_mgmt_channels_view(rp_mgmt_channels *c, rp_channel_list *out) {
    out->channels = NULL;
    out->n = 0;
    free(c->view);
    c->view = c->n ? calloc(c->n, sizeof *c->view) : NULL;
    if (c->view == NULL) return;
    for (size_t i = 0; i < c->n; i++) {
        rp__mchan *m = &c->v[i];
        c->view[i] = (rp_channel_sample){
            .vhost = m->vhost,
            .connection = m->connection,
            .channel = m->channel,
            .user = m->user,
            .unacked = m->unacked,
            .acked_total = m->acked,
            .queues = (const char *const *)m->queues,
            .n_queues = m->nq,
        };
    }
    out->channels = c->view;
    out->n = c->n;
}

#define RP_CHANNEL_COLUMNS                                                                      \
    "name,vhost,user,connection_details.name,messages_unacknowledged,message_stats.ack"

rp_status rp_mgmt_broker_list_channels(void *self, rp_channel_list *out) {
    rp_mgmt_broker *b = self;
    out->channels = NULL;
    out->n = 0;
    rp_mgmt_channels **slot = rp__mgmt_broker_channels_slot(b);
    rp_mgmt_channels_free(*slot);
    *slot = rp_mgmt_channels_new();
    rp_mgmt_channels *c = *slot;
    if (c == NULL) return RP_ERR_NOMEM;

    rp_mgmt_response r;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, "/api/whoami", NULL, 0, &r);
    if (st == RP_OK && !rp_mgmt_sees_every_channel(r.body, r.body_len)) st = RP_ERR_FORBIDDEN;
    rp_mgmt_response_cleanup(&r);
    if (st != RP_OK) return st == RP_ERR_NOT_FOUND ? RP_ERR_INTERNAL : st;

    char err[200] = "";
    for (size_t page = 1;; page++) {
        char path[256];
        snprintf(path, sizeof path, "/api/channels?page=%zu&page_size=%d&columns=%s", page,
                 RP_MGMT_PAGE_SIZE_MAX, RP_CHANNEL_COLUMNS);
        st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
        if (st == RP_ERR_INTERNAL && r.http_status == 400 &&
            rp_mgmt_is_error(r.body, r.body_len, "page_out_of_range")) {
            rp_mgmt_response_cleanup(&r); /* the listing shrank: it ended */
            break;
        }
        size_t pages = 0;
        if (st == RP_OK) st = rp_mgmt_channels_add_page(c, r.body, r.body_len, &pages, err,
                                                        sizeof err);
        rp_mgmt_response_cleanup(&r);
        if (st != RP_OK) return st == RP_ERR_NOT_FOUND ? RP_ERR_INTERNAL : st;
        if (page >= pages) break;
    }
    if (c->n > 0) {
        st = rp_mgmt_broker_request(
            b, RP_HTTP_GET, "/api/consumers?columns=queue.name,queue.vhost,channel_details.name",
            NULL, 0, &r);
        if (st == RP_OK) st = rp_mgmt_channels_add_consumers(c, r.body, r.body_len, err,
                                                             sizeof err);
        rp_mgmt_response_cleanup(&r);
        if (st != RP_OK) return st == RP_ERR_NOT_FOUND ? RP_ERR_INTERNAL : st;
    }
    rp_mgmt_channels_view(c, out);
    if (c->n > 0 && out->channels == NULL) return RP_ERR_NOMEM;
    return RP_OK;
}
