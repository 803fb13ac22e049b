/*
 * rp_signals.h - SIGHUP reload and the bounded stop on SIGTERM/SIGINT, as
 * events on the loop (rp_signals.c says what each does). An app part: what
 * a stop or a reload does to the other parts are hooks the composition
 * root passes (on_stop, cancel, on_reload), and reading the configuration
 * again is one too (load: adapters/config in reaperd).
 *
 * Ownership: deps and what they point to are borrowed for the part's life.
 * The configurations a reload made are the part's: they stay allocated
 * until rp_signals_free (whoever still reads an older one may), so free it
 * after every user of *deps->cfg. Threads: the loop thread.
 */
#ifndef RP_SIGNALS_H
#define RP_SIGNALS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_config.h"

/* The grace a stop waits for work in flight before closing anyway. */
#define RP_STOP_GRACE_MS 10000

typedef struct rp_signals rp_signals;

/* What is in flight, as a stop looks at it. */
typedef struct rp_signals_inflight {
    bool pass_running;
    unsigned store_jobs;  /* store jobs submitted and not yet done */
    bool broker_up;
    size_t unconfirmed;   /* publishes the broker has not confirmed yet */
    bool tap_busy;
} rp_signals_inflight;

typedef struct rp_signals_deps {
    const rp_config **cfg;     /* the configuration in force: a reload replaces it */
    const rp_config *boot_cfg; /* the one reaperd started with (its path) */
    bool *stopping;            /* set (atomically) by the first stop signal */
    void (*inflight)(void *arg, rp_signals_inflight *out);
    /* Stopping was just set: no new work is taken (timers, listeners). */
    void (*on_stop)(void *arg);
    /* The grace ran out: cancel the store's (store) and the tap's (tap)
     * command in progress. */
    void (*cancel)(void *arg, bool store, bool tap);
    /* *cfg was replaced (old: the one before): the loop's parts and the
     * store thread follow. */
    void (*on_reload)(void *arg, const rp_config *old);
    void *arg;
    /* Reads the configuration again (path: boot_cfg's) into *out, as at
     * start; problems as rp_config.h says. */
    rp_status (*load)(const char *path, rp_config *out, rp_config_problems *problems);
} rp_signals_deps;

/* Adds the signal events. NULL when that fails. */
rp_signals *rp_signals_new(struct event_base *base, const rp_signals_deps *deps);
void rp_signals_free(rp_signals *s); /* NULL: nothing */

#endif
