/*
 * tap_common.h - what the tap's integration tests share: a reaperd with its
 * own schema, tap queue, control queue and owned pattern (^vibey\.itt<pid>\.
 * so other tests' queues stay out, and the tap's name outside it so no
 * delivery-limit policy reaches it), a blocking AMQP client to make dead
 * letters, and counts read from PostgreSQL.
 *
 * Ownership: every string is static; tap_world is one global (T).
 */
#ifndef RP_TAP_COMMON_H
#define RP_TAP_COMMON_H

#include <amqp.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "itest.h"
#include "test_daemon.h"

typedef struct tap_world {
    rp_child *reaperd;
    amqp_connection_state_t amqp;
    PGconn *pg;
    char tag[32];      /* itt<pid> */
    char schema[64];
    char tap[96];      /* the tap queue */
    char control[96];  /* the control queue */
    char env_tap[160], env_owned[160], env_dlq[160];
    /* Every queue and exchange declared, deleted at teardown whatever
     * happened (a failed test must not leave owned dead-letter queues
     * holding messages behind). */
    char made[64][128];
    bool made_exchange[64];
    int n_made;
} tap_world;

extern tap_world T;

/* Migrates the schema, connects AMQP and PostgreSQL. 0 on success. */
int tap_world_setup(const char *name);
/* Lets go of a parking block a failed test left (its session closes, the
 * lock goes with it), stops reaperd, deletes the tap queue and every
 * queue/exchange named, drops the schema. */
int tap_world_teardown(void);

/* Names a test object: "vibey.itt<pid>.<what>" (owned) into buf. */
const char *tap_owned(char *buf, size_t n, const char *what);
/* "itt<pid>.<what>" (not owned). */
const char *tap_plain(char *buf, size_t n, const char *what);

/* Starts reaperd and waits until it is connected, has swept once and its
 * tap is bound (the log says "tap bindings reconciled"). */
void tap_start_reaperd(void);
/* The same with a sweep every interval_seconds (tap_start_reaperd: 3600). */
void tap_start_reaperd_every(int interval_seconds);
/* itest_daemon_start with this world's schema, tap, control queue, owned
 * pattern and no dead-letter backfill, after o's env (whose entries win:
 * e.g. a dead-letter pattern of the test's own). o's ready lines, when
 * both NULL, are "broker connected" and then "tap bindings". */
rp_child *tap_daemon_start(itest_daemon_opts o);
void tap_stop_reaperd(int sig);

void tap_exchange(const char *name, const char *type);
/* A classic durable queue; dlx may be NULL; dlrk NULL for none; ttl_ms < 0
 * for none. */
void tap_queue(const char *name, const char *dlx, const char *dlrk, long ttl_ms);
void tap_bind(const char *queue, const char *exchange, const char *key, amqp_table_t args);
void tap_delete_queue(const char *name);
void tap_delete_exchange(const char *name);

/* A dead-letter source named after what: an owned queue work whose
 * dead-letter exchange (fanout, not owned) routes to the owned queue dlq;
 * work and dlq are buffers of n bytes. ttl_ms is work's message TTL, < 0
 * for none (dead letters come from rejects); 0 makes a storm's source (the
 * broker dead-letters each message as it arrives). */
void tap_dead_letter_source(const char *what, long ttl_ms, char *work, char *dlq, size_t n);

/* A trigger makes every park whose new dead_letter row meets condition (SQL
 * over NEW) fail on its own, until tap_accept_parks. */
void tap_refuse_parks(const char *condition);
void tap_accept_parks(void);

/* Publishes n messages "<prefix>-<i>" to the default exchange with routing
 * key queue (message_id "<prefix>-<i>" on every other message). */
void tap_publish(const char *queue, const char *prefix, int n);
/* Consumes n messages from queue and rejects them all (one nack, multiple,
 * no requeue). */
void tap_reject(const char *queue, int n);
/* Messages ready in a queue (passive declare). */
long tap_depth(const char *queue);

/* SELECT in the test's schema; the first column of the first row as a
 * number, -1 on error. */
long tap_sqln(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Polls until tap_sqln(query) == want or timeout_ms passes; returns the
 * last value. */
long tap_wait_count(long want, int timeout_ms, const char *query);

/* Polls until exactly want dead letters whose body starts "<prefix>-" are
 * parked, or timeout_ms passes; fails the test (with reaperd's log) when
 * the count is not want then. */
void tap_wait_parked(const char *prefix, long want, int timeout_ms);

/* The end of a test on one dead-letter source: reaperd stopped (SIGTERM),
 * then its work queue and its dead-letter queue deleted. */
void tap_source_done(const char *work, const char *dlq);

/* Parking blocked: the tap's parks wait on an exclusive lock of the
 * dead_letter table, held by a session of the test's own until
 * tap_unblock_parking commits it. */
void tap_block_parking(void);
void tap_unblock_parking(void);

/* 3 for RabbitMQ 3.x, 4 for 4.x (from the server properties). */
int tap_broker_major(void);

#endif
