/*
 * rp_mgmt_broker.h - rp_broker_port (core/rp_ports.h) over the RabbitMQ
 * management API, through an rp_mgmt_bridge: every port call blocks its
 * (non-loop) thread while the loop does the HTTP.
 *
 *  - list_queues(page): GET /api/queues?page=N&page_size=500&columns=name,
 *    vhost,type,messages_ready,messages_unacknowledged,consumers,
 *    head_message_timestamp,policy,operator_policy,
 *    effective_policy_definition,arguments, with each queue's policy fields
 *    in the page's `policy` (rp_mgmt_broker_page_policy). Only the page is held (about
 *    500 queues), whatever the broker's size. A page past the last (the
 *    broker's 400 page_out_of_range, or an empty broker) is an empty page
 *    with last = true. Statistics the broker has not reported yet are
 *    unknown, never 0 (rp_mgmt_parse.h).
 *  - get_queue: GET /api/queues/{vhost}/{name} (both URL-encoded, columns as
 *    above); 404 -> RP_ERR_NOT_FOUND.
 *  - get_timeout_in_force: from the same queue read. On RabbitMQ 3.12+ the
 *    `consumer-timeout` key of the queue's effective policy definition and
 *    the `x-consumer-timeout` queue argument (the smaller wins); until the
 *    queue reports its effective policy (statistics lag) the value is not
 *    claimed. Else the broker-wide `consumer_timeout`: read from GET
 *    /api/config/effective where it exists (RabbitMQ 4.0.5; administrator
 *    tag; only that number is taken and the body is wiped, it holds other
 *    settings) and cached for a minute; RabbitMQ 3.10.8 exposes it nowhere
 *    (checked: not in /api/overview nor /api/nodes/{node}; no
 *    /api/config/effective, no /api/environment), so there its value is
 *    unknown unless the options say to assume RabbitMQ's default of
 *    1,800,000 ms. On 4.3+ a classic or stream queue has no consumer timeout
 *    at all (RabbitMQ enforces it on quorum queues only). out->origin says
 *    which.
 *
 * Status mapping (the HTTP detail stays here, in rp_mgmt_broker_last_error):
 * no connection, a time-out, a 5xx or a closed bridge -> RP_ERR_UNAVAILABLE;
 * 401/403 -> RP_ERR_FORBIDDEN; 404 -> RP_ERR_NOT_FOUND (get_queue and
 * get_timeout_in_force only); an answer that does not parse or another
 * status -> RP_ERR_INTERNAL; RP_ERR_TOO_LARGE; RP_ERR_NOMEM.
 *
 * Threads: every function on one non-loop thread at a time (the port's
 * rule); rp_mgmt_broker_new/free on any thread.
 * Ownership: the broker borrows the bridge (it must outlive the broker).
 * What the port returns is lent per rp_ports.h: valid until the next call of
 * any function on the same broker.
 */
#ifndef RP_MGMT_BROKER_H
#define RP_MGMT_BROKER_H

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_mgmt_bridge.h"
#include "rp_mgmt_parse.h"
#include "rp_policy_port.h"
#include "rp_ports.h"

/* RabbitMQ's largest page. */
#define RP_MGMT_PAGE_SIZE_MAX 500
/* RabbitMQ's default consumer_timeout (3.8.15 and later), in ms. */
#define RP_MGMT_DEFAULT_CONSUMER_TIMEOUT_MS 1800000

typedef struct rp_mgmt_broker_options {
    long request_timeout_ms;   /* per request; 0: 10000 */
    size_t page_size;          /* 1..500; 0: 500 */
    /* When the broker-wide consumer_timeout cannot be read, report it as
     * RabbitMQ's default (value known, origin saying "assumed") instead of
     * unknown. Off by default: an assumption is not a measurement. */
    bool assume_default_consumer_timeout;
} rp_mgmt_broker_options;

typedef struct rp_mgmt_broker rp_mgmt_broker;

/* NULL when allocation fails. o may be NULL (defaults). */
rp_mgmt_broker *rp_mgmt_broker_new(rp_mgmt_bridge *bridge, const rp_mgmt_broker_options *o);
void rp_mgmt_broker_free(rp_mgmt_broker *b);

/* Fills *out with the port (self = b). */
void rp_mgmt_broker_port(rp_mgmt_broker *b, rp_broker_port *out);

/* The scrubbed reason of the last failed call ("" after a success). Lent
 * until the next call. */
const char *rp_mgmt_broker_last_error(const rp_mgmt_broker *b);

/* The broker's version (GET /api/overview, cached after the first success;
 * a failed request forgets it so that a restarted or upgraded broker is
 * read again). */
rp_status rp_mgmt_broker_version(rp_mgmt_broker *b, rp_mgmt_version *out) RP_MUSTCHECK;

/* The broker-wide consumer_timeout, read now from GET /api/config/effective
 * (RabbitMQ 4.0.5 has it, administrators only; 3.10.8 answers 404, and
 * then *state is RP_WIDE_TIMEOUT_UNREADABLE with why saying so). why is
 * lent until the next call on b. RP_OK, or the transport's status. */
rp_status rp_mgmt_broker_wide_timeout(rp_mgmt_broker *b, rp_wide_timeout_state *state,
                                      int64_t *value_ms, const char **why) RP_MUSTCHECK;

/* The extra fields of the queues of the last list_queues page, parallel to
 * its queues (lent likewise); NULL when there is none. */
const rp_mgmt_queue_extra *rp_mgmt_broker_page_extra(const rp_mgmt_broker *b);

/* The policy fields (core/rp_policy_port.h) of the queues of the last
 * list_queues page, parallel to its queues, into *out (lent like the page;
 * NULL for an empty page). Fields the page's columns did not hold are
 * unknown (policy_known, effective_known false). The port's list_queues
 * gives them in rp_queue_page.policy. RP_ERR_NOMEM. */
rp_status rp_mgmt_broker_page_policy(rp_mgmt_broker *b,
                                     const rp_policy_queue **out) RP_MUSTCHECK;

/* Called once per queue by rp_mgmt_broker_each_owned; strings lent for the
 * call. Return false to stop. */
typedef bool (*rp_mgmt_owned_fn)(void *arg, const char *vhost, const char *name,
                                 rp_queue_type type, bool is_dead_letter_queue);

/* The inventory seed: visits every queue reaper owns, page by page (columns
 * name, vhost, type only: no statistics are pulled), classified as the pass
 * does (rp_pass.h): a dead-letter queue is one dead_letter_pattern matches;
 * a queue is owned when owned_pattern matches its name or, for a
 * dead-letter queue, its name less the dead-letter suffix. *n_owned (may be
 * NULL) counts the visits. Bounded memory: one page at a time. Returns
 * RP_OK when every page was read (or fn stopped it), else the failing
 * call's status (queues visited before it stay visited). */
rp_status rp_mgmt_broker_each_owned(rp_mgmt_broker *b, const pcre2_code *owned_pattern,
                                    const pcre2_code *dead_letter_pattern, rp_mgmt_owned_fn fn,
                                    void *arg, size_t *n_owned) RP_MUSTCHECK;

/* URL-encodes s (every byte but A-Z a-z 0-9 - . _ ~) into a heap string;
 * NULL on allocation failure. "/" -> "%2F". */
char *rp_mgmt_url_encode(const char *s);

/* One request through the bridge with the broker's time-out, mapped as
 * above: RP_OK for a 2xx answer (*out holds it), else the mapped status
 * with the reason in last_error (and *out still holding the answer, if
 * any, e.g. a 400's body). For the policy reconcile, which shares the
 * broker's bridge and error handling. */
rp_status rp_mgmt_broker_request(rp_mgmt_broker *b, rp_http_method m, const char *path,
                                 const char *body, size_t body_len,
                                 rp_mgmt_response *out) RP_MUSTCHECK;

/* list_queues with other columns (a comma-separated list, URL-safe; NULL:
 * the port's), e.g. "name,vhost" for a cheap listing without statistics.
 * The page and rp_mgmt_broker_page_extra() are lent as for list_queues. */
rp_status rp_mgmt_broker_list(rp_mgmt_broker *b, size_t page, const char *columns,
                              rp_queue_page *out) RP_MUSTCHECK;

/* Issue 19 item 1: list_queues, rp_mgmt_broker_list and
 * rp_mgmt_broker_each_owned list the queues of these vhosts only, vhost
 * after vhost (GET /api/queues/{vhost}, pages 1.. of each, as one listing
 * of consecutive pages: core/rp_sweep_vhosts.h), a vhost that does not
 * exist being empty. vhosts is borrowed until set again; n 0: every vhost
 * (GET /api/queues, the default). get: the vhosts set. */
void rp_mgmt_broker_set_vhosts(rp_mgmt_broker *b, const char *const *vhosts, size_t n);
void rp_mgmt_broker_get_vhosts(const rp_mgmt_broker *b, const char *const **vhosts, size_t *n);

/* The bridge the broker was made with. */
rp_mgmt_bridge *rp_mgmt_broker_bridge(rp_mgmt_broker *b);

#endif
