/*
 * rp_replays.h - answering a bus_dead_lettered gate with `replay` (CONTRACT
 * section 5): the stored body is published back to the queue it died on,
 * byte for byte with its original properties less the dead-letter headers,
 * to the default exchange with `mandatory` and publisher confirms, and the
 * gate is settled (answer, job succeeded, ledger event) only after the
 * broker confirmed it and did not return it.
 *
 *   store thread: lock the gate (FOR UPDATE) and read it, its claim and
 *     its dead letter (rp_pg_replay_lock); a live claim by another replay
 *     (this process's or another replica's) is RP_ERR_BUSY, "gate N is
 *     being replayed by X since T", and changes nothing; a stale one is
 *     taken over, recorded on the ledger and reported (RP_ERR_CONFLICT:
 *     the message may have been published once already), and nothing is
 *     published (rp_gate.h);
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
 *   store thread: when the replay may go ahead, claim the gate (claimed_by
 *     this process's instance id, claimed_at now) and commit, else leave
 *     it as it was;
 *   loop: publish (mandatory, confirmed; never retried) on the replay
 *     channel (RP_REPLAY_CHANNEL), used by nothing else: a publish the
 *     broker still refuses with a channel error closes only that channel,
 *     which is opened again, and the replay is RP_ERR_CONFLICT with the
 *     broker's reason;
 *   store thread, after a confirm: settle the gate, fenced on the claim
 *     (answer, job, ledger event, claim cleared: one transaction); a claim
 *     taken over meanwhile settles nothing (RP_ERR_CONFLICT, said so);
 *   a publish that surely delivered nothing (returned, refused, nacked, not
 *     sent) releases the claim; a lost one keeps it (it may have been
 *     delivered), so it goes stale and the next answer reports it;
 *   loop: done().
 * A returned publish (no such queue) is RP_ERR_CONFLICT, a nacked or lost
 * one RP_ERR_UNAVAILABLE: the gate stays open and the reply says so.
 *
 * One replay per gate at a time in this daemon: a second replay of a gate
 * whose replay is in flight is refused at once (RP_ERR_CONFLICT from
 * rp_replays_start; control.c answers it `busy`); across processes the
 * claim on the gate row does the same (RP_ERR_BUSY), so two replicas never
 * both publish one gate's message, and a dismiss never closes a gate being
 * replayed.
 *
 * The part: the store side comes through rp_replay_store_port, the message
 * and its publish through rp_replay_publish_port (core/rp_replay_port.h,
 * filled in cmd/reaperd from adapters/postgres/rp_pg_replay.h and
 * adapters/rabbitmq/rp_amqp_control.h); store work runs through deps'
 * store_job (run fn on the store thread, then done on the loop). The
 * decisions are core's (rp_replay.h).
 *
 * Threads: rp_replays_* and done() on the loop thread. Ownership: deps is
 * copied, the selves in it are borrowed for the part's life; `by`
 * (answered_by: the broker-validated user) and `note` (the request's own
 * "by", kept in the ledger payload only) are copied; the result passed to
 * done() is lent for the call.
 */
#ifndef RP_REPLAYS_H
#define RP_REPLAYS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_ports.h"
#include "rp_replay_port.h"
#include "worker.h"

typedef struct rp_replay_result {
    bool cancelled;            /* shutting down: nothing to reply */
    rp_status st;              /* RP_OK: answer holds the outcome */
    const char *message;       /* why, when st != RP_OK */
    const char *note;          /* RP_OK: what was left out of the publish
                                  (a user_id, an expiration), or NULL */
    rp_answer_result answer;
    /* The broker was away (not connected: nothing sent; or the connection
     * went before the confirm: the claim kept): st is RP_ERR_UNAVAILABLE
     * and the same answer may be tried again once it is back. */
    bool away;
} rp_replay_result;

typedef void (*rp_replay_done_fn)(void *arg, const rp_replay_result *r);

typedef struct rp_replays_deps {
    rp_replay_store_port store;     /* store thread */
    rp_replay_publish_port publish; /* restore: store thread; publish: loop */
    /* Runs fn(ctx, job) on the store thread, then done(job, cancelled) on
     * the loop; an error (RP_ERR_CLOSED: stopping) means neither runs. */
    rp_status (*store_job)(void *self, rp_work_fn fn, rp_done_fn done, void *job);
    void *store_job_self;
} rp_replays_deps;

typedef struct rp_replays rp_replays;

/* NULL when out of memory. base is the loop's (borrowed). */
rp_replays *rp_replays_new(struct event_base *base, const rp_replays_deps *deps);

/* Starts a replay of gate. RP_OK: done() is called later, exactly once.
 * RP_ERR_CONFLICT: a replay of this gate is in flight; RP_ERR_CLOSED: shutting
 * down; RP_ERR_NOMEM. done() is then never called. */
rp_status rp_replays_start(rp_replays *r, int64_t gate, const char *by, const char *note,
                           rp_replay_done_fn done, void *arg) RP_MUSTCHECK;

/* Whether a replay of gate is in flight (any other answer to it waits:
 * control.c refuses it with conflict until the replay is over). */
bool rp_replays_busy(const rp_replays *r, int64_t gate);

/* Takes no new replay (RP_ERR_CLOSED); those in flight end through the
 * store thread's cancellation and the publisher's drop. */
void rp_replays_stop(rp_replays *r);

/* Frees the part (NULL is fine): after the store thread and the replay
 * publisher are gone, so that no replay is in flight. */
void rp_replays_free(rp_replays *r);

#endif
