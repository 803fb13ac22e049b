/*
 * rp_job.h - the states of a row of the job table (CONTRACT section 6).
 *
 * The wire and database names are the lower-case strings of the table's
 * check constraint: ready, leased, succeeded, failed, awaiting_human.
 *
 * Ownership: the strings are static; nothing is allocated.
 */
#ifndef RP_JOB_H
#define RP_JOB_H

#include <stdbool.h>

#include "rp_common.h"

typedef enum rp_job_state {
    RP_JOB_READY = 0,
    RP_JOB_LEASED,
    RP_JOB_SUCCEEDED,
    RP_JOB_FAILED,
    RP_JOB_AWAITING_HUMAN,
    RP_JOB_STATE_COUNT_
} rp_job_state;

/* "ready", "leased", ...; "unknown" outside the enum. Never NULL, static. */
const char *rp_job_state_string(rp_job_state s);
/* Exact match of a database name. Returns false when unknown. */
bool rp_job_state_parse(const char *s, rp_job_state *out) RP_MUSTCHECK;

#endif
