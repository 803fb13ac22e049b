/*
 * rp_tap_port.h - the ports the dead-letter tap's part (app/rp_tap.h) runs
 * core's decisions (rp_tap_batch.h) over: its consumer (the tap's own AMQP
 * connection), its store (the park-batch port and the store ports of its own
 * sessions) and its bindings' reconcile (the management API). Each adapter
 * fills its own (rp_amqp_tap_port, rp_pg_park_batch, rp_mgmt_dlx;
 * cmd/reaperd/ports.c composes them); the unit tests fill them with fakes and
 * the memory park batch (tests/unit/test_app_tap.c).
 * The decisions about what these ports return are core/rp_tap_rules.h's.
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)).
 * Ownership: every port and its self are borrowed by the part; what fills
 * them must outlive it (see app/rp_tap.h for the stop order). Threads:
 * stated per function.
 */
#ifndef RP_TAP_PORT_H
#define RP_TAP_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_config.h"
#include "rp_park_batch_port.h"
#include "rp_ports.h"
#include "rp_status.h"
#include "rp_tap_batch.h"

/* ---- the consumer (the tap's own AMQP connection) ------------------------- */

/* What the consumer tells the part (loop thread; arg is the part's). */
typedef struct rp_tap_consumer_hooks {
    void *arg;
    /* The connection is up (the tap queue declared, consuming) / down. */
    void (*on_up)(void *arg);
    void (*on_down)(void *arg);
    /* Whether a delivery now goes back to the broker (nack, requeue)
     * unkept; on_returned counts one that went back. */
    bool (*returning)(void *arg);
    void (*on_returned)(void *arg);
    /* A delivery (tag, weight, via_default set): the part's from now, freed
     * through the port's items.drop. */
    void (*on_item)(void *arg, rp_tap_item *it);
    /* Whether the daemon is stopping: deliveries are left unacked. */
    bool (*stopping)(void *arg);
} rp_tap_consumer_hooks;

typedef struct rp_tap_consumer_port {
    void *self;
    /* Loop: begins connecting (and reconnects by itself), telling hooks
     * (copied). RP_ERR_CONFIG when it cannot be made (logged by the
     * filler), RP_ERR_INTERNAL when its connect thread cannot start. */
    rp_status (*start)(void *self, const rp_tap_consumer_hooks *hooks);
    /* Loop: an ack (one, or every one up to tag), a cancel of the consumer
     * under tag, a consume again under tag. false when the connection is
     * not up or the write failed (the connection drops). */
    bool (*ack)(void *self, uint64_t tag, bool multiple);
    bool (*cancel)(void *self, const char *tag);
    bool (*consume)(void *self, const char *tag);
    /* How the part frees its items (rp_tap_state's ops; any thread that
     * holds the item) and how the tap's thread reads one (core's
     * examiner). Neither may need the connection: items outlive it. */
    rp_tap_item_ops items;
    rp_tap_examiner examiner;
} rp_tap_consumer_port;

/* ---- the store (the tap's own sessions) ------------------------------------ */

typedef struct rp_tap_store_port {
    /* The tap's thread: parks transactions (rp_park_batch_port.h). */
    rp_park_batch_port batch;
    /* The tap's thread: dead_letters (a failed transaction's rows parked
     * one by one) and clock; the part sets publisher to its feed. */
    rp_ports ports;
    /* Any thread: cancels the command the sessions run (a stop whose grace
     * ran out). NULL: nothing to cancel. */
    void *self;
    void (*cancel)(void *self);
} rp_tap_store_port;

/* ---- the bindings (management API) ----------------------------------------- */

/* What one reconcile saw and did (rp_mgmt_dlx_stats, the part the tap
 * uses). */
typedef struct rp_tap_bind_stats {
    size_t exchanges;  /* distinct exchanges dead letters can reach */
    size_t added, removed;
    size_t failed;     /* writes that failed */
    size_t unbindable; /* owned queues dead-lettering through the default exchange */
    bool tap_missing;  /* the tap queue does not exist yet: nothing written */
} rp_tap_bind_stats;

typedef struct rp_tap_bind_port {
    void *self;
    /* The tap's binding thread: derives the tap's bindings in vhost from the
     * broker's definitions (the tap queue, the owned pattern and reaper's
     * control queue as cfg says) and adds or removes what differs. RP_OK
     * when every read succeeded (failed writes counted in stats->failed);
     * *reason: the last failure's text (the filler's, valid until the next
     * call; never NULL). */
    rp_status (*reconcile)(void *self, const rp_config *cfg, const char *vhost,
                           rp_tap_bind_stats *stats, const char **reason);
} rp_tap_bind_port;

#endif
