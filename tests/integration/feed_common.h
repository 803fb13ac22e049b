/*
 * feed_common.h - a subscriber of the events exchange for the feed tests
 * (test_feed*.c): a queue bound to `#` on an exchange of the test's own,
 * read with basic.get on a connection of the test's own, and the ledger
 * read back from PostgreSQL to compare with.
 *
 * Ownership: feed_msgs owns its messages (feed_msgs_free); strings from
 * feed_ledger_ids are heap (feed_ids_free).
 */
#ifndef FEED_COMMON_H
#define FEED_COMMON_H

#include <amqp.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct feed_sub {
    amqp_connection_state_t c;
    char exchange[128];
    char queue[128];
} feed_sub;

typedef struct feed_msg {
    char message_id[64];
    char routing_key[128];
    char type[32];
    char content_type[64];
    unsigned delivery_mode;
    long long timestamp;
    json_t *body;     /* the body decoded (msgpack or JSON, as content_type says) */
    json_t *raw_json; /* the body read as JSON text by jansson alone (NULL: not JSON) */
} feed_msg;

typedef struct feed_msgs {
    feed_msg *items;
    size_t n, cap;
} feed_msgs;

/* Connects (channel 1), declares `exchange` as reaperd does (topic,
 * durable) and binds `queue` to it with `#`. queue NULL: a server-named
 * exclusive queue; else a durable queue of that name (it survives a broker
 * restart; the caller deletes it with feed_sub_delete). */
void feed_sub_open(feed_sub *s, const char *exchange, const char *queue);
/* Connects again to the same queue (after a broker restart). */
void feed_sub_reconnect(feed_sub *s);
void feed_sub_close(feed_sub *s);
/* Deletes the queue and the exchange (for durable ones). */
void feed_sub_delete(feed_sub *s);

/* Reads every message waiting into out (appended), then keeps reading
 * until nothing came for quiet_ms, or until out holds `want` messages
 * with distinct ids (want 0: no such stop), or until timeout_ms. */
void feed_sub_read(feed_sub *s, feed_msgs *out, size_t want, int quiet_ms, int timeout_ms);
size_t feed_msgs_distinct(const feed_msgs *m);
const feed_msg *feed_msgs_find(const feed_msgs *m, const char *message_id);
size_t feed_msgs_count(const feed_msgs *m, const char *message_id);
void feed_msgs_free(feed_msgs *m);

/* The ledger of schema as "ledger-<seq>" ids in seq order, with their
 * kinds. Returns the count. */
size_t feed_ledger(PGconn *pg, const char *schema, char ***ids, char ***kinds);
void feed_ids_free(char **ids, size_t n);

#endif
