/*
 * rp_backfill_read.h - the backfill's read of dead-letter queues: the
 * dead-letter port a pass runs on (rp_ports.h), its peek deciding which
 * queue is read and how, over the peek port and the backfill-record port
 * (rp_backfill_port.h); is_parked and park are the store's.
 *
 * QUORUM DEAD-LETTER QUEUES. Every read of a quorum queue returned to it
 * spends one delivery (RABBITMQ.md), and RabbitMQ 4.0 drops or
 * dead-letters a message past its delivery limit (20 by default). So a
 * quorum dead-letter queue (or one whose type the broker does not report)
 * is read by the backfill ONCE, ever: the read is recorded in the store
 * (the record port's mark_read, a ledger event) and every later pass, in
 * this process or another, skips the queue and says so in its notes. The
 * check, the read, the parks and the record happen under the queue's lock
 * (the record port's lock; another replica that finds it held skips the
 * queue this pass and says so), and the record is written after the parks
 * of the read, only when none of them failed: a park that fails (or a
 * crash before the record) leaves the queue unrecorded, so a later pass
 * reads it again (one more delivery) and parks what was read; the parks
 * are idempotent. (Not one transaction with the parks: each park's ledger
 * event goes to the events exchange once its own commit is done, and must
 * never be published for a row that a later rollback would undo.) A
 * message is thus read by the backfill at most once and spends at most one
 * delivery. What reaches such a queue afterwards comes through the tap,
 * not the backfill; what lay behind the first dead_letter_peek_limit
 * messages at that first read is not examined: the record keeps how many
 * there were (the broker's message-count at the last get), and every later
 * pass reports up to min(that, the depth now) as unread (consumers take
 * from the head, so no more of them can be left), which the pass surfaces
 * (issue #5); a record without the count (older) leaves it unknown. A dry
 * run reads no quorum queue at all (it would spend a delivery): it reports
 * the depth as unread, or, for a queue read before, what a real pass
 * would. Classic queues are read at every pass: a read returned to a
 * classic queue costs nothing; each read passes over the dead letters at
 * the head that are parked already (the pass's rp_dl_batch.already, at
 * most RP_BACKFILL_PASS_OVER_MAX of them) and keeps dead_letter_peek_limit
 * new ones, so a backlog is parked that many per pass, each once, and what
 * lies behind the read is reported unread. Stream queues are not read
 * (basic.get does not apply to them): their depth is reported unread.
 *
 * Pure: no I/O of its own, no logging. Why a queue was not read goes into
 * the batch's note (the pass puts it into its report); what the daemon
 * logs (a read recorded, a park that failed, a lock not released...) is
 * handed to deps.on_news, which cmd/reaperd logs.
 *
 * Threads: the thread that runs the pass (the store thread of the daemon,
 * the main thread of --once). Ownership: rp_backfill_read_new copies the
 * deps (the ports' selves are borrowed: they must outlive the read).
 */
#ifndef RP_BACKFILL_READ_H
#define RP_BACKFILL_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_backfill_port.h"
#include "rp_common.h"
#include "rp_ports.h"
#include "rp_status.h"

/* What the read has to say beyond the pass's notes (cmd logs it). */
typedef enum rp_backfill_news_kind {
    /* A quorum queue's read recorded (n read, behind them). */
    RP_BACKFILL_READ_RECORDED = 0,
    /* A park of a quorum queue's read failed: the read is not recorded (n). */
    RP_BACKFILL_PARK_FAILED,
    /* The record could not be written: a later pass reads the queue again. */
    RP_BACKFILL_RECORD_FAILED,
    /* A queue's lock could not be released (it goes with the session). */
    RP_BACKFILL_UNLOCK_FAILED,
    /* A queue could not be read (reason). */
    RP_BACKFILL_READ_FAILED,
    RP_BACKFILL_NEWS_COUNT_
} rp_backfill_news_kind;

/* "read_recorded", "park_failed", ... ("?" out of range). */
const char *rp_backfill_news_str(rp_backfill_news_kind k);

typedef struct rp_backfill_news {
    rp_backfill_news_kind kind;
    const char *vhost, *queue; /* lent for the call */
    size_t n;                  /* messages read (RECORDED, PARK_FAILED) */
    int64_t behind;            /* ready messages behind them (RECORDED; -1 unknown) */
    const char *reason;        /* READ_FAILED: the peek port's err; else NULL */
} rp_backfill_news;

typedef struct rp_backfill_read_deps {
    rp_peek_port peek;                 /* how queues are read */
    rp_backfill_record_port record;    /* the quorum queues' record and lock */
    rp_dead_letter_port store;         /* is_parked and park (its peek unused) */
    const rp_broker_port *broker;      /* a queue's type and depth; borrowed; may be NULL */
    void (*on_news)(void *arg, const rp_backfill_news *news); /* may be NULL */
    void *news_arg;
} rp_backfill_read_deps;

typedef struct rp_backfill_read rp_backfill_read;

/* NULL when out of memory. */
rp_backfill_read *rp_backfill_read_new(const rp_backfill_read_deps *deps);
/* Ends a read still pending (as rp_backfill_read_pass_end) and frees. */
void rp_backfill_read_free(rp_backfill_read *b);
/* Fills *out with peek, is_parked and park over b (out->self = b). */
void rp_backfill_read_port(rp_backfill_read *b, rp_dead_letter_port *out);
/* Before each pass: whether it is a dry run (no quorum queue read, nothing
 * recorded, no lock taken). */
void rp_backfill_read_pass_begin(rp_backfill_read *b, bool dry_run);
/* The end of a pass: records (or not) a read still pending, releases its
 * lock, closes the peek port. */
void rp_backfill_read_pass_end(rp_backfill_read *b);

#endif
