/*
 * control_common.h - the group a control-queue test runs against: one
 * reaperd on a control queue and a schema of its own, the test's AMQP and
 * PostgreSQL connections, and the request/reply helpers every such test
 * used to copy (test_control, test_control_jobs, test_control_stats).
 *
 * Ownership: the group is the caller's (usually one static per test
 * file); ctl_group_end frees what ctl_group_begin and the starts opened.
 * Replies are heap JSON the caller json_decref's.
 */
#ifndef RP_CONTROL_COMMON_H
#define RP_CONTROL_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "itest.h"

typedef struct ctl_group {
    rp_child *reaperd;
    amqp_connection_state_t amqp;
    PGconn *pg;
    char schema[64];
    char queue[96];                    /* the control queue */
    char env_queue[160];               /* REAPER_BROKER_CONTROL_QUEUE=queue, for reaperctl */
    char env_owned[128], env_dlq[160]; /* no queue of other tests on the broker */
    const char *corr;                  /* correlation ids: "<corr>-<n>" */
    int calls;
    /* Each reply must also carry the content type of its request
     * (JSON for JSON, else msgpack), app_id "reaperd" and the broker's
     * user (test_control's checks). */
    bool strict;
} ctl_group;

/* Names the group for this process: schema "<schema_prefix><pid>", control
 * queue "<queue_prefix><pid>", the owned and dead-letter patterns of tag
 * (itest_env_owned/itest_env_dead_letters); connects to PostgreSQL. No
 * daemon yet, no migration. corr is kept (a literal). */
void ctl_group_begin(ctl_group *g, const char *schema_prefix, const char *queue_prefix,
                     const char *tag, const char *corr);
/* Starts the group's reaperd (itest_daemon_start) on its schema and
 * control queue with env (NULL-ended, may be NULL) followed by the owned
 * and dead-letter patterns. */
rp_child *ctl_group_start(ctl_group *g, char *const *env);
/* Stops the group's reaperd (if any) and starts it again with env. */
void ctl_group_restart(ctl_group *g, char *const *env);
/* The group's end: stops reaperd, closes the AMQP connection (if any),
 * drops the schema, closes PostgreSQL, deletes the control queue and the
 * n queues named (durable ones stay otherwise). */
void ctl_group_end(ctl_group *g, const char *const *queues, size_t n);

/* Sends a request (ct NULL: no content type) as user (NULL: the broker
 * user) with direct reply-to and returns the reply as JSON whatever its
 * encoding; fails the test, with reaperd's log, when no reply comes in
 * 20 s, or the correlation id (or, strict, the checks above) is wrong. */
json_t *ctl_call(ctl_group *g, const char *ct, const void *body, size_t len, const char *user);
/* ctl_call with a JSON text. */
json_t *ctl_call_json(ctl_group *g, const char *text);
/* The same request as msgpack, through the codec reaperctl uses. */
json_t *ctl_call_msgpack(ctl_group *g, const char *text);

/* The result of an ok reply; fails the test (printing the reply) when it
 * is not ok. */
const json_t *ctl_result(const json_t *reply);
/* The error code of a reply that must not be ok. */
const char *ctl_err_code(const json_t *reply);
/* The error message of a reply (NULL if none). */
const char *ctl_err_message(const json_t *reply);

#endif
