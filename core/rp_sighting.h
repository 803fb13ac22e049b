/*
 * rp_sighting.h - the keys of sightings (CONTRACT section 2: a surfaced
 * condition is recorded once per sighting, fleet-wide).
 *
 * A sighting is one surfaced condition on one subject, open from the pass
 * that first saw it to the pass that, having read its source whole, no
 * longer sees it. Its key is the primary key of the sighting table, so every
 * reaper in the fleet must build the same key for the same condition:
 *
 *   <source> "|" <CONDITION> "|" <subject>
 *
 * source and CONDITION are the wire names of rp_source and rp_condition
 * ("broker", "job_queue"; "HOLDER_GONE", ...), neither holds '|', so the
 * first two '|' split a key whatever the subject holds. The subject is the
 * verdict's object (rp_object.h), except for stale ready work in the job
 * table, which is sighted per project ("project:<project>"): the oldest
 * claimable job changes from pass to pass while the project stays stale,
 * and that is one sighting, not one per job. Examples:
 *
 *   broker|HOLDER_GONE|queue:/:vibey.x
 *   broker|STALE_READY|queue:/:vibey.x
 *   broker|DEAD_LETTER|queue:/:celery.dlq
 *   broker|HUNG_HANDLER|queue:/:vibey.x
 *   job_queue|STALE_READY|project:alpha
 *
 * Ownership: rp_sighting_key*() store a new heap string in *out that the
 * caller frees with free() (NULL on failure). rp_sighting_key_split() points
 * into the key it is given and allocates nothing. An rp_sighting_row only
 * borrows its key (see the port that lends it).
 */
#ifndef RP_SIGHTING_H
#define RP_SIGHTING_H

#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_status.h"
#include "rp_verdict.h"

/* One open sighting as the sighting table holds it. */
typedef struct rp_sighting_row {
    const char *key;       /* borrowed */
    rp_condition condition;
    int64_t opened_seq;    /* the ledger event that opened it */
    rp_time_ms opened_at;
} rp_sighting_row;

typedef struct rp_sighting_key_parts {
    rp_source source;
    rp_condition condition;
    const char *subject;   /* points into the key that was split */
} rp_sighting_key_parts;

/* Builds source|CONDITION|subject. RP_ERR_INVALID for a NULL subject or a
 * source or condition outside its enum (or RP_COND_NONE). */
rp_status rp_sighting_key(rp_source source, rp_condition condition, const char *subject,
                          char **out) RP_MUSTCHECK;

/* The key a surfaced verdict is sighted by (rules above). RP_ERR_INVALID
 * when the verdict lacks what the key needs (object, or project for stale
 * ready in the job table). */
rp_status rp_sighting_key_for(const rp_verdict *v, char **out) RP_MUSTCHECK;

/* Splits a key. Returns false when it is not a well-formed key (unknown
 * source or condition, missing separator, empty subject). */
bool rp_sighting_key_split(const char *key, rp_sighting_key_parts *out) RP_MUSTCHECK;

#endif
