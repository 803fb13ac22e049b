/*
 * rp_amqp_feed.h - the events feed (issue: reaps as events): the publisher
 * port (rp_ports.h) through which every ledger event reaper commits is also
 * published, after the commit, to broker.events_exchange (topic) with
 * publisher confirms. The message (routing key
 * <source>.<condition>.<action> or gate.<kind>.<outcome> in lower case,
 * message_id ledger-<seq>, the ledger payload as the body, msgpack or JSON
 * as broker.events_format says, with the content_type to match) is built by
 * rp_proto_encode_event (SCHEMA.md section 7).
 *
 * The port is called on the thread that commits (the store thread), right
 * after a commit (a pass's verdicts, a park, and every gate answer through
 * rp_gate_feed_wrap); it counts the reap in the metrics, encodes there and
 * posts the publish to the loop (hooks.post), which alone touches AMQP. A
 * publish waiting for the broker is retried across reconnects
 * (rp_amqp_publisher retry) and never blocks the loop or the pass; past the
 * publisher's bounded queue it is DROPPED and logged here with its message
 * id. The ledger row is the record either way. While the committing thread
 * holds the port (rp_publisher_port.hold: the tap around one park
 * transaction's events), what it publishes is kept in order and posted to
 * the loop as one job at the release: one wake-up of the loop and one
 * publisher flush per transaction instead of one per event.
 *
 * Threads: the port on the committing thread; the post's function and the
 * hooks' publisher and on_loop on the loop thread.
 * Ownership: _new copies the exchange name; metrics and hooks.ctx are
 * borrowed and must outlive the feed. An encoded event is handed over to
 * the publisher, not copied (rp_publish.release): until it is settled it
 * points at the feed (its exchange name). Free the feed after whatever
 * could still call its port or run a post it made, and after the
 * publishers it handed events to.
 */
#ifndef RP_AMQP_FEED_H
#define RP_AMQP_FEED_H

#include <stdbool.h>
#include <stdint.h>

#include <amqp.h>

#include "rp_amqp_publisher.h"
#include "rp_config.h"
#include "rp_metrics.h"
#include "rp_ports.h"
#include "rp_proto.h"
#include "rp_status.h"

/* Runs on the loop thread; cancelled: the loop is going away. */
typedef void (*rp_amqp_feed_loop_fn)(void *job, bool cancelled);

typedef struct rp_amqp_feed_hooks {
    /* Committing thread: run fn(job, cancelled) on the loop. RP_OK, or a
     * failure (fn is then never called). */
    rp_status (*post)(void *ctx, rp_amqp_feed_loop_fn fn, void *job);
    /* Loop: the publisher to use now, or NULL (stopping). */
    rp_amqp_publisher *(*publisher)(void *ctx);
    /* Loop: an event reached the loop (a gate or sighting may have
     * changed). May be NULL. */
    void (*on_loop)(void *ctx);
    /* Loop: what became of one event (its ledger seq), once it is settled
     * (or not handed to a publisher: RP_PUBLISH_DROPPED). When set, the
     * feed logs nothing per event: the caller says it once (reaperd
     * --once). May be NULL. */
    void (*on_settled)(void *ctx, int64_t seq, rp_publish_outcome outcome);
    void *ctx;
} rp_amqp_feed_hooks;

typedef struct rp_amqp_feed rp_amqp_feed;

/* NULL when out of memory. enc: the bodies' encoding. */
rp_amqp_feed *rp_amqp_feed_new(const char *exchange, rp_encoding enc, rp_metrics *metrics,
                               const rp_amqp_feed_hooks *hooks);
/* The same, to cfg's broker.events_exchange in broker.events_format. */
rp_amqp_feed *rp_amqp_feed_from_config(const rp_config *cfg, rp_metrics *metrics,
                                       const rp_amqp_feed_hooks *hooks);
/* Fills out with the publisher port over f. */
void rp_amqp_feed_port(rp_amqp_feed *f, rp_publisher_port *out);
void rp_amqp_feed_free(rp_amqp_feed *f);

/* The properties every feed event carries: content_type (the encoding's),
 * persistent, message_id ledger-<seq>, timestamp, type (the ledger event's
 * kind) and app_id "reaperd". p is overwritten; it points into the strings
 * (borrowed), which must outlive its publish. */
void rp_amqp_feed_props(amqp_basic_properties_t *p, const char *content_type,
                        const char *message_id, uint64_t timestamp, const char *type);

#endif
