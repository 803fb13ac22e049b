/* Dead-letter routes the tap cannot follow (issue 14 item 1), judged after
 * the listing (rp_pass_internal.h): an owned queue whose dead-letter
 * exchange is the default exchange "" (which cannot be bound), a named
 * exchange that does not exist, or one that exists with nothing bound to
 * it but reaper's own queues (the broker drops the dead letters, and the
 * tap, which copies the dead-letter queues' bindings, gets none), is
 * DEAD_LETTER / SURFACED on the queue itself, one sighting that clears once a pass finds the route fixed; the
 * queue a route through the default exchange names is backfilled like an
 * owned dead-letter queue, so its dead letters are parked at each sweep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_pass_internal.h"

static char *rp_dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

rp_status rp__pass_add_route(rp__pass *p, const rp_queue_facts *q) {
    if (!q->owned || q->is_dead_letter_queue || q->type == RP_QUEUE_TYPE_STREAM ||
        q->dlx_name == NULL || q->vhost == NULL || q->name == NULL)
        return RP_OK;
    for (size_t i = 0; i < p->n_routes; i++) /* listed twice: once */
        if (strcmp(p->routes[i].vhost, q->vhost) == 0 && strcmp(p->routes[i].queue, q->name) == 0)
            return RP_OK;
    if (p->n_routes == p->cap_routes) {
        size_t cap = p->cap_routes ? p->cap_routes * 2 : 8;
        rp__route *r = realloc(p->routes, cap * sizeof *r);
        if (r == NULL) return RP_ERR_NOMEM;
        p->routes = r;
        p->cap_routes = cap;
    }
    rp__route r = {
        .vhost = strdup(q->vhost),
        .queue = strdup(q->name),
        .exchange = strdup(q->dlx_name),
        .routing_key = rp_dup_or_null(q->dlx_routing_key),
    };
    if (r.vhost == NULL || r.queue == NULL || r.exchange == NULL ||
        (q->dlx_routing_key != NULL && r.routing_key == NULL)) {
        free(r.vhost);
        free(r.queue);
        free(r.exchange);
        free(r.routing_key);
        return RP_ERR_NOMEM;
    }
    p->routes[p->n_routes++] = r;
    return RP_OK;
}

void rp__pass_routes_cleanup(rp__pass *p) {
    for (size_t i = 0; i < p->n_routes; i++) {
        free(p->routes[i].vhost);
        free(p->routes[i].queue);
        free(p->routes[i].exchange);
        free(p->routes[i].routing_key);
    }
    free(p->routes);
    p->routes = NULL;
    p->n_routes = p->cap_routes = 0;
    rp__strs_cleanup(&p->x_present);
    rp__strs_cleanup(&p->x_missing);
    rp__strs_cleanup(&p->x_bound);
    rp__strs_cleanup(&p->x_unbound);
    for (size_t i = 0; i < p->n_held; i++) {
        free(p->held[i].vhost);
        free(p->held[i].queue);
        rp_verdict_cleanup(&p->held[i].v);
    }
    free(p->held);
    p->held = NULL;
    p->n_held = p->cap_held = 0;
}

rp_status rp__pass_hold(rp__pass *p, const char *vhost, const char *name, rp_verdict *v) {
    rp__held h = {.vhost = strdup(vhost), .queue = strdup(name), .v = *v};
    rp_verdict_init(v);
    if (h.vhost != NULL && h.queue != NULL && p->n_held == p->cap_held) {
        size_t cap = p->cap_held ? p->cap_held * 2 : 8;
        rp__held *n = realloc(p->held, cap * sizeof *n);
        if (n != NULL) {
            p->held = n;
            p->cap_held = cap;
        }
    }
    if (h.vhost == NULL || h.queue == NULL || p->n_held == p->cap_held) {
        free(h.vhost);
        free(h.queue);
        rp_verdict_cleanup(&h.v);
        return RP_ERR_NOMEM;
    }
    p->held[p->n_held++] = h;
    return RP_OK;
}

/* Whether an owned queue's route through the default exchange names
 * vhost/name (a route back into the owned queue itself does not: that
 * queue stays a work queue). */
static bool rp_is_route_target(const rp__pass *p, const char *vhost, const char *name) {
    for (size_t i = 0; i < p->n_routes; i++) {
        const rp__route *r = &p->routes[i];
        if (r->exchange[0] == '\0' && r->routing_key != NULL &&
            strcmp(r->routing_key, r->queue) != 0 && strcmp(r->vhost, vhost) == 0 &&
            strcmp(r->routing_key, name) == 0)
            return true;
    }
    return false;
}

rp_status rp__pass_release_held(rp__pass *p) {
    rp_status st = RP_OK;
    for (size_t i = 0; i < p->n_held; i++) {
        rp__held *h = &p->held[i];
        if (st == RP_OK && !rp_is_route_target(p, h->vhost, h->queue))
            st = rp__pass_surface(p, &h->v);
        rp_verdict_cleanup(&h->v);
        free(h->vhost);
        free(h->queue);
    }
    p->n_held = 0;
    return st;
}

/* Whether a named exchange exists, asked once per pass. *known false when
 * the port cannot tell (none, or it failed: then the queue's sightings are
 * kept and the failure noted). */
static rp_status rp_exchange(rp__pass *p, const rp__route *r, bool *known, bool *exists) {
    *known = *exists = false;
    const rp_broker_port *b = &p->ports->broker;
    if (b->exchange_exists == NULL) return rp__pass_keep_queue(p, r->vhost, r->queue);
    size_t n = strlen(r->vhost) + strlen(r->exchange) + 2;
    char *key = malloc(n);
    if (key == NULL) return RP_ERR_NOMEM;
    snprintf(key, n, "%s\n%s", r->vhost, r->exchange);
    rp_status st = RP_OK;
    if (rp__strs_has(&p->x_present, key) || rp__strs_has(&p->x_missing, key)) {
        *known = true;
        *exists = rp__strs_has(&p->x_present, key);
    } else {
        bool there = false;
        rp_status xst = b->exchange_exists(b->self, r->vhost, r->exchange, &there);
        if (xst == RP_OK) {
            *known = true;
            *exists = there;
            st = rp__strs_add(there ? &p->x_present : &p->x_missing, key);
        } else {
            st = rp__pass_keep_queue(p, r->vhost, r->queue);
            if (st == RP_OK)
                st = rp__pass_unreadable(p, RP_SOURCE_BROKER, "reading a dead-letter exchange",
                                         xst);
        }
    }
    free(key);
    return st;
}

/* Whether an existing named exchange has anything but reaper's own queues
 * bound to it, asked once per pass. *known false when the port cannot
 * tell (none: nothing judged of it; it failed: the queue's sightings are
 * kept). */
static rp_status rp_bound(rp__pass *p, const rp__route *r, bool *known, bool *bound) {
    *known = *bound = false;
    const rp_broker_port *b = &p->ports->broker;
    if (b->exchange_bound == NULL) return RP_OK;
    size_t n = strlen(r->vhost) + strlen(r->exchange) + 2;
    char *key = malloc(n);
    if (key == NULL) return RP_ERR_NOMEM;
    snprintf(key, n, "%s\n%s", r->vhost, r->exchange);
    rp_status st = RP_OK;
    if (rp__strs_has(&p->x_bound, key) || rp__strs_has(&p->x_unbound, key)) {
        *known = true;
        *bound = rp__strs_has(&p->x_bound, key);
    } else {
        bool there = false;
        rp_status bst = b->exchange_bound(b->self, r->vhost, r->exchange, p->opt->own_queues,
                                          RP_ARRAY_LEN(p->opt->own_queues), &there);
        if (bst == RP_OK) {
            *known = true;
            *bound = there;
            st = rp__strs_add(there ? &p->x_bound : &p->x_unbound, key);
        } else {
            st = rp__pass_keep_queue(p, r->vhost, r->queue);
            if (st == RP_OK)
                st = rp__pass_unreadable(p, RP_SOURCE_BROKER,
                                         "reading a dead-letter exchange's bindings", bst);
        }
    }
    free(key);
    return st;
}

/* The queue a route through the default exchange names: measured, and with
 * backfill made a backfill target (an owned dead-letter queue: its origin
 * is owned) unless it is one already, is the owned queue itself (a route
 * back into it), or is one of reaper's own queues. */
static rp_status rp_target(rp__pass *p, const rp__route *r, bool backfill, rp_dl_route *out) {
    const rp_broker_port *b = &p->ports->broker;
    if (b->get_queue == NULL) return RP_OK;
    rp_queue_facts f;
    memset(&f, 0, sizeof f);
    rp_status gst = b->get_queue(b->self, r->vhost, r->routing_key, &f);
    if (gst == RP_ERR_NOT_FOUND) {
        out->target_known = true;
        out->target_exists = false;
        return RP_OK;
    }
    if (gst != RP_OK) {
        rp_status st = rp__pass_keep_queue(p, r->vhost, r->queue);
        if (st != RP_OK) return st;
        return rp__pass_unreadable(p, RP_SOURCE_BROKER, "reading a dead-letter queue", gst);
    }
    out->target_known = out->target_exists = true;
    out->target_depth_known = f.counts_known;
    out->target_depth = rp__sat_add(rp__nonneg(f.ready), rp__nonneg(f.unacked));
    /* A targeted check reads no dead letters: what was sighted on the
     * target (by a sweep, judged as a dead-letter queue) stays open. */
    if (!backfill && strcmp(r->routing_key, r->queue) != 0 &&
        !rp__pass_is_own_queue(p, r->routing_key))
        return rp__pass_keep_queue(p, r->vhost, r->routing_key);
    if (!backfill || strcmp(r->routing_key, r->queue) == 0 ||
        rp__pass_is_own_queue(p, r->routing_key) ||
        rp__pass_has_target(p, r->vhost, r->routing_key))
        return RP_OK;
    /* The port lends f until its next call: judged now, under the names
     * asked for. */
    f.vhost = r->vhost;
    f.name = r->routing_key;
    f.is_dead_letter_queue = true;
    f.owned = true;
    rp_queue_judgement j;
    rp_status st = rp_judge_queue(&f, &p->opt->thresholds, p->now, &j);
    if (st == RP_OK && j.unmeasured) st = rp__pass_keep_queue(p, f.vhost, f.name);
    if (st == RP_OK && j.backfill) st = rp__pass_add_target(p, &f);
    rp_queue_judgement_cleanup(&j);
    return st;
}

rp_status rp__pass_routes(rp__pass *p, bool backfill) {
    for (size_t i = 0; i < p->n_routes; i++) {
        const rp__route *r = &p->routes[i];
        rp_dl_route in = {
            .vhost = r->vhost,
            .queue = r->queue,
            .exchange = r->exchange,
            .routing_key = r->routing_key,
        };
        rp_status st;
        if (r->exchange[0] == '\0')
            st = r->routing_key ? rp_target(p, r, backfill, &in) : RP_OK;
        else
            st = rp_exchange(p, r, &in.exchange_known, &in.exchange_exists);
        if (st == RP_OK && r->exchange[0] != '\0' && in.exchange_known && in.exchange_exists)
            st = rp_bound(p, r, &in.bound_known, &in.bound);
        if (st != RP_OK) return st;
        rp_verdict v;
        st = rp_judge_dead_letter_route(&in, &v);
        if (st == RP_OK && v.condition != RP_COND_NONE) st = rp__pass_surface(p, &v);
        rp_verdict_cleanup(&v);
        if (st != RP_OK) return st;
    }
    return RP_OK;
}
