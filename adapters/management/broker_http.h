/*
 * broker_http.h - the management API side of a reaper, built from the
 * configuration: who to talk to (broker.management_url, the user and vhost
 * of broker.url, the broker password, broker.tls) and what to reconcile.
 *
 * Ownership: rp_broker_http_params fills *out with pointers into *keep
 * (which must outlive the params) and into cfg.
 */
#ifndef RP_BROKER_HTTP_H
#define RP_BROKER_HTTP_H

#include "rp_config.h"
#include "rp_mgmt_bridge.h"
#include "rp_mgmt_http.h"
#include "rp_mgmt_policy.h"

typedef struct rp_broker_http_keep {
    char url[1024];   /* a copy of broker.url, parsed in place */
    const char *user;
    const char *vhost;
} rp_broker_http_keep;

/* RP_OK, or RP_ERR_CONFIG when broker.url does not parse. */
rp_status rp_broker_http_params(const rp_config *cfg, const char *password,
                                rp_broker_http_keep *keep, rp_mgmt_http_params *out) RP_MUSTCHECK;

/* The management API client on base's loop, behind a bridge for other
 * threads (the caller's: rp_mgmt_bridge_close, then _free), from cfg and
 * password (*keep as above). RP_ERR_CONFIG when broker.url gives no
 * parameters; RP_ERR_UNAVAILABLE when the client cannot be made (*why: a
 * sentence); RP_ERR_NOMEM. *why is left alone but for RP_ERR_UNAVAILABLE. */
rp_status rp_broker_http_bridge(struct event_base *base, const rp_config *cfg,
                                const char *password, rp_broker_http_keep *keep,
                                rp_mgmt_bridge **out, const char **why) RP_MUSTCHECK;
/* The same with the client's connect time-out set (0: the default). */
rp_status rp_broker_http_bridge_with(struct event_base *base, const rp_config *cfg,
                                     const char *password, long connect_timeout_ms,
                                     rp_broker_http_keep *keep, rp_mgmt_bridge **out,
                                     const char **why) RP_MUSTCHECK;

/* The policy reconcile's options from the configuration. */
void rp_broker_policy_options(const rp_config *cfg, const rp_broker_http_keep *keep, bool dry_run,
                              rp_mgmt_policy_options *out);

/* The reconcile after a full pass (core/rp_pass_run_port.h's reconcile):
 * the options from cfg and keep, the sweep's listing (borrowed, NULL:
 * none), and a debug line "policies reconciled" with the listings it read.
 * The broker's thread; returns what rp_mgmt_policy_reconcile returns. */
rp_status rp_broker_policy_reconcile(rp_mgmt_broker *b, const rp_config *cfg,
                                     const rp_broker_http_keep *keep, bool dry_run,
                                     rp_queue_listing *listing, rp_report *report) RP_MUSTCHECK;
/* The broker events' reconcile (core/rp_runner_port.h's): the options
 * from cfg and keep, no listing, what it did in core's stats. */
rp_status rp_broker_policy_reconcile_events(rp_mgmt_broker *b, const rp_config *cfg,
                                            const rp_broker_http_keep *keep, rp_report *report,
                                            rp_pass_policy_stats *stats) RP_MUSTCHECK;
/* The broker events' light queue listing (page 1-based as
 * rp_mgmt_broker_list): name, vhost, type and consumers only. */
rp_status rp_broker_list_light(rp_mgmt_broker *b, size_t page, rp_queue_page *out) RP_MUSTCHECK;

#endif
