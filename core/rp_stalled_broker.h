/*
 * rp_stalled_broker.h - issue 18 item 1, the broker half of STALLED: a
 * channel that holds unacknowledged messages of an owned queue and whose
 * cumulative ack count has not moved for reap.held_ceiling_seconds, while
 * its connection stays alive (heartbeats), is surfaced on that queue,
 * naming the connection and the channel; the sighting clears when the
 * channel acks (its ack count moves), holds nothing, or goes.
 *
 * WHAT IS SAMPLED. The broker port's list_channels (rp_ports.h) gives,
 * once per full pass, every channel that holds unacknowledged messages:
 * its connection, its unacked count, its cumulative ack count
 * (message_stats.ack) and the queues its consumers consume from. Nothing
 * in the broker says how long one delivery has been unacked, so the hold
 * is measured across passes: a sample alone shows nothing.
 *
 * WHERE THE SAMPLES LIVE. In this process's memory (rp_stall_memory),
 * owned by whoever runs the passes (reaperd's pass runner: one per
 * process, used by the store thread alone) and handed to each full pass
 * through rp_pass_options.stall_memory. Nothing is written to the store:
 * a replica that starts later, or a restarted reaperd, begins with an
 * empty memory. That cannot double-record: the sighting is opened and
 * closed once fleet-wide (rp_sighting.h), and a replica whose own samples
 * cannot yet tell whether a channel has been holding for the ceiling (it
 * first saw the channel already holding, less than a ceiling ago: the
 * hold is UNSURE) neither surfaces it nor clears what another replica
 * surfaced on that queue.
 *
 * THE RULE (rp_judge_channel_hold, pure, time as argument). For a channel
 * that holds (unacked > 0), `since` is when its ack count was last seen to
 * move, or when it was first seen holding:
 *   - now - since >= ceiling            -> STALLED (surfaced);
 *   - below that, and the start of the hold was observed (its ack count
 *     moved, or the previous complete sample did not show it holding) ->
 *     MOVING (not stalled: its queue's sighting may clear);
 *   - below that, and the channel was already holding at the memory's
 *     first complete sample that showed it            -> UNSURE.
 * A channel that no longer holds, or is gone, is forgotten.
 *
 * Ownership: samples and lists are lent (the broker port's rule); the
 * memory copies what it keeps. rp_stall_memory_new/free; the memory is
 * used by one thread at a time.
 */
#ifndef RP_STALLED_BROKER_H
#define RP_STALLED_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_judge.h"
#include "rp_status.h"
#include "rp_verdict.h"

/* One channel that holds unacknowledged messages, as the management API
 * shows it. Every string is lent. */
typedef struct rp_channel_sample {
    const char *vhost;
    const char *connection;     /* the connection's name */
    const char *channel;        /* the channel's name (unique broker-wide) */
    const char *user;           /* may be NULL */
    int64_t unacked;            /* messages_unacknowledged */
    int64_t acked_total;        /* message_stats.ack, cumulative; 0 when absent */
    const char *const *queues;  /* the queues (on vhost) its consumers consume from */
    size_t n_queues;
} rp_channel_sample;

typedef struct rp_channel_list {
    const rp_channel_sample *channels; /* lent */
    size_t n;
} rp_channel_list;

typedef enum rp_hold_state {
    RP_HOLD_NONE = 0, /* not holding */
    RP_HOLD_MOVING,   /* holding for less than the ceiling, since a known start */
    RP_HOLD_UNSURE,   /* holding for less than the ceiling as far as this memory saw */
    RP_HOLD_STALLED,  /* holding, ack count unmoved for the ceiling or longer */
    RP_HOLD_COUNT_
} rp_hold_state;

/* "NONE", "MOVING", "UNSURE", "STALLED"; "unknown" outside the enum. */
const char *rp_hold_state_string(rp_hold_state s);

/* What the memory knows of one channel after an update. */
typedef struct rp_channel_hold {
    rp_time_ms since;   /* its ack count unmoved (while holding) since */
    bool since_known;   /* false: already holding when first seen (since is then a lower bound) */
    int64_t held_ms;    /* now - since, >= 0 */
    rp_hold_state state;
} rp_channel_hold;

/* The boundary: STALLED at held_ms >= ceiling_seconds x 1000 (one
 * millisecond below is not), else MOVING or UNSURE as since_known says;
 * NONE for unacked <= 0. */
rp_hold_state rp_judge_channel_hold(int64_t unacked, int64_t held_ms, bool since_known,
                                    int64_t ceiling_seconds);

typedef struct rp_stall_memory rp_stall_memory;

/* NULL when out of memory. */
rp_stall_memory *rp_stall_memory_new(void);
void rp_stall_memory_free(rp_stall_memory *m);
/* Channels remembered (for tests and logs). */
size_t rp_stall_memory_size(const rp_stall_memory *m);

/* Records one complete sample of every holding channel taken at now, and
 * fills holds[0..list->n) (parallel to list->channels) by the rule above.
 * Channels not in the list, or listed with unacked <= 0, are forgotten.
 * A channel listed twice counts once (the first). A sample older than the
 * last one recorded (a clock that stepped back) is judged against its own
 * time and never makes a hold longer. RP_ERR_INVALID for NULL arguments
 * or a channel without a name (nothing recorded); RP_ERR_NOMEM (the
 * memory is then as before the call). */
rp_status rp_stall_memory_update(rp_stall_memory *m, const rp_channel_list *list, rp_time_ms now,
                                 int64_t ceiling_seconds, rp_channel_hold *holds) RP_MUSTCHECK;

/* Forgets that a complete sample was ever taken (every remembered channel
 * too): after a listing that failed, the next one cannot tell a new hold
 * from an old one. */
void rp_stall_memory_forget(rp_stall_memory *m);

/* The verdict on owned queue vhost/queue held by channel c (hold h, state
 * STALLED): STALLED / SURFACED, source broker, object "queue:<vhost>:<queue>",
 * queue the queue's name, measured the hold in seconds, threshold
 * held_ceiling_seconds, unit "seconds", trusted, and a detail that names
 * the connection and the channel. Any other state gives no condition
 * (RP_COND_NONE, RP_OK). RP_ERR_INVALID for NULL arguments; RP_ERR_NOMEM. */
rp_status rp_judge_stalled_channel(const rp_channel_sample *c, const char *queue,
                                   const rp_channel_hold *h, const rp_thresholds *t,
                                   rp_verdict *out) RP_MUSTCHECK;

#endif
