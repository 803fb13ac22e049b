/*
 * daemon.h - the long-running reaperd: one libevent loop, the broker
 * connection on it, the store on its own thread, signals as events.
 *
 * Ownership: rp_daemon_run borrows cfg for its whole run.
 */
#ifndef RP_DAEMON_H
#define RP_DAEMON_H

#include "rp_config.h"

/* Runs until SIGTERM or SIGINT. Returns the process exit code: 0 after a
 * clean stop, 1 when the daemon could not run (the reason is logged). */
int rp_daemon_run(const rp_config *cfg, const char *broker_password);

#endif
