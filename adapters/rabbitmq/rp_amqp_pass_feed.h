/*
 * rp_amqp_pass_feed.h - the events feed of one pass (reaperd --once): a
 * publish-only session (it consumes nothing: the control queue stays the
 * daemons') and the feed over it (rp_amqp_feed.h), behind a publisher port
 * that counts what it took.
 *
 * The session starts with the first committed event (a pass that commits
 * nothing never connects). At the end of the pass (rp_amqp_pass_feed_flush)
 * it waits for the confirms, at most flush_ms, and gives up once a
 * connection attempt made after a failure failed as well; what was not
 * confirmed then is a note in the report and a warning
 * (rp_amqp_pass_feed_finish), never a failed pass: the ledger has it.
 *
 * Threads: the port on the committing thread; everything else on the loop
 * thread of base. Ownership: the params' cfg, metrics and contexts are
 * borrowed and must outlive the feed. The stop order: whatever calls the
 * port stopped, then _close (the session settles what it did not confirm
 * as dropped; before base is freed), _finish, _free.
 */
#ifndef RP_AMQP_PASS_FEED_H
#define RP_AMQP_PASS_FEED_H

#include <event2/event.h>

#include "rp_amqp_feed.h"
#include "rp_config.h"
#include "rp_metrics.h"
#include "rp_ports.h"
#include "rp_report.h"
#include "rp_status.h"

typedef struct rp_amqp_pass_feed_params {
    struct event_base *base;
    const rp_config *cfg;
    const char *password;
    rp_metrics *metrics;
    /* Committing thread: run fn(job, cancelled) on the loop (the feed's
     * hooks.post). */
    rp_status (*post)(void *ctx, rp_amqp_feed_loop_fn fn, void *job);
    void *post_ctx;
    /* Loop: the flush is over (after rp_amqp_pass_feed_flush; may come
     * again, e.g. from _close: it must not mind). */
    void (*on_flushed)(void *arg);
    void *flushed_arg;
} rp_amqp_pass_feed_params;

typedef struct rp_amqp_pass_feed rp_amqp_pass_feed;

/* NULL when broker.url does not parse or out of memory (*err says why):
 * the pass then runs without a feed. */
rp_amqp_pass_feed *rp_amqp_pass_feed_new(const rp_amqp_pass_feed_params *p, const char **err);
void rp_amqp_pass_feed_port(rp_amqp_pass_feed *f, rp_publisher_port *out);
/* Loop: the pass is done: on_flushed once every event the port took is
 * settled, flush_ms passed or a reconnect failed; at once when the session
 * never started. */
void rp_amqp_pass_feed_flush(rp_amqp_pass_feed *f, long flush_ms);
/* Closes the session (what it did not confirm is settled as dropped). */
void rp_amqp_pass_feed_close(rp_amqp_pass_feed *f);
/* After _close: says in the report (a note) and the log (a warning) how
 * many committed events the exchange did not get; logs what was published.
 * RP_ERR_NOMEM when the note cannot be added. */
rp_status rp_amqp_pass_feed_finish(rp_amqp_pass_feed *f, rp_report *report) RP_MUSTCHECK;
void rp_amqp_pass_feed_free(rp_amqp_pass_feed *f);

#endif
