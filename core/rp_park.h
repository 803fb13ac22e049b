/*
 * rp_park.h - parking one dead letter (CONTRACT section 2, condition e):
 * examine its headers (rp_deadletter.h), judge it (DEAD_LETTER / PARKED),
 * park it through the dead-letter port idempotently by identity and death
 * (rp_deadletter.h: a new death may open a new occurrence), publish the
 * committed event and add the verdict to the report.
 *
 * Used by the pass's backfill of owned dead-letter queues (rp_pass.h) and by
 * the tap consumer, so that a dead letter is parked the same way whichever
 * way it arrives.
 *
 * Ownership: everything is borrowed for the call; the verdict is moved into
 * the report.
 */
#ifndef RP_PARK_H
#define RP_PARK_H

#include <stdbool.h>

#include <pcre2.h>

#include "rp_ports.h"
#include "rp_report.h"

/* Where the dead letter was found: the dead-letter queue and the pattern
 * that made it one (may be NULL; see ORIGIN rule 3 of rp_deadletter.h). */
typedef struct rp_park_site {
    const char *vhost;
    const char *queue;
    const pcre2_code *dlq_pattern;
} rp_park_site;

typedef enum rp_park_outcome {
    RP_PARKED_NEW = 0,       /* parked now; its verdict is in the report */
    RP_PARKED_ALREADY,       /* that death was parked before, or is covered by its
                                identity's open gate; nothing added */
    RP_PARKED_WOULD,         /* dry run, not parked yet: its verdict is in the report */
} rp_park_outcome;

/* Parks one dead letter. With dry_run nothing is written: the port is only
 * asked whether it would open a gate. Returns RP_OK with *outcome
 * set; the status of the dead-letter port when it failed (nothing was added
 * to the report; the caller records the source as unreadable); RP_ERR_NOMEM;
 * RP_ERR_INVALID / RP_ERR_INTERNAL from rp_dead_letter_examine(). */
rp_status rp_park_dead_letter(const rp_ports *ports, const rp_park_site *site,
                              const rp_dl_message *msg, bool dry_run, rp_report *report,
                              rp_park_outcome *outcome) RP_MUSTCHECK;

#endif
