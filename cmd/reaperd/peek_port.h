/*
 * peek_port.h - the dead-letter port of a pass with the backfill's peek:
 * the PostgreSQL store's is_parked and park, and a peek that reads
 * dead-letter queues over a blocking AMQP connection of its own
 * (rp_amqp_peek.h), never the loop's.
 *
 * QUORUM DEAD-LETTER QUEUES. Every read of a quorum queue returned to it
 * spends one delivery (RABBITMQ.md), and RabbitMQ 4.0 drops or
 * dead-letters a message past its delivery limit (20 by default). So a
 * quorum dead-letter queue (or one whose type the broker does not report)
 * is read by the backfill ONCE, ever: the read is recorded in the store
 * (rp_pg_backfill_mark_read, a ledger event) and every later pass, in this
 * process or another, skips the queue and says so in its notes. The check,
 * the read, the parks and the record happen under the queue's advisory
 * lock (rp_pg_backfill_lock; another replica that finds it held skips the
 * queue this pass and says so), and the record is written after the parks
 * of the read, only when none of them failed: a park that fails (or a
 * crash before the record) leaves the queue unrecorded, so a later pass
 * reads it again (one more delivery) and parks what was read; the parks
 * are idempotent. (Not one transaction with the parks: each park's ledger
 * event goes to the events exchange once its own commit is done, and must
 * never be published for a row that a later rollback would undo.) A message is thus
 * read by the backfill at most once and spends at most one delivery. What
 * reaches such a queue afterwards comes through the tap, not the backfill;
 * what lay behind the first dead_letter_peek_limit messages at that first
 * read is not examined: the record keeps how many there were (the
 * broker's message-count at the last get), and every later pass reports
 * up to min(that, the depth now) as unread (consumers take from the head,
 * so no more of them can be left), which the pass surfaces (issue #5); a
 * record without the count (older) leaves it unknown. A dry run reads no
 * quorum queue at all (it would spend a delivery): it reports the depth as
 * unread, or, for a queue read before, what a real pass would. Classic
 * queues are read at every pass: a read returned to a classic queue costs
 * nothing; each read passes over the dead letters at the head that are
 * parked already (the pass's rp_dl_batch.already, at most
 * RP_BACKFILL_PASS_OVER_MAX of them) and keeps dead_letter_peek_limit new
 * ones, so a backlog is parked that many per pass, each once, and what
 * lies behind the read is reported unread. Stream
 * queues are not read (basic.get does not apply to them): their depth is
 * reported unread.
 *
 * Threads: the thread that runs the pass (the store thread, the daemon's
 * and --once's). Ownership: borrows the store and the broker port (both
 * must outlive it); copies the AMQP parameters.
 */
#ifndef RP_PEEK_PORT_H
#define RP_PEEK_PORT_H

#include <stdbool.h>

#include "rp_amqp_peek.h"
#include "rp_config.h"
#include "rp_pg_store.h"
#include "rp_ports.h"

typedef struct rp_peek_port {
    rp_amqp_peek *amqp;
    rp_pg_store *store;
    rp_dead_letter_port pg;        /* the store's own dead-letter port */
    const rp_broker_port *broker;  /* borrowed: the pass's broker port */
    bool dry_run;                  /* set before each pass */
    rp_dl_message *msgs;
    rp_pg_dl_handle *handles;
    size_t cap;
    char note[400];                /* what the last peek lends as its note */
    /* A quorum queue read and not yet recorded: its lock is held, and its
     * record is written once every message of the read is parked (or
     * examined and found unparkable), never when a park failed. */
    struct {
        bool open;
        bool failed;               /* a park of the read failed */
        char *vhost, *queue;
        size_t n;
        int64_t behind;
    } pending;
} rp_peek_port;

/* RP_ERR_NOMEM. */
rp_status rp_peek_port_init(rp_peek_port *pp, const rp_config *cfg, const char *password,
                            rp_pg_store *store, const rp_broker_port *broker) RP_MUSTCHECK;
void rp_peek_port_cleanup(rp_peek_port *pp);
/* Fills *out with peek, is_parked and park over pp. */
void rp_peek_port_fill(rp_peek_port *pp, rp_dead_letter_port *out);
/* The end of a pass: records (or not) a read still pending, releases its
 * lock, closes the peek's connection. */
void rp_peek_port_pass_over(rp_peek_port *pp);

#endif
