/*
 * rp_mgmt_parse.h - reading the management API's JSON (pure: no I/O), so
 * that the shapes RabbitMQ really answers with can be tested from captured
 * fixtures.
 *
 * What RabbitMQ 3.10.8 answers (checked on this machine):
 *  - GET /api/queues?page=N&page_size=S&columns=... answers
 *    {"items":[...],"page":N,"page_count":M,"page_size":S,"item_count":K,
 *     "filtered_count":F,"total_count":T}; an empty broker has page_count 0
 *    and items []; a page past the last is a 400 {"error":
 *    "page_out_of_range"}; page 0 or a page_size over 500 is a 400
 *    {"error":"invalid_pagination_parameters"}. Items are ordered by vhost,
 *    then name. `columns` works with pagination.
 *  - name, vhost, type and arguments are always there. Everything that
 *    comes from the statistics (messages_ready, messages_unacknowledged,
 *    consumers, head_message_timestamp, policy, operator_policy,
 *    effective_policy_definition) is ABSENT until the queue's first
 *    statistics emission (about 5 s after it is declared, or after a
 *    restart; up to about 10 s for a quorum queue on 4.0.5), and lags by as
 *    much afterwards. RabbitMQ 4.0.5 answers the same shapes (checked).
 *  - head_message_timestamp: classic queues only, in SECONDS; null when the
 *    queue is empty or its head message has no timestamp; absent on quorum
 *    queues.
 *  - policy and operator_policy are a name or null; effective_policy_
 *    definition an object ({} when none applies).
 *  - errors are {"error":..., "reason":...} with the reason HTML-escaped
 *    ("&lt;&lt;" for "<<").
 *
 * Ownership: a parsed page owns its JSON tree; every string and json_t
 * pointer in its items points into that tree and lives until
 * rp_mgmt_page_cleanup() or the next parse into the same page.
 */
#ifndef RP_MGMT_PARSE_H
#define RP_MGMT_PARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_judge.h"
#include "rp_status.h"

/* What a queue item says beyond rp_queue_facts. */
typedef struct rp_mgmt_queue_extra {
    bool counts_known;            /* messages_ready and messages_unacknowledged were there */
    bool policy_known;            /* the policy field was there (null counts as known: none) */
    const char *policy;           /* NULL: none (or unknown, see policy_known) */
    const char *operator_policy;  /* NULL: none or unknown */
    bool effective_known;         /* effective_policy_definition was there */
    const json_t *effective;      /* that object; NULL when absent or empty ([]) */
    const json_t *arguments;      /* arguments object; NULL when absent or empty */
    /* A quorum queue's delivery limit was set (argument or policy, a
     * positive or a disabling value): when not, RabbitMQ 4's default of 20
     * applies (filled in by the broker adapter, which knows the version). */
    bool delivery_limit_set;
} rp_mgmt_queue_extra;

typedef struct rp_mgmt_page {
    json_t *root;
    rp_queue_facts *facts;        /* n of them; owned and is_dead_letter_queue false */
    rp_mgmt_queue_extra *extra;   /* n of them, parallel to facts */
    size_t n, cap;
    size_t page, page_count;      /* for a single queue: 1, 1 */
} rp_mgmt_page;

void rp_mgmt_page_init(rp_mgmt_page *p);
void rp_mgmt_page_cleanup(rp_mgmt_page *p);

/* Parses one page of GET /api/queues (the paginated object). Replaces what
 * *p held. RP_ERR_INVALID (with a reason in err) for a body that is not
 * that shape or an item without a name or vhost; RP_ERR_NOMEM. Statistics
 * that are absent are unknown, never 0: consumers_known and
 * head_timestamp_known false, and when the message counts are absent
 * ready and unacked are 0 with extra.counts_known false. */
rp_status rp_mgmt_parse_page(const char *body, size_t len, rp_mgmt_page *p, char *err,
                             size_t errlen) RP_MUSTCHECK;

/* Parses GET /api/queues/{vhost}/{name} (one object) into a page of one. */
rp_status rp_mgmt_parse_queue(const char *body, size_t len, rp_mgmt_page *p, char *err,
                              size_t errlen) RP_MUSTCHECK;

/* The broker's {"error","reason"} as one printable line: the reason
 * HTML-unescaped, control characters as spaces, cut to cap. Falls back to
 * the error, then to "(no reason given)". Returns buf. */
char *rp_mgmt_error_reason(const char *body, size_t len, char *buf, size_t cap);

/* True when body is a {"error": error_code, ...} object. */
bool rp_mgmt_is_error(const char *body, size_t len, const char *error_code);

typedef struct rp_mgmt_version {
    int major, minor, patch;
    char text[32]; /* as the broker wrote it */
} rp_mgmt_version;

/* "3.10.8" -> 3, 10, 8 (a missing part is 0; text after the numbers, e.g.
 * "+rc.1", is ignored). False when it does not start with a number. */
bool rp_mgmt_version_parse(const char *s, rp_mgmt_version *out);
/* rabbitmq_version (or product_version) of GET /api/overview. */
rp_status rp_mgmt_parse_overview_version(const char *body, size_t len,
                                         rp_mgmt_version *out) RP_MUSTCHECK;
/* a >= major.minor */
bool rp_mgmt_version_at_least(const rp_mgmt_version *v, int major, int minor);

/* The broker-wide consumer_timeout in the text of GET /api/config/effective
 * (RabbitMQ 4.0.5: the node's application environment as an Erlang term,
 * pretty-printed): the {consumer_timeout,V} of the top-level {rabbit,[...]}
 * element. *found: the key is there; *enabled and *ms: V is a positive
 * integer (undefined, infinity or false turn the timeout off). A rabbit
 * element without the key is found = false (no broker-wide timeout).
 * RP_ERR_INVALID when there is no rabbit element or V does not read. */
rp_status rp_mgmt_parse_effective_timeout(const char *text, bool *found, bool *enabled,
                                          int64_t *ms) RP_MUSTCHECK;

/* A JSON number as an int64 (integer, or a real with no fraction). */
bool rp_mgmt_json_int(const json_t *v, int64_t *out);

/* Issue 18 item 4: the names of the connections of a queue's consumers,
 * from GET /api/queues/{vhost}/{name}?columns=consumer_details
 * (consumer_details[].channel_details.connection_name), each once, in
 * order, into a heap array *names of *n heap strings (free with
 * rp_mgmt_names_free; NULL and 0 when there is none). RP_ERR_INVALID for a
 * body that is not a JSON object; a consumer without a connection name is
 * skipped. RP_ERR_NOMEM. */
rp_status rp_mgmt_parse_consumer_connections(const char *body, size_t len, char ***names,
                                             size_t *n) RP_MUSTCHECK;
void rp_mgmt_names_free(char **names, size_t n);

#endif
