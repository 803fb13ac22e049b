#include "broker_http.h"

#include <amqp.h>
#include <stdio.h>
#include <string.h>

#include "rp_hostlist.h"
#include "rp_log.h"
#include "rp_queue_listing.h"

rp_status rp_broker_http_params(const rp_config *cfg, const char *password,
                                rp_broker_http_keep *keep, rp_mgmt_http_params *out) {
    memset(out, 0, sizeof *out);
    /* With a host list, the first host's URL: user and vhost are the same
     * for every host. */
    if (!rp_hostlist_pick(cfg->broker.url, 0, keep->url, sizeof keep->url))
        snprintf(keep->url, sizeof keep->url, "%s", cfg->broker.url);
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(keep->url, &info) != AMQP_STATUS_OK) return RP_ERR_CONFIG;
    /* The management API takes the same user and password as AMQP. */
    keep->user = info.user;
    keep->vhost = info.vhost;
    out->base_url = cfg->broker.management_url;
    out->user = keep->user;
    out->password = password;
    out->ca_file = cfg->broker.tls.ca_file;
    out->cert_file = cfg->broker.tls.cert_file;
    out->key_file = cfg->broker.tls.key_file;
    out->verify_peer = cfg->broker.tls.verify_peer;
    return RP_OK;
}

void rp_broker_policy_options(const rp_config *cfg, const rp_broker_http_keep *keep, bool dry_run,
                              rp_mgmt_policy_options *out) {
    rp_mgmt_policy_options_default(out);
    out->owned_pattern = cfg->reap.owned_queue_pattern.text;
    out->dead_letter_pattern = cfg->reap.dead_letter_queue_pattern.text;
    /* Reaper's own queues get none of its policies (the tap's delivery
     * limit of -1 must stand). */
    out->exclude[0] = cfg->broker.control_queue;
    out->exclude[1] = cfg->broker.tap_queue;
    out->n_exclude = 2;
    out->consumer_timeout_seconds = cfg->reap.consumer_timeout_seconds;
    out->longest_lease_seconds = cfg->reap.longest_lease_seconds;
    out->delivery_limit = cfg->reap.delivery_limit;
    out->priority = cfg->reap.policy_priority;
    out->dry_run = dry_run;
    out->vhost = keep->vhost;
}

rp_status rp_broker_policy_reconcile(rp_mgmt_broker *b, const rp_config *cfg,
                                     const rp_broker_http_keep *keep, bool dry_run,
                                     rp_queue_listing *listing, rp_report *report) {
    rp_mgmt_policy_options popt;
    rp_broker_policy_options(cfg, keep, dry_run, &popt);
    popt.listing = listing;
    rp_mgmt_policy_stats stats;
    rp_status st = rp_mgmt_policy_reconcile(b, &popt, report, &stats);
    char lists[16];
    snprintf(lists, sizeof lists, "%u", stats.listings);
    RP_DEBUG("policies reconciled", "queue_listings", lists, "sweep_listing",
             stats.listing_reused ? "reused" : rp_queue_listing_state_string(
                                                   rp_queue_listing_get_state(listing)), NULL);
    return st;
}

rp_status rp_broker_policy_reconcile_events(rp_mgmt_broker *b, const rp_config *cfg,
                                            const rp_broker_http_keep *keep, rp_report *report,
                                            rp_pass_policy_stats *stats) {
    rp_mgmt_policy_options popt;
    rp_broker_policy_options(cfg, keep, false, &popt);
    return rp_mgmt_policy_reconcile_core(b, &popt, report, stats);
}

rp_status rp_broker_list_light(rp_mgmt_broker *b, size_t page, rp_queue_page *out) {
    return rp_mgmt_broker_list(b, page, "name,vhost,type,consumers", out);
}

rp_status rp_broker_http_bridge(struct event_base *base, const rp_config *cfg,
                                const char *password, rp_broker_http_keep *keep,
                                rp_mgmt_bridge **out, const char **why) {
    return rp_broker_http_bridge_with(base, cfg, password, 0, keep, out, why);
}

rp_status rp_broker_http_bridge_with(struct event_base *base, const rp_config *cfg,
                                     const char *password, long connect_timeout_ms,
                                     rp_broker_http_keep *keep, rp_mgmt_bridge **out,
                                     const char **why) {
    *out = NULL;
    rp_mgmt_http_params hp;
    if (rp_broker_http_params(cfg, password, keep, &hp) != RP_OK) return RP_ERR_CONFIG;
    if (connect_timeout_ms > 0) hp.connect_timeout_ms = connect_timeout_ms;
    rp_mgmt_http *http = rp_mgmt_http_new(base, &hp, why);
    if (http == NULL) return RP_ERR_UNAVAILABLE;
    *out = rp_mgmt_bridge_new(base, http);
    if (*out == NULL) {
        rp_mgmt_http_free(http);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}
