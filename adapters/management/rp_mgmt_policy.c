/* The policy reconcile's transport: rp_mgmt_policy_reconcile fills the
 * core's policy port (core/rp_policy_port.h) with management API calls and
 * runs core/rp_pass_policy.c, which decides what is written, the diff, the
 * conflicts, the check and the report. Nothing here decides. */
#include "rp_mgmt_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rp_clock.h"
#include "rp_log.h"
#include "rp_pass_policy.h"

#define RP_POLICY_SCAN_COLUMNS "name,vhost,type,policy,operator_policy,effective_policy_definition"
#define RP_POLICY_SEED_COLUMNS "name,vhost,type,policy,effective_policy_definition,arguments"

void rp_mgmt_policy_options_default(rp_mgmt_policy_options *o) {
    rp_pass_policy_options_default(o);
}

/* ---- the port over the management API ---------------------------------------------- */

typedef struct rp_pport {
    rp_mgmt_broker *b;
} rp_pport;

static rp_status rp_pp_version(void *self, rp_policy_version *out) {
    rp_pport *p = self;
    rp_mgmt_version v;
    rp_status st = rp_mgmt_broker_version(p->b, &v);
    if (st != RP_OK) return st;
    out->major = v.major;
    out->minor = v.minor;
    out->patch = v.patch;
    snprintf(out->text, sizeof out->text, "%s", v.text);
    return RP_OK;
}

static rp_status rp_pp_wide_timeout(void *self, rp_wide_timeout_state *state, int64_t *value_ms,
                                    const char **why) {
    rp_pport *p = self;
    return rp_mgmt_broker_wide_timeout(p->b, state, value_ms, why);
}

static const char *rp_pp_last_error(void *self) {
    rp_pport *p = self;
    return rp_mgmt_broker_last_error(p->b);
}

static int64_t rp_pp_mono_ms(void *self) {
    (void)self;
    return rp_clock_mono_ms();
}

static void rp_pp_sleep_ms(void *self, long ms) {
    (void)self;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static const char *rp_str(const json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

/* One policy item of the management API into *out. */
static rp_status rp_pp_policy(const json_t *j, rp_policy *out) {
    rp_status st = rp_policy_set_string(&out->vhost, rp_str(j, "vhost"));
    if (st == RP_OK) st = rp_policy_set_string(&out->name, rp_str(j, "name"));
    if (st == RP_OK) st = rp_policy_set_string(&out->pattern, rp_str(j, "pattern"));
    if (st == RP_OK) st = rp_policy_set_string(&out->apply_to, rp_str(j, "apply-to"));
    if (st != RP_OK) return st;
    out->has_priority = rp_mgmt_json_int(json_object_get(j, "priority"), &out->priority);
    if (!out->has_priority) out->priority = 0;
    const json_t *def = json_object_get(j, "definition");
    out->definition_is_object = json_is_object(def);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)def, key, val) {
        int64_t iv = 0;
        bool is_int = rp_mgmt_json_int(val, &iv);
        st = rp_policy_add_key(out, key, is_int, iv, json_is_string(val));
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

static rp_status rp_pp_list_policies(void *self, bool operator_policies, rp_policy_list *out) {
    rp_pport *p = self;
    rp_mgmt_response resp;
    rp_status st = rp_mgmt_broker_request(p->b, RP_HTTP_GET,
                                          operator_policies ? "/api/operator-policies" : "/api/policies",
                                          NULL, 0, &resp);
    if (st == RP_ERR_NOT_FOUND) st = RP_ERR_INTERNAL;
    json_t *all = st == RP_OK ? json_loadb(resp.body, resp.body_len, 0, NULL) : NULL;
    rp_mgmt_response_cleanup(&resp);
    if (st != RP_OK) return st;
    if (!json_is_array(all)) {
        if (all) json_decref(all);
        return RP_ERR_INTERNAL;
    }
    size_t i;
    json_t *j;
    json_array_foreach(all, i, j) {
        if (rp_str(j, "vhost") == NULL || rp_str(j, "name") == NULL) continue;
        rp_policy *item;
        st = rp_policy_list_push(out, &item);
        if (st == RP_OK) st = rp_pp_policy(j, item);
        if (st != RP_OK) break;
    }
    json_decref(all);
    return st;
}

static char *rp_policy_path(const char *vhost, const char *name) {
    char *ev = rp_mgmt_url_encode(vhost), *en = rp_mgmt_url_encode(name);
    char *path = NULL;
    if (ev && en) {
        size_t n = strlen(ev) + strlen(en) + 32;
        path = malloc(n);
        if (path) snprintf(path, n, "/api/policies/%s/%s", ev, en);
    }
    free(ev);
    free(en);
    return path;
}

static rp_status rp_pp_get_policy(void *self, const char *vhost, const char *name, rp_policy *out,
                                  bool *found) {
    rp_pport *p = self;
    *found = false;
    char *path = rp_policy_path(vhost, name);
    if (path == NULL) return RP_ERR_NOMEM;
    rp_mgmt_response resp;
    rp_status st = rp_mgmt_broker_request(p->b, RP_HTTP_GET, path, NULL, 0, &resp);
    free(path);
    json_t *back = st == RP_OK ? json_loadb(resp.body, resp.body_len, 0, NULL) : NULL;
    rp_mgmt_response_cleanup(&resp);
    if (st != RP_OK || back == NULL) return st;
    st = rp_pp_policy(back, out);
    json_decref(back);
    *found = st == RP_OK;
    return st;
}

/* The PUT body: {"pattern", "apply-to", "priority", "definition"} with the
 * definition's keys in core's order, compact. */
static char *rp_pp_body(const rp_policy *pol) {
    json_t *def = json_object();
    if (def == NULL) return NULL;
    for (size_t i = 0; i < pol->n_keys; i++) {
        if (json_object_set_new(def, pol->keys[i].key,
                                json_integer((json_int_t)pol->keys[i].value)) != 0) {
            json_decref(def);
            return NULL;
        }
    }
    json_t *body = json_pack("{s:s, s:s, s:I, s:O}", "pattern", pol->pattern, "apply-to",
                             pol->apply_to, "priority", (json_int_t)pol->priority, "definition",
                             def);
    json_decref(def);
    if (body == NULL) return NULL;
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}

static rp_status rp_pp_put_policy(void *self, const char *vhost, const rp_policy *pol,
                                  const char *was, bool *refused) {
    rp_pport *p = self;
    *refused = false;
    char *path = rp_policy_path(vhost, pol->name);
    char *body = rp_pp_body(pol);
    if (path == NULL || body == NULL) {
        free(path);
        free(body);
        return RP_ERR_NOMEM;
    }
    rp_mgmt_response resp;
    rp_status st = rp_mgmt_broker_request(p->b, RP_HTTP_PUT, path, body, strlen(body), &resp);
    long code = resp.http_status;
    rp_mgmt_response_cleanup(&resp);
    free(body);
    free(path);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) {
        *refused = code == 400;
        if (st == RP_ERR_FORBIDDEN || *refused)
            RP_WARN("policy write refused", "policy", pol->name, "vhost", vhost, "reason",
                    rp_mgmt_broker_last_error(p->b), NULL);
        return st;
    }
    RP_INFO("policy written", "policy", pol->name, "vhost", vhost, "was", was, NULL);
    return RP_OK;
}

static rp_status rp_pp_list_queues(void *self, size_t page, bool with_arguments,
                                   rp_policy_queue_page *out) {
    rp_pport *p = self;
    rp_queue_page pg;
    rp_status st = rp_mgmt_broker_list(p->b, page,
                                       with_arguments ? RP_POLICY_SEED_COLUMNS : RP_POLICY_SCAN_COLUMNS,
                                       &pg);
    if (st != RP_OK) return st;
    const rp_policy_queue *q = NULL;
    st = rp_mgmt_broker_page_policy(p->b, &q);
    if (st != RP_OK) return st;
    out->queues = q;
    out->n = pg.n;
    out->last = pg.last;
    return RP_OK;
}

rp_status rp_mgmt_policy_reconcile_core(rp_mgmt_broker *b, const rp_mgmt_policy_options *o,
                                        rp_report *report, rp_pass_policy_stats *cs) {
    memset(cs, 0, sizeof *cs);
    if (b == NULL || o == NULL || report == NULL) return RP_ERR_INVALID;
    rp_pass_policy_options co = *o;
    /* The vhosts the broker lists (a sweep's watched vhosts) are managed
     * each, owned queues or not. */
    if (co.n_also_vhosts == 0) rp_mgmt_broker_get_vhosts(b, &co.also_vhosts, &co.n_also_vhosts);
    rp_pport pp;
    memset(&pp, 0, sizeof pp);
    pp.b = b;
    rp_policy_port port = {.self = &pp,
                           .version = rp_pp_version,
                           .wide_timeout = rp_pp_wide_timeout,
                           .list_policies = rp_pp_list_policies,
                           .get_policy = rp_pp_get_policy,
                           .put_policy = rp_pp_put_policy,
                           .list_queues = rp_pp_list_queues,
                           .last_error = rp_pp_last_error,
                           .mono_ms = rp_pp_mono_ms,
                           .sleep_ms = rp_pp_sleep_ms};
    return rp_pass_policy_reconcile(&port, &co, report, cs);
}

rp_status rp_mgmt_policy_reconcile(rp_mgmt_broker *b, const rp_mgmt_policy_options *o,
                                   rp_report *report, rp_mgmt_policy_stats *stats) {
    rp_mgmt_policy_stats dummy;
    if (stats == NULL) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    rp_pass_policy_stats cs;
    rp_status st = rp_mgmt_policy_reconcile_core(b, o, report, &cs);
    stats->writes = cs.writes;
    stats->refused = cs.refused;
    stats->conflicts = cs.conflicts;
    stats->vhosts = cs.vhosts;
    stats->selected = cs.selected;
    stats->verified_queues = cs.verified_queues;
    stats->listings = cs.listings;
    stats->listing_reused = cs.listing_reused;
    stats->version.major = cs.version.major;
    stats->version.minor = cs.version.minor;
    stats->version.patch = cs.version.patch;
    snprintf(stats->version.text, sizeof stats->version.text, "%s", cs.version.text);
    return st;
}
