/*
 * rp_sweep_port.h - what the daemon's pass scheduling (app/rp_sweeper.h)
 * asks of the backends: running one pass and checking the store on the
 * store thread (rp_sweep_port), and hearing lease deadlines as they are set
 * (rp_lease_listen_port).
 *
 * cmd/reaperd fills both: the pass port from its pass runner (the store's
 * PostgreSQL connection, the ports built over it), the listen port from
 * adapters/postgres/rp_pg_listen.h. The unit tests fill them with fakes.
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)).
 * Ownership: self is borrowed by the sweeper for its whole life. A run's
 * detail is the port's: made by run(), freed by finish().
 */
#ifndef RP_SWEEP_PORT_H
#define RP_SWEEP_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_pass.h"

/* One pass as the sweeper sees it. The sweeper fills the first half on
 * the loop; run() fills the second on the store thread. */
typedef struct rp_sweep_run {
    rp_pass_scope scope;
    const char *scope_name; /* "sweep" or "lease reap" (static) */
    rp_pass_progress_fn progress;
    void *progress_arg;
    bool (*should_stop)(void *arg); /* polled between rows */
    void *stop_arg;
    /* What came of it (store thread). */
    int64_t clock_offset_ms; /* this host's clock minus the store's */
    bool deadline_known;     /* a leased row is still in the table */
    rp_time_ms deadline_at;  /* its lease_expires_at + grace, store's clock */
    void *detail;            /* the port's own record of the pass */
} rp_sweep_run;

typedef struct rp_sweep_port {
    void *self;
    /* Store thread: connects when needed, then runs the pass run->scope
     * with run's progress and should_stop; fills run's results. */
    void (*run)(void *self, rp_sweep_run *run);
    /* Loop thread, when the pass is done: what follows it (its report
     * logged, metrics, ...) unless cancelled (the store thread ended before
     * it ran); frees run->detail either way. */
    void (*finish)(void *self, rp_sweep_run *run, bool cancelled);
    /* Store thread: whether the store is up. check: connect (when down) or
     * ping (when up) first; else only say. detail (cap bytes) gets a
     * description of the peer when up, the reason when a check failed
     * (left empty when no check was made). */
    bool (*store)(void *self, bool check, char *detail, size_t cap);
} rp_sweep_port;

/* The lease LISTEN: a lease was set expiring at at_ms on the database's
 * clock; on_up, listening (again): what was set meanwhile was not heard.
 * Both on the loop thread, never from inside open or close. */
typedef struct rp_lease_listen_hooks {
    void (*on_deadline)(void *arg, int64_t at_ms);
    void (*on_up)(void *arg);
    void *arg;
} rp_lease_listen_hooks;

typedef struct rp_lease_listen_port {
    void *self;
    /* Loop thread: starts listening (hooks copied). Returns the listener,
     * NULL when out of memory. */
    void *(*open)(void *self, const rp_lease_listen_hooks *hooks);
    /* Loop thread: stops and frees a listener open returned (NULL: nothing). */
    void (*close)(void *self, void *listener);
} rp_lease_listen_port;

#endif
