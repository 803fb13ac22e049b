#include "rp_report.h"

#include <stdlib.h>
#include <string.h>

/* Grows *items (each of size elem) so that one more fits. */
static rp_status rp_grow(void **items, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return RP_OK;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*items, ncap * elem);
    if (p == NULL) return RP_ERR_NOMEM;
    *items = p;
    *cap = ncap;
    return RP_OK;
}

void rp_report_init(rp_report *r, bool dry_run) {
    memset(r, 0, sizeof *r);
    r->ok = true;
    r->dry_run = dry_run;
}

static void rp_free_strings(char **s, size_t n) {
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

void rp_report_cleanup(rp_report *r) {
    for (size_t i = 0; i < r->n_verdicts; i++) rp_verdict_cleanup(&r->verdicts[i]);
    free(r->verdicts);
    rp_free_strings(r->unreadable, r->n_unreadable);
    rp_free_strings(r->notes, r->n_notes);
    for (size_t i = 0; i < r->n_policies; i++) {
        free(r->policies[i].name);
        free(r->policies[i].detail);
        for (size_t k = 0; k < r->policies[i].n_vhosts; k++) free(r->policies[i].vhosts[k].vhost);
        free(r->policies[i].vhosts);
    }
    free(r->policies);
    memset(r, 0, sizeof *r);
}

rp_status rp_report_add_verdict(rp_report *r, rp_verdict *v) {
    if (r->on_verdict) r->on_verdict(r->on_verdict_arg, v, r->dry_run);
    if ((int)v->action >= 0 && v->action < RP_ACTION_COUNT_) r->counts[v->action]++;
    if (r->max_verdicts > 0 && r->n_verdicts >= r->max_verdicts) {
        r->n_omitted++;
        rp_verdict_cleanup(v);
        rp_verdict_init(v);
        return RP_OK;
    }
    rp_status st = rp_grow((void **)&r->verdicts, &r->cap_verdicts, r->n_verdicts,
                           sizeof *r->verdicts);
    if (st != RP_OK) return st;
    r->verdicts[r->n_verdicts++] = *v;
    rp_verdict_init(v);
    return RP_OK;
}

static rp_status rp_add_string(char ***items, size_t *n, size_t *cap, const char *s) {
    rp_status st = rp_grow((void **)items, cap, *n, sizeof **items);
    if (st != RP_OK) return st;
    char *copy = strdup(s ? s : "");
    if (copy == NULL) return RP_ERR_NOMEM;
    (*items)[(*n)++] = copy;
    return RP_OK;
}

rp_status rp_report_add_unreadable(rp_report *r, const char *what) {
    r->ok = false;
    return rp_add_string(&r->unreadable, &r->n_unreadable, &r->cap_unreadable, what);
}

rp_status rp_report_add_note(rp_report *r, const char *note) {
    return rp_add_string(&r->notes, &r->n_notes, &r->cap_notes, note);
}

rp_status rp_report_add_policy(rp_report *r, const char *name, bool verified,
                               const char *detail) {
    rp_status st = rp_grow((void **)&r->policies, &r->cap_policies, r->n_policies,
                           sizeof *r->policies);
    if (st != RP_OK) return st;
    rp_policy_check *p = &r->policies[r->n_policies];
    p->name = strdup(name ? name : "");
    p->detail = strdup(detail ? detail : "");
    p->verified = verified;
    p->vhosts = NULL;
    p->n_vhosts = 0;
    if (p->name == NULL || p->detail == NULL) {
        free(p->name);
        free(p->detail);
        return RP_ERR_NOMEM;
    }
    r->n_policies++;
    return RP_OK;
}

rp_status rp_report_add_policy_vhost(rp_report *r, const char *vhost, bool verified) {
    if (r == NULL || r->n_policies == 0 || vhost == NULL) return RP_ERR_INVALID;
    rp_policy_check *p = &r->policies[r->n_policies - 1];
    rp_policy_vhost *v = realloc(p->vhosts, (p->n_vhosts + 1) * sizeof *v);
    if (v == NULL) return RP_ERR_NOMEM;
    p->vhosts = v;
    v[p->n_vhosts].vhost = strdup(vhost);
    if (v[p->n_vhosts].vhost == NULL) return RP_ERR_NOMEM;
    v[p->n_vhosts].verified = verified;
    p->n_vhosts++;
    return RP_OK;
}
