/*
 * rp_doctor.h - `doctor` (issue #18 item 6): what the probes found, judged
 * into named checks, each {name, status ok|warn|fail, detail (one
 * sentence), fix (a command or a configuration key)}.
 *
 * The probes live in the adapters (rp_mgmt_doctor.h, rp_pg_doctor.h,
 * rp_amqp_doctor.h) and fill an rp_doctor_facts; everything that decides
 * (what is ok, a warning or a failure, the sentences, the fixes) is here,
 * pure. A check whose probe could not run because a layer under it failed
 * (the management API for the broker's checks, the store for the job
 * table's) is a warning that names that layer, never a second failure: the
 * failing layer is the one check that fails.
 *
 * The checks, in this order (rp_doctor_check_name):
 *   broker_connection  AMQP connect and login with broker.url
 *   management_api     GET /api/overview at broker.management_url
 *   event_exchange     the rabbitmq_event_exchange plugin (its exchange
 *                      amq.rabbitmq.event exists in the vhost)
 *   permissions        the user's tags: policymaker (or administrator)
 *   policies           reaper's policies (vibey-reap...) are in place
 *   consumer_timeout   the broker-wide consumer_timeout against
 *                      reap.consumer_timeout_seconds
 *   tap_bindings       every owned dead-letter exchange bound to the tap
 *                      (the queues that cannot be tapped named)
 *   store_connection   PostgreSQL, naming the failing layer
 *   schema_version     store.schema's migrations against this binary's
 *   queue_health       open STALLED and WAITING_DEPTH sightings
 *   wedged_queue       open WEDGED sightings
 *   divergent_queue    open DIVERGENT sightings
 *   dead_letter_backlog open gates and the oldest one's age
 *   remainders         open sightings of the other conditions
 *
 * Ownership: the facts' strings are borrowed; rp_doctor_report owns its
 * checks' strings (rp_doctor_report_cleanup).
 */
#ifndef RP_DOCTOR_H
#define RP_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_judge.h"
#include "rp_status.h"

typedef enum rp_doctor_status {
    RP_DOCTOR_OK = 0,
    RP_DOCTOR_WARN,
    RP_DOCTOR_FAIL,
} rp_doctor_status;

/* "ok", "warn", "fail". Static. */
const char *rp_doctor_status_string(rp_doctor_status s);

typedef enum rp_doctor_check_id {
    RP_DOC_BROKER_CONNECTION = 0,
    RP_DOC_MANAGEMENT_API,
    RP_DOC_EVENT_EXCHANGE,
    RP_DOC_PERMISSIONS,
    RP_DOC_POLICIES,
    RP_DOC_CONSUMER_TIMEOUT,
    RP_DOC_TAP_BINDINGS,
    RP_DOC_STORE_CONNECTION,
    RP_DOC_SCHEMA_VERSION,
    RP_DOC_QUEUE_HEALTH,
    RP_DOC_WEDGED_QUEUE,
    RP_DOC_DIVERGENT_QUEUE,
    RP_DOC_DEAD_LETTER_BACKLOG,
    RP_DOC_REMAINDERS,
    RP_DOC_COUNT_
} rp_doctor_check_id;

/* "broker_connection"... Static; "?" outside the enum. */
const char *rp_doctor_check_name(rp_doctor_check_id id);

/* How a probe of a connection or a request went. */
typedef enum rp_doctor_reach {
    RP_REACH_NOT_TRIED = 0, /* a layer under it failed, or nothing to probe */
    RP_REACH_OK,
    RP_REACH_UNREACHABLE,   /* no route, no such host, timed out */
    RP_REACH_REFUSED,       /* connection refused: nothing listens there */
    RP_REACH_AUTH,          /* the login was refused */
    RP_REACH_FORBIDDEN,     /* logged in, the request was not allowed */
    RP_REACH_ERROR,         /* another failure (why says) */
} rp_doctor_reach;

/* "not_tried", "ok", "unreachable", "refused", "authentication",
 * "forbidden", "error". Static. */
const char *rp_doctor_reach_string(rp_doctor_reach r);

/* Open sightings of one condition (or a set), read from the store. */
typedef struct rp_doctor_open {
    rp_doctor_reach read;
    int64_t n;          /* open sightings */
    int64_t oldest_age_s; /* the oldest one's age (n > 0) */
    const char *example; /* one open sighting's key, or NULL */
} rp_doctor_open;

/* How many untappable queues tap_bindings names. */
#define RP_DOCTOR_TAP_NAMED 3

typedef struct rp_doctor_facts {
    /* Borrowed, for the sentences. */
    const char *broker_url, *management_url, *user, *vhost, *dsn, *schema, *tap_queue;

    rp_doctor_reach amqp;
    const char *amqp_why;

    rp_doctor_reach mgmt;
    const char *mgmt_why;
    const char *broker_version; /* "3.10.8"; NULL when unknown */

    rp_doctor_reach event_exchange_read;
    bool event_exchange_present; /* amq.rabbitmq.event exists */

    rp_doctor_reach whoami;
    const char *tags; /* the user's tags, comma-separated ("" none) */

    rp_doctor_reach policies_read;
    const char *policies_present; /* names of the vhost's policies, comma-separated */
    int version_major, version_minor; /* the broker's (0.0: unknown) */

    rp_wide_timeout_state timeout_state; /* with timeout_read OK */
    rp_doctor_reach timeout_read;
    int64_t timeout_ms;
    int64_t consumer_timeout_seconds; /* reap.consumer_timeout_seconds */

    rp_doctor_reach tap_read;
    const char *tap_why;
    bool tap_missing;    /* the tap queue does not exist */
    size_t tap_owned, tap_with_dlx, tap_unbindable, tap_wanted, tap_absent, tap_extra;
    /* The first untappable owned queues (dead-lettering through the default
     * exchange) by name, NULL past those known; named quoted and escaped
     * (rp_untrusted.h), the rest of tap_unbindable counted. */
    const char *tap_unbindable_names[RP_DOCTOR_TAP_NAMED];

    rp_doctor_reach store;
    const char *store_why;
    rp_doctor_reach schema_read;
    int schema_version, schema_known;

    rp_doctor_open stalled, waiting_depth, wedged, divergent, remainders;
    rp_doctor_open gates; /* open gates (n, oldest_age_s) */
} rp_doctor_facts;

/* Zeroes *f: every probe not tried. */
void rp_doctor_facts_init(rp_doctor_facts *f);

typedef struct rp_doctor_check {
    rp_doctor_check_id id;
    rp_doctor_status status;
    char *detail; /* one sentence, heap */
    char *fix;    /* a command or a key, heap ("" when ok) */
} rp_doctor_check;

typedef struct rp_doctor_report {
    rp_doctor_check checks[RP_DOC_COUNT_];
    size_t n_ok, n_warn, n_fail;
} rp_doctor_report;

/* Judges every check. RP_OK or RP_ERR_NOMEM (the report is then cleaned
 * up). */
rp_status rp_doctor_judge(const rp_doctor_facts *f, rp_doctor_report *out) RP_MUSTCHECK;
void rp_doctor_report_cleanup(rp_doctor_report *r);

/* 0 when no check failed, else 1 (the exit code of reaperd --doctor). */
int rp_doctor_exit_code(const rp_doctor_report *r);

/* The report as one JSON object, {"ok": bool, "checks": [{"name",
 * "status", "detail", "fix"}...]}, into a heap string (*out, free()).
 * RP_ERR_NOMEM. */
rp_status rp_doctor_json(const rp_doctor_report *r, char **out) RP_MUSTCHECK;

/* The report as text: one line per check, "STATUS name: detail (fix:
 * ...)", then a summary line. Heap string (*out, free()). */
rp_status rp_doctor_text(const rp_doctor_report *r, char **out) RP_MUSTCHECK;

#endif
