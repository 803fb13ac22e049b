/* Several broker hosts in one URL (rp_hostlist.h). */
#include "rp_hostlist.h"

#include <stdio.h>
#include <string.h>

/* The authority's host list of url: [*hosts, *end). False without "://". */
static bool rp_hl_span(const char *url, size_t *hosts, size_t *end) {
    if (url == NULL) return false;
    const char *sep = strstr(url, "://");
    if (sep == NULL) return false;
    size_t auth = (size_t)(sep - url) + 3;
    size_t e = auth + strcspn(url + auth, "/?#");
    size_t h = auth;
    for (size_t k = auth; k < e; k++)
        if (url[k] == '@') h = k + 1; /* the last '@': a password may hold one */
    *hosts = h;
    *end = e;
    return true;
}

size_t rp_hostlist_count(const char *url) {
    size_t h, e;
    if (!rp_hl_span(url, &h, &e)) return 0;
    size_t n = 1;
    for (size_t k = h; k < e; k++)
        if (url[k] == ',') n++;
    return n;
}

bool rp_hostlist_pick(const char *url, size_t i, char *out, size_t outlen) {
    size_t h, e;
    if (!rp_hl_span(url, &h, &e) || outlen == 0) return false;
    size_t start = h, k = 0;
    for (;;) {
        size_t stop = start + strcspn(url + start, ",");
        if (stop > e) stop = e;
        if (k == i) {
            int w = snprintf(out, outlen, "%.*s%.*s%s", (int)h, url, (int)(stop - start),
                             url + start, url + e);
            return w >= 0 && (size_t)w < outlen;
        }
        if (stop >= e) return false;
        start = stop + 1;
        k++;
    }
}

const char *rp_hostlist_check(const char *url) {
    size_t h, e;
    if (!rp_hl_span(url, &h, &e)) return NULL; /* not a URL: the URL check says so */
    size_t n = rp_hostlist_count(url);
    if (n > RP_HOSTLIST_MAX) return "names more than 16 hosts";
    if (n == 1) return NULL;
    size_t start = h;
    for (;;) {
        size_t stop = start + strcspn(url + start, ",");
        if (stop > e) stop = e;
        if (stop == start || url[start] == ':')
            return "has an empty host in its host list (hosts are separated by one comma)";
        if (stop >= e) return NULL;
        start = stop + 1;
    }
}

void rp_hostlist_hosts(const char *url, char *out, size_t outlen) {
    size_t h, e;
    if (outlen == 0) return;
    if (!rp_hl_span(url, &h, &e)) {
        out[0] = '\0';
        return;
    }
    snprintf(out, outlen, "%.*s", (int)(e - h), url + h);
}
