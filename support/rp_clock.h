/*
 * rp_clock.h - the one clock of the process: monotonic and wall time in
 * milliseconds, and a core clock port that reads the wall time.
 *
 * The monotonic clock (CLOCK_MONOTONIC) is for durations and deadlines:
 * it never goes back. The wall clock (CLOCK_REALTIME) is for times that
 * are written down or compared with someone else's (the ledger, the
 * broker's timestamps). Core never reads either: it takes `now` as an
 * argument or through an rp_clock_port (core/rp_ports.h).
 *
 * Threads: any. Ownership: nothing is kept.
 */
#ifndef RP_CLOCK_H
#define RP_CLOCK_H

#include <stdint.h>

#include "rp_common.h"
#include "rp_ports.h"

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin). */
int64_t rp_clock_mono_ms(void);

/* Microseconds on CLOCK_MONOTONIC (the same origin). */
int64_t rp_clock_mono_us(void);

/* Unix time in milliseconds (CLOCK_REALTIME). */
rp_time_ms rp_clock_wall_ms(void);

/* Fills *out with a clock port whose now_ms is rp_clock_wall_ms (self is
 * NULL: the port holds nothing to free). */
void rp_clock_port_system(rp_clock_port *out);

/* The two clocks as a port's or a part's hook (self is ignored). */
rp_time_ms rp_clock_wall_self(void *self);
int64_t rp_clock_mono_self(void *self);

#endif
