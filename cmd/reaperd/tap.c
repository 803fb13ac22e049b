/*
 * The dead-letter tap (tap.h): its declaration on the connect thread, its
 * consumer on the loop, the park on the tap's own thread (pipelined on its
 * own session), and its bindings.
 */
#include "tap.h"

#include <inttypes.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_internal.h"
#include "rp_amqp_restore.h"
#include "rp_amqp_table.h"
#include "rp_log.h"
#include "rp_mgmt_dlx.h"
#include "rp_judge.h"
#include "rp_park.h"
#include "rp_publish.h"
#include "rp_pg_store.h"

#define RP_TAP_BACKOFF_MIN_MS 1000
#define RP_TAP_BACKOFF_MAX_MS 8000
/* The tap parks on two PostgreSQL sessions, its transactions sent to them
 * in turn. With one, the end of a storm (the broker done dead-lettering,
 * only the tap's deliveries left) was bound by that one backend: it ran
 * 75-90% of one CPU, waited on its commits' WAL flushes in between, and
 * 20-25% of the two CPUs stood idle (bench/tap, 100,000 storm, /proc/stat
 * sampled every 0.1 s). Two sessions, interleaved runs: 10,000 storm
 * 9,637-10,014/s against 8,355-8,744; 100,000 storm 9,693-10,368 against
 * 8,606-9,088. */
#define RP_TAP_SESSIONS 2

typedef enum rp_tap_result {
    RP_TAP_PENDING = 0,
    RP_TAP_DONE,  /* parked, parked before, or not a dead letter: ack */
    RP_TAP_RETRY, /* the store was unreachable: hold and try again */
    RP_TAP_STUCK, /* failed on its own: hold until the next reconnect */
} rp_tap_result;

typedef struct rp_tap_item {
    struct rp_tap_item *next;
    unsigned generation;
    uint64_t tag;
    amqp_pool_t pool; /* owns props */
    amqp_basic_properties_t props;
    uint8_t *body;
    size_t body_len;
    size_t weight; /* what it counts in held_bytes */
    /* Its header table weighed this much decoded, over
     * broker.tap_header_cap_bytes: props hold only its death headers
     * (rp_amqp_death_headers), and it is parked not replayable. 0: its
     * headers are kept whole. */
    size_t headers_dropped;
    int64_t received_us; /* monotonic, for reaper_tap_park_delay_seconds */
    bool truncated;
    /* Delivered through the default exchange: published straight into the
     * tap queue, never dead-lettered through an exchange the tap is bound
     * to (issue 14 item 5): ignored. */
    bool via_default;
    /* Set on the tap's thread, read on the loop after the batch. */
    rp_tap_result result;
    rp_park_outcome outcome;
    bool skipped;
    rp_status st;
} rp_tap_item;

typedef struct rp_tap_list {
    rp_tap_item *head, *tail;
    size_t n;
} rp_tap_list;

struct rp_tap_batch;

struct rp_tap {
    rp_daemon *d;
    /* The tap's own AMQP connection (issue 14 item 6): a frame as large as
     * the broker allows (its frame_max, asked for at login) or a storm of
     * deliveries never stands in the way of control requests, broker
     * events or confirms, which have the daemon's connection. gen grows at
     * every (re)connect of it (delivery tags of an older one are stale); up
     * while it is up. */
    rp_amqp_conn *amqp;
    rp_amqp_assembler assembler;
    unsigned gen;
    bool up;
    rp_tap_list waiting; /* received, not yet sent to the store */
    rp_tap_list stuck;   /* held unacked until the next reconnect */
    /* The batches handed to the tap's thread, oldest first (it parks them
     * in order; their done functions run in that order on the loop). */
    struct rp_tap_batch *flight[RP_TAP_IN_FLIGHT];
    size_t in_flight;   /* how many of flight[] are set */
    size_t in_flight_n; /* their messages */
    unsigned kept_gen; /* the connection of everything in waiting and stuck */
    /* The weight (body and bookkeeping) of every item alive: waiting,
     * stuck and in flight; above RP_TAP_HOLD_BYTES the tap stops
     * consuming. */
    size_t held_bytes;
    /* Past RP_TAP_HOLD_BYTES the tap stops consuming (basic.cancel) on
     * connection off_gen until parks bring it to half; what the broker
     * had already sent meanwhile is returned to it (returned counts). */
    bool off;
    unsigned off_gen;
    /* The consumer tag in use: RP_TAP_CONSUMER_TAG as the connection's
     * setup consumed (tag_gen not the current connection), else
     * "reaper.tap.<n>" from the n-th consume again. A quorum queue on
     * RabbitMQ 3.10.8 crashes the channel (541, function_clause in
     * rabbit_channel:handle_deliver0) when a consumer is cancelled and
     * consumes again under the SAME tag while deliveries are in flight
     * (rabbitmq-server #5927, fixed in 3.10.9): each consume again takes a
     * tag never used on the connection. */
    char tag[32];
    unsigned tag_gen;
    unsigned long consumes;
    uint64_t returned;
    /* Deliveries that were not dead letters (acked, not parked); the first
     * is logged as a warning, the rest only counted (metric). */
    uint64_t ignored;
    bool paused; /* waiting for the retry timer */
    int backoff_ms;
    struct event *retry_ev;
    /* The bindings' reconcile runs on a thread of its own with a
     * management client of its own, so that it never waits behind a sweep
     * (issue #14): bind_queued while one is wanted or running; bind_again
     * when another was asked for meanwhile (a change it may have missed). */
    rp_worker *bind_worker;
    rp_mgmt_broker *bind_broker;
    bool bind_queued, bind_again;
    /* Readiness: the connection (broker_generation) the running reconcile
     * was asked for, whether it succeeded (written by the binding thread,
     * read in its done function), and the last connection whose bindings
     * are in place. A failed reconcile is tried again after a while. */
    unsigned bind_gen, bound_gen;
    bool bind_ok;
    struct event *bind_retry_ev;
    bool stopped; /* rp_tap_stop ran: nothing more is parked */
    /* The tap's own store sessions and thread (see tap.h). */
    rp_worker *worker;
    rp_pg_conn *conn[RP_TAP_SESSIONS];
    rp_pg_store *store[RP_TAP_SESSIONS];
    rp_ports ports; /* dead_letters and clock over store[0]; publisher: the feed */
};

typedef struct rp_tap_batch {
    rp_tap *t;
    size_t n;
    rp_tap_item *items[RP_TAP_BATCH];
} rp_tap_batch;

/* ---- items ------------------------------------------------------------------ */

static int64_t rp_tap_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* An item's properties' pool page, and what an item costs beyond its body
 * and its decoded properties (rp_amqp_props_footprint): the item and one
 * page. */
#define RP_TAP_POOL_PAGE 4096u
#define RP_TAP_ITEM_OVERHEAD (sizeof(rp_tap_item) + RP_TAP_POOL_PAGE)

static void rp_item_free(rp_tap *t, rp_tap_item *it) {
    if (it == NULL) return;
    t->held_bytes -= it->weight;
    empty_amqp_pool(&it->pool);
    free(it->body);
    free(it);
}

/* A stuck item needs only its tag and generation until the reconnect that
 * gives it back: its body and properties go, and their weight with them,
 * so that dead letters stuck on their own never keep the tap from
 * consuming (past half of RP_TAP_HOLD_BYTES it would not consume again). */
static void rp_item_shed(rp_tap *t, rp_tap_item *it) {
    empty_amqp_pool(&it->pool);
    memset(&it->props, 0, sizeof it->props);
    free(it->body);
    it->body = NULL;
    it->body_len = 0;
    t->held_bytes -= it->weight;
    it->weight = sizeof *it;
    t->held_bytes += it->weight;
}

static void rp_list_push(rp_tap_list *l, rp_tap_item *it) {
    it->next = NULL;
    if (l->tail) l->tail->next = it;
    else l->head = it;
    l->tail = it;
    l->n++;
}

static rp_tap_item *rp_list_pop(rp_tap_list *l) {
    rp_tap_item *it = l->head;
    if (it == NULL) return NULL;
    l->head = it->next;
    if (l->head == NULL) l->tail = NULL;
    l->n--;
    it->next = NULL;
    return it;
}

/* Puts the items of front (in order) before those of l. */
static void rp_list_prepend(rp_tap_list *l, rp_tap_list *front) {
    if (front->head == NULL) return;
    front->tail->next = l->head;
    if (l->tail == NULL) l->tail = front->tail;
    l->head = front->head;
    l->n += front->n;
    memset(front, 0, sizeof *front);
}

static void rp_list_clear(rp_tap *t, rp_tap_list *l) {
    rp_tap_item *it;
    while ((it = rp_list_pop(l)) != NULL) rp_item_free(t, it);
}

/* Drops the items of older connections: the broker has them back. */
static void rp_list_drop_stale(rp_tap *t, rp_tap_list *l, unsigned gen) {
    rp_tap_list keep = {0};
    rp_tap_item *it;
    while ((it = rp_list_pop(l)) != NULL) {
        if (it->generation == gen) rp_list_push(&keep, it);
        else rp_item_free(t, it);
    }
    *l = keep;
}

/* ---- the connect thread ---------------------------------------------------- */

static bool rp_tap_rpc_ok(amqp_connection_state_t c, const char *what, char *err, size_t n,
                          amqp_rpc_reply_t *out) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (out) *out = r;
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

/* The broker's major version from its server properties; 0 when unknown. */
static int rp_server_major(amqp_connection_state_t c) {
    const amqp_table_t *p = amqp_get_server_properties(c);
    for (int i = 0; p && i < p->num_entries; i++) {
        const amqp_table_entry_t *e = &p->entries[i];
        if (e->key.len == 7 && memcmp(e->key.bytes, "version", 7) == 0 &&
            e->value.kind == AMQP_FIELD_KIND_UTF8) {
            int major = 0;
            const char *s = e->value.value.bytes.bytes;
            for (size_t k = 0; k < e->value.value.bytes.len && s[k] >= '0' && s[k] <= '9' &&
                               major < 1000;
                 k++)
                major = major * 10 + (s[k] - '0');
            return major;
        }
    }
    return 0;
}

bool rp_tap_setup(rp_daemon *d, amqp_connection_state_t c, char *err, size_t n) {
    const char *tap = d->cfg->broker.tap_queue;
    amqp_channel_open(c, RP_TAP_CHANNEL);
    if (!rp_tap_rpc_ok(c, "opening the tap channel", err, n, NULL)) return false;
    int major = rp_server_major(c);
    amqp_table_entry_t e[2];
    e[0].key = amqp_cstring_bytes("x-queue-type");
    e[0].value.kind = AMQP_FIELD_KIND_UTF8;
    e[0].value.value.bytes = amqp_cstring_bytes("quorum");
    e[1].key = amqp_cstring_bytes("x-delivery-limit");
    e[1].value.kind = AMQP_FIELD_KIND_I64;
    e[1].value.value.i64 = -1;
    amqp_table_t args = {major >= 4 ? 2 : 1, e};
    amqp_queue_declare(c, RP_TAP_CHANNEL, amqp_cstring_bytes(tap), 0, 1, 0, 0, args);
    amqp_rpc_reply_t r;
    if (!rp_tap_rpc_ok(c, "declaring the tap queue", err, n, &r)) {
        /* A tap declared before without the limit argument (made on 3.x,
         * or by an older reaper): the broker refuses the new argument
         * (406) and closes the channel. Use the queue as it is. */
        if (major < 4 || r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
            r.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
            return false;
        RP_WARN("the tap queue exists without x-delivery-limit -1: RabbitMQ 4's default "
                "delivery limit of 20 applies to it; delete it while reaperd is stopped to "
                "declare it again",
                "queue", tap, "reason", err, NULL);
        amqp_channel_close_ok_t ok = {0};
        if (amqp_send_method(c, RP_TAP_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) !=
            AMQP_STATUS_OK) {
            snprintf(err, n, "closing the tap channel failed");
            return false;
        }
        amqp_channel_open(c, RP_TAP_CHANNEL);
        if (!rp_tap_rpc_ok(c, "opening the tap channel again", err, n, NULL)) return false;
        amqp_queue_declare(c, RP_TAP_CHANNEL, amqp_cstring_bytes(tap), 1, 1, 0, 0,
                           amqp_empty_table);
        if (!rp_tap_rpc_ok(c, "declaring the tap queue (passive)", err, n, NULL)) return false;
    }
    amqp_basic_qos(c, RP_TAP_CHANNEL, 0, RP_TAP_PREFETCH, 0);
    if (!rp_tap_rpc_ok(c, "setting the tap's prefetch", err, n, NULL)) return false;
    amqp_basic_consume(c, RP_TAP_CHANNEL, amqp_cstring_bytes(tap),
                       amqp_cstring_bytes(RP_TAP_CONSUMER_TAG), 0, 0, 0, amqp_empty_table);
    return rp_tap_rpc_ok(c, "consuming the tap queue", err, n, NULL);
}

/* ---- the tap thread ------------------------------------------------------- */

/* One message made ready for the batch park. */
typedef struct rp_tap_prep {
    rp_tap_item *it;
    rp_amqp_dl_model m;
    char *headers, *props;
    rp_pg_dl_handle h;
    rp_dl_message msg;
    rp_dead_letter facts;
    rp_verdict v;
} rp_tap_prep;

static void rp_tap_prep_cleanup(rp_tap_prep *p) {
    rp_amqp_dl_model_cleanup(&p->m);
    free(p->headers);
    free(p->props);
    rp_dead_letter_cleanup(&p->facts);
    rp_verdict_cleanup(&p->v);
}

/* Examines and judges one message for the batch. RP_OK with *park false for
 * a message that is not a dead letter (acked, not parked). */
static rp_status rp_tap_prepare(rp_tap *t, rp_tap_item *it, rp_tap_prep *p, bool *park) {
    rp_daemon *d = t->d;
    memset(p, 0, sizeof *p);
    p->it = it;
    rp_dead_letter_init(&p->facts);
    rp_verdict_init(&p->v);
    *park = false;
    rp_status st = rp_amqp_dl_model_init(&p->m, &it->props);
    if (st != RP_OK) return st;
    if (it->via_default || !rp_amqp_dl_model_is_dead_letter(&p->m)) {
        RP_DEBUG("a tap delivery did not come through a dead-letter exchange (no x-death nor "
                 "x-first-death-queue, or published through the default exchange): not a dead "
                 "letter, acked",
                 NULL);
        it->skipped = true;
        return RP_OK;
    }
    /* The one stored form, the one replay reads back (rp_amqp_restore.h).
     * A header name that is not text cannot be stored losslessly: parked
     * without its JSON and marked so that it is never replayed, as the
     * backfill does (peek_port.c). */
    st = rp_amqp_restore_capture(&it->props, &p->props, &p->headers);
    if (st == RP_ERR_NOMEM) return st;
    bool lossless = st == RP_OK;
    /* Kept without its headers, or with more x-death entries than were
     * parsed: the stored properties say so (rp_amqp_restore.h's note), and
     * a replay answers with that reason. */
    if (lossless) {
        size_t entries = p->m.x_death_unparsed > 0
                             ? p->m.headers.n_x_death + p->m.x_death_unparsed
                             : 0;
        st = rp_amqp_restore_note_kept(&p->props, it->headers_dropped,
                                       (size_t)d->cfg->broker.tap_header_cap_bytes, entries);
        if (st != RP_OK) return st;
    }
    p->h = (rp_pg_dl_handle){p->headers, p->props};
    p->msg = (rp_dl_message){
        .headers = p->m.headers,
        .body = {it->body, it->body_len},
        .body_truncated = it->truncated || !lossless || it->headers_dropped > 0,
        .handle = &p->h,
    };
    st = rp_dead_letter_examine(&p->m.headers, d->mgmt_keep.vhost ? d->mgmt_keep.vhost : "",
                                d->cfg->broker.tap_queue,
                                d->cfg->reap.dead_letter_queue_pattern.code, p->msg.body,
                                &p->facts);
    if (st == RP_OK)
        st = rp_judge_dead_letter(&p->facts, d->mgmt_keep.vhost, d->cfg->broker.tap_queue, &p->v);
    if (st == RP_OK) *park = true;
    return st;
}

static rp_tap_result rp_tap_result_of(rp_status st) {
    switch (st) {
    case RP_OK: return RP_TAP_DONE;
    case RP_ERR_UNAVAILABLE:
    case RP_ERR_TIMEOUT:
    case RP_ERR_CLOSED:
    case RP_ERR_NOMEM: return RP_TAP_RETRY; /* the rest would fail the same way */
    default: return RP_TAP_STUCK;
    }
}

/* The most dead letters, and bytes of bodies, headers and properties (their
 * JSON), parked in one transaction: up to RP_TAP_DEPTH transactions are
 * prepared at once, each held twice (the thread's parameters and libpq's
 * send buffer), so the bytes bound what a storm of heavy headers costs
 * beside the held deliveries: 3,500 dead letters with 32-100 KiB of
 * headers, parking blocked then let go (test_reaperd_tap_headers), peaked
 * at 89/107 MiB (RabbitMQ 3.10/4.0) with 8 MiB, 70/99 MiB with 4 MiB.
 * Fewer commits are fewer WAL flushes, each of which waits behind the broker's
 * own fsyncs on a shared disk: in the 100,000 storm of bench/tap (quiet
 * 2-CPU machine) the tap's backend waited on WALSync about 20% of its time
 * at 50 a transaction and 5% at 250, and the storm went from 8,600-8,800/s
 * to 9,150-9,250/s (with RP_TAP_BATCH 2000, prefetch 4000; pgbench doing
 * the same at 250 instead of 50 gains about 4%). */
#define RP_TAP_TXN_MAX 250
#define RP_TAP_TXN_BYTES (4u * 1024u * 1024u)

/* One transaction's worth of a batch: its prepared messages and, once
 * sent, the park items whose results rp_pg_park_recv fills. */
typedef struct rp_tap_chunk {
    rp_tap_prep p[RP_TAP_TXN_MAX];
    rp_pg_park_item items[RP_TAP_TXN_MAX];
    size_t n;
    size_t session;  /* the store session it is sent on */
    bool sent;       /* in the session's pipeline, its results not read */
    bool received;   /* read (st is its outcome) */
    rp_status st;    /* the outcome of its send or its receipt */
} rp_tap_chunk;

/* Prepares the next messages of b from *i into c (at most RP_TAP_TXN_MAX,
 * RP_TAP_TXN_BYTES of bodies, headers and properties); messages not to park
 * (not a dead letter, or failing on their own) are settled at once. */
static void rp_tap_fill(rp_tap *t, rp_tap_batch *b, size_t *i, rp_tap_chunk *c, bool *down) {
    rp_daemon *d = t->d;
    size_t bytes = 0;
    c->n = 0;
    c->sent = c->received = false;
    c->st = RP_OK;
    for (; *i < b->n && c->n < RP_TAP_TXN_MAX && bytes < RP_TAP_TXN_BYTES; (*i)++) {
        rp_tap_item *it = b->items[*i];
        if (*down || __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
            it->result = RP_TAP_RETRY;
            continue;
        }
        bool park = false;
        rp_tap_prep *p = &c->p[c->n];
        it->st = rp_tap_prepare(t, it, p, &park);
        if (it->st != RP_OK || !park) {
            it->result = rp_tap_result_of(it->st);
            if (it->result == RP_TAP_RETRY) *down = true;
            rp_tap_prep_cleanup(p);
            continue;
        }
        /* Headers and properties too: they travel with the body, in
         * this thread's parameters and in libpq's send buffer. */
        bytes += it->body_len + (p->headers ? strlen(p->headers) : 0) +
                 (p->props ? strlen(p->props) : 0);
        c->items[c->n] = (rp_pg_park_item){d->mgmt_keep.vhost, d->cfg->broker.tap_queue, &p->msg,
                                           &p->facts, &p->v, {0}};
        c->n++;
    }
}

/* Sends c's transaction into the session's pipeline, unless there is
 * nothing to park or the tap must not park now. */
static void rp_tap_send(rp_tap *t, rp_tap_chunk *c, bool *down) {
    if (c->n == 0) return;
    if (*down || __atomic_load_n(&t->d->stopping, __ATOMIC_ACQUIRE)) {
        c->st = RP_ERR_UNAVAILABLE; /* held and tried again */
        return;
    }
    c->st = rp_pg_park_send(t->store[c->session], c->items, c->n);
    c->sent = c->st == RP_OK;
    if (rp_tap_result_of(c->st) == RP_TAP_RETRY) *down = true;
}

/* Reads c's results if it was sent and they are not read yet. */
static void rp_tap_receive(rp_tap *t, rp_tap_chunk *c, bool *down) {
    if (!c->sent || c->received) return;
    c->st = rp_pg_park_recv(t->store[c->session], c->items, c->n);
    c->received = true;
    if (rp_tap_result_of(c->st) == RP_TAP_RETRY) *down = true;
}

/* Settles c's messages from its outcome (received, or a send that failed)
 * and frees what was prepared. When its transaction failed for a reason of
 * its own (not the store going away), its messages are parked one by one,
 * so that only one that fails alone is held: nothing else may be
 * outstanding on the session then. */
static void rp_tap_settle(rp_tap *t, rp_tap_chunk *c, bool *down) {
    rp_daemon *d = t->d;
    if (c->n == 0) return;
    if (c->st == RP_OK) {
        for (size_t i = 0; i < c->n; i++) {
            rp_tap_item *it = c->p[i].it;
            it->st = RP_OK;
            it->result = RP_TAP_DONE;
            it->outcome = RP_PARKED_ALREADY;
            if (!c->items[i].result.parked) continue;
            it->outcome = RP_PARKED_NEW;
            /* Committed: the event may go out (a failure to publish loses
             * nothing; the ledger is the record). */
            rp_report rep;
            rp_report_init(&rep, false);
            if (rp_publish_event(&t->ports, &c->items[i].result.event, &c->p[i].v, &rep) != RP_OK)
                RP_DEBUG("a tap park's event was not handed to the feed", NULL);
            rp_report_cleanup(&rep);
        }
    } else if (rp_tap_result_of(c->st) == RP_TAP_RETRY) {
        *down = true;
        for (size_t i = 0; i < c->n; i++) c->p[i].it->result = RP_TAP_RETRY, c->p[i].it->st = c->st;
    } else {
        for (size_t i = 0; i < c->n; i++) {
            rp_tap_item *it = c->p[i].it;
            if (*down || __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
                it->result = RP_TAP_RETRY;
                continue;
            }
            rp_report rep;
            rp_report_init(&rep, false);
            rp_park_site site = {d->mgmt_keep.vhost, d->cfg->broker.tap_queue,
                                 d->cfg->reap.dead_letter_queue_pattern.code};
            it->st = rp_park_dead_letter(&t->ports, &site, &c->p[i].msg, false, &rep,
                                         &it->outcome);
            rp_report_cleanup(&rep);
            it->result = rp_tap_result_of(it->st);
            if (it->result == RP_TAP_RETRY) *down = true;
        }
    }
    for (size_t i = 0; i < c->n; i++) rp_tap_prep_cleanup(&c->p[i]);
    c->n = 0;
}

/* The most transactions a batch has outstanding at once, over all
 * sessions: two on each, one being parked and the next one waiting in the
 * server's socket, so that neither server waits for this thread. With one
 * session, measured on the quiet 2-CPU machine (bench/tap, 100,000 storm):
 * 2 gave 7,600-8,600/s in 5 of 5 runs; 3 gave the same or, in 5 of 12
 * storms, an unexplained slow mode of about 4,900/s with every process
 * partly idle; 1 (no overlap) 7,100-7,900. With two sessions, 4 (two on
 * each) and 2 (one on each) were within each other's noise. */
#define RP_TAP_DEPTH 4

/* Reads the oldest outstanding chunk (c[*head], *count outstanding) and
 * settles it. When its transaction failed on its own, reads the others
 * first (its messages are then parked one by one on the session) and
 * settles them all. */
static void rp_tap_retire(rp_tap *t, rp_tap_chunk *c, size_t *head, size_t *count, bool *down) {
    rp_tap_chunk *old = &c[*head];
    rp_tap_receive(t, old, down);
    if (old->n > 0 && old->st != RP_OK && !*down) {
        for (size_t k = 1; k < *count; k++) rp_tap_receive(t, &c[(*head + k) % RP_TAP_DEPTH], down);
        for (size_t k = 0; k < *count; k++) rp_tap_settle(t, &c[(*head + k) % RP_TAP_DEPTH], down);
        *head = 0;
        *count = 0;
        return;
    }
    rp_tap_settle(t, old, down);
    *head = (*head + 1) % RP_TAP_DEPTH;
    (*count)--;
}

/* Parks one batch, in order, RP_TAP_TXN_MAX to a transaction, keeping the
 * session busy: the next chunks are prepared and sent while the server
 * parks the earlier ones, and the oldest one's results are read only when
 * RP_TAP_DEPTH are outstanding (or at the end), so that the server goes
 * from one transaction to the next without waiting for this thread, and
 * this thread prepares while the server parks. */
static void rp_tap_work(void *ctx, void *job) {
    rp_tap *t = ctx;
    rp_tap_batch *b = job;
    rp_tap_chunk *c = calloc(RP_TAP_DEPTH, sizeof *c);
    if (c == NULL) {
        for (size_t i = 0; i < b->n; i++) b->items[i]->result = RP_TAP_RETRY;
        return;
    }
    bool down = false;
    size_t head = 0, count = 0, i = 0, next_session = 0;
    while (i < b->n) {
        rp_tap_chunk *cur = &c[(head + count) % RP_TAP_DEPTH];
        /* In turn, so that each session's results are read in the order
         * its transactions were sent (chunks retire in sending order). */
        cur->session = next_session;
        next_session = (next_session + 1) % RP_TAP_SESSIONS;
        rp_tap_fill(t, b, &i, cur, &down);
        rp_tap_send(t, cur, &down);
        count++;
        if (count == RP_TAP_DEPTH) rp_tap_retire(t, c, &head, &count, &down);
    }
    while (count > 0) rp_tap_retire(t, c, &head, &count, &down);
    free(c);
}

/* ---- the loop ----------------------------------------------------------------- */

static void rp_tap_kick(rp_tap *t);

static bool rp_tap_ack(rp_tap *t, uint64_t tag, bool multiple) {
    amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
    if (c == NULL) return false;
    int st = amqp_basic_ack(c, RP_TAP_CHANNEL, tag, multiple);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "tap ack: %s", amqp_error_string2(st));
        rp_amqp_conn_fail(t->amqp, why);
        return false;
    }
    return true;
}

/* The lowest delivery tag still held (waiting, stuck, or in a batch still
 * on the tap's thread) on this connection, or UINT64_MAX. The loop reads
 * only the tag and generation of an item in flight, which the thread never
 * writes. */
static uint64_t rp_tap_lowest_held(const rp_tap *t, unsigned gen) {
    uint64_t low = UINT64_MAX;
    const rp_tap_list *ls[2] = {&t->waiting, &t->stuck};
    for (int k = 0; k < 2; k++)
        for (const rp_tap_item *it = ls[k]->head; it; it = it->next)
            if (it->generation == gen && it->tag < low) low = it->tag;
    for (size_t f = 0; f < t->in_flight; f++)
        for (size_t i = 0; i < t->flight[f]->n; i++) {
            const rp_tap_item *it = t->flight[f]->items[i];
            if (it->generation == gen && it->tag < low) low = it->tag;
        }
    return low;
}

/* Takes b out of the batches in flight (it came back from the thread). */
static void rp_tap_land(rp_tap *t, const struct rp_tap_batch *b) {
    size_t f = 0;
    while (f < t->in_flight && t->flight[f] != b) f++;
    if (f == t->in_flight) return;
    t->in_flight_n -= t->flight[f]->n;
    for (; f + 1 < t->in_flight; f++) t->flight[f] = t->flight[f + 1];
    t->flight[--t->in_flight] = NULL;
}

static void rp_tap_on_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_tap *t = arg;
    t->paused = false;
    rp_tap_kick(t);
}

static void rp_tap_pause(rp_tap *t) {
    t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : RP_TAP_BACKOFF_MIN_MS;
    if (t->backoff_ms > RP_TAP_BACKOFF_MAX_MS) t->backoff_ms = RP_TAP_BACKOFF_MAX_MS;
    struct timeval tv = {t->backoff_ms / 1000, (t->backoff_ms % 1000) * 1000};
    t->paused = true;
    evtimer_add(t->retry_ev, &tv);
}

static void rp_tap_hold_check(rp_tap *t);

static void rp_tap_settle_batch(rp_tap_batch *b, bool cancelled);

/* Loop: a batch came back from the tap's thread. */
static void rp_tap_done(void *job, bool cancelled) {
    rp_tap *t = ((rp_tap_batch *)job)->t;
    rp_tap_settle_batch(job, cancelled); /* frees the batch */
    rp_tap_hold_check(t);
}

/* One delivery that was not a dead letter: counted; said once. */
static void rp_tap_ignored(rp_tap *t) {
    if (t->ignored++ == 0)
        RP_WARN("a delivery on the tap queue did not come through a dead-letter exchange "
                "(published straight into it, or without x-death): acked and not parked; "
                "later ones are only counted (reaper_tap_ignored_total)",
                "queue", t->d->cfg->broker.tap_queue, NULL);
    rp_metrics_tap_ignored(&t->d->metrics, 1);
}

static void rp_tap_settle_batch(rp_tap_batch *b, bool cancelled) {
    rp_tap *t = b->t;
    rp_daemon *d = t->d;
    rp_tap_land(t, b);
    if (cancelled) {
        for (size_t i = 0; i < b->n; i++) rp_item_free(t, b->items[i]);
        free(b);
        return;
    }
    unsigned gen = t->gen;
    bool live = t->up;
    rp_tap_list retry = {0}, done = {0};
    uint64_t parked = 0, stuck = 0;
    int64_t now_us = rp_tap_mono_us();
    for (size_t i = 0; i < b->n; i++) {
        rp_tap_item *it = b->items[i];
        if (it->result == RP_TAP_DONE) {
            if (!it->skipped && it->outcome == RP_PARKED_NEW) parked++;
            rp_metrics_tap_parked(&d->metrics, now_us - it->received_us);
            if (it->skipped) rp_tap_ignored(t);
        }
        if (!live || it->generation != gen) {
            rp_item_free(t, it); /* the broker delivers it again */
            continue;
        }
        switch (it->result) {
        case RP_TAP_DONE: rp_list_push(&done, it); break;
        case RP_TAP_RETRY: rp_list_push(&retry, it); break;
        default:
            stuck++;
            RP_ERROR("a dead letter could not be parked; it stays unacked on the tap until the "
                     "next reconnect",
                     "status", rp_status_string(it->st), NULL);
            rp_item_shed(t, it);
            rp_list_push(&t->stuck, it);
            break;
        }
    }
    bool store_down = retry.n > 0;
    rp_list_prepend(&t->waiting, &retry);
    free(b);
    /* Ack what is settled: one multiple ack when nothing held lies below. */
    if (done.n > 0) {
        uint64_t high = done.tail->tag;
        bool ok = true;
        if (high < rp_tap_lowest_held(t, gen)) {
            ok = rp_tap_ack(t, high, true);
        } else {
            for (rp_tap_item *it = done.head; ok && it; it = it->next)
                ok = rp_tap_ack(t, it->tag, false);
        }
        rp_list_clear(t, &done);
    }
    if (parked > 0 || stuck > 0) {
        char np[24], nh[24];
        snprintf(np, sizeof np, "%" PRIu64, parked);
        snprintf(nh, sizeof nh, "%zu", t->waiting.n + t->stuck.n);
        RP_DEBUG("dead letters parked from the tap", "parked", np, "held", nh, NULL);
    }
    if (store_down) {
        if (t->paused) return; /* the other batch in flight found it first */
        if (t->backoff_ms == 0)
            RP_WARN("the store is unreachable: the tap holds its dead letters unacked and "
                    "tries again",
                    "queue", d->cfg->broker.tap_queue, NULL);
        rp_tap_pause(t);
        return;
    }
    if (t->backoff_ms) RP_INFO("the tap parks again", "queue", d->cfg->broker.tap_queue, NULL);
    t->backoff_ms = 0;
    rp_tap_kick(t);
}

static bool rp_tap_submit(rp_tap *t);

/* Sends a method on the tap's channel; a failure drops the connection. */
static bool rp_tap_send_method(rp_tap *t, amqp_method_number_t id, void *method,
                               const char *what) {
    amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
    if (c == NULL) return false;
    int st = amqp_send_method(c, RP_TAP_CHANNEL, id, method);
    if (st != AMQP_STATUS_OK) {
        char why[160];
        snprintf(why, sizeof why, "%s: %s", what, amqp_error_string2(st));
        rp_amqp_conn_fail(t->amqp, why);
        return false;
    }
    return true;
}

/* Whether the tap has stopped consuming on the current connection (a new
 * one consumes from its setup). */
static bool rp_tap_off(const rp_tap *t) { return t->off && t->off_gen == t->gen; }

/* Stops consuming while the tap holds more than RP_TAP_HOLD_BYTES, and
 * consumes again once parks bring it to half (tap.h): the broker keeps the
 * rest meanwhile, and the connection goes on serving everything else.
 * Both without waiting for a reply (nowait). */
static void rp_tap_hold_check(rp_tap *t) {
    rp_daemon *d = t->d;
    if (t->stopped || !t->up) return;
    bool off = rp_tap_off(t);
    bool over = t->held_bytes > RP_TAP_HOLD_BYTES;
    bool under = t->held_bytes <= RP_TAP_HOLD_BYTES / 2;
    if (off ? !under : !over) return;
    char kib[24], n[24], back[24];
    snprintf(kib, sizeof kib, "%zu", t->held_bytes / 1024);
    snprintf(n, sizeof n, "%zu", t->waiting.n + t->stuck.n + t->in_flight_n);
    if (t->tag_gen != t->gen)
        snprintf(t->tag, sizeof t->tag, "%s", RP_TAP_CONSUMER_TAG);
    t->tag_gen = t->gen;
    if (!off) {
        amqp_bytes_t tag = amqp_cstring_bytes(t->tag);
        amqp_basic_cancel_t m = {.consumer_tag = tag, .nowait = 1};
        if (!rp_tap_send_method(t, AMQP_BASIC_CANCEL_METHOD, &m, "tap cancel")) return;
        t->off = true;
        t->off_gen = t->gen;
        t->returned = 0;
        RP_INFO("the tap holds as much as it may keep in memory: it stops consuming until parks "
                "bring it to half (deliveries already on the way go back to the broker)",
                "held_kib", kib, "messages", n, NULL);
        return;
    }
    snprintf(t->tag, sizeof t->tag, "%s.%lu", RP_TAP_CONSUMER_TAG, ++t->consumes);
    amqp_basic_consume_t m = {.queue = amqp_cstring_bytes(d->cfg->broker.tap_queue),
                              .consumer_tag = amqp_cstring_bytes(t->tag),
                              .nowait = 1,
                              .arguments = amqp_empty_table};
    if (!rp_tap_send_method(t, AMQP_BASIC_CONSUME_METHOD, &m, "tap consume")) return;
    t->off = false;
    snprintf(back, sizeof back, "%" PRIu64, t->returned);
    RP_INFO("the tap consumes again", "held_kib", kib, "messages", n, "returned", back, NULL);
}

/* Hands batches to the tap's thread while fewer than RP_TAP_IN_FLIGHT are
 * there: the next one is parked as soon as the last one commits, while the
 * loop acks the last one and gathers the one after. */
static void rp_tap_kick(rp_tap *t) {
    if (t->paused || t->stopped) return;
    /* Only a new connection makes items stale (every item that joins a
     * list after this is of the current one): walk the lists only then,
     * not at every delivery. */
    if (t->kept_gen != t->gen) {
        rp_list_drop_stale(t, &t->waiting, t->gen);
        rp_list_drop_stale(t, &t->stuck, t->gen);
        t->kept_gen = t->gen;
    }
    while (t->in_flight < RP_TAP_IN_FLIGHT && t->waiting.head && t->up && !t->paused)
        if (!rp_tap_submit(t)) break;
}

/* One batch from the head of waiting to the thread; false when it could
 * not go (the tap paused, or stopping). */
static bool rp_tap_submit(rp_tap *t) {
    rp_daemon *d = t->d;
    rp_tap_batch *b = calloc(1, sizeof *b);
    if (b == NULL) {
        rp_tap_pause(t);
        return false;
    }
    b->t = t;
    while (b->n < RP_TAP_BATCH && t->waiting.head) {
        rp_tap_item *it = rp_list_pop(&t->waiting);
        it->result = RP_TAP_PENDING;
        it->skipped = false;
        it->st = RP_OK;
        b->items[b->n++] = it;
    }
    if (__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE) ||
        rp_worker_submit(t->worker, rp_tap_work, rp_tap_done, b) != RP_OK) {
        /* Stopping: put them back; the broker keeps them for next time. */
        rp_tap_list back = {0};
        for (size_t i = 0; i < b->n; i++) rp_list_push(&back, b->items[i]);
        rp_list_prepend(&t->waiting, &back);
        free(b);
        return false;
    }
    t->flight[t->in_flight++] = b;
    t->in_flight_n += b->n;
    return true;
}

void rp_tap_on_message(rp_daemon *d, const rp_amqp_message *msg) {
    rp_tap *t = d->tap;
    if (t == NULL) return;
    if (rp_tap_off(t)) {
        /* Sent before the broker had our cancel: back to it, kept in the
         * queue for when the tap consumes again (its x-delivery-limit -1
         * on RabbitMQ 4 makes a return cost nothing). */
        amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
        int st = c ? amqp_basic_nack(c, RP_TAP_CHANNEL, msg->delivery_tag, 0, 1)
                   : AMQP_STATUS_OK;
        if (st != AMQP_STATUS_OK) {
            char why[160];
            snprintf(why, sizeof why, "tap nack: %s", amqp_error_string2(st));
            rp_amqp_conn_fail(t->amqp, why);
            return;
        }
        t->returned++;
        return;
    }
    rp_tap_item *it = calloc(1, sizeof *it);
    bool ok = it != NULL;
    if (ok) {
        init_amqp_pool(&it->pool, RP_TAP_POOL_PAGE);
        it->generation = t->gen;
        it->tag = msg->delivery_tag;
        it->truncated = msg->truncated;
        it->via_default = msg->exchange.len == 0;
        it->body_len = msg->body_len;
        /* Headers over the cap are not kept (a count prefetch bounds no
         * bytes, and a frame can carry a table of the broker's frame_max):
         * only what the identity rule reads. */
        amqp_basic_properties_t src = msg->props;
        size_t hdr = (src._flags & AMQP_BASIC_HEADERS_FLAG) ? rp_amqp_table_footprint(&src.headers)
                                                            : 0;
        if (hdr > (size_t)d->cfg->broker.tap_header_cap_bytes) {
            it->headers_dropped = hdr;
            ok = rp_amqp_death_headers(&it->pool, &msg->props.headers, &src.headers) == RP_OK;
        }
        ok = ok && rp_amqp_props_copy(&it->pool, &src, &it->props);
        if (ok && msg->body_len > 0) {
            it->body = malloc(msg->body_len);
            ok = it->body != NULL;
            if (ok) memcpy(it->body, msg->body, msg->body_len);
        }
    }
    if (!ok) {
        /* Out of memory: not acked, so the broker gives it again after
         * the reconnect this forces. */
        rp_item_free(t, it);
        rp_amqp_conn_fail(t->amqp, "out of memory holding a tap delivery");
        return;
    }
    /* What it holds: its body, its properties and headers as decoded, and
     * its bookkeeping (issue 14 item 6). */
    it->weight = it->body_len + rp_amqp_props_footprint(&it->props) + RP_TAP_ITEM_OVERHEAD;
    it->received_us = rp_tap_mono_us();
    t->held_bytes += it->weight;
    rp_list_push(&t->waiting, it);
    rp_tap_kick(t);
    rp_tap_hold_check(t);
}

void rp_tap_gauges(const rp_tap *t, int64_t *held_bytes, bool *paused) {
    *held_bytes = (int64_t)t->held_bytes;
    *paused = rp_tap_off(t) || t->paused;
}

/* ---- the tap's connection ------------------------------------------------------ */

/* The largest frame the tap asks for: the broker's frame_max wins when it
 * is smaller (its default is 131072), so the tap takes any frame the broker
 * sends under its own limit. Bounded, for a broker with no limit (0):
 * rabbitmq-c sizes its output buffer to it (malloc'd, touched only as far
 * as written). */
#define RP_TAP_FRAME_MAX (16 * 1024 * 1024)

static bool rp_tap_conn_setup(void *arg, amqp_connection_state_t c, char *err, size_t n) {
    rp_tap *t = arg;
    return rp_tap_setup(t->d, c, err, n);
}

static void rp_tap_assembled(void *arg, const rp_amqp_message *msg) {
    rp_tap *t = arg;
    /* Stopping: take no new work; unacked, it goes back at the close. */
    if (__atomic_load_n(&t->d->stopping, __ATOMIC_ACQUIRE)) return;
    if (rp_tap_owns_tag(msg->consumer_tag.bytes, msg->consumer_tag.len)) {
        rp_tap_on_message(t->d, msg);
        return;
    }
    RP_WARN("delivery for an unknown consumer on the tap's connection; rejected", NULL);
    amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
    if (c) (void)amqp_basic_reject(c, msg->channel, msg->delivery_tag, 1);
}

static void rp_tap_on_frame(void *arg, const amqp_frame_t *f) {
    rp_tap *t = arg;
    rp_status st = RP_OK;
    if (rp_amqp_assembler_frame(&t->assembler, f, &st)) {
        if (st != RP_OK) rp_amqp_conn_fail(t->amqp, "a tap delivery arrived out of order");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD && f->payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        /* The broker cancelled the tap's consumer (its queue was deleted):
         * the connection is built again, which declares it again. */
        rp_amqp_conn_fail(t->amqp, "the broker cancelled the tap's consumer (queue deleted?)");
        return;
    }
    if (f->frame_type == AMQP_FRAME_METHOD) {
        char id[16];
        snprintf(id, sizeof id, "0x%08x", f->payload.method.id);
        RP_DEBUG("tap frame not handled", "method", id, NULL);
    }
}

static void rp_tap_on_state(void *arg, rp_amqp_state state, const char *why) {
    rp_tap *t = arg;
    if (state == RP_AMQP_UP) {
        t->up = true;
        t->gen++;
        char fm[24];
        amqp_connection_state_t c = rp_amqp_conn_handle(t->amqp);
        snprintf(fm, sizeof fm, "%d", c ? amqp_get_frame_max(c) : 0);
        RP_INFO("tap connected", "broker", why, "queue", t->d->cfg->broker.tap_queue, "frame_max",
                fm, NULL);
        /* Its queue is declared now: the bindings can be made. */
        rp_tap_bindings_soon(t->d);
        rp_tap_kick(t);
    } else if (state == RP_AMQP_DOWN) {
        if (t->up) rp_amqp_assembler_reset(&t->assembler);
        t->up = false;
        RP_WARN("the tap's broker connection is down; retrying (control and events go on)",
                "broker", rp_amqp_conn_peer(t->amqp), "reason", why, NULL);
    }
}

rp_status rp_tap_connect(rp_tap *t, const rp_amqp_params *params) {
    rp_amqp_params p = *params;
    /* Named after its queue, so that an operator tells the replicas' taps
     * from the daemon's connections in the management UI. */
    char name[300];
    snprintf(name, sizeof name, "reaperd tap %s", t->d->cfg->broker.tap_queue);
    p.connection_name = name;
    p.frame_max = RP_TAP_FRAME_MAX;
    rp_amqp_hooks hooks = {
        .on_state = rp_tap_on_state,
        .on_frame = rp_tap_on_frame,
        .on_setup = rp_tap_conn_setup,
        .arg = t,
    };
    rp_amqp_assembler_init(&t->assembler, RP_PG_DL_BODY_MAX, rp_tap_assembled, t);
    const char *err = NULL;
    t->amqp = rp_amqp_conn_new(t->d->base, &p, &hooks, &err);
    if (t->amqp == NULL) {
        RP_ERROR("cannot make the tap's broker connection", "reason", err, NULL);
        return RP_ERR_CONFIG;
    }
    return rp_amqp_conn_start(t->amqp);
}

/* ---- bindings ------------------------------------------------------------------- */

/* The binding thread: derives the tap's bindings from the broker's
 * definitions and adds or removes what differs (rp_mgmt_dlx.h). */
static bool rp_tap_reconcile_bindings(rp_daemon *d, rp_mgmt_broker *b) {
    if (b == NULL || d->mgmt_keep.vhost == NULL) return false;
    const rp_config *cfg = d->cfg;
    const char *skip[] = {cfg->broker.control_queue};
    rp_mgmt_dlx_options o = {
        .vhost = d->mgmt_keep.vhost,
        .tap_queue = cfg->broker.tap_queue,
        .owned_pattern = cfg->reap.owned_queue_pattern.code,
        .skip = skip,
        .n_skip = 1,
    };
    rp_mgmt_dlx_stats s;
    rp_status st = rp_mgmt_dlx_reconcile(b, &o, &s);
    char ex[24], add[24], rem[24], fail[24], unb[24];
    snprintf(ex, sizeof ex, "%zu", s.exchanges);
    snprintf(add, sizeof add, "%zu", s.added);
    snprintf(rem, sizeof rem, "%zu", s.removed);
    snprintf(fail, sizeof fail, "%zu", s.failed);
    snprintf(unb, sizeof unb, "%zu", s.unbindable);
    if (st == RP_OK && s.tap_missing) {
        RP_DEBUG("the tap queue is not declared yet; its bindings wait for the connection",
                 "queue", cfg->broker.tap_queue, NULL);
    } else if (st != RP_OK || s.failed > 0) {
        RP_WARN("the tap's bindings could not be reconciled; tried again in 2 s",
                "status", rp_status_string(st), "reason", rp_mgmt_broker_last_error(b),
                "added", add, "removed", rem, "failed", fail, NULL);
    } else if (s.added > 0 || s.removed > 0) {
        RP_INFO("tap bindings reconciled", "queue", cfg->broker.tap_queue, "exchanges", ex,
                "added", add, "removed", rem, NULL);
    } else {
        RP_INFO("tap bindings in place", "queue", cfg->broker.tap_queue, "exchanges", ex, NULL);
    }
    /* Each such queue is a DEAD_LETTER sighting of the sweep (logged when
     * it opens and when it clears, rp_judge_dead_letter_route), not a
     * warning at every reconcile. */
    if (s.unbindable > 0)
        RP_DEBUG("owned queues dead-letter through the default exchange, which the tap cannot "
                 "bind: surfaced by the sweep, their dead-letter queue backfilled",
                 "queues", unb, NULL);
    return st == RP_OK && s.failed == 0 && !s.tap_missing;
}

/* How long after a failed reconcile it is tried again. */
#define RP_TAP_BIND_RETRY_MS 2000

static void rp_tap_bind_work(void *ctx, void *job) {
    rp_tap *t = job;
    t->bind_ok = rp_tap_reconcile_bindings(ctx, t->bind_broker);
}

static void rp_tap_bind_done(void *job, bool cancelled) {
    rp_tap *t = job;
    t->bind_queued = false;
    if (cancelled || t->stopped) return;
    if (t->bind_ok) {
        t->bound_gen = t->bind_gen;
    } else if (!t->bind_again && t->bind_retry_ev != NULL) {
        struct timeval tv = {RP_TAP_BIND_RETRY_MS / 1000, (RP_TAP_BIND_RETRY_MS % 1000) * 1000};
        evtimer_add(t->bind_retry_ev, &tv);
    }
    if (t->bind_again) {
        t->bind_again = false;
        rp_tap_bindings_soon(t->d);
    }
}

static void rp_tap_on_bind_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_tap *t = arg;
    if (t->d->broker_up) rp_tap_bindings_soon(t->d);
}

bool rp_tap_bound(const rp_tap *t) {
    if (t == NULL || t->bind_worker == NULL) return true; /* no management API: no bindings */
    return t->bound_gen != 0 && t->bound_gen == t->d->broker_generation;
}

void rp_tap_bindings_soon(rp_daemon *d) {
    rp_tap *t = d->tap;
    if (t == NULL || t->stopped || t->bind_worker == NULL) return;
    if (t->bind_queued) {
        /* One is waiting or running: it may have read the broker before
         * this change, so one more follows it. */
        t->bind_again = true;
        return;
    }
    t->bind_queued = true;
    t->bind_gen = d->broker_generation;
    if (t->bind_retry_ev) evtimer_del(t->bind_retry_ev);
    if (rp_worker_submit(t->bind_worker, rp_tap_bind_work, rp_tap_bind_done, t) != RP_OK)
        t->bind_queued = false;
}

/* ---- life ---------------------------------------------------------------------- */

rp_tap *rp_tap_new(rp_daemon *d) {
    rp_tap *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->d = d;
    t->retry_ev = evtimer_new(d->base, rp_tap_on_retry, t);
    t->bind_retry_ev = evtimer_new(d->base, rp_tap_on_bind_retry, t);
    bool stores = true;
    for (size_t k = 0; k < RP_TAP_SESSIONS; k++) {
        t->conn[k] = rp_pass_conn_new(d->cfg, 5);
        t->store[k] = t->conn[k] ? rp_pg_store_new(t->conn[k], d->cfg->store.schema) : NULL;
        stores = stores && t->store[k] != NULL;
    }
    if (stores) {
        rp_pg_store_ports(t->store[0], &t->ports);
        rp_feed_port(d, &t->ports.publisher);
        t->worker = rp_worker_new(d->base, "tap", NULL, t, 0);
    }
    if (d->mgmt != NULL) {
        t->bind_broker = rp_mgmt_broker_new(d->mgmt, NULL);
        t->bind_worker = t->bind_broker ? rp_worker_new(d->base, "tapbind", NULL, d, 0) : NULL;
    }
    if (t->retry_ev == NULL || t->bind_retry_ev == NULL || t->worker == NULL ||
        (d->mgmt != NULL && t->bind_worker == NULL)) {
        rp_tap_free(t);
        return NULL;
    }
    return t;
}

bool rp_tap_busy(const rp_tap *t) { return t != NULL && t->in_flight > 0; }

void rp_tap_cancel(rp_tap *t) {
    if (t == NULL) return;
    for (size_t k = 0; k < RP_TAP_SESSIONS; k++)
        if (t->conn[k] != NULL) rp_pg_conn_cancel(t->conn[k]);
}

void rp_tap_stop(rp_tap *t) {
    if (t == NULL || t->stopped) return;
    t->stopped = true;
    /* The batch in flight stops at its next message (d->stopping); its done
     * function runs here and acks what was parked. */
    if (t->worker) rp_worker_free(t->worker);
    t->worker = NULL;
    if (t->bind_worker) rp_worker_free(t->bind_worker);
    t->bind_worker = NULL;
    rp_mgmt_broker_free(t->bind_broker);
    t->bind_broker = NULL;
    for (size_t k = 0; k < RP_TAP_SESSIONS; k++) {
        rp_pg_store_free(t->store[k]);
        t->store[k] = NULL;
        rp_pg_conn_free(t->conn[k]);
        t->conn[k] = NULL;
    }
}

void rp_tap_free(rp_tap *t) {
    if (t == NULL) return;
    rp_tap_stop(t);
    if (t->retry_ev) event_free(t->retry_ev);
    if (t->bind_retry_ev) event_free(t->bind_retry_ev);
    rp_list_clear(t, &t->waiting);
    rp_list_clear(t, &t->stuck);
    if (t->amqp) {
        rp_amqp_conn_free(t->amqp);
        rp_amqp_assembler_cleanup(&t->assembler);
    }
    free(t);
}

bool rp_tap_owns_tag(const void *bytes, size_t len) {
    size_t n = strlen(RP_TAP_CONSUMER_TAG);
    if (len < n || memcmp(bytes, RP_TAP_CONSUMER_TAG, n) != 0) return false;
    return len == n || ((const char *)bytes)[n] == '.';
}
