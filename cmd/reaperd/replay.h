/*
 * replay.h - answering a bus_dead_lettered gate with `replay` (CONTRACT
 * section 5): the stored body is published back to the queue it died on,
 * byte for byte with its original properties less the dead-letter headers,
 * to the default exchange with `mandatory` and publisher confirms, and the
 * gate is settled (answer, job succeeded, ledger event) only after the
 * broker confirmed it and did not return it.
 *
 *   store thread: read the gate and its dead letter (rp_pg_replay_read);
 *     refuse with RP_ERR_CONFLICT and a reason when the gate does not take
 *     replay, the body was not stored whole, the origin (from untrusted
 *     headers) is not owned or is not on reaperd's vhost, or the stored
 *     properties cannot be restored; an answered gate gives its first
 *     answer (already_answered) and nothing is sent;
 *   store thread, before publishing: leave out what the broker would refuse
 *     with a channel error (a user_id other than reaperd's own user, an
 *     expiration that is not a non-negative integer string), saying so in
 *     result.note; the stored dead letter keeps them; refuse a destination
 *     that is one of reaper's own queues (control, tap, a server-named
 *     queue) with RP_ERR_CONFLICT whatever owned_queue_pattern says;
 *   loop: publish (mandatory, confirmed; never retried) on the replay
 *     channel (RP_REPLAY_CHANNEL), used by nothing else: a publish the
 *     broker still refuses with a channel error closes only that channel,
 *     which is opened again, and the replay is RP_ERR_CONFLICT with the
 *     broker's reason;
 *   store thread, after a confirm: settle the gate;
 *   loop: done().
 * A returned publish (no such queue) is RP_ERR_CONFLICT, a nacked or lost
 * one RP_ERR_UNAVAILABLE: the gate stays open and the reply says so.
 *
 * One replay per gate at a time in this daemon: a second replay of a gate
 * whose replay is in flight is refused at once (RP_ERR_CONFLICT from
 * rp_replay_start), so two requests never both publish; across processes
 * the gate's row lock and its already_answered check settle it once.
 *
 * Threads: rp_replay_start and done() on the loop thread. Ownership: `by`
 * (answered_by: the broker-validated user) and `note` (the request's own
 * "by", kept in the ledger payload only) are copied; the result passed to done() is lent for the call.
 */
#ifndef RP_REPLAY_DAEMON_H
#define RP_REPLAY_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_ports.h"

struct rp_daemon;

typedef struct rp_replay_result {
    bool cancelled;            /* shutting down: nothing to reply */
    rp_status st;              /* RP_OK: answer holds the outcome */
    const char *message;       /* why, when st != RP_OK */
    const char *note;          /* RP_OK: what was left out of the publish
                                  (a user_id, an expiration), or NULL */
    rp_answer_result answer;
} rp_replay_result;

typedef void (*rp_replay_done_fn)(void *arg, const rp_replay_result *r);

/* Starts a replay of gate. RP_OK: done() is called later, exactly once.
 * RP_ERR_CONFLICT: a replay of this gate is in flight; RP_ERR_CLOSED: shutting
 * down; RP_ERR_NOMEM. done() is then never called. */
rp_status rp_replay_start(struct rp_daemon *d, int64_t gate, const char *by,
                          const char *note, rp_replay_done_fn done, void *arg) RP_MUSTCHECK;

/* Whether a replay of gate is in flight (any other answer to it waits:
 * control.c refuses it with conflict until the replay is over). */
bool rp_replay_busy(const struct rp_daemon *d, int64_t gate);

/* Frees the in-flight set (at the daemon's end). */
void rp_replay_cleanup(struct rp_daemon *d);

#endif
