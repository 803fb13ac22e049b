/*
 * rp_memory_backfill.h - core's peek port and backfill-record port
 * (core/rp_backfill_port.h) in memory, for the unit tests of
 * core/rp_backfill_read:
 *
 *   - the peek port reads the memory store's dead-letter messages
 *     (rp_memory_add_dead_letter) from the head of a queue, up to the limit
 *     (past what past->pass_over answers true for, at most read_max read),
 *     and leaves them where they are; *behind is what the queue holds
 *     behind the last one read. It counts, per queue, the reads and the
 *     messages it handed out (each one a delivery spent on a quorum queue);
 *     every message's handle points to an rp_dl_stored of NULLs.
 *   - the record port keeps the records (one per queue: the first) and the
 *     locks: taken by this session (lock/unlock), or held by "another
 *     replica" (rp_memory_backfill_hold), which lock then does not get.
 *
 * FAILURE INJECTION: rp_memory_backfill_fail makes every call of one
 * operation fail with a status until disarmed (RP_OK); a failing call
 * changes nothing. rp_memory_backfill_calls counts every call.
 *
 * Ownership: rp_memory_backfill_new borrows m (it must outlive the object);
 * the ports filled borrow the object. Strings given are copied. One thread.
 */
#ifndef RP_MEMORY_BACKFILL_H
#define RP_MEMORY_BACKFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_backfill_port.h"
#include "rp_memory.h"

typedef enum rp_memory_backfill_op {
    RP_MBF_READ = 0,
    RP_MBF_CLOSE,
    RP_MBF_LOCK,
    RP_MBF_UNLOCK,
    RP_MBF_WAS_READ,
    RP_MBF_MARK_READ,
    RP_MBF_OP_COUNT_
} rp_memory_backfill_op;

typedef struct rp_memory_backfill rp_memory_backfill;

/* NULL when out of memory. */
rp_memory_backfill *rp_memory_backfill_new(rp_memory *m);
void rp_memory_backfill_free(rp_memory_backfill *mb);

void rp_memory_backfill_peek_port(rp_memory_backfill *mb, rp_peek_port *out);
void rp_memory_backfill_record_port(rp_memory_backfill *mb, rp_backfill_record_port *out);

void rp_memory_backfill_fail(rp_memory_backfill *mb, rp_memory_backfill_op op, rp_status st);
size_t rp_memory_backfill_calls(const rp_memory_backfill *mb, rp_memory_backfill_op op);

/* Another replica takes (true) or releases the queue's lock. */
rp_status rp_memory_backfill_hold(rp_memory_backfill *mb, const char *vhost, const char *queue,
                                  bool held) RP_MUSTCHECK;
/* Whether this session holds the queue's lock now. */
bool rp_memory_backfill_locked(const rp_memory_backfill *mb, const char *vhost,
                               const char *queue);
/* How many records the queue has (mark_read calls that succeeded), and the
 * first one's n and unread (when there is one; out pointers may be NULL). */
size_t rp_memory_backfill_records(const rp_memory_backfill *mb, const char *vhost,
                                  const char *queue, size_t *n, int64_t *unread);
/* Reads of the queue, and the messages those reads handed out. */
size_t rp_memory_backfill_reads(const rp_memory_backfill *mb, const char *vhost,
                                const char *queue);
size_t rp_memory_backfill_delivered(const rp_memory_backfill *mb, const char *vhost,
                                    const char *queue);

#endif
