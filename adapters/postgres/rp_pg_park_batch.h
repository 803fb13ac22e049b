/*
 * rp_pg_park_batch.h - the dead-letter tap's PostgreSQL sessions, and the
 * park-batch port over them (core/rp_park_batch_port.h).
 *
 * The tap parks on sessions of its own (RP_PG_PARK_SESSIONS: two), so that
 * parking never waits behind a sweep on the store thread and the sessions
 * commit side by side; core's rp_tap_park sends its transactions to them in
 * turn (rp_pg_park_send), two outstanding on each, and reads them in
 * sending order (rp_pg_park_recv), so that one backend parks while the
 * other flushes its commit.
 *
 * Ownership: rp_pg_park_sessions_new takes the connections (each set up by
 * the caller: DSN, session settings) and closes them in
 * rp_pg_park_sessions_free, even when it fails. The ports filled borrow the
 * sessions. Threads: one thread at a time uses the ports (the tap's);
 * rp_pg_park_sessions_cancel may be called from any thread.
 */
#ifndef RP_PG_PARK_BATCH_H
#define RP_PG_PARK_BATCH_H

#include <stddef.h>

#include "rp_park_batch_port.h"
#include "rp_pg_conn.h"
#include "rp_ports.h"
#include "rp_tap_port.h"

/* Two sessions, interleaved runs of bench/tap: 10,000 storm
 * 9,637-10,014/s against 8,355-8,744 with one; 100,000 storm
 * 9,693-10,368 against 8,606-9,088. With one, the end of a storm was
 * bound by that one backend: it ran 75-90% of one CPU, waited on its
 * commits' WAL flushes in between, and 20-25% of the two CPUs stood idle. */
#define RP_PG_PARK_SESSIONS 2

typedef struct rp_pg_park_sessions rp_pg_park_sessions;

/* conns: RP_PG_PARK_SESSIONS connections (taken, NULL ones allowed: the
 * call then fails). NULL when one is missing or out of memory. */
rp_pg_park_sessions *rp_pg_park_sessions_new(rp_pg_conn *conns[RP_PG_PARK_SESSIONS],
                                             const char *schema);
void rp_pg_park_sessions_free(rp_pg_park_sessions *s);
/* Cancels the command each session runs (a stop whose grace ran out). */
void rp_pg_park_sessions_cancel(rp_pg_park_sessions *s);
/* The park-batch port over every session. */
void rp_pg_park_sessions_port(rp_pg_park_sessions *s, rp_park_batch_port *out);
/* The store ports over the first session (dead_letters and clock; the
 * caller sets the publisher). */
void rp_pg_park_sessions_ports(rp_pg_park_sessions *s, rp_ports *out);
/* The dead-letter tap's store port (core/rp_tap_port.h) over the sessions:
 * the park-batch port, the store ports and the cancel, self = s. */
void rp_pg_park_sessions_tap_port(rp_pg_park_sessions *s, rp_tap_store_port *out);

#endif
