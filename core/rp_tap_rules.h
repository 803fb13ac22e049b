/*
 * rp_tap_rules.h - the dead-letter tap's decisions that are not batching
 * (those are rp_tap_batch.h's): what one reconcile of the tap's bindings
 * means (rp_tap_bind_judge: logged how, retried or not, in place or not),
 * and how a captured dead letter is marked when its stored form is not the
 * whole message (rp_tap_stored_partial, rp_tap_death_entries).
 *
 * Pure: no I/O, no logging, no clock; any thread.
 * Tests: tests/unit/test_tap_rules.c.
 */
#ifndef RP_TAP_RULES_H
#define RP_TAP_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_status.h"
#include "rp_tap_port.h"

typedef enum rp_tap_bind_outcome {
    RP_TAP_BIND_TAP_MISSING = 0, /* the tap queue is not declared yet: wait for the connection */
    RP_TAP_BIND_FAILED,          /* a read or a write failed: try again later */
    RP_TAP_BIND_CHANGED,         /* in place now: bindings added or removed */
    RP_TAP_BIND_IN_PLACE,        /* in place already */
} rp_tap_bind_outcome;

/* What a reconcile's status and stats mean. */
rp_tap_bind_outcome rp_tap_bind_judge(rp_status st, const rp_tap_bind_stats *s);
/* Whether every route a dead letter can take reaches the tap after it. */
bool rp_tap_bind_in_place(rp_tap_bind_outcome o);

/* Whether a dead letter's stored form is not the whole message (parked
 * with body_truncated: never replayed): its body was cut, its headers could
 * not be stored losslessly, or its header table was over the cap (only its
 * death headers kept). */
bool rp_tap_stored_partial(bool body_cut, bool lossless, size_t headers_dropped);
/* The x-death entries its stored properties note as carried (so that a
 * replay says some were not parsed): parsed + unparsed when some were not
 * parsed, else 0 (nothing to note). */
size_t rp_tap_death_entries(size_t parsed, size_t unparsed);

#endif
