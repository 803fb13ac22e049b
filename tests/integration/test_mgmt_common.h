/*
 * test_mgmt_common.h - helpers shared by the management API integration
 * tests: plain blocking HTTP to the broker under test (libcurl easy, for
 * setting up and looking; the code under test never blocks like this), a
 * private vhost per test, AMQP into it (rabbitmq-c), the broker's version,
 * and a python3 HTTP listener that answers slowly or hugely on demand.
 *
 * The broker is whichever the environment names (scripts/services env, or
 * env rabbitmq4): REAPER_BROKER_MANAGEMENT_URL, REAPER_BROKER_URL (for the
 * user, host and port) and REAPER_BROKER_PASSWORD_FILE.
 *
 * Ownership: strings returned by mt_* getters are static; a body returned
 * through an out-parameter is the caller's to free(); a json_t is the
 * caller's to json_decref().
 */
#ifndef TEST_MGMT_COMMON_H
#define TEST_MGMT_COMMON_H

#include <amqp.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "itest.h"
#include "rp_mgmt_loop.h"
#include "rp_mgmt_parse.h"

const char *mt_mgmt_url(void);
const char *mt_user(void);
const char *mt_password(void);

/* One blocking request as the broker user (or as user/password when
 * given). Returns the HTTP status (0 when no answer); *body (may be NULL)
 * gets the answer. */
long mt_http(const char *method, const char *path, const char *json_body, char **body);
long mt_http_as(const char *user, const char *password, const char *method, const char *path,
                const char *json_body, char **body);
/* GET path as JSON (NULL unless 200). */
json_t *mt_get_json(const char *path);

/* Whether queue of vhost is bound to exchange (its bindings read from the
 * management API). */
bool mt_queue_bound_to(const char *vhost, const char *queue, const char *exchange);

/* "%2F"-style encoding for paths. Heap. */
char *mt_enc(const char *s);

/* The broker's version, read once. */
const rp_mgmt_version *mt_version(void);

/* A fresh private vhost (the broker user gets every permission on it) and
 * its removal (which removes its queues and policies). */
void mt_vhost_create(const char *vhost);
void mt_vhost_delete(const char *vhost);

/* AMQP into vhost, channel 1 open. */
amqp_connection_state_t mt_amqp(const char *vhost);
void mt_amqp_close(amqp_connection_state_t c);
/* Declares a durable queue: type "classic", "quorum". */
void mt_declare(amqp_connection_state_t c, const char *name, const char *type);
/* A consumer tagged consumer on channel ch of c (opened unless it is 1;
 * prefetch 10) that receives n deliveries of queue q and holds them
 * unacked. */
void mt_hold(amqp_connection_state_t c, amqp_channel_t ch, const char *q, const char *consumer,
             int n);
/* Publishes body to the queue through the default exchange; timestamp 0:
 * none. */
void mt_publish(amqp_connection_state_t c, const char *queue, const char *body, int64_t timestamp);
/* basic.get without auto-ack: the message stays unacknowledged on the
 * channel, with no consumer on the queue. True when one was got. */
bool mt_get_unacked(amqp_connection_state_t c, const char *queue);

/* A queue's JSON (GET /api/queues/vhost/name), NULL when not 200. */
json_t *mt_queue(const char *vhost, const char *name);
/* Waits up to ms for the queue's `field` to be present (statistics in) and
 * to equal the string want (NULL: JSON null), or the integer want_int when
 * want is "#". True when it did. */
bool mt_wait_queue_field(const char *vhost, const char *name, const char *field, const char *want,
                         int64_t want_int, int ms);

/* A management client with a loop thread, as the broker user (or as
 * user/password), or against another base URL. */
rp_mgmt_loop *mt_loop(void);
rp_mgmt_loop *mt_loop_as(const char *url, const char *user, const char *password);

/* The slow listener: python3 http.server on 127.0.0.1, any port.
 * GET /slow/SECONDS answers {"slow":true} after SECONDS; /big/BYTES answers
 * that many bytes ("/chunked" at the end: without a Content-Length);
 * /echo answers {"method","path","auth","content_type","body"} for any
 * method. Freed with rp_child_free. */
rp_child *mt_listener_start(int *port);

long mt_now_ms(void);
void mt_sleep_ms(long ms);

#endif
