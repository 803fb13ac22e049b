/* A multi-host DSN's host list, rotated (rp_pg_hosts.h). */
#include "rp_pg_hosts.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Entries of a comma-separated list: 0 for NULL, else commas + 1. */
static size_t rp_hosts_count(const char *list) {
    if (list == NULL) return 0;
    size_t n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    return n;
}

/* Entry i of list: its start, and its length in *len; NULL past the end. */
static const char *rp_hosts_entry(const char *list, size_t i, size_t *len) {
    if (list == NULL) return NULL;
    const char *p = list;
    for (size_t k = 0; k < i; k++) {
        p = strchr(p, ',');
        if (p == NULL) return NULL;
        p++;
    }
    const char *end = strchr(p, ',');
    *len = end ? (size_t)(end - p) : strlen(p);
    return p;
}

static bool rp_hosts_entry_is(const char *list, size_t i, const char *want) {
    size_t len = 0;
    const char *e = rp_hosts_entry(list, i, &len);
    return e != NULL && want != NULL && strlen(want) == len && memcmp(e, want, len) == 0;
}

static rp_status rp_hosts_keep(const char *val, char **out) {
    *out = NULL;
    if (val == NULL || val[0] == '\0') return RP_OK;
    *out = strdup(val);
    return *out ? RP_OK : RP_ERR_NOMEM;
}

rp_status rp_pg_hosts_parse(const char *dsn, rp_pg_hosts *out) {
    memset(out, 0, sizeof *out);
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn ? dsn : "", &err);
    if (opts == NULL) {
        PQfreemem(err); /* NULL when out of memory */
        return err ? RP_ERR_INVALID : RP_ERR_NOMEM;
    }
    rp_status st = RP_OK;
    for (PQconninfoOption *o = opts; o->keyword && st == RP_OK; o++) {
        if (strcmp(o->keyword, "host") == 0) st = rp_hosts_keep(o->val, &out->host);
        else if (strcmp(o->keyword, "hostaddr") == 0) st = rp_hosts_keep(o->val, &out->hostaddr);
        else if (strcmp(o->keyword, "port") == 0) st = rp_hosts_keep(o->val, &out->port);
    }
    PQconninfoFree(opts);
    if (st != RP_OK) {
        rp_pg_hosts_cleanup(out);
        return st;
    }
    size_t n = rp_hosts_count(out->host);
    if (rp_hosts_count(out->hostaddr) > n) n = rp_hosts_count(out->hostaddr);
    if (rp_hosts_count(out->port) > n) n = rp_hosts_count(out->port);
    out->n = n > 0 ? n : 1;
    return RP_OK;
}

size_t rp_pg_hosts_find(const rp_pg_hosts *h, const char *host, const char *port) {
    for (size_t i = 0; i < h->n; i++) {
        size_t hi = rp_hosts_count(h->host) > 1 ? i : 0;
        size_t ai = rp_hosts_count(h->hostaddr) > 1 ? i : 0;
        size_t len = 0;
        const char *name = rp_hosts_entry(h->host, hi, &len);
        bool named = name != NULL && len > 0 ? rp_hosts_entry_is(h->host, hi, host)
                                             : rp_hosts_entry_is(h->hostaddr, ai, host);
        if (!named) continue;
        /* No port given: libpq's default, whatever it is, matches. */
        size_t pi = rp_hosts_count(h->port) > 1 ? i : 0;
        if (h->port == NULL || rp_hosts_entry_is(h->port, pi, port)) return i;
    }
    return h->n;
}

/* list rotated to start at entry first; NULL (no override) for a list of
 * fewer than two entries. */
static rp_status rp_hosts_rotate(const char *list, size_t first, char **out) {
    *out = NULL;
    size_t n = rp_hosts_count(list);
    if (n < 2) return RP_OK;
    size_t total = strlen(list);
    char *s = malloc(total + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        size_t len = 0;
        const char *e = rp_hosts_entry(list, (first + k) % n, &len);
        if (k > 0) s[at++] = ',';
        memcpy(s + at, e, len);
        at += len;
    }
    s[at] = '\0';
    *out = s;
    return RP_OK;
}

rp_status rp_pg_hosts_rotated(const rp_pg_hosts *h, size_t first, char **host, char **hostaddr,
                              char **port) {
    *host = *hostaddr = *port = NULL;
    if (first >= h->n) first = 0;
    if (rp_hosts_rotate(h->host, first, host) != RP_OK ||
        rp_hosts_rotate(h->hostaddr, first, hostaddr) != RP_OK ||
        rp_hosts_rotate(h->port, first, port) != RP_OK) {
        free(*host);
        free(*hostaddr);
        free(*port);
        *host = *hostaddr = *port = NULL;
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

void rp_pg_hosts_cleanup(rp_pg_hosts *h) {
    free(h->host);
    free(h->hostaddr);
    free(h->port);
    memset(h, 0, sizeof *h);
}
