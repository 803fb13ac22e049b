/*
 * rp_pass_run_port.h - what one pass request runs on (app/rp_pass_sequence.h:
 * connect, the pass, the backfill's begin and end, the policy reconcile, the
 * open sightings, the next lease deadline): the configuration in force, the
 * store's connection, the pass's ports, the broker STALLED samples, the
 * backfill's read and the broker's policy reconcile.
 *
 * cmd/reaperd/ports.c fills it from the store thread's pass runner (a
 * PostgreSQL session, a management client, the backfill's AMQP peek);
 * tests/unit/test_app_pass_sequence.c over the memory adapter.
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)). Every
 * call on the thread that runs the pass (the store thread, or --once's).
 * Ownership: self is borrowed; what config, ports, stall_memory and
 * backfill return is lent for the call of rp_pass_sequence_run that asked;
 * a report given to reconcile is the caller's (filled, never freed).
 */
#ifndef RP_PASS_RUN_PORT_H
#define RP_PASS_RUN_PORT_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_backfill_read.h"
#include "rp_config.h"
#include "rp_pass.h"
#include "rp_queue_listing.h"
#include "rp_ports.h"
#include "rp_report.h"
#include "rp_stalled_broker.h"
#include "rp_status.h"

typedef struct rp_pass_run_port {
    void *self;
    /* The configuration in force (a reload switches it between passes). */
    const rp_config *(*config)(void *self);
    /* Connects the store when it is not (blocking); RP_OK when it is up,
     * otherwise why not into err (n bytes). */
    rp_status (*connect)(void *self, char *err, size_t n);
    /* Whether the store is up; with check, connects it when down or pings
     * it when up first. detail (cap bytes): the peer when up, why not after
     * a failed check. May be NULL where nobody asks (--once). */
    bool (*probe)(void *self, bool check, char *detail, size_t cap);
    /* The ports the pass runs on (store, gates, clock, dead letters,
     * broker, publisher). */
    const rp_ports *(*ports)(void *self);
    /* The broker STALLED samples kept across passes; NULL: none. */
    rp_stall_memory *(*stall_memory)(void *self);
    /* The backfill's read of dead-letter queues, begun and ended around
     * each pass; NULL: none. */
    rp_backfill_read *(*backfill)(void *self);
    /* The broker's policies reconciled into report (a dry run reads and
     * writes nothing); NULL: no broker half. listing (may be NULL) is the
     * pass's own queue listing, kept for the reconcile to read instead of
     * listing the broker again (rp_queue_listing.h; borrowed for the
     * call). RP_ERR_NOMEM is the one status the pass takes as its own. */
    rp_status (*reconcile)(void *self, const rp_config *cfg, bool dry_run,
                           rp_queue_listing *listing, rp_report *report);
    /* Issue 19 item 1: the broker half (the listing, the policy reconcile)
     * lists the queues of these vhosts only, vhost after vhost, until set
     * again (core/rp_sweep_vhosts.h); n 0: every vhost. vhosts borrowed
     * until then. NULL: the port lists every vhost. */
    void (*set_vhosts)(void *self, const char *const *vhosts, size_t n);
} rp_pass_run_port;

#endif
