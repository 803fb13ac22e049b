/* The sweep per watched vhost (rp_sweep_vhosts.h). */
#include "rp_sweep_vhosts.h"

#include <stdlib.h>
#include <string.h>

#include "rp_sweep_turn.h"

bool rp_sweep_vhosts_has(const char *const *names, size_t n, const char *vhost) {
    for (size_t i = 0; vhost != NULL && i < n; i++)
        if (names[i] != NULL && strcmp(names[i], vhost) == 0) return true;
    return false;
}

void rp_sweep_vhosts_cleanup(rp_sweep_vhosts *v) {
    for (size_t i = 0; i < v->n; i++) free(v->names[i]);
    memset(v, 0, sizeof *v);
}

static rp_status rp_add(rp_sweep_vhosts *out, const char *vhost) {
    if (rp_sweep_vhosts_has((const char *const *)out->names, out->n, vhost)) return RP_OK;
    if (out->n >= RP_SWEEP_VHOSTS_MAX) return RP_ERR_INVALID;
    if ((out->names[out->n] = strdup(vhost)) == NULL) return RP_ERR_NOMEM;
    out->n++;
    return RP_OK;
}

rp_status rp_sweep_vhosts_watched(const rp_config *cfg, rp_sweep_vhosts *out) {
    memset(out, 0, sizeof *out);
    char url_vhost[256];
    if (!rp_sweep_turn_vhost(cfg->broker.url, url_vhost, sizeof url_vhost))
        return RP_ERR_INVALID;
    rp_status st = rp_add(out, url_vhost);
    for (size_t i = 0; st == RP_OK && i < cfg->broker.vhosts.n; i++)
        st = rp_add(out, cfg->broker.vhosts.items[i]);
    if (st != RP_OK) rp_sweep_vhosts_cleanup(out);
    return st;
}

void rp_vhost_pager_init(rp_vhost_pager *p, size_t n) {
    *p = (rp_vhost_pager){.n = n, .index = 0, .base = 0};
}

bool rp_vhost_pager_map(rp_vhost_pager *p, size_t g, size_t *index, size_t *local) {
    if (g == 0) return false;
    if (p->index >= p->n || g <= p->base) return false;
    *index = p->index;
    *local = g - p->base;
    return true;
}

bool rp_vhost_pager_after(rp_vhost_pager *p, size_t g, bool local_last, bool empty) {
    if (!local_last) return false;
    p->index++;
    p->base = empty ? g - 1 : g;
    return p->index >= p->n;
}
