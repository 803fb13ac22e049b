/*
 * rp_tap_batch.h - the dead-letter tap's decisions (CONTRACT section 2
 * condition e, section 8; issue #5), apart from its transport: what it holds
 * and weighs, when it stops and starts consuming, how its deliveries are
 * batched and parked, and which are acked after which commit.
 *
 * Pure: no I/O, no logging, no clock (times are arguments). Two halves:
 *
 * THE LOOP'S HALF (rp_tap_state, one thread: the daemon's loop). Every
 * delivery is held (rp_tap_state_hold) and weighed (its weight, which the
 * caller computes: body, properties and headers as decoded, bookkeeping).
 * Past RP_TAP_HOLD_BYTES rp_tap_state_hold_check says CANCEL (stop
 * consuming) until parks bring the held bytes to half, then CONSUME again
 * under a new consumer tag (RP_TAP_CONSUMER_TAG, then ".<n>" at the n-th
 * consume again: RabbitMQ 3.10.8 crashes the channel when a quorum queue's
 * consumer consumes again under the same tag with deliveries in flight,
 * rabbitmq-server #5927). While it is off, a delivery the broker sent
 * before it had the cancel is returned (rp_tap_state_off: nack, requeue),
 * unkept. Batches of at most RP_TAP_BATCH go to the tap's thread
 * (rp_tap_state_take), at most RP_TAP_IN_FLIGHT at once, oldest first; with
 * one out, the next only once RP_TAP_TXN_MAX wait (else they gather until
 * the one out is back: fuller transactions in a storm, none delayed alone);
 * with none out in a storm, a short one gathers up to RP_TAP_GATHER_US
 * (rp_tap_state_gather).
 * When one comes back, rp_tap_state_settle says what to ack: only what is
 * settled (parked, parked before, or not a dead letter) and only what came
 * on the current connection (after a reconnect the broker has the rest
 * again and delivers it again: the park is idempotent), as one multiple
 * ack when nothing still held lies below, else one by one. What the store
 * could not take (unreachable) goes back to the head of the waiting list,
 * in order, and the tap pauses (backoff RP_TAP_BACKOFF_MIN_MS doubling to
 * RP_TAP_BACKOFF_MAX_MS); what failed on its own is held unacked (stuck,
 * its body shed) until the next reconnect.
 *
 * THE THREAD'S HALF (rp_tap_park, the tap's own thread). One batch, in
 * order: each delivery examined (not a dead letter: settled, never parked),
 * judged, and parked RP_TAP_TXN_MAX (and RP_TAP_TXN_BYTES) to a
 * transaction through the park-batch port (rp_park_batch_port.h), up to
 * RP_TAP_DEPTH transactions outstanding, sent to the sessions in turn and
 * read in sending order. A transaction that fails on its own (not the
 * store going away) has the later ones read first, then its deliveries
 * parked one by one (rp_park_dead_letter through the dead-letter port), so
 * that only one that fails alone is held. The events of what was parked
 * are handed to the publisher port after the commit.
 *
 * Ownership: the state owns the items it holds (waiting, stuck) and the
 * batches it hands out until they are settled; it frees an item through
 * rp_tap_item_ops.drop (the caller's item embeds rp_tap_item). A batch
 * (rp_tap_state_take) is the state's: the thread only writes its items'
 * results; rp_tap_state_settle or rp_tap_state_put_back takes it back.
 */
#ifndef RP_TAP_BATCH_H
#define RP_TAP_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_park.h"
#include "rp_park_batch_port.h"
#include "rp_ports.h"
#include "rp_status.h"

#define RP_TAP_CONSUMER_TAG "reaper.tap"
#define RP_TAP_PREFETCH 4000 /* two batches in flight and one gathering */
#define RP_TAP_BATCH 2000
#define RP_TAP_IN_FLIGHT 2
/* In a storm (the last batch handed out held RP_TAP_GATHER_AFTER or more),
 * a batch short of a transaction's worth, with none out, waits up to
 * RP_TAP_GATHER_US for more before it goes (rp_tap_state_gather): the
 * broker keeps delivering meanwhile, and fuller transactions cost every
 * process less per dead letter (each one a commit, an ack, a flush of the
 * feed's events). 100,000 storms of bench/tap, four pairs interleaved with
 * no wait and 3 ms: 80-95 dead letters a transaction against 45-52,
 * reaperd 14-23 us per dead letter against 16-27. 12 ms against 3 ms,
 * three pairs interleaved with autovacuum off (issue 21): 148-158 a
 * transaction against 72-88, 5,169-5,338 parked/s against 4,937-5,348,
 * reaperd 18 us against 19-21, PostgreSQL 80-84 us against 84-91; 25 ms
 * gathered 175 and did no better. A storm's dead letters may wait up to
 * 12 ms more; a light storm's batches hold one: never held. */
#define RP_TAP_GATHER_US 12000
#define RP_TAP_GATHER_AFTER 32
/* The most the tap keeps in memory (bodies and bookkeeping) before it stops
 * consuming: a count prefetch cannot bound bytes (4,000 dead letters of
 * 4 MiB would be 16 GiB), so past this the tap cancels its consumer and the
 * broker keeps the rest until parks bring the tap to half. The chart's
 * memory limit is 128 MiB. */
#define RP_TAP_HOLD_BYTES (32u * 1024u * 1024u)
#define RP_TAP_BACKOFF_MIN_MS 1000
#define RP_TAP_BACKOFF_MAX_MS 8000

/* The most dead letters, and bytes of bodies, headers and properties (their
 * JSON), parked in one transaction: up to RP_TAP_DEPTH transactions are
 * prepared at once, each held twice (the thread's parameters and libpq's
 * send buffer), so the bytes bound what a storm of heavy headers costs
 * beside the held deliveries: 3,500 dead letters with 32-100 KiB of
 * headers, parking blocked then let go (test_reaperd_tap_headers), peaked
 * at 89/107 MiB (RabbitMQ 3.10/4.0) with 8 MiB, 70/99 MiB with 4 MiB;
 * 69-80 MiB on both since rabbitmq-c's pools are released every MiB
 * decoded (rp_amqp_conn.c), not only between drains.
 * Fewer commits are fewer WAL flushes, each of which waits behind the broker's
 * own fsyncs on a shared disk: in the 100,000 storm of bench/tap (quiet
 * 2-CPU machine) the tap's backend waited on WALSync about 20% of its time
 * at 50 a transaction and 5% at 250, and the storm went from 8,600-8,800/s
 * to 9,150-9,250/s (with RP_TAP_BATCH 2000, prefetch 4000; pgbench doing
 * the same at 250 instead of 50 gains about 4%). */
#define RP_TAP_TXN_MAX 250
#define RP_TAP_TXN_BYTES (4u * 1024u * 1024u)
/* The most transactions a batch has outstanding at once, over all
 * sessions: two on each, one being parked and the next one waiting in the
 * server's socket, so that neither server waits for this thread. With one
 * session, measured on the quiet 2-CPU machine (bench/tap, 100,000 storm):
 * 2 gave 7,600-8,600/s in 5 of 5 runs; 3 gave the same or, in 5 of 12
 * storms, an unexplained slow mode of about 4,900/s with every process
 * partly idle; 1 (no overlap) 7,100-7,900. With two sessions, 4 (two on
 * each) and 2 (one on each) were within each other's noise. */
#define RP_TAP_DEPTH 4

typedef enum rp_tap_result {
    RP_TAP_PENDING = 0,
    RP_TAP_DONE,  /* parked, parked before, or not a dead letter: ack */
    RP_TAP_RETRY, /* the store was unreachable: hold and try again */
    RP_TAP_STUCK, /* failed on its own: hold until the next reconnect */
} rp_tap_result;

/* One held delivery. The caller's own item embeds it (first member) and
 * keeps the message there; the caller sets tag, weight, received_us and
 * via_default before rp_tap_state_hold. */
typedef struct rp_tap_item {
    struct rp_tap_item *next;
    unsigned generation; /* the connection it came on (set by hold) */
    uint64_t tag;        /* its delivery tag */
    size_t weight;       /* what it counts in the held bytes */
    int64_t received_us; /* monotonic, for the park delay */
    /* Delivered through the default exchange: published straight into the
     * tap queue, never dead-lettered through an exchange the tap is bound
     * to (issue 14 item 5): not a dead letter. */
    bool via_default;
    /* Written on the tap's thread, read on the loop after the batch. */
    rp_tap_result result;
    rp_park_outcome outcome;
    bool skipped; /* not a dead letter: acked, not parked */
    rp_status st;
} rp_tap_item;

typedef struct rp_tap_list {
    rp_tap_item *head, *tail;
    size_t n;
} rp_tap_list;

typedef struct rp_tap_batch {
    void *arg;          /* the caller's, untouched */
    size_t unpublished; /* events of parked ones the publisher did not take */
    size_t n;
    rp_tap_item *items[RP_TAP_BATCH];
} rp_tap_batch;

/* How the state frees what the caller allocated. drop frees an item whole;
 * shed frees its message (body, properties) and returns its weight
 * without them: a stuck item needs only its tag and generation. */
typedef struct rp_tap_item_ops {
    void *ctx;
    void (*drop)(void *ctx, rp_tap_item *it);
    size_t (*shed)(void *ctx, rp_tap_item *it);
} rp_tap_item_ops;

/* What rp_tap_state_settle decided about one batch (lent: valid until the
 * next settle on the same state). */
typedef struct rp_tap_settled {
    /* The acks, in this order: one multiple ack of acks[0], or n_acks
     * single ones. A failed ack makes the rest moot (the connection
     * drops). */
    bool multiple;
    size_t n_acks;
    uint64_t acks[RP_TAP_BATCH];
    /* For reaper_tap_park_delay_seconds: one per settled delivery. */
    size_t n_delays;
    int64_t delays_us[RP_TAP_BATCH];
    uint64_t ignored;   /* deliveries that were not dead letters */
    bool first_ignored; /* among them the first the tap ever saw */
    uint64_t parked;    /* parked now */
    size_t n_stuck;     /* held until the next reconnect, with why */
    rp_status stuck_st[RP_TAP_BATCH];
    size_t held;        /* waiting and stuck after the settle */
    bool store_down;    /* the store was unreachable: held, tried again */
    bool warn_down;     /* ... for the first time since it last answered */
    int pause_ms;       /* > 0: call rp_tap_state_retry after this long */
    bool resumed;       /* the store answers again after a pause */
} rp_tap_settled;

typedef enum rp_tap_hold_action {
    RP_TAP_HOLD_NONE = 0,
    RP_TAP_HOLD_CANCEL,  /* stop consuming (basic.cancel of tag) */
    RP_TAP_HOLD_CONSUME, /* consume again (basic.consume under tag) */
} rp_tap_hold_action;

typedef struct rp_tap_state {
    rp_tap_item_ops ops;
    unsigned gen; /* grows at every (re)connect */
    bool up;
    bool stopped;
    rp_tap_list waiting; /* received, not yet sent to the store */
    /* How many at the head of waiting came back from batches (the store
     * away): a later batch's come back after them, so order is kept. */
    size_t back_n;
    rp_tap_list stuck;   /* held unacked until the next reconnect */
    rp_tap_batch *flight[RP_TAP_IN_FLIGHT]; /* oldest first */
    size_t in_flight, in_flight_n;
    unsigned kept_gen; /* the connection of everything in waiting and stuck */
    size_t held_bytes; /* waiting, stuck and in flight */
    bool off;          /* not consuming on connection off_gen */
    unsigned off_gen;
    char tag[32]; /* the consumer tag in use (on connection tag_gen) */
    unsigned tag_gen;
    unsigned long consumes;
    uint64_t returned; /* returned since the last cancel */
    uint64_t ignored;
    bool paused; /* waiting for the retry */
    size_t last_taken;    /* the size of the last batch handed out */
    int64_t gather_since; /* > 0: a short batch has waited since (us) */
    int backoff_ms;
    rp_tap_settled settled;
} rp_tap_state;

/* ---- the loop's half ------------------------------------------------------- */

void rp_tap_state_init(rp_tap_state *s, const rp_tap_item_ops *ops);
/* Drops what is waiting or stuck (not batches in flight). */
void rp_tap_state_cleanup(rp_tap_state *s);

/* The tap's connection came up (a new generation) / went down. */
void rp_tap_state_up(rp_tap_state *s);
void rp_tap_state_down(rp_tap_state *s);
/* Nothing more is handed out or consumed. */
void rp_tap_state_stop(rp_tap_state *s);

/* Whether the tap has stopped consuming on the current connection: a
 * delivery now is returned (nack, requeue), not held; count it with
 * rp_tap_state_returned once returned. */
bool rp_tap_state_off(const rp_tap_state *s);
void rp_tap_state_returned(rp_tap_state *s);

/* Holds a delivery (owned by the state from now): on the current
 * connection, at the tail of the waiting list. */
void rp_tap_state_hold(rp_tap_state *s, rp_tap_item *it);

/* The next batch to hand to the tap's thread (in flight from now), or NULL:
 * paused, stopped, down, nothing waiting, RP_TAP_IN_FLIGHT out already, or
 * one out and fewer than RP_TAP_TXN_MAX waiting;
 * *nomem when it could not be allocated (pause: rp_tap_state_pause).
 * Items of older connections are dropped first. */
rp_tap_batch *rp_tap_state_take(rp_tap_state *s, bool *nomem);
/* Before rp_tap_state_take: 0 when a batch may be taken now, else the
 * microseconds to wait for more (the caller calls again then, or at the
 * next delivery): in a storm, none out and fewer than RP_TAP_TXN_MAX
 * waiting, held up to RP_TAP_GATHER_US from the first such call. */
int64_t rp_tap_state_gather(rp_tap_state *s, int64_t now_us);
/* A batch that could not be handed over goes back, in order, to the head
 * of the waiting list (freed). */
void rp_tap_state_put_back(rp_tap_state *s, rp_tap_batch *b);
/* A batch is back from the thread: what to ack and what follows (see
 * rp_tap_settled); cancelled, its items are dropped unacked. Frees b. */
const rp_tap_settled *rp_tap_state_settle(rp_tap_state *s, rp_tap_batch *b, bool cancelled,
                                          int64_t now_us);

/* Pauses the tap: the milliseconds until rp_tap_state_retry (doubling). */
int rp_tap_state_pause(rp_tap_state *s);
void rp_tap_state_retry(rp_tap_state *s);

/* What the held bytes ask of the consumer now; s->tag is the tag to cancel
 * or consume under. Call rp_tap_state_hold_sent once the method went out. */
rp_tap_hold_action rp_tap_state_hold_check(rp_tap_state *s);
void rp_tap_state_hold_sent(rp_tap_state *s, rp_tap_hold_action a);

/* The deliveries held: waiting, stuck and in flight. */
size_t rp_tap_state_messages(const rp_tap_state *s);
/* For the metrics: not consuming, or waiting to retry the store. */
bool rp_tap_state_paused(const rp_tap_state *s);

/* Whether a consumer tag is one of the tap's: RP_TAP_CONSUMER_TAG or
 * RP_TAP_CONSUMER_TAG ".<n>". */
bool rp_tap_owns_tag(const void *bytes, size_t len);

/* ---- the thread's half ----------------------------------------------------- */

/* One delivery made ready for the park. The examiner fills msg (its
 * handle too) and bytes, and keeps what they point to in own; the park
 * fills facts and v. */
typedef struct rp_tap_prep {
    rp_tap_item *it;
    rp_dl_message msg;
    size_t bytes; /* headers' and properties' stored text beside the body */
    void *own;    /* the examiner's, freed by its release */
    rp_dead_letter facts;
    rp_verdict v;
} rp_tap_prep;

/* How the thread reads a delivery (the transport's side). inspect reads its
 * headers: RP_OK and *death_headers whether it carries x-death or
 * x-first-death-queue. capture makes its stored form and fills p->msg and
 * p->bytes (only for a dead letter). release frees p->own (also after a
 * failed inspect or capture). */
typedef struct rp_tap_examiner {
    void *ctx;
    rp_status (*inspect)(void *ctx, rp_tap_item *it, rp_tap_prep *p, bool *death_headers);
    rp_status (*capture)(void *ctx, rp_tap_item *it, rp_tap_prep *p);
    void (*release)(void *ctx, rp_tap_prep *p);
} rp_tap_examiner;

/* What one rp_tap_park works in: RP_TAP_DEPTH transactions' prepared
 * messages (about 400 KB). Made once for the tap's thread and lent to every
 * batch: allocated and freed per batch, it cost fresh pages (page faults,
 * calloc's zeroing) and, freed, the allocator handing them back to the
 * kernel (madvise and a TLB flush on every CPU) at every batch. Owned by
 * whoever made it (rp_tap_park_mem_new); one thread at a time. */
typedef struct rp_tap_park_mem rp_tap_park_mem;
rp_tap_park_mem *rp_tap_park_mem_new(void);
void rp_tap_park_mem_free(rp_tap_park_mem *m);

typedef struct rp_tap_park_env {
    const rp_park_batch_port *batch;
    /* Lent working memory (NULL: rp_tap_park allocates its own per batch). */
    rp_tap_park_mem *mem;
    /* dead_letters parks one alone (a failed transaction's messages);
     * publisher takes the events of what was parked. */
    const rp_ports *ports;
    rp_park_site site; /* vhost (may be NULL), the tap queue, the DLQ pattern */
    const rp_tap_examiner *ex;
    /* Whether the daemon is stopping: what is not parked yet is held. */
    bool (*stopping)(void *ctx);
    void *stop_ctx;
} rp_tap_park_env;

/* Parks one batch, in order (see above); every item gets its result. */
void rp_tap_park(const rp_tap_park_env *env, rp_tap_batch *b);

/* A delivery is a dead letter when it came through an exchange (not the
 * default one) and carries death headers. */
bool rp_tap_is_dead_letter(bool via_default, bool death_headers);
/* What a park status means for a delivery: RP_OK done; the store going
 * away (unavailable, timeout, closed, out of memory) retry; else stuck. */
rp_tap_result rp_tap_result_of(rp_status st);

#endif
