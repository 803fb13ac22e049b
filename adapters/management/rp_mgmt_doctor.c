/* doctor's probes over the management API (rp_mgmt_doctor.h). */
#include "rp_mgmt_doctor.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rp_doctor_reach rp_mgmt_doctor_reach(rp_status st, long http_status, const char *why) {
    if (st == RP_OK) return RP_REACH_OK;
    if (http_status == 401) return RP_REACH_AUTH;
    if (http_status == 403 || st == RP_ERR_FORBIDDEN) return RP_REACH_FORBIDDEN;
    if (http_status != 0) return RP_REACH_ERROR;
    if (why != NULL && (strstr(why, "refused") != NULL || strstr(why, "Refused") != NULL))
        return RP_REACH_REFUSED;
    if (st == RP_ERR_UNAVAILABLE || st == RP_ERR_TIMEOUT) return RP_REACH_UNREACHABLE;
    return RP_REACH_ERROR;
}

/* GET path: RP_OK with *root parsed (json_decref), else *reach says why
 * (and keep->mgmt_why when it is the first failure). */
static rp_doctor_reach rp_doc_get(rp_mgmt_broker *b, const char *path, rp_mgmt_doctor_keep *keep,
                                  json_t **root, bool *not_found) {
    rp_mgmt_response r;
    *root = NULL;
    if (not_found) *not_found = false;
    rp_status st = rp_mgmt_broker_request(b, RP_HTTP_GET, path, NULL, 0, &r);
    rp_doctor_reach reach = rp_mgmt_doctor_reach(st, r.http_status, r.error);
    if (st == RP_ERR_NOT_FOUND && not_found) {
        *not_found = true;
        reach = RP_REACH_OK;
    } else if (st == RP_OK) {
        *root = json_loadb(r.body, r.body_len, 0, NULL);
        if (*root == NULL) {
            reach = RP_REACH_ERROR;
            snprintf(keep->mgmt_why, sizeof keep->mgmt_why, "GET %s: the answer is not JSON",
                     path);
        }
    } else if (keep->mgmt_why[0] == '\0') {
        snprintf(keep->mgmt_why, sizeof keep->mgmt_why, "%s", rp_mgmt_broker_last_error(b));
    }
    rp_mgmt_response_cleanup(&r);
    return reach;
}

/* "a,b,c" from a JSON string or array of strings. */
static void rp_doc_join(const json_t *v, char *buf, size_t n) {
    buf[0] = '\0';
    if (json_is_string(v)) {
        snprintf(buf, n, "%s", json_string_value(v));
        return;
    }
    size_t i, len = 0;
    json_t *it;
    json_array_foreach(v, i, it) {
        if (!json_is_string(it)) continue;
        int k = snprintf(buf + len, n - len, "%s%s", len ? "," : "", json_string_value(it));
        if (k < 0 || (size_t)k >= n - len) break;
        len += (size_t)k;
    }
}

void rp_mgmt_doctor_probe(rp_mgmt_broker *b, const rp_mgmt_dlx_options *dlx,
                          rp_mgmt_doctor_keep *keep, rp_doctor_facts *f) {
    memset(keep, 0, sizeof *keep);
    f->mgmt_why = keep->mgmt_why;
    json_t *root = NULL;
    f->mgmt = rp_doc_get(b, "/api/overview", keep, &root, NULL);
    if (f->mgmt != RP_REACH_OK) return;
    rp_mgmt_version v;
    const char *vs = json_string_value(json_object_get(root, "rabbitmq_version"));
    if (vs == NULL) vs = json_string_value(json_object_get(root, "product_version"));
    if (vs != NULL && rp_mgmt_version_parse(vs, &v)) {
        snprintf(keep->version, sizeof keep->version, "%s", vs);
        f->broker_version = keep->version;
        f->version_major = v.major;
        f->version_minor = v.minor;
    }
    json_decref(root);

    char *vh = rp_mgmt_url_encode(dlx->vhost);
    char path[1024];
    if (vh == NULL) return;
    bool nf = false;
    snprintf(path, sizeof path, "/api/exchanges/%s/amq.rabbitmq.event", vh);
    f->event_exchange_read = rp_doc_get(b, path, keep, &root, &nf);
    f->event_exchange_present = f->event_exchange_read == RP_REACH_OK && !nf;
    json_decref(root);

    f->whoami = rp_doc_get(b, "/api/whoami", keep, &root, NULL);
    if (f->whoami == RP_REACH_OK) {
        rp_doc_join(json_object_get(root, "tags"), keep->tags, sizeof keep->tags);
        f->tags = keep->tags;
    }
    json_decref(root);

    snprintf(path, sizeof path, "/api/policies/%s", vh);
    f->policies_read = rp_doc_get(b, path, keep, &root, NULL);
    if (f->policies_read == RP_REACH_OK) {
        size_t i, len = 0;
        json_t *it;
        json_array_foreach(root, i, it) {
            const char *name = json_string_value(json_object_get(it, "name"));
            if (name == NULL) continue;
            int k = snprintf(keep->policies + len, sizeof keep->policies - len, "%s%s",
                             len ? "," : "", name);
            if (k < 0 || (size_t)k >= sizeof keep->policies - len) break;
            len += (size_t)k;
        }
        f->policies_present = keep->policies;
    }
    json_decref(root);
    free(vh);

    const char *why = NULL;
    rp_status st = rp_mgmt_broker_wide_timeout(b, &f->timeout_state, &f->timeout_ms, &why);
    f->timeout_read = rp_mgmt_doctor_reach(st, 0, rp_mgmt_broker_last_error(b));

    rp_mgmt_dlx_options o = *dlx;
    o.dry_run = true;
    rp_mgmt_dlx_stats s;
    memset(&s, 0, sizeof s);
    st = rp_mgmt_dlx_reconcile(b, &o, &s);
    f->tap_read = rp_mgmt_doctor_reach(st, 0, rp_mgmt_broker_last_error(b));
    if (st != RP_OK) {
        snprintf(keep->tap_why, sizeof keep->tap_why, "%s", rp_mgmt_broker_last_error(b));
        f->tap_why = keep->tap_why;
    }
    f->tap_missing = s.tap_missing;
    /* The bindings of a queue that does not exist read as none on 3.10:
     * ask for the queue itself. */
    if (st == RP_OK && !s.tap_missing) {
        char *vq = rp_mgmt_url_encode(dlx->vhost), *tq = rp_mgmt_url_encode(dlx->tap_queue);
        if (vq != NULL && tq != NULL) {
            snprintf(path, sizeof path, "/api/queues/%s/%s?columns=name", vq, tq);
            bool gone = false;
            json_t *q = NULL;
            rp_doctor_reach r = rp_doc_get(b, path, keep, &q, &gone);
            json_decref(q);
            if (r == RP_REACH_OK) f->tap_missing = gone;
            else f->tap_read = r;
        }
        free(vq);
        free(tq);
    }
    f->tap_owned = s.owned;
    f->tap_with_dlx = s.with_dlx;
    f->tap_unbindable = s.unbindable;
    for (size_t i = 0; i < RP_MGMT_DLX_NAMED && i < RP_DOCTOR_TAP_NAMED && i < s.unbindable;
         i++) {
        if (s.unbindable_names[i][0] == '\0') break;
        memcpy(keep->unbindable[i], s.unbindable_names[i], sizeof keep->unbindable[i]);
        f->tap_unbindable_names[i] = keep->unbindable[i];
    }
    f->tap_wanted = s.wanted;
    f->tap_absent = s.added;
    f->tap_extra = s.removed;
}

bool rp_mgmt_doctor_probe_config(rp_mgmt_bridge *bridge, const rp_config *cfg,
                                 const char *vhost, int timeout_ms, rp_mgmt_doctor_keep *keep,
                                 rp_doctor_facts *f, const char **why) {
    rp_mgmt_broker_options bo = {.request_timeout_ms = timeout_ms};
    rp_mgmt_broker *b = rp_mgmt_broker_new(bridge, &bo);
    if (b == NULL) {
        *why = "out of memory";
        return false;
    }
    const char *skip[] = {cfg->broker.control_queue};
    rp_mgmt_dlx_options o = {
        .vhost = vhost,
        .tap_queue = cfg->broker.tap_queue,
        .owned_pattern = cfg->reap.owned_queue_pattern.code,
        .skip = skip,
        .n_skip = 1,
        .dry_run = true,
    };
    rp_mgmt_doctor_probe(b, &o, keep, f);
    rp_mgmt_broker_free(b);
    return true;
}
