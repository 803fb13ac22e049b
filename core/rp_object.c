#include "rp_object.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rp_text.h"

#define RP_QUEUE_PREFIX "queue:"
#define RP_KIND_PREFIX "kind:"

rp_status rp_object_job(int64_t id, char **out) {
    return rp_text_format(out, "job:%" PRId64, id);
}

rp_status rp_object_dead_letter(const char *identity, char **out) {
    const char *parts[] = {"dead_letter:", identity ? identity : ""};
    return rp_text_join(out, parts, 2);
}

rp_status rp_object_project(const char *project, char **out) {
    return rp_text_format(out, "project:%s", project ? project : "");
}

/* prefix, then a with '%' and ':' encoded, ':', then b as it is. */
static rp_status rp_object_pair(const char *prefix, const char *vhost, const char *name,
                                char **out) {
    *out = NULL;
    if (vhost == NULL) vhost = "";
    if (name == NULL) name = "";
    size_t extra = 0;
    for (const char *p = vhost; *p; p++)
        if (*p == '%' || *p == ':') extra += 2;
    size_t vlen = strlen(vhost), nlen = strlen(name);
    size_t plen = strlen(prefix);
    size_t len = plen + vlen + extra + 1 + nlen;
    char *s = malloc(len + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    char *w = s;
    memcpy(w, prefix, plen);
    w += plen;
    for (const char *p = vhost; *p; p++) {
        if (*p == '%') {
            memcpy(w, "%25", 3);
            w += 3;
        } else if (*p == ':') {
            memcpy(w, "%3A", 3);
            w += 3;
        } else {
            *w++ = *p;
        }
    }
    *w++ = ':';
    memcpy(w, name, nlen);
    w[nlen] = '\0';
    *out = s;
    return RP_OK;
}

rp_status rp_object_queue(const char *vhost, const char *name, char **out) {
    return rp_object_pair(RP_QUEUE_PREFIX, vhost, name, out);
}

rp_status rp_object_kind(const char *project, const char *kind, char **out) {
    return rp_object_pair(RP_KIND_PREFIX, project, kind, out);
}

static rp_status rp_object_pair_split(const char *prefix, const char *object, char **vhost,
                                      char **name) {
    *vhost = NULL;
    *name = NULL;
    size_t plen = strlen(prefix);
    if (object == NULL || strncmp(object, prefix, plen) != 0) return RP_ERR_INVALID;
    const char *v = object + plen;
    const char *colon = strchr(v, ':');
    if (colon == NULL) return RP_ERR_INVALID;
    char *vh = malloc((size_t)(colon - v) + 1);
    if (vh == NULL) return RP_ERR_NOMEM;
    char *w = vh;
    for (const char *p = v; p < colon; p++) {
        if (*p != '%') {
            *w++ = *p;
        } else if (colon - p >= 3 && strncmp(p, "%25", 3) == 0) {
            *w++ = '%';
            p += 2;
        } else if (colon - p >= 3 && strncmp(p, "%3A", 3) == 0) {
            *w++ = ':';
            p += 2;
        } else {
            free(vh);
            return RP_ERR_INVALID;
        }
    }
    *w = '\0';
    char *nm = strdup(colon + 1);
    if (nm == NULL) {
        free(vh);
        return RP_ERR_NOMEM;
    }
    *vhost = vh;
    *name = nm;
    return RP_OK;
}

rp_status rp_object_queue_split(const char *object, char **vhost, char **name) {
    return rp_object_pair_split(RP_QUEUE_PREFIX, object, vhost, name);
}

rp_status rp_object_kind_split(const char *object, char **project, char **kind) {
    return rp_object_pair_split(RP_KIND_PREFIX, object, project, kind);
}
